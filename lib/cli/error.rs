//! Errors as the user sees them: `PROG: error: …`, `  caused by: …`, `hint: …`, and the exit
//! status that goes with each kind (DESIGN §8).

use std::fmt::Write as _;
use std::io;

use crate::store::StoreError;

/// Exit statuses (DESIGN §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Error,
    Usage,
    Conflict,
    NotFound,
    /// `ag-prompt --max-cost`: the turn stopped cleanly before it would pass the budget.
    BudgetSpent,
    /// The newest message alone is more than the model's window.
    TooLarge,
    /// The command's change was stored, but its output could not be written: do not retry.
    OutputFailed,
    TempFail,
    Interrupted,
}

impl Exit {
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::Error => 1,
            Exit::Usage => 2,
            Exit::Conflict => 3,
            Exit::NotFound => 4,
            Exit::BudgetSpent => 5,
            Exit::TooLarge => 6,
            Exit::OutputFailed => 74,
            Exit::TempFail => 75,
            Exit::Interrupted => 130,
        }
    }
}

#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) exit: Exit,
    pub(crate) error: anyhow::Error,
    pub(crate) hint: Option<String>,
}

pub(crate) type CliResult<T> = Result<T, CliError>;

impl CliError {
    pub(crate) fn new(exit: Exit, message: impl std::fmt::Display) -> CliError {
        CliError {
            exit,
            error: anyhow::anyhow!("{message}"),
            hint: None,
        }
    }

    /// A library error with its chain of causes (rendered as `caused by:` lines).
    pub(crate) fn cause(e: impl std::error::Error + Send + Sync + 'static) -> CliError {
        CliError {
            exit: Exit::Error,
            error: anyhow::Error::new(e),
            hint: None,
        }
    }

    pub(crate) fn msg(message: impl std::fmt::Display) -> CliError {
        CliError::new(Exit::Error, message)
    }

    pub(crate) fn usage(message: impl std::fmt::Display) -> CliError {
        CliError::new(Exit::Usage, message)
    }

    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> CliError {
        self.hint = Some(hint.into());
        self
    }

    pub(crate) fn context(
        mut self,
        what: impl std::fmt::Display + Send + Sync + 'static,
    ) -> CliError {
        self.error = self.error.context(what);
        self
    }

    pub(crate) fn is_broken_pipe(&self) -> bool {
        self.error.chain().any(|c| {
            c.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
        })
    }

    /// Whether this is a failed write to stdout (see [`super::output::StdoutFailed`]).
    pub(crate) fn is_stdout_failure(&self) -> bool {
        self.error.chain().any(|c| {
            c.downcast_ref::<io::Error>()
                .is_some_and(super::output::is_stdout_failure)
        })
    }

    pub(crate) fn render(&self, program: &str) {
        let mut s = String::new();
        let mut chain = self.error.chain();
        match chain.next() {
            // An empty message is a status without an error (`search` that matched nothing).
            Some(top) if top.to_string().is_empty() => return,
            Some(top) => {
                let _ = writeln!(s, "{program}: error: {top}");
            }
            None => {}
        }
        for cause in chain {
            let _ = writeln!(s, "  caused by: {cause}");
        }
        if let Some(h) = &self.hint {
            let _ = writeln!(s, "hint: {h}");
        }
        super::output::eprint_quiet(&super::escape_controls(&s, true));
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        CliError {
            exit: Exit::Error,
            error: e.into(),
            hint: None,
        }
    }
}

impl From<crate::paths::HomeError> for CliError {
    fn from(e: crate::paths::HomeError) -> Self {
        CliError {
            exit: Exit::Error,
            error: e.into(),
            hint: Some("pass --home DIR or set AG_HOME to a writable directory".into()),
        }
    }
}

