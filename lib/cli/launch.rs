//! `ag-log`, `ag-prompt`, `ag-fork` and `ag-summon` as installed: each replaces itself with `ag`,
//! the binary that holds every command, under its own name (`argv[0]`), which `ag` runs. Five
//! copies of the library were 97 MB on disk; one is a fifth of that (see docs/decisions.md,
//! "What `cargo install` builds"). `ag-room` is a binary of its own, because hooks and agents
//! run it for every line and its start-up is one `exec`; it holds the room verbs on rooms in
//! files and comes here only for rooms on a server and `ag-room mcp`.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Run `ag` from beside this executable as `name`, with this process's arguments. Returns only
/// when it cannot.
pub fn exec(name: &str) -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let exe = std::env::current_exe();
    let Some(ag) = exe.as_deref().ok().and_then(multi_call) else {
        let why = match &exe {
            Ok(p) => format!("there is no `ag` beside {}", p.display()),
            Err(e) => format!("where this program is cannot be known ({e})"),
        };
        eprintln!(
            "{name}: error: {why}\nhint: {name} runs the `ag` binary installed with it; install both (cargo install puts them together)"
        );
        return ExitCode::from(127);
    };
    // `ag` must see a stdout that was closed (`>&-`) as closed: the standard library put
    // /dev/null there before `main`.
    if crate::proc::stdout_closed_at_start() {
        // SAFETY: close(2) on an integer descriptor; nothing of ours holds fd 1.
        unsafe { libc::close(libc::STDOUT_FILENO) };
    }
    let err = std::process::Command::new(&ag).arg0(name).args(args).exec();
    eprintln!("{name}: error: cannot run {}: {err}", ag.display());
    ExitCode::from(126)
}

/// The `ag` beside `exe`, when there is one.
fn multi_call(exe: &Path) -> Option<PathBuf> {
    let ag = exe.parent()?.join("ag");
    ag.is_file().then_some(ag)
}
