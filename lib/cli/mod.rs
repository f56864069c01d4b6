//! The command-line front ends: the only module that knows clap, terminals, colour and exit
//! codes. Each command parses its flags into one resolved context, runs, and maps errors to
//! the exit statuses of DESIGN §8.

mod approve;
#[cfg(test)]
mod boundary;
pub(crate) mod chat;
pub mod dispatch;
mod error;
pub mod fork;
pub mod launch;
pub mod log;
mod mcp_client;
mod output;
pub mod prompt;
pub mod room;
pub mod summon;
pub(crate) mod table;

use std::path::PathBuf;
use std::process::ExitCode;

pub(crate) use error::{CliError, CliResult, Exit};
pub(crate) use output::{escape_controls, paint, program, Out};

use crate::paths::Home;
use crate::store::Store;

/// Flags every command takes.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct GlobalArgs {
    /// The store directory [default: $AG_HOME, else $XDG_DATA_HOME/ag, else ~/.local/share/ag]
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) home: Option<PathBuf>,
    /// Print machine-readable JSON (NDJSON for streams)
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Print nothing on stdout but data that was asked for; no notices on stderr
    #[arg(short, long, global = true)]
    pub(crate) quiet: bool,
    /// Say more on stderr
    #[arg(short, long, global = true)]
    pub(crate) verbose: bool,
    /// When to colour output (NO_COLOR is honoured by `auto`)
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub(crate) color: ColorChoice,
    /// `last` (and `-c`) mean the latest chat session of any directory, not only this one
    #[arg(long, global = true)]
    pub(crate) any: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// What every verb gets: the resolved flags and the place to print.
pub(crate) struct Ctx {
    pub(crate) global: GlobalArgs,
    pub(crate) home: Home,
    pub(crate) out: Out,
    /// This command's participant in rooms, made on first use ([`Ctx::rooms`]).
    rooms: std::sync::Arc<std::sync::OnceLock<crate::room::Rooms>>,
    /// The configuration of this directory, once a verb asked for it ([`Ctx::config`]).
    config: std::sync::Arc<std::sync::OnceLock<crate::config::Config>>,
}

impl Ctx {
    pub(crate) fn new(global: GlobalArgs) -> CliResult<Ctx> {
        let home = Home::resolve(global.home.as_deref()).map_err(CliError::from)?;
        let color = match global.color {
            ColorChoice::Always => Some(true),
            ColorChoice::Never => Some(false),
            ColorChoice::Auto => None,
        };
        let out = Out::new(color, global.quiet, global.verbose);
        Ok(Ctx {
            global,
            home,
            out,
            rooms: Default::default(),
            config: Default::default(),
        })
    }

    /// An unknown session reference gets the sessions it is a near miss of, when there are
    /// any: `ag-log cat parsr` suggests the session titled "parser …".
    fn near_sessions(&self, e: CliError) -> CliError {
        let Some(crate::store::StoreError::SessionNotFound(reference)) = e.error.downcast_ref()
        else {
            return e;
        };
        if !self.home.db_path().exists() {
            return e;
        }
        let near = Store::open(&self.home)
            .and_then(|s| s.near(reference))
            .unwrap_or_default();
        if near.is_empty() {
            return e;
        }
        let hint = error::candidate_lines("did you mean:", &near);
        CliError {
            hint: Some(match &e.hint {
                Some(h) => format!("{hint}\n{h}"),
                None => hint,
            }),
            ..e
        }
    }

    /// The store, with `last` read as this process's scope: `--any`, else `AG_SESSION`, else
    /// this directory's chat sessions, the calling shell's own first.
    pub(crate) fn store(&self) -> CliResult<Store> {
        self.scoped(Store::open(&self.home).map_err(CliError::from)?)
    }

    /// The store for a command that only reads: where none was made yet, an empty one in
    /// memory, so reading creates nothing.
    pub(crate) fn read_store(&self) -> CliResult<Store> {
        if self.home.db_path().exists() {
            return self.store();
        }
        self.scoped(Store::open_empty(&self.home).map_err(CliError::from)?)
    }

    /// The configuration of the current directory, read once for the command (what a project
    /// file was not allowed to set is reported then).
    pub(crate) fn config(&self) -> CliResult<&crate::config::Config> {
        if let Some(c) = self.config.get() {
            return Ok(c);
        }
        let config = load_config(&self.out, &std::env::current_dir()?)?;
        Ok(self.config.get_or_init(|| config))
    }

