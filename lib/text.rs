//! Text cut to fit a line: one rule for the ellipsis (by characters or by bytes), for
//! flattening to one line, and for turning a prompt into a title. Every module that shows
//! text in a limited space uses these instead of its own loop.

/// The mark a cut text ends with.
pub(crate) const ELLIPSIS: char = '…';

/// `text` in at most `max` characters, the last of them `…` when it had to be cut.
pub(crate) fn clip_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some(_) => {
            let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
            out.push(ELLIPSIS);
            out
        }
    }
}

/// `text` in at most `max` bytes, cut on a character boundary and ending with `…` when cut:
/// for budgets that are bytes (room lines, peer batches).
pub(crate) fn clip_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub(ELLIPSIS.len_utf8());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ELLIPSIS}", &text[..end])
}

/// Every run of whitespace (newlines included) as one space, with none at either end.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first non-blank line of a text, cut at `max` characters with an ellipsis: how a
/// prompt or a question becomes a session title.
pub(crate) fn headline(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() <= max {
        return line.to_string();
    }
    let mut t: String = line
        .chars()
        .take(max)
        .collect::<String>()
        .trim_end()
        .to_string();
    t.push(ELLIPSIS);
    t
}

/// How many single-character insertions, deletions and substitutions turn `a` into `b`
/// (Levenshtein), for "did you mean" suggestions.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diag + usize::from(ca != *cb));
            diag = above;
        }
    }
    row[b.len()]
}

/// The candidate closest to `word` (case-insensitively), when it is close enough to be a typo:
/// at most a third of the word's length away, and at most 3.
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let w = word.to_lowercase();
    let limit = (w.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .map(|c| (edit_distance(&w, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_are_close_and_other_words_are_not() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(closest("promt", ["prompt", "log", "fork"]), Some("prompt"));
        assert_eq!(
            closest("anthropc", ["anthropic", "openai"]),
            Some("anthropic")
        );
        assert_eq!(closest("xyz", ["prompt", "log"]), None);
        assert_eq!(closest("Sonet", ["sonnet", "opus"]), Some("sonnet"));
    }

    #[test]
    fn clip_chars_counts_the_ellipsis() {
        assert_eq!(clip_chars("abc", 3), "abc");
        assert_eq!(clip_chars("abcd", 3), "ab…");
        assert_eq!(clip_chars("éééé", 2), "é…");
        assert_eq!(clip_chars("", 0), "");
    }

    #[test]
    fn clip_bytes_keeps_char_boundaries() {
        assert_eq!(clip_bytes("abc", 10), "abc");
        let c = clip_bytes(&"é".repeat(200), 200);
        assert!(c.len() <= 200 && c.ends_with('…'), "{c}");
    }

    #[test]
    fn one_line_and_headline() {
        assert_eq!(one_line("  a\n\tb  c "), "a b c");
        assert_eq!(headline("\n\n  fix the build  \nmore", 40), "fix the build");
        assert_eq!(headline("abc def", 4), "abc…");
    }
}
