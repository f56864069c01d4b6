//! Starting a child agent as a detached `ag-prompt -s CHILD TASK` process, waiting for it,
//! and reading its answer. Everything goes through the store, so another shell (or a later
//! one, after the parent exited) sees the same children. The checks a summon passes first are
//! in `checks`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::checks::{self, Narrowed};
use super::defs::{AgentDef, Catalog};
pub(crate) use super::error::{SummonError, SummonErrorKind};
use crate::config::Config;
use crate::log::{ChunkData, Role};
use crate::paths::Home;
use crate::policy::Policy;
use crate::proc;
use crate::settings::Settings;
use crate::store::{NewSession, Session, SessionKind, SessionStatus, Store, StoreError};

/// Who spawns: a session (its tools bound the child's), or a person at a shell.
#[derive(Debug, Clone)]
pub(crate) struct Spawner {
    pub(crate) session: Option<Session>,
    /// The spawning session's effective tools; `None` for a person at a shell.
    pub(crate) tools: Option<Policy>,
    /// The spawning session's directory (a person's: the current directory).
    pub(crate) cwd: PathBuf,
}

impl Spawner {
    /// The spawner a shell names: the session `parent` refers to (its cwd, else `here`), else
    /// the person at the shell, in `here`. A session without a stored list of tools has the
    /// read-only default (as `ag-prompt` runs it), which lacks `summon`; damaged settings are
    /// an error.
    pub(crate) fn of_shell(
        store: &Store,
        parent: Option<&str>,
        here: &Path,
    ) -> Result<Spawner, StoreError> {
        Ok(match parent {
            Some(r) => {
                let s = store.resolve(r)?;
                Spawner {
                    tools: Some(s.settings()?.tools()),
                    cwd: s
                        .cwd
                        .clone()
                        .map(PathBuf::from)
                        .unwrap_or_else(|| here.to_path_buf()),
                    session: Some(s),
                }
            }
            None => Spawner {
                session: None,
                tools: None,
                cwd: here.to_path_buf(),
            },
        })
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Request {
    pub(crate) agent: String,
    pub(crate) task: String,
    pub(crate) tools: Option<crate::policy::ToolsAsk>,
    pub(crate) cwd: Option<String>,
    pub(crate) top_level: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Spawned {
    pub(crate) child: Session,
    /// Tools asked for that the child did not get, with the reason.
    pub(crate) dropped: Vec<String>,
    pub(crate) dropped_why: Option<String>,
    /// What the definition's untrusted folder withheld ([`AgentDef::withheld_note`]).
    pub(crate) withheld: Option<String>,
    pub(crate) log: PathBuf,
    pub(crate) pid: i64,
}

impl Spawned {
    /// The never-silent line about dropped tools, if any were.
    pub(crate) fn dropped_note(&self) -> Option<String> {
        (!self.dropped.is_empty()).then(|| {
            format!(
                "tools not granted to {}: {} ({})",
                &self.child.handle,
                self.dropped.join(", "),
                self.dropped_why
                    .as_deref()
                    .unwrap_or("the spawning session lacks them")
            )
        })
    }
}

/// Resolve, create and start a child. Returns once its process is recorded.
pub(crate) fn spawn(
    store: &Store,
    home: &Home,
    config: &Config,
    catalog: &Catalog,
    spawner: &Spawner,
    req: &Request,
) -> Result<Spawned, SummonError> {
    let def = checks::find_def(catalog, config, req)?;
    checks::check_kind(def, req, config)?;
    let spawner_depth = checks::check_may_summon(store, spawner, config)?;
    // Every summon a session makes counts toward the limit, a user agent's too: only a person
    // at a shell starts a user agent at depth 0.
    let child_depth = if req.top_level && spawner.session.is_none() {
        0
    } else {
        spawner_depth + 1
    };
    let may_nest = child_depth <= config.agent.max_summon_depth as usize;
    let Narrowed {
        tools,
        dropped,
        why,
    } = checks::narrow_tools(def, spawner, req, may_nest);
    let cwd = checks::child_dir(def, spawner, req, config)?;
    let model = checks::pick_model(def, spawner, config)?;
    let sandbox = child_sandbox(def, spawner, config)?;
    let grants = (&tools, &sandbox, child_depth);
    let child = create_child(store, def, spawner, req, grants, &model, &cwd)?;
    let (log, pid) = start(store, home, def, req, &child, &model, &cwd).inspect_err(|_| {
        let _ = store.finish_child(&child.id, "failed", None);
    })?;
    let child = store.session(&child.id)?;
    Ok(Spawned {
        child,
        dropped,
        dropped_why: Some(why),
        withheld: def.withheld_note(),
        log,
        pid,
    })
}

/// The child's sandbox: the spawner's binds it (a child never loosens it); the definition and
/// a project file may tighten it. A person at a shell gets the user's.
fn child_sandbox(
    def: &AgentDef,
    spawner: &Spawner,
    config: &Config,
) -> Result<crate::sandbox::Settings, SummonError> {
    let stored = match &spawner.session {
        Some(s) => s.settings()?.sandbox(),
        None => None,
    };
    crate::sandbox::resolve(&crate::sandbox::Sources {
        definition: def.sandbox,
        stored: stored.as_ref(),
        ..config.sandbox_sources()
    })
    .map(|(s, _)| s)
    .map_err(|e| SummonError::new(SummonErrorKind::Usage, e.to_string()))
}

/// The child's session row, created running so no other `ag-prompt` takes it.
fn create_child(
    store: &Store,
    def: &AgentDef,
    spawner: &Spawner,
    req: &Request,
    grants: (&Policy, &crate::sandbox::Settings, usize),
    model: &str,
    cwd: &Path,
) -> Result<Session, SummonError> {
    let kind = if req.top_level {
        SessionKind::UserAgent
    } else {
        SessionKind::Subagent
    };
    let (tools, sandbox, depth) = grants;
    let mut settings = Settings::with_tools(tools);
    settings.set_sandbox(sandbox);
    if req.top_level && depth > 0 {
        settings.summon_depth = u32::try_from(depth).ok();
    }
    settings.system = def.system_prompt.clone();
    let first_line = req
        .task
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut title: String = format!("{}: {first_line}", def.slug)
        .chars()
        .take(60)
        .collect();
    if title.chars().count() == 60 {
        title.push('…');
    }
    Ok(store.create_child(NewSession {
        title,
        kind: Some(kind),
        parent_id: if req.top_level {
            None
        } else {
            spawner.session.as_ref().map(|s| s.id.clone())
        },
        agent: Some(def.slug.clone()),
        model: Some(model.to_string()),
        cwd: Some(cwd.to_string_lossy().into_owned()),
        settings: Some(settings),
        ..Default::default()
    })?)
}

/// Start `ag-prompt -s CHILD` detached, its output in `agents/CHILD.log`, and record its pid.
/// On an error the caller marks the child failed.
fn start(
    store: &Store,
    home: &Home,
    def: &AgentDef,
    req: &Request,
    child: &Session,
    model: &str,
    cwd: &Path,
) -> Result<(PathBuf, i64), SummonError> {
    let fail = |msg: String| SummonError::new(SummonErrorKind::Other, msg);
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
        .ok_or_else(|| fail("cannot find this program's directory".into()))?;
    let prompt_bin = exe_dir.join("ag-prompt");
    let logs = home.dir.join("agents");
    crate::paths::create_private_dir(&logs)
        .map_err(|e| fail(format!("cannot create {}: {e}", logs.display())))?;
    let log = logs.join(format!("{}.log", child.id));
    let out = crate::paths::open_private_append(&log)
        .map_err(|e| fail(format!("cannot open {}: {e}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(|e| fail(format!("cannot open {}: {e}", log.display())))?;
    let mut cmd = Command::new(&prompt_bin);
    cmd.arg("--home")
        .arg(&home.dir)
        .arg("--color")
        .arg("never")
        .arg("-s")
        .arg(&child.id)
        .arg("-m")
        .arg(model);
    if let Some(n) = def.max_steps {
        cmd.arg("--max-steps").arg(n.to_string());
    }
    cmd.arg("--").arg(&req.task);
    use std::os::unix::process::CommandExt;
    cmd.current_dir(cwd)
        .env_remove("AG_SESSION")
        .env_remove("AG_MODEL")
        .env("AG_HOME", &home.dir)
        // The child talks to the provider itself: it gets the keys this process withdrew.
        .envs(crate::secrets::withdrawn())
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .process_group(0);
    let mut proc_child = cmd
        .spawn()
        .map_err(|e| fail(format!("cannot start {}: {e}", prompt_bin.display())))?;
    let pid = proc_child.id() as i64;
    store.record_process(&child.id, pid, proc::start_time(pid))?;
    // Reap it when it ends, so it never lingers as a zombie of this process.
    std::thread::spawn(move || {
        let _ = proc_child.wait();
    });
    Ok((log, pid))
}

/// A child's status as it really is: `running` with a dead process is `interrupted` (and is
/// recorded so); `running` with no process yet for over 30 s is failed too (its spawner
/// died before starting it).
pub(crate) fn effective_status(store: &Store, s: &Session) -> Result<SessionStatus, StoreError> {
    if s.status != SessionStatus::Running {
        if s.status == SessionStatus::Idle
            && matches!(s.kind, SessionKind::Subagent | SessionKind::UserAgent)
            && s.pid.is_none()
        {
            // ag-prompt gave up before its turn (a bad model, say): it set idle.
            return Ok(SessionStatus::Failed);
        }
        return Ok(s.status);
    }
    match s.pid {
        Some(pid) if !proc::alive(pid, s.pid_start) => {
            // It may have finished between our read and now: look again under the update.
            if store.finish_child(&s.id, "interrupted", Some(pid))? {
                Ok(SessionStatus::Interrupted)
            } else {
                Ok(store.session(&s.id)?.status)
            }
        }
        None if crate::clock::now_ms() - s.updated_at > 30_000 => {
            store.finish_child(&s.id, "failed", None)?;
            Ok(SessionStatus::Failed)
        }
        _ => Ok(SessionStatus::Running),
    }
}

/// What a finished (or still running) child has to say.
#[derive(Debug, Clone)]
pub(crate) struct ChildResult {
    pub(crate) session: Session,
    pub(crate) status: SessionStatus,
    pub(crate) answer: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) timed_out: bool,
}

impl ChildResult {
    /// Whether the child finished its task (rather than failing, being cancelled or dying).
    pub(crate) fn succeeded(&self) -> bool {
        self.status == SessionStatus::Done
    }
}

/// Wait until the child is no longer running, or `timeout` passes, or `interrupt` is set.
pub(crate) fn wait(
    store: &Store,
    id: &str,
    timeout: Option<Duration>,
    interrupt: Option<&AtomicBool>,
) -> Result<ChildResult, StoreError> {
    let started = Instant::now();
    loop {
        let s = store.session(id)?;
        let status = effective_status(store, &s)?;
        let out_of_time = timeout.is_some_and(|t| started.elapsed() >= t)
            || interrupt.is_some_and(|i| i.load(Ordering::SeqCst));
        if status != SessionStatus::Running || out_of_time {
            let s = store.session(id)?;
            let (answer, error) = answer(store, &s)?;
            return Ok(ChildResult {
                session: s,
                status,
                answer,
                error,
                timed_out: status == SessionStatus::Running,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last assistant text of the session's last turn, and the last error of that turn.
pub(crate) fn answer(
    store: &Store,
    s: &Session,
) -> Result<(Option<String>, Option<String>), StoreError> {
    let chunks = store.load_view(s)?;
    let Some(last_turn) = chunks.last().map(|c| c.turn.clone()) else {
        return Ok((None, None));
    };
    let mut answer = None;
    let mut error = None;
    for c in chunks.iter().rev().filter(|c| c.turn == last_turn) {
        match &c.data {
            ChunkData::Text { text } if c.role == Role::Assistant && answer.is_none() => {
                answer = Some(text.clone())
            }
            ChunkData::Error { message, .. } if error.is_none() => error = Some(message.clone()),
            _ => {}
        }
    }
    Ok((answer, error))
}

/// What asking a child to stop found and left.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cancelled {
    /// Its status when it was asked.
    pub(crate) was: SessionStatus,
    /// Its status now.
    pub(crate) now: SessionStatus,
}

impl Cancelled {
    /// Whether it was running, so this stopped it (else it had already ended).
    pub(crate) fn stopped(&self) -> bool {
        self.was == SessionStatus::Running
    }
}

/// [`cancel`], saying what it found as well as what it left.
pub(crate) fn cancel_reporting(
    store: &Store,
    s: &Session,
    grace: Duration,
) -> Result<Cancelled, StoreError> {
    let was = effective_status(store, s)?;
    let now = cancel(store, s, grace)?;
    Ok(Cancelled { was, now })
}

/// Send `sig` to the process group a child leads (it was started with `process_group(0)`).
pub(crate) fn signal_group(pid: i64, sig: i32) {
    proc::kill_group(pid, sig);
}

/// Stop a running child: SIGTERM to its group, SIGKILL after `grace`, then `cancelled`.
/// Returns the status it had when it was asked (or `cancelled` when it was stopped).
pub(crate) fn cancel(
    store: &Store,
    s: &Session,
    grace: Duration,
) -> Result<SessionStatus, StoreError> {
    let status = effective_status(store, s)?;
    if status != SessionStatus::Running {
        return Ok(status);
    }
    if let Some(pid) = s.pid {
        if proc::alive(pid, s.pid_start) {
            signal_group(pid, 15);
            let t = Instant::now();
            while t.elapsed() < grace && proc::alive(pid, s.pid_start) {
                std::thread::sleep(Duration::from_millis(50));
            }
            if proc::alive(pid, s.pid_start) {
                signal_group(pid, 9);
                let t = Instant::now();
                while t.elapsed() < Duration::from_secs(2) && proc::alive(pid, s.pid_start) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
    store.finish_child(&s.id, "cancelled", None)?;
    Ok(SessionStatus::Cancelled)
}
