//! The chat's slash commands. Each maps onto an operation the commands already have: `/btw`
//! is `ag-fork --btw` answered beside the running turn, `/fork` is `ag-fork`, `/compact` is
//! `ag-log compact`, `/export` is `ag-log export`, `/who` `/tell` `/claims` `/inbox` are
//! `ag-room`'s (run as this session); custom commands are prompt files.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::Chat;
use crate::cli::{escape_controls, CliError, CliResult};
use crate::fork::{ChildTools, ForkSpec, Side};
use crate::store::{Session, SessionKind};

/// The built-in commands, for `/help` and completion.
pub(super) const HELP: &[(&str, &str)] = &[
    (
        "btw QUESTION",
        "a read-only side question, answered beside the running turn",
    ),
    ("fork [TITLE]", "continue in an O(1) fork of this session"),
    (
        "compact [INSTRUCTIONS]",
        "summarize what came before the latest turn",
    ),
    (
        "model [MODEL]",
        "show or change the model of the next turns",
    ),
    (
        "tools [LIST]",
        "show or narrow the session's tools (as --tools)",
    ),
    ("who", "who is in this folder's room"),
    (
        "tell [SESSION] TEXT",
        "say something in the room, or to one session",
    ),
    ("claims", "the files claimed in this folder's room"),
    ("inbox", "messages to this session"),
    (
        "resume [N|SESSION]",
        "list this folder's sessions, or continue one",
    ),
    (
        "export [FILE]",
        "write the session as Markdown (or .html, .ndjson) to FILE",
    ),
    ("cost", "tokens and cost of this session"),
    ("help", "this list, and the custom commands"),
    ("quit", "leave (as Ctrl-D)"),
];

/// Names no command file may take.
pub(super) const BUILT_IN: &[&str] = &[
    "btw", "fork", "compact", "model", "tools", "who", "tell", "claims", "inbox", "resume",
    "export", "cost", "help", "quit", "exit",
];

/// Run `/NAME ARGS` (`rest` is `NAME ARGS`). `false`: leave the chat.
pub(super) fn run(chat: &mut Chat<'_>, rest: &str) -> CliResult<bool> {
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let args = args.trim();
    match name {
        "quit" | "exit" => return Ok(false),
        "help" => help(chat),
        "btw" => btw(chat, args),
        "fork" => fork(chat, args)?,
        "compact" => compact(chat, args),
        "model" => model(chat, args),
        "tools" => tools(chat, args)?,
        "who" => room(chat, &["who"], &[]),
        "claims" => room(chat, &["claims"], &[]),
        "inbox" => room(chat, &["inbox"], &[]),
        "tell" => tell(chat, args),
        "resume" => resume(chat, args),
        "export" => export(chat, args),
        "cost" => cost(chat)?,
        _ => match chat.commands.get(name).cloned() {
            Some(cmd) => chat.prompt(cmd.expand(args))?,
            None => {
                let known = BUILT_IN
                    .iter()
                    .copied()
                    .chain(chat.commands.by_name.keys().map(String::as_str));
                let guess = crate::text::closest(name, known)
                    .map(|g| format!(" (did you mean /{g}?)"))
                    .unwrap_or_default();
                chat.print(chat.dim(&escape_controls(
                    &format!("no command /{name}{guess}; /help lists them; //text sends /text"),
                    false,
                )));
            }
        },
    }
    Ok(true)
}

fn help(chat: &Chat<'_>) {
    for (usage, what) in HELP {
        chat.print(format!("  /{usage:<24} {}", chat.dim(what)));
    }
    if !chat.commands.by_name.is_empty() {
        chat.print(chat.dim("custom commands:"));
    }
    for c in chat.commands.by_name.values() {
        let usage = match &c.argument_hint {
            Some(h) => format!("{} {h}", c.name),
            None => c.name.clone(),
        };
        let line = format!("  /{usage:<24} {} ({})", c.summary(), c.source.as_str());
        chat.print(escape_controls(&line, false));
    }
}

/// The session, or a note that there is none yet.
fn needs_session(chat: &Chat<'_>, what: &str) -> Option<Session> {
    let s = chat.session();
    if s.is_none() {
        chat.print(chat.dim(&format!("{what} needs a session: send a prompt first")));
    }
    s
}

fn busy(chat: &Chat<'_>, what: &str) -> bool {
    let busy = chat.turn_runs();
    if busy {
        chat.print(chat.dim(&format!(
            "{what} waits for the running turn to end (Ctrl-C stops it)"
        )));
    }
    busy
}