/// `intro`, then one line per candidate: its handle, title, kind, directory and age.
pub(crate) fn candidate_lines(intro: &str, candidates: &[crate::store::Candidate]) -> String {
    let now = crate::clock::now_ms();
    let mut h = String::from(intro);
    for c in candidates {
        let _ = write!(
            h,
            "\n  {}  {}  ({}, {}, {} ago)",
            c.handle,
            c.title,
            c.kind,
            if c.cwd.is_empty() {
                "no directory"
            } else {
                &c.cwd
            },
            crate::clock::age(c.updated_at, now)
        );
    }
    h
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> Self {
        let (exit, hint) = exit_and_hint(&e);
        CliError {
            exit,
            error: e.into(),
            hint,
        }
    }
}

fn recover_hint(db: &std::path::Path) -> String {
    let db = db.display();
    format!(
        "recover what it holds into a new file: sqlite3 {db} .recover | sqlite3 recovered.db; \
         keep the damaged file, then move recovered.db to {db}"
    )
}

/// The exit status and hint that go with a store error.
pub(crate) fn exit_and_hint(e: &StoreError) -> (Exit, Option<String>) {
    {
        match e {
            StoreError::SearchIndex(cause) => exit_and_hint(cause),
            StoreError::DiskFull { .. } => (
                Exit::Error,
                Some("free space on that file system and run the command again; commands that only read still work".into()),
            ),
            StoreError::Damaged { path, .. } => (Exit::Error, Some(recover_hint(path))),
            StoreError::Sql(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
                (Exit::Error, Some(recover_hint(std::path::Path::new("ag.db"))))
            }
            StoreError::SessionNotFound(_) => (
                Exit::NotFound,
                Some("`ag-log ls` lists sessions; a reference is a handle, a full id or unique prefix, a title or title fragment, `last` or `last~N`".to_string()),
            ),
            StoreError::Ambiguous { candidates, .. } => (
                Exit::Usage,
                Some(candidate_lines("type one of these handles:", candidates)),
            ),
            StoreError::NoLast { own_only: true, nearest, .. } => {
                let why = "without a terminal (a cron job, a CI step), -c continues only a session this job's shell made; \
                           --name NAME continues the same session on every run";
                let hint = match nearest.is_empty() {
                    true => why.to_string(),
                    false => format!("{why}\n{}", candidate_lines("or pass -s HANDLE; nearest:", nearest)),
                };
                (Exit::NotFound, Some(hint))
            }
            StoreError::NoLast { nearest, .. } if nearest.is_empty() => (
                Exit::NotFound,
                Some("start one with: ag-prompt --new 'hello', or ag-log append --new 'hello'".to_string()),
            ),
            StoreError::NoLast { nearest, .. } => (
                Exit::NotFound,
                Some(candidate_lines(
                    "pass -s HANDLE (or --any for the latest chat session anywhere); nearest:",
                    nearest,
                )),
            ),
            StoreError::SessionExists(_) => (Exit::Conflict, None),
            StoreError::TurnNotFound { session, .. } => (
                Exit::NotFound,
                Some(format!("`ag-log cat {session}` shows each turn's handle in its header")),
            ),
            StoreError::HasForks { .. } => (Exit::Conflict, None),
            StoreError::Running { .. } => (
                Exit::Conflict,
                Some("wait for its turn to end, or stop it (Ctrl-C, `ag-summon cancel`)".to_string()),
            ),
            StoreError::Busy => (
                Exit::Conflict,
                Some("another ag process is writing; try again".to_string()),
            ),
            StoreError::NotADatabase { .. } => (
                Exit::Error,
                Some("point --home or AG_HOME at an ag store, or move the file away".to_string()),
            ),
            StoreError::ReadOnly { .. } => (
                Exit::Error,
                Some("make the store writable, or pass --home DIR to use another one".to_string()),
            ),
            StoreError::TooNew { .. } => (
                Exit::Error,
                Some("upgrade ag, or pass --home DIR to use another store".to_string()),
            ),
            StoreError::Open { .. } | StoreError::Home(_) => (
                Exit::Error,
                Some("pass --home DIR or set AG_HOME to a writable directory".to_string()),
            ),
            _ => (Exit::Error, None),
        }
    }
}