    /// Take `config`, read from the current directory by the caller, as the command's
    /// configuration, as [`Ctx::config`] would have read it (its key variables withdrawn, its
    /// warnings said).
    pub(crate) fn adopt_config(&self, config: crate::config::Config) {
        adopt(&self.out, &config);
        let _ = self.config.set(config);
    }

    /// The rooms, where the configuration puts them: one participant for the whole command,
    /// so every room it reaches shares one backend (and, on NATS, one connection).
    /// A configuration that does not read leaves rooms that say so at every use (`ag-room
    /// doctor` among them).
    pub(crate) fn rooms(&self) -> crate::room::Rooms {
        if let Err(e) = self.config() {
            let why = format!("{:#}", e.error);
            return self
                .rooms
                .get_or_init(|| crate::room::Rooms::unusable(&self.home, why))
                .clone();
        }
        rooms_of(&self.rooms, &self.config, &self.home)
    }

    fn scoped(&self, mut store: Store) -> CliResult<Store> {
        // A session that ends releases its claims on rooms other machines share; the rooms
        // are made only if one does.
        let (cell, config, home) = (self.rooms.clone(), self.config.clone(), self.home.clone());
        store.on_ended(std::sync::Arc::new(move |s| {
            crate::room::claims::release_ended(&rooms_of(&cell, &config, &home), s);
        }));
        let cwd = std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .ok()
            .map(|d| d.to_string_lossy().into_owned());
        store.set_scope(crate::store::Scope {
            cwd,
            pinned: std::env::var("AG_SESSION")
                .ok()
                .filter(|s| !s.trim().is_empty()),
            any: self.global.any,
            shell: crate::proc::parent(),
        });
        Ok(store)
    }

    /// The end of a command: flush stdout, and say so when its output failed after its change
    /// was stored ([`Out::done`]): exit 74, not an error a caller would retry. A stdout that
    /// was closed from the start (`>&-`) is an error like any failed write.
    pub(crate) fn conclude(&mut self, result: CliResult<()>) -> CliResult<()> {
        let flushed = self.out.flush().map_err(CliError::from);
        let result = result.and(flushed).map_err(|e| self.near_sessions(e));
        match (result, self.out.done_what()) {
            (Err(e), Some(what)) if e.is_stdout_failure() && !e.is_broken_pipe() => {
                let what = what.to_string();
                Err(CliError {
                    exit: Exit::OutputFailed,
                    error: e
                        .error
                        .context(format!("{what}, but its output could not be written")),
                    hint: Some("do not run the command again: that would store it twice".into()),
                })
            }
            (Err(e), _) if e.is_stdout_failure() && e.hint.is_none() && !e.is_broken_pipe() => {
                Err(e.with_hint("stdout is closed or full; redirect it (`>/dev/null` discards it)"))
            }
            (r, _) => r,
        }
    }
}

/// The command's rooms, made once from its configuration: the one a verb read, else read
/// now (quietly: a session ending deep in a command that never needed it). A configuration that
/// does not read leaves rooms that say so at every use.
fn rooms_of(
    rooms: &std::sync::OnceLock<crate::room::Rooms>,
    config: &std::sync::OnceLock<crate::config::Config>,
    home: &Home,
) -> crate::room::Rooms {
    rooms
        .get_or_init(|| {
            let read = config.get().cloned().map(Ok).unwrap_or_else(|| {
                std::env::current_dir()
                    .map_err(|e| e.to_string())
                    .and_then(|d| crate::config::Config::load(&d).map_err(|e| e.to_string()))
            });
            match read {
                Ok(c) => crate::room::Rooms::open(home, &c),
                Err(e) => crate::room::Rooms::unusable(home, e),
            }
        })
        .clone()
}

/// The configuration for `cwd`, reporting on stderr what a project file was not allowed to set.
pub(crate) fn load_config(out: &Out, cwd: &std::path::Path) -> CliResult<crate::config::Config> {
    let config = crate::config::Config::load(cwd).map_err(|e| match e {
        e @ crate::config::ConfigError::OutOfRange { .. } => CliError::usage(e),
        e => CliError::cause(e),
    })?;
    adopt(out, &config);
    Ok(config)
}

/// What a command does with the configuration it read: the variables it names as keys leave
/// the environment too, and its warnings are said.
fn adopt(out: &Out, config: &crate::config::Config) {
    crate::secrets::withdraw_configured(config);
    for w in &config.warnings {
        out.warn(w);
    }
}

