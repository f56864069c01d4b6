//! `ag`: one entry point that runs the `ag-*` commands the way git and cargo find their
//! subcommands. `ag log cat last` runs `ag-log cat last`; `ag help` lists the commands;
//! `ag help log` is `ag-log --help`. `ag` holds the five commands itself and runs one when it
//! is started under its name (`argv[0]`, which is how the installed `ag-log` starts it); any
//! other `ag-foo` is looked for beside `ag` first, then on `PATH`, so `ag foo` also runs an
//! `ag-foo` someone else wrote.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Arg, Command};

use super::output;

/// The commands `ag` knows, with what each does.
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    (
        "log",
        "the chunk log: append, cat, tail -f, ls, show, fold, ingest, search, title, rm",
    ),
    (
        "prompt",
        "run a turn of an agent: streaming, tools, queued input, answers for scripts",
    ),
    (
        "chat",
        "talk with an agent at the terminal (ag-prompt --chat): slash commands, /btw, approvals",
    ),
    (
        "fork",
        "fork a session in O(1); --btw asks a read-only side question",
    ),
    (
        "room",
        "sessions, people and hooks talk: rooms, messages, presence, claims",
    ),
    (
        "summon",
        "spawn subagents and user agents; retrieve their answers",
    ),
];

/// The clap command, for the man page and completions (the commands are listed there; their
/// flags belong to their own pages).
pub fn command() -> Command {
    let mut cmd = Command::new("ag")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Run the ag-* commands: `ag log …` is `ag-log …`")
        .after_help(
            "Examples:\n  ag log ls --here          # ag-log ls --here\n  \
             ag prompt -m echo hi      # ag-prompt -m echo hi\n  \
             ag help fork              # ag-fork --help\n\n\
             Any other word runs ag-WORD from beside ag or from PATH.",
        )
        .disable_help_subcommand(true);
    for (name, about) in COMMANDS {
        cmd = cmd.subcommand(
            Command::new(*name)
                .about(*about)
                .disable_help_flag(true)
                .arg(
                    Arg::new("args")
                        .num_args(0..)
                        .trailing_var_arg(true)
                        .allow_hyphen_values(true),
                ),
        );
    }
    cmd
}

pub fn main() -> ExitCode {
    // `ag` carries the room server's client for every command it runs.
    crate::room::carry_servers();
    // One binary, every command: started as `ag-log` (by its launcher, or a link of that
    // name), it is `ag-log`.
    let argv0 = std::env::args_os().next().map(PathBuf::from);
    match argv0.as_deref().and_then(|p| p.file_name()?.to_str()) {
        Some("ag-log") => return super::log::main(),
        Some("ag-prompt") => return super::prompt::main(),
        Some("ag-fork") => return super::fork::main(),
        Some("ag-room") => return super::room::main(),
        Some("ag-summon") => return super::summon::main(),
        _ => {}
    }
    output::set_program("ag");
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let first = args.first().and_then(|a| a.to_str()).map(str::to_string);
    match first.as_deref() {
        None => help(),
        Some("help" | "-h" | "--help") if args.len() == 1 => help(),
        Some("-h" | "--help") => help(),
        Some("help") => {
            // `ag help log [SUB…]` is `ag-log [SUB…] --help`.
            args.remove(0);
            args.push("--help".into());
            run(args)
        }
        Some("-V" | "--version") => {
            let version = format!("ag {}\n", env!("CARGO_PKG_VERSION"));
            ExitCode::from(super::printed(
                "ag",
                std::io::stdout().lock().write_all(version.as_bytes()),
            ))
        }
        Some(w) if w.starts_with('-') => {
            output::eprint_quiet(&format!(
                "ag: error: {w} comes after a command: ag COMMAND [ARGS…]\nhint: `ag help` lists the commands\n"
            ));
            ExitCode::from(2)
        }
        Some(_) => run(args),
    }
}

fn help() -> ExitCode {
    let shown = command()
        .print_help()
        .and_then(|()| std::io::stdout().write_all(b"\n"));
    ExitCode::from(super::printed("ag", shown))
}

/// Replace this process with `ag-NAME ARGS…` (`ag chat …` is `ag-prompt --chat …`): this
/// binary under that name for the commands it holds, else the program found beside it or on
/// `PATH`.
fn run(mut args: Vec<OsString>) -> ExitCode {
    let mut name = args.remove(0).to_string_lossy().into_owned();
    if name == "chat" {
        name = "prompt".into();
        args.insert(0, "--chat".into());
    }
    let program = format!("ag-{name}");
    let ours = COMMANDS
        .iter()
        .any(|(n, _)| *n == name)
        .then(|| std::env::current_exe().ok())
        .flatten();
    let Some(path) = ours.or_else(|| find(&program)) else {
        let known: Vec<&str> = COMMANDS.iter().map(|(n, _)| *n).collect();
        let guess = crate::text::closest(&name, known.iter().copied())
            .map(|g| format!("did you mean `ag {g}`? "))
            .unwrap_or_default();
        output::eprint_quiet(&format!(
            "ag: error: no command {name:?}: {program} is neither beside ag nor on PATH\n\
             hint: {guess}the commands are {}; `ag help` says what each does\n",
            known.join(", ")
        ));
        return ExitCode::from(2);
    };
    let err = std::process::Command::new(&path)
        .arg0(&program)
        .args(args)
        .exec();
    output::eprint_quiet(&format!(
        "ag: error: cannot run {}: {err}\n",
        path.display()
    ));
    ExitCode::from(1)
}

/// Another `ag-*` program: beside this executable, else the first on `PATH`.
pub(crate) fn beside(program: &str) -> Option<PathBuf> {
    find(program)
}

/// `program` beside this executable, else the first on `PATH`.
fn find(program: &str) -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(program)));
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(program))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    beside.into_iter().chain(on_path).find(|p| is_executable(p))
}

fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
