//! Starting a child agent as a detached `ag-prompt -s CHILD TASK` process, waiting for it,
//! and reading its answer. Everything goes through the store, so another shell (or a later
//! one, after the parent exited) sees the same children.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::defs::{AgentDef, Catalog};
use crate::config::Config;
use crate::log::{ChunkData, Role};
use crate::paths::Home;
use crate::policy::Policy;
use crate::proc;
use crate::store::{NewSession, Session, SessionKind, SessionStatus, Store, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummonErrorKind {
    /// Bad input: an unknown agent, a wrong kind of definition, a cwd that does not exist.
    Usage,
    /// Not allowed: the user-agent permission, nesting, a cwd outside the parent's.
    Refused,
    NotFound,
    Other,
}

#[derive(Debug, Clone)]
pub struct SummonError {
    pub kind: SummonErrorKind,
    pub message: String,
    pub hint: Option<String>,
}

impl SummonError {
    fn new(kind: SummonErrorKind, message: impl Into<String>) -> SummonError {
        SummonError {
            kind,
            message: message.into(),
            hint: None,
        }
    }
    fn hint(mut self, h: impl Into<String>) -> SummonError {
        self.hint = Some(h.into());
        self
    }
}

impl std::fmt::Display for SummonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

impl From<StoreError> for SummonError {
    fn from(e: StoreError) -> Self {
        let kind = match e {
            StoreError::SessionNotFound(_) => SummonErrorKind::NotFound,
            _ => SummonErrorKind::Other,
        };
        SummonError::new(kind, e.to_string())
    }
}

/// Who spawns: a session (its tools bound the child's), or a person at a shell.
#[derive(Debug, Clone)]
pub struct Spawner {
    pub session: Option<Session>,
    /// The spawning session's effective tools; `None` for a person at a shell.
    pub tools: Option<Policy>,
    /// The spawning session's directory (a person's: the current directory).
    pub cwd: PathBuf,
}

#[derive(Debug, Clone, Default)]
pub struct Request {
    pub agent: String,
    pub task: String,
    pub tools: Option<Policy>,
    pub cwd: Option<String>,
    pub top_level: bool,
}

#[derive(Debug, Clone)]
pub struct Spawned {
    pub child: Session,
    /// Tools asked for that the child did not get, with the reason.
    pub dropped: Vec<String>,
    pub dropped_why: Option<String>,
    pub log: PathBuf,
    pub pid: i64,
}

impl Spawned {
    /// The never-silent line about dropped tools, if any were.
    pub fn dropped_note(&self) -> Option<String> {
        (!self.dropped.is_empty()).then(|| {
            format!(
                "tools not granted to {}: {} ({})",
                crate::ids::short(&self.child.id),
                self.dropped.join(", "),
                self.dropped_why
                    .as_deref()
                    .unwrap_or("the spawning session lacks them")
            )
        })
    }
}

/// How many subagent hops lie above (and including) `session`.
pub fn depth(store: &Store, session: &Session) -> usize {
    let mut d = 0;
    let mut cur = session.clone();
    while cur.kind == SessionKind::Subagent && d < 64 {
        d += 1;
        match cur.parent_id.as_deref().map(|p| store.session(p)) {
            Some(Ok(p)) => cur = p,
            _ => break,
        }
    }
    d
}

fn resolve_dir(base: &Path, asked: &str) -> Result<PathBuf, SummonError> {
    let expanded = match asked.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(rest))
            .unwrap_or_else(|| PathBuf::from(asked)),
        None => PathBuf::from(asked),
    };
    let joined = base.join(expanded);
    std::fs::canonicalize(&joined).map_err(|e| {
        SummonError::new(
            SummonErrorKind::Usage,
            format!("working directory {} cannot be used: {e}", joined.display()),
        )
    })
}

/// The model a child runs on: the first of the definition's that resolves, else the
/// spawner's, else `AG_MODEL`, else the configuration's.
fn pick_model(def: &AgentDef, spawner: &Spawner, config: &Config) -> Result<String, SummonError> {
    let mut tried = Vec::new();
    for m in &def.models {
        match crate::provider::resolve(m, config) {
            Ok(_) => return Ok(m.clone()),
            Err(e) => tried.push(format!("{m}: {e}")),
        }
    }
    if !def.models.is_empty() {
        return Err(SummonError::new(
            SummonErrorKind::Usage,
            format!(
                "none of agent {}'s models can be used: {}",
                def.slug,
                tried.join("; ")
            ),
        ));
    }
    spawner
        .session
        .as_ref()
        .and_then(|s| s.model.clone())
        .or_else(|| std::env::var("AG_MODEL").ok().filter(|m| !m.trim().is_empty()))
        .or_else(|| config.model.clone())
        .ok_or_else(|| {
            SummonError::new(
                SummonErrorKind::Usage,
                format!("agent {} names no model and none is configured", def.slug),
            )
            .hint("add `models = [\"…\"]` to the definition, set AG_MODEL, or set `model` in .ag/config.toml")
        })
}

