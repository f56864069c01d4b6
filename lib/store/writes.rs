//! Which [`Store`](super::Store) methods write, read from the store's own sources so the list
//! cannot fall behind: a method writes when its body opens a write transaction
//! (`self.write(`), runs `INSERT`, `UPDATE`, `DELETE` or `REPLACE`, or calls a method or
//! function of the store that does. The `cli` boundary test forbids the commands these.
//!
//! A few reads keep derived data current as they read; they stay reads: [`READS_THAT_KEEP`].

use std::collections::{BTreeMap, BTreeSet};

use super::SessionStatus;

/// Reads that write only to keep what they read current, with why.
pub(crate) const READS_THAT_KEEP: &[(&str, &str)] = &[
    ("open", "creates and migrates the schema"),
    ("open_path", "creates and migrates the schema"),
    ("open_empty", "migrates an in-memory schema"),
    (
        "search",
        "indexes chunks written since the last search first",
    ),
    (
        "recall",
        "indexes chunks written since the last search first",
    ),
    (
        "reaped",
        "records a session whose owner died as interrupted",
    ),
];

/// A source file's text up to its inline test module (`#[cfg(test)]` over `mod NAME {`).
pub(crate) fn without_tests(text: &str) -> &str {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim() == "#[cfg(test)]" {
            let rest = text[at + line.len()..].trim_start();
            let head = rest.lines().next().unwrap_or("");
            if head.starts_with("mod ") && head.trim_end().ends_with('{') {
                return &text[..at];
            }
        }
        at += line.len();
    }
    text
}

/// One function of the store's sources: whether it is a `pub`/`pub(crate)` method of
/// `Store`, and its text.
struct Function {
    public_method: bool,
    body: String,
}

/// Every function in `lib/store/*.rs` outside its tests, by name (same-named ones joined).
fn functions() -> BTreeMap<String, Function> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lib/store");
    let mut out: BTreeMap<String, Function> = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let code = without_tests(&text);
        let mut in_store = false;
        let mut current: Option<String> = None;
        for line in code.lines() {
            let top_level = !line.starts_with(' ') && !line.starts_with('}');
            if top_level && !line.trim().is_empty() && !line.starts_with("//") {
                in_store = line.starts_with("impl Store") || line.starts_with("impl<'_> Store");
            }
            let trimmed = line.trim_start();
            let public = trimmed.starts_with("pub fn ") || trimmed.starts_with("pub(crate) fn ");
            let head = ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn "]
                .iter()
                .find_map(|p| trimmed.strip_prefix(p));
            if let Some(rest) = head {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let f = out.entry(name.clone()).or_insert(Function {
                    public_method: false,
                    body: String::new(),
                });
                f.public_method |= in_store && line.starts_with("    ") && public;
                current = Some(name);
            }
            if let Some(name) = &current {
                let f = out.get_mut(name).unwrap();
                f.body.push_str(line);
                f.body.push('\n');
            }
        }
    }
    out
}

/// Whether `body` calls `name` (as a method or a function).
fn calls(body: &str, name: &str) -> bool {
    let call = format!("{name}(");
    body.match_indices(&call).any(|(at, _)| {
        let before = body[..at].chars().next_back();
        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && !body[..at].ends_with("fn ")
    })
}

/// The public `Store` methods that write.
pub(crate) fn write_methods() -> BTreeSet<String> {
    let fns = functions();
    let kept: BTreeSet<&str> = READS_THAT_KEEP.iter().map(|(n, _)| *n).collect();
    let mut writers: BTreeSet<String> = fns
        .iter()
        .filter(|(name, f)| {
            !kept.contains(name.as_str())
                && (f.body.contains("self.write(")
                    || ["\"INSERT", "\"UPDATE", "\"DELETE", "\"REPLACE"]
                        .iter()
                        .any(|k| f.body.contains(k)))
        })
        .map(|(n, _)| n.clone())
        .collect();
    loop {
        let more: Vec<String> = fns
            .iter()
            .filter(|(name, f)| {
                !writers.contains(*name)
                    && !kept.contains(name.as_str())
                    && writers.iter().any(|w| w != *name && calls(&f.body, w))
            })
            .map(|(n, _)| n.clone())
            .collect();
        if more.is_empty() {
            break;
        }
        writers.extend(more);
    }
    writers
        .into_iter()
        .filter(|n| fns[n].public_method)
        .collect()
}

/// Every session status's name; the match fails to compile when a status is added.
pub(crate) fn status_names() -> Vec<&'static str> {
    use SessionStatus::*;
    let all = [Idle, Running, Done, Failed, Cancelled, Interrupted];
    for s in all {
        match s {
            Idle | Running | Done | Failed | Cancelled | Interrupted => {}
        }
    }
    all.iter().map(|s| s.as_str()).collect()
}

#[test]
fn the_write_methods_are_found_and_the_kept_reads_exist() {
    let w = write_methods();
    for m in [
        "append",
        "append_stream",
        "set_title",
        "import_session",
        "forget_windows",
        "lease",
        "create_fork",
        "remove_session",
        "room_hear",
    ] {
        assert!(w.contains(m), "{m} is a write: {w:?}");
    }
    for m in ["resolve", "session", "load_view", "list_sessions", "shown"] {
        assert!(!w.contains(m), "{m} is a read: {w:?}");
    }
    let fns = functions();
    assert_eq!(
        without_tests("a\n#[cfg(test)]\nmod x;\nb\n#[cfg(test)]\nmod tests {\nc"),
        "a\n#[cfg(test)]\nmod x;\nb\n"
    );
    for (m, _) in READS_THAT_KEEP {
        assert!(
            fns.get(*m).is_some_and(|f| f.public_method),
            "{m} is no Store method"
        );
    }
}