/// Say once, on stderr, which model a run uses, what chose it and which host it contacts:
/// a cloned repository must not be able to send a conversation somewhere unnoticed.
pub(crate) fn announce_model(
    out: &Out,
    model: &str,
    origin: &crate::provider::Origin,
    provider: &dyn crate::provider::Provider,
) {
    let to = match provider.host() {
        Some(host) => format!("contacts {host}"),
        None => "offline".to_string(),
    };
    out.note(&format!("model {model} (from {origin}), {to}"));
}

/// `--trust`: record the folder holding the nearest `.ag/` (else the current one) as trusted.
pub(crate) fn trust_here(out: &Out) -> CliResult<()> {
    let cwd = std::env::current_dir()?;
    let folder = crate::config::find_upward(&cwd, ".ag")
        .and_then(|ag| ag.parent().map(std::path::Path::to_path_buf))
        .unwrap_or(cwd);
    let (dir, list) = crate::config::trust(&folder).map_err(|e| CliError::msg(e.to_string()))?;
    out.note(&format!(
        "trusted {}: its project config may choose models, providers and MCP servers (list: {})",
        dir.display(),
        list.display()
    ));
    // Trust approves the project's MCP servers as its `.mcp.json` reads now; a server added
    // or changed later asks again.
    let config = crate::config::Config::load(&std::env::current_dir()?)
        .map_err(|e| CliError::msg(e.to_string()))?;
    let approved = crate::config::mcp_approval::approve_pending(&config)
        .map_err(|e| CliError::msg(e.to_string()))?;
    for u in approved {
        out.note(&format!(
            "approved the MCP server {:?} of {}: {}",
            u.name,
            u.file.display(),
            escape_controls(&u.what(), false)
        ));
    }
    Ok(())
}

/// Run a command's body, render its error, and turn the outcome into an exit status.
pub(crate) fn finish(program: &str, result: CliResult<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            e.render(program);
            ExitCode::from(e.exit.code())
        }
    }
}

/// Parse flags; clap's own errors get the `PROG: ` prefix and exit 2 like every usage error.
///
/// Every command starts here, so this is also where the process becomes non-dumpable, before
/// it reads a key or starts a tool or a child: a command run by `bash` (same user) then
/// cannot read its memory or its `/proc/PID/environ`.
pub(crate) fn parse<T: clap::Parser>(program: &'static str) -> T {
    parse_narrowed(program, |_| None)
}

/// [`parse`], trying `narrow` first: a parse that builds only what the command line names.
/// Whatever `narrow` does not take (`None`) goes to the whole command, which also answers
/// help, versions and errors, so they read the same.
pub(crate) fn parse_narrowed<T: clap::Parser>(
    program: &'static str,
    narrow: impl FnOnce(&[std::ffi::OsString]) -> Option<T>,
) -> T {
    output::set_program(program);
    output::guard_std_fds();
    crate::proc::make_undumpable();
    // Before any thread starts: the built-in key variables leave the environment at once.
    crate::secrets::withdraw(crate::secrets::BUILT_IN);
    // `help` works the same in every command: `PROG help [SUB…]` is `PROG [SUB…] --help`, so
    // `ag-prompt help` is never sent to a model as a prompt.
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "help") {
        argv.remove(1);
        argv.push("--help".into());
    }
    if let Some(t) = narrow(&argv) {
        return t;
    }
    match T::try_parse_from(argv) {
        Ok(t) => t,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                std::process::exit(printed(program, e.print()).into());
            }
            let text = e.render().to_string();
            output::eprint_quiet(&format!("{program}: {text}"));
            std::process::exit(2);
        }
    }
}

/// A `--tools LIST` flag as a policy; a bad list is a usage error naming the flag.
pub(crate) fn tools_flag(list: Option<&str>) -> CliResult<Option<crate::policy::ToolsAsk>> {
    list.map(crate::policy::ToolsAsk::parse)
        .transpose()
        .map_err(|e| CliError::usage(format!("--tools: {e}")))
}

/// The exit status after help or a version went to stdout: 0, also when the reader went away
/// (`--help | head -1`); 1 with the cause when stdout is full or closed, as for any output.
pub(crate) fn printed(program: &str, result: std::io::Result<()>) -> u8 {
    use std::io::Write;
    let result = result
        .and_then(|()| std::io::stdout().flush())
        .and_then(|()| {
            if crate::proc::stdout_closed_at_start() {
                return Err(std::io::Error::from_raw_os_error(libc::EBADF));
            }
            Ok(())
        });
    match result {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            let e = CliError::cause(e)
                .context("cannot write to stdout")
                .with_hint("stdout is closed or full; redirect it (`>/dev/null` discards it)");
            e.render(program);
            e.exit.code()
        }
    }
}