fn btw(chat: &mut Chat<'_>, question: &str) {
    if question.is_empty() {
        return chat.print(chat.dim("/btw QUESTION"));
    }
    let Some(s) = needs_session(chat, "/btw") else {
        return;
    };
    chat.print(chat.dim(&format!(
        "btw: asking beside the session… ({})",
        escape_controls(&crate::text::headline(question, 40), false)
    )));
    let (env, shared, q) = (chat.env.clone(), chat.shared.clone(), question.to_string());
    let interrupt = Arc::new(AtomicBool::new(false));
    if let Ok(h) = std::thread::Builder::new()
        .name("btw".into())
        .spawn(move || super::turn::btw(env, shared, s.id, q, interrupt))
    {
        chat.helpers.push(h);
    }
}

fn fork(chat: &mut Chat<'_>, title: &str) -> CliResult<()> {
    let Some(s) = needs_session(chat, "/fork") else {
        return Ok(());
    };
    if busy(chat, "/fork") {
        return Ok(());
    }
    let store = chat.ctx.store()?;
    let spec = ForkSpec {
        source: s.clone(),
        at: None,
        title: (!title.is_empty()).then(|| title.to_string()),
        kind: SessionKind::Chat,
        tools: ChildTools::Inherit,
        side: Side::No,
        model: None,
    };
    match crate::fork::fork(&store, spec) {
        Ok((child, _)) => {
            chat.print(chat.dim(&escape_controls(
                &format!(
                    "forked {} at seq {} as {}; the chat goes on in the fork",
                    s.handle,
                    child.fork_seq.unwrap_or(0),
                    child.handle
                ),
                false,
            )));
            *chat.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
            chat.refresh_words();
        }
        Err(crate::fork::ForkError::NoCompletedTurn(_)) => {
            chat.print(chat.dim("nothing to fork yet: the session has no completed turn"))
        }
        Err(e) => super::turn::error(&chat.shared, &e.to_string(), None),
    }
    Ok(())
}

fn compact(chat: &mut Chat<'_>, instructions: &str) {
    let Some(s) = needs_session(chat, "/compact") else {
        return;
    };
    if busy(chat, "/compact") {
        return;
    }
    let (env, shared) = (chat.env.clone(), chat.shared.clone());
    let instructions = (!instructions.is_empty()).then(|| instructions.to_string());
    // Run like a turn: the next prompt waits for it.
    let interrupt = Arc::new(AtomicBool::new(false));
    if let Ok(handle) = std::thread::Builder::new()
        .name("compact".into())
        .spawn(move || super::turn::compact(env, shared, s.id, instructions))
    {
        chat.running = Some(super::Running { handle, interrupt });
    }
}

fn model(chat: &mut Chat<'_>, name: &str) {
    if name.is_empty() {
        let now = chat.shared.status().model.clone();
        return chat.print(escape_controls(
            &format!("model: {now} (`ag-prompt models` lists the others; /model NAME changes it)"),
            false,
        ));
    }
    match crate::provider::resolve(name, &chat.env.config) {
        Ok(_) => {
            chat.args.model = Some(name.to_string());
            chat.shared.status().model = name.to_string();
            chat.print(chat.dim(&escape_controls(
                &format!("the next turns run on {name}"),
                false,
            )));
        }
        Err(e) => super::turn::error(
            &chat.shared,
            &e.to_string(),
            Some("`ag-prompt models` lists the models"),
        ),
    }
}

fn tools(chat: &mut Chat<'_>, list: &str) -> CliResult<()> {
    if list.is_empty() {
        let names = match chat.session() {
            Some(s) => s.settings()?.tools().names(),
            None => {
                let req = chat.turn_request("")?;
                crate::agent::narrow(None, &req).0.names()
            }
        };
        chat.print(format!("tools: {}", names.join(", ")));
        return Ok(());
    }
    match crate::policy::ToolsAsk::parse(list) {
        Ok(_) => {
            chat.args.tools = Some(list.to_string());
            chat.print(chat.dim(&escape_controls(
                &format!("the next turns run with --tools {list} (a session's tools only narrow)"),
                false,
            )));
        }
        Err(e) => super::turn::error(&chat.shared, &e, None),
    }
    Ok(())
}

/// Run `ag-room ARGS` as this session (its output goes straight to the terminal).
fn room(chat: &Chat<'_>, args: &[&str], extra: &[String]) {
    let Some(program) = crate::cli::dispatch::beside("ag-room") else {
        return super::turn::error(
            &chat.shared,
            "ag-room is not installed beside ag-prompt",
            None,
        );
    };
    let mut cmd = std::process::Command::new(program);
    // What the person types meanwhile stays for the chat.
    cmd.args(args)
        .args(extra)
        .current_dir(&chat.env.cwd)
        .stdin(std::process::Stdio::null());
    cmd.env("AG_HOME", &chat.ctx.home.dir);
    if let Some(s) = chat.session() {
        cmd.env("AG_SESSION", &s.id);
    }
    if let Err(e) = cmd.status() {
        super::turn::error(&chat.shared, &format!("cannot run ag-room: {e}"), None);
    }
}

