//! The query language of `ag-log search` and `recall`, as a full-text (FTS5) query: every
//! word must occur; `"two words"` is a phrase; `word*` matches words that start with it.
//! Each word and phrase is quoted, so FTS5's own syntax (`OR`, `NEAR`, `col:`) means
//! nothing in what a person or a model types.

use super::{Result, StoreError};

/// Where the index's excerpt marks a match: private-use characters, which no printer shows
/// as they are ([`crate::store::SearchHit::parts`] splits on them).
pub(crate) const MATCH_START: char = '\u{E000}';
pub(crate) const MATCH_END: char = '\u{E001}';

/// `query` as an FTS5 query: the terms joined by spaces (an implicit AND).
pub(crate) fn fts_query(query: &str) -> Result<String> {
    let terms = terms(query);
    if terms.is_empty() {
        return Err(StoreError::Invalid("the search query is empty".into()));
    }
    Ok(terms.join(" "))
}

/// The quoted terms: a `"…"` span is one phrase (an unclosed quote runs to the end), a word
/// ending in `*` is a prefix, any other word is itself.
fn terms(query: &str) -> Vec<String> {
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut out = Vec::new();
    let mut rest = query;
    while let Some(start) = rest.find('"') {
        out.extend(words(&rest[..start]));
        let after = &rest[start + 1..];
        let (phrase, next) = match after.find('"') {
            Some(end) => (&after[..end], &after[end + 1..]),
            None => (after, ""),
        };
        if !phrase.trim().is_empty() {
            out.push(quote(phrase.trim()));
        }
        rest = next;
    }
    out.extend(words(rest));
    out
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace()
        .filter_map(|w| {
            let (stem, prefix) = match w.strip_suffix('*') {
                Some(stem) => (stem.trim_end_matches('*'), true),
                None => (w, false),
            };
            if stem.is_empty() {
                return None;
            }
            let quoted = format!("\"{}\"", stem.replace('"', "\"\""));
            Some(if prefix { format!("{quoted}*") } else { quoted })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::fts_query;

    #[test]
    fn words_phrases_and_prefixes_become_quoted_terms() {
        let q = |s: &str| fts_query(s).unwrap();
        assert_eq!(q("brown fox"), r#""brown" "fox""#);
        assert_eq!(
            q(r#"the "brown fox" jumps"#),
            r#""the" "brown fox" "jumps""#
        );
        assert_eq!(q("cach* fold"), r#""cach"* "fold""#);
        assert_eq!(q(r#""unclosed phrase"#), r#""unclosed phrase""#);
        assert_eq!(q("a OR b NEAR(c)"), r#""a" "OR" "b" "NEAR(c)""#);
        assert!(fts_query(r#" "" * "#).is_err());
    }
}