/// Resolve, create and start a child. Returns once its process is recorded.
pub fn spawn(
    store: &Store,
    home: &Home,
    config: &Config,
    catalog: &Catalog,
    spawner: &Spawner,
    req: &Request,
) -> Result<Spawned, SummonError> {
    let def = catalog.get(&req.agent).ok_or_else(|| {
        let known: Vec<&str> = catalog
            .defs
            .values()
            .filter(|d| d.is_subagent || config.user_agents_allowed())
            .map(|d| d.slug.as_str())
            .collect();
        SummonError::new(
            SummonErrorKind::NotFound,
            format!(
                "no agent named {:?} (known: {})",
                req.agent,
                known.join(", ")
            ),
        )
        .hint("`ag-summon agents` lists the definitions")
    })?;
    if req.top_level {
        if !config.user_agents_allowed() {
            return Err(SummonError::new(
                SummonErrorKind::Refused,
                "user agents are not permitted: top_level needs `[permissions] user_agents = \"allow\"`",
            )
            .hint("set it in .ag/config.toml or $XDG_CONFIG_HOME/ag/config.toml"));
        }
        if def.is_subagent {
            return Err(SummonError::new(
                SummonErrorKind::Usage,
                format!("agent {} is a subagent definition; a user agent needs one with is_subagent = false", def.slug),
            ));
        }
    } else if !def.is_subagent {
        return Err(SummonError::new(
            SummonErrorKind::Usage,
            format!("agent {} is not a subagent definition (is_subagent = false)", def.slug),
        )
        .hint("start it as a user agent with --top-level (top_level=true), if user agents are permitted"));
    }

    // Nesting: a subagent spawns only while the depth limit allows.
    let max = config.agent.max_summon_depth as usize;
    let spawner_depth = spawner.session.as_ref().map_or(0, |s| depth(store, s));
    if spawner_depth > max {
        return Err(SummonError::new(
            SummonErrorKind::Refused,
            "a subagent cannot summon: nesting is off",
        )
        .hint("raise `[agent] max_summon_depth` in the configuration to allow nested subagents"));
    }
    // A spawning session must itself hold `summon`: its tools only narrowing the child's
    // would let a session without it start agents from its `bash` tool. A person at a shell
    // (no session) is not restricted.
    if let (Some(s), Some(t)) = (&spawner.session, &spawner.tools) {
        if !t.allows("summon") {
            let short = store.short_id(&s.id).unwrap_or_else(|_| s.id.clone());
            let names = t.names();
            let have = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            return Err(SummonError::new(
                SummonErrorKind::Refused,
                format!("session {short} may not summon: its tools ({have}) lack `summon`"),
            )
            .hint("only a session started with the summon tool (e.g. `ag-prompt --tools read,summon`) may spawn agents"));
        }
    }

    // Tools: (requested, else the definition's) ∩ the spawner's effective tools.
    let def_tools = def.policy();
    let (asked, limit) = match (&spawner.tools, &req.tools) {
        (Some(parent), Some(asked)) => (asked.clone(), parent.clone()),
        (Some(parent), None) => (def_tools.clone(), parent.clone()),
        (None, Some(asked)) => (asked.clone(), def_tools.clone()),
        (None, None) => (def_tools.clone(), def_tools.clone()),
    };
    let mut tools = asked.intersect(&limit);
    let mut dropped = asked.dropped_by(&limit);
    let mut why = if spawner.tools.is_some() {
        "the spawning session lacks them".to_string()
    } else {
        format!("agent {} does not have them", def.slug)
    };
    let child_depth = if req.top_level { 0 } else { spawner_depth + 1 };
    if child_depth > max {
        let nest: Vec<String> = ["summon", "retrieve"]
            .iter()
            .filter(|t| tools.allows(t))
            .map(|s| s.to_string())
            .collect();
        if !nest.is_empty() {
            tools = tools.intersect(&Policy::of(
                tools
                    .names()
                    .iter()
                    .map(String::as_str)
                    .filter(|t| !nest.iter().any(|n| n == t)),
            ));
            why.push_str("; summon/retrieve: nesting is off");
            dropped.extend(nest);
        }
    }

    // Directory.
    let cwd = if req.top_level {
        let default = std::env::current_dir().unwrap_or_else(|_| spawner.cwd.clone());
        match req.cwd.as_deref().or(def.cwd.as_deref()) {
            Some(asked) => resolve_dir(&default, asked)?,
            None => std::fs::canonicalize(&default).unwrap_or(default),
        }
    } else {
        let parent = std::fs::canonicalize(&spawner.cwd).map_err(|e| {
            SummonError::new(
                SummonErrorKind::Other,
                format!(
                    "the parent's directory {} cannot be used: {e}",
                    spawner.cwd.display()
                ),
            )
        })?;
        match req.cwd.as_deref().or(def.cwd.as_deref()) {
            Some(asked) => {
                let resolved = resolve_dir(&parent, asked)?;
                if !resolved.starts_with(&parent) {
                    return Err(SummonError::new(
                        SummonErrorKind::Refused,
                        format!(
                            "working directory {asked:?} resolves to {}, outside the parent's directory {}",
                            resolved.display(),
                            parent.display()
                        ),
                    )
                    .hint("a subagent's directory must lie inside its parent's"));
                }
                resolved
            }
            None => parent,
        }
    };

    let model = pick_model(def, spawner, config)?;
    let kind = if req.top_level {
        SessionKind::UserAgent
    } else {
        SessionKind::Subagent
    };
    let mut policy = json!({});
    tools.store_in(&mut policy);
    if let Some(sys) = &def.system_prompt {
        policy["system"] = sys.clone().into();
    }
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
    let child = store.create_child(NewSession {
        title,
        kind: Some(kind),
        parent_id: if req.top_level {
            None
        } else {
            spawner.session.as_ref().map(|s| s.id.clone())
        },
        agent: Some(def.slug.clone()),
        model: Some(model.clone()),
        cwd: Some(cwd.to_string_lossy().into_owned()),
        policy: Some(policy),
        ..Default::default()
    })?;

    let fail = |msg: String| -> SummonError {
        let _ = store.finish_child(&child.id, "failed", None);
        SummonError::new(SummonErrorKind::Other, msg)
    };
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
        .arg(&model);
    if let Some(n) = def.max_steps {
        cmd.arg("--max-steps").arg(n.to_string());
    }
    cmd.arg("--").arg(&req.task);
    use std::os::unix::process::CommandExt;
    cmd.current_dir(&cwd)
        .env_remove("AG_SESSION")
        .env_remove("AG_MODEL")
        .env("AG_HOME", &home.dir)
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
    let child = store.session(&child.id)?;
    Ok(Spawned {
        child,
        dropped,
        dropped_why: Some(why),
        log,
        pid,
    })
}

