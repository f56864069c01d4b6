//! The line between the commands and the library, checked from the sources: no file of
//! `lib/cli/` calls a `Store` method that writes (the store derives that list from its own
//! sources, `store::writes`) or names a session status. Writing and deciding by a session's
//! state belong to the library, where every front end gets the same rule. Tests below a
//! file's `#[cfg(test)]` may set up what they like.

use std::path::{Path, PathBuf};

/// Method calls of the same name on what is not a store: (method, receiver).
const NOT_A_STORE: &[(&str, &str)] = &[("append", "room")];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Where a status's name stands for something else: the text of a command interrupted by a
/// signal.
const NOT_A_STATUS: &[&str] = &["Exit::Interrupted, \"interrupted\""];

/// The code of a file: up to its tests, without comments.
fn code(text: &str) -> String {
    crate::store::writes::without_tests(text)
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What in `code` crosses the line: each store write called and each status named.
fn crossings(code: &str, writes: &[String], statuses: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for w in writes {
        for (at, _) in code.match_indices(&format!(".{w}(")) {
            let receiver: String = code[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if !NOT_A_STORE.contains(&(w.as_str(), receiver.as_str())) {
                found.push(format!("calls the store write `{receiver}.{w}(`"));
            }
        }
        if code.contains(&format!("Store::{w}(")) {
            found.push(format!("calls the store write `Store::{w}`"));
        }
    }
    if code.contains("SessionStatus") {
        found.push("names `SessionStatus`".into());
    }
    let mut code = code.to_string();
    for n in NOT_A_STATUS {
        code = code.replace(n, "");
    }
    for s in statuses {
        if code.contains(&format!("\"{s}\"")) {
            found.push(format!("names the session status \"{s}\""));
        }
    }
    found
}

#[test]
fn no_command_writes_the_store_or_names_a_session_status() {
    let writes: Vec<String> = crate::store::writes::write_methods().into_iter().collect();
    let statuses = crate::store::writes::status_names();
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("lib/cli"),
        &mut files,
    );
    assert!(files.len() > 20, "{files:?}");
    let mut bad = Vec::new();
    // This file names what it looks for.
    files.retain(|f| !f.ends_with("cli/boundary.rs"));
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for c in crossings(&code(&text), &writes, &statuses) {
            bad.push(format!("{}: {c}", f.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "commands that write the store or decide by a session's status (move it behind a \
         library function):\n{}",
        bad.join("\n")
    );
}

#[test]
fn a_crossing_is_found() {
    let writes = vec!["set_title".to_string(), "append".to_string()];
    let code = code(
        "let s = ctx.store()?;\nstore.set_title(&id, t)?;\n// store.append(x)\nroom.append(&l)?;\n\
         if st == SessionStatus::Done {}\nlet j = json!({\"status\": \"running\"});",
    );
    let found = crossings(&code, &writes, &["running", "done"]);
    assert_eq!(
        found,
        [
            "calls the store write `store.set_title(`",
            "names `SessionStatus`",
            "names the session status \"running\"",
        ],
        "{found:?}"
    );
}