fn tell(chat: &Chat<'_>, args: &str) {
    if args.is_empty() {
        return chat.print(chat.dim("/tell [SESSION] TEXT"));
    }
    let (first, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
    let to_session = !rest.trim().is_empty()
        && chat
            .words
            .lock()
            .is_ok_and(|w| w.sessions.iter().any(|h| h == first));
    match to_session {
        true => room(chat, &["tell", "--to", first], &[rest.trim().to_string()]),
        false => room(chat, &["tell"], &[args.to_string()]),
    }
}

/// This folder's chat sessions, newest first.
pub(super) fn folder_sessions(home: &crate::paths::Home, cwd: &std::path::Path) -> Vec<Session> {
    let Ok(store) = crate::store::Store::open(home) else {
        return Vec::new();
    };
    store
        .list_sessions_where(&crate::store::Listing {
            limit: Some(20),
            cwd: Some(cwd.to_string_lossy().into_owned()),
            kind: Some(SessionKind::Chat),
            since_ms: None,
        })
        .map(|v| v.into_iter().map(|(s, _)| s).collect())
        .unwrap_or_default()
}

fn resume(chat: &mut Chat<'_>, which: &str) {
    let sessions = folder_sessions(&chat.ctx.home, &chat.env.cwd);
    if which.is_empty() {
        if sessions.is_empty() {
            return chat.print(chat.dim("no sessions in this folder yet"));
        }
        for (i, s) in sessions.iter().enumerate() {
            let line = format!(
                "  {:>2}  {:<18} {}",
                i + 1,
                s.handle,
                crate::text::headline(&s.title, 60)
            );
            chat.print(escape_controls(&line, false));
        }
        return chat.print(chat.dim("/resume N or /resume HANDLE continues one"));
    }
    if busy(chat, "/resume") {
        return;
    }
    let picked = which
        .parse::<usize>()
        .ok()
        .and_then(|n| sessions.get(n.wrapping_sub(1)).cloned())
        .or_else(|| {
            let store = crate::store::Store::open(&chat.ctx.home).ok()?;
            store.resolve(which).ok()
        });
    match picked {
        Some(s) => {
            let line = format!(
                "resumed {} · {}",
                s.handle,
                crate::text::headline(&s.title, 60)
            );
            chat.print(chat.shared.paint("1", &escape_controls(&line, false)));
            if let Ok(store) = chat.ctx.store() {
                super::turn::refresh_status(&chat.shared, &store, &chat.env, &s);
            }
            *chat.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
        }
        None => super::turn::error(
            &chat.shared,
            &format!("no session {which:?}"),
            Some("/resume lists this folder's sessions"),
        ),
    }
}

fn export(chat: &Chat<'_>, file: &str) {
    let Some(s) = needs_session(chat, "/export") else {
        return;
    };
    let file = match file {
        "" => format!("{}.md", s.handle),
        f => f.to_string(),
    };
    let format = match std::path::Path::new(&file)
        .extension()
        .and_then(|e| e.to_str())
    {
        Some("html") => "html",
        Some("ndjson" | "jsonl") => "ndjson",
        _ => "md",
    };
    let Some(program) = crate::cli::dispatch::beside("ag-log") else {
        return super::turn::error(
            &chat.shared,
            "ag-log is not installed beside ag-prompt",
            None,
        );
    };
    let status = std::process::Command::new(program)
        .args(["export", &s.id, "--format", format, "-o", &file])
        .current_dir(&chat.env.cwd)
        .stdin(std::process::Stdio::null())
        .env("AG_HOME", &chat.ctx.home.dir)
        .status();
    match status {
        Ok(st) if st.success() => {
            chat.print(chat.dim(&escape_controls(&format!("wrote {file}"), false)))
        }
        Ok(_) => {}
        Err(e) => super::turn::error(&chat.shared, &format!("cannot run ag-log: {e}"), None),
    }
}

fn cost(chat: &Chat<'_>) -> CliResult<()> {
    let Some(s) = needs_session(chat, "/cost") else {
        return Ok(());
    };
    let store = chat.ctx.store()?;
    let u = store.usage(&s).map_err(CliError::from)?;
    let price = match u.cost_usd {
        c if c > 0.0 => format!("${c:.4}"),
        _ => "no price known for its model".into(),
    };
    chat.print(format!(
        "session {}: {} turns · {} in · {} out · {} cache read · {} cache write · {price}",
        s.handle, u.turns, u.input, u.output, u.cache_read, u.cache_write
    ));
    Ok(())
}