/// A child's status as it really is: `running` with a dead process is `failed` (and is
/// recorded so); `running` with no process yet for over 30 s is failed too (its spawner
/// died before starting it).
pub fn effective_status(store: &Store, s: &Session) -> Result<SessionStatus, StoreError> {
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
            if store.finish_child(&s.id, "failed", Some(pid))? {
                Ok(SessionStatus::Failed)
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
pub struct ChildResult {
    pub session: Session,
    pub status: SessionStatus,
    pub answer: Option<String>,
    pub error: Option<String>,
    pub timed_out: bool,
}

/// Wait until the child is no longer running, or `timeout` passes, or `interrupt` is set.
pub fn wait(
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
pub fn answer(store: &Store, s: &Session) -> Result<(Option<String>, Option<String>), StoreError> {
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

/// Send `sig` to the process group a child leads.
pub fn signal_group(pid: i64, sig: i32) {
    extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    if pid > 1 {
        // SAFETY: kill(2) takes two integers and touches no memory of ours; the negative pid
        // names the process group the child leads (it was started with process_group(0)).
        unsafe {
            kill(-(pid as i32), sig);
        }
    }
}

/// Stop a running child: SIGTERM to its group, SIGKILL after `grace`, then `cancelled`.
/// Returns the status it had when it was asked (or `cancelled` when it was stopped).
pub fn cancel(store: &Store, s: &Session, grace: Duration) -> Result<SessionStatus, StoreError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn child() -> NewSession {
        NewSession {
            title: "finder: q".into(),
            kind: Some(SessionKind::Subagent),
            agent: Some("finder".into()),
            model: Some("echo".into()),
            policy: Some(json!({"tools": ["read"]})),
            ..Default::default()
        }
    }

    #[test]
    fn summon_child_is_created_running_in_one_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_path(&dir.path().join("ag.db")).unwrap();
        let c = store.create_child(child()).unwrap();
        assert_eq!(c.status, SessionStatus::Running);
        assert_eq!(c.pid, None);
        assert_eq!(c.model.as_deref(), Some("echo"));
        assert_eq!(c.policy["tools"], json!(["read"]));

        // When the starting mark fails, the row goes with it: no idle child is left for
        // another `ag-prompt` to take.
        store
            .conn()
            .execute_batch(
                "CREATE TRIGGER no_start BEFORE UPDATE OF status ON sessions \
                 WHEN NEW.status = 'running' BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            )
            .unwrap();
        assert!(store.create_child(child()).is_err());
        let n: i64 = store
            .conn()
            .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }
}
