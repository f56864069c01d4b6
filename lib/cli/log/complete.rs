//! `ag-log __complete KIND`: the words the shell completions offer for session handles,
//! agent names and model names, one a line as `WORD<TAB>DESCRIPTION` (bash keeps the word,
//! zsh and fish show both). It is not a clap verb, so help, man pages and the completions themselves
//! never list it; the completion scripts call it.
//!
//! It must be fast and harmless at every keystroke: it never creates a store (no store, no
//! sessions), prints nothing on stderr, and offers only words made of characters a shell
//! passes through unchanged, since a project's agent file or a session's title is untrusted.

use std::io::Write;
use std::process::ExitCode;

use crate::paths::Home;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Session handles, most recently updated first
    Sessions,
    /// Agent definitions (`ag-summon agents`)
    Agents,
    /// Model names and aliases
    Models,
    /// `--tools` words: tool names, the sets, and `+NAME`/`-NAME` changes
    Tools,
}

/// At most this many sessions are offered.
const SESSIONS: u64 = 200;

/// `ag-log __complete KIND`, when that is how the command was called. An unknown kind is
/// a request too (it offers nothing).
pub(crate) fn requested() -> Option<Option<Kind>> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != "__complete" {
        return None;
    }
    Some(match args.next()?.to_str()? {
        "sessions" => Some(Kind::Sessions),
        "agents" => Some(Kind::Agents),
        "models" => Some(Kind::Models),
        "tools" => Some(Kind::Tools),
        _ => None,
    })
}

/// Print the words; whatever fails, offer nothing and exit 0 (a completion must not
/// print errors into the person's command line).
pub(crate) fn main(kind: Option<Kind>) -> ExitCode {
    let words = match kind {
        Some(Kind::Sessions) => sessions(),
        Some(Kind::Agents) => agents(),
        Some(Kind::Models) => models(),
        Some(Kind::Tools) => tools(),
        None => Vec::new(),
    };
    let mut out = std::io::stdout().lock();
    for (word, about) in words {
        if !word.is_empty() && word.chars().all(plain) {
            let about = crate::text::clip_chars(&crate::text::one_line(&about), 60);
            let about: String = about.chars().filter(|c| !c.is_control()).collect();
            if writeln!(out, "{word}\t{about}").is_err() {
                break;
            }
        }
    }
    ExitCode::SUCCESS
}

/// Characters that mean nothing to a shell or to `compgen`.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '@' | '+' | ',')
}

fn sessions() -> Vec<(String, String)> {
    let Ok(home) = Home::resolve(None) else {
        return Vec::new();
    };
    if !home.db_path().exists() {
        return Vec::new();
    }
    let Ok(store) = crate::store::Store::open_path(&home.db_path()) else {
        return Vec::new();
    };
    let listing = crate::store::Listing {
        limit: Some(SESSIONS),
        ..Default::default()
    };
    store
        .list_sessions_where(&listing)
        .map(|list| list.into_iter().map(|(s, _)| (s.handle, s.title)).collect())
        .unwrap_or_default()
}

fn agents() -> Vec<(String, String)> {
    let Ok(cwd) = std::env::current_dir() else {
        return Vec::new();
    };
    let catalog = crate::summon::Catalog::load(&cwd);
    catalog
        .subagents()
        .chain(catalog.user_agents())
        .map(|d| (d.slug.clone(), d.blurb()))
        .collect()
}

fn tools() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![
        (
            "read-only".into(),
            "the defaults: look, search, recall, talk in the room".into(),
        ),
        ("all".into(), "every built-in tool".into()),
        ("none".into(), "no tool".into()),
    ];
    for t in crate::policy::Tool::names() {
        out.push((t.to_string(), "only this and the others named".into()));
        out.push((format!("+{t}"), "the defaults and this".into()));
        out.push((format!("-{t}"), "the defaults without this".into()));
    }
    out
}

fn models() -> Vec<(String, String)> {
    let config = std::env::current_dir()
        .ok()
        .and_then(|cwd| crate::config::Config::load(&cwd).ok())
        .unwrap_or_default();
    let mut out = vec![(
        "echo".to_string(),
        "offline: answers with your words".into(),
    )];
    for (alias, model) in crate::config::aliases::all(&config.aliases) {
        out.push((alias, model));
    }
    // The built-in table names families (`anthropic/claude-sonnet-4-5*`): the family's
    // name is a model a provider takes.
    for (model, w) in crate::context::window::known(&config, &[]) {
        let word = model.trim_end_matches('*').to_string();
        if !out.iter().any(|(m, _)| *m == word) {
            out.push((word, format!("{} tokens", w.context_window)));
        }
    }
    out
}
