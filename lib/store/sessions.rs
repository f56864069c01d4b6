//! Sessions: their row and types, creation, listing and titles. References (what a person
//! types) are in `refs`, lineage in `lineage`, forks and removal in `forks`.

use rusqlite::{params, OptionalExtension, Row};

use super::{Result, Store, StoreError};
use crate::settings::Settings;
use crate::{clock, ids};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKind {
    Chat,
    Side,
    Subagent,
    UserAgent,
}

impl SessionKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SessionKind::Chat => "chat",
            SessionKind::Side => "side",
            SessionKind::Subagent => "subagent",
            SessionKind::UserAgent => "user_agent",
        }
    }

    pub(crate) fn parse(s: &str) -> SessionKind {
        match s {
            "side" => SessionKind::Side,
            "subagent" => SessionKind::Subagent,
            "user_agent" => SessionKind::UserAgent,
            _ => SessionKind::Chat,
        }
    }
}

/// Which sessions `ls` lists.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    pub(crate) limit: Option<u64>,
    /// Only sessions of this directory.
    pub(crate) cwd: Option<String>,
    pub(crate) kind: Option<SessionKind>,
    /// Only sessions updated at or after this time (unix ms).
    pub(crate) since_ms: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionStatus {
    Idle,
    Running,
    Done,
    Failed,
    Cancelled,
    /// Its owner process died mid-turn (`kill -9`, a crash, a reboot); found and recorded by
    /// whoever reads it next.
    Interrupted,
}

impl SessionStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::Running => "running",
            SessionStatus::Done => "done",
            SessionStatus::Failed => "failed",
            SessionStatus::Cancelled => "cancelled",
            SessionStatus::Interrupted => "interrupted",
        }
    }

    /// Whether a session in this state holds nothing any more (its claims end).
    pub(crate) fn ended(self) -> bool {
        matches!(
            self,
            SessionStatus::Failed | SessionStatus::Cancelled | SessionStatus::Interrupted
        )
    }

    pub(crate) fn parse(s: &str) -> SessionStatus {
        match s {
            "running" => SessionStatus::Running,
            "done" => SessionStatus::Done,
            "failed" => SessionStatus::Failed,
            "cancelled" => SessionStatus::Cancelled,
            "interrupted" => SessionStatus::Interrupted,
            _ => SessionStatus::Idle,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: String,
    /// The short random handle people type (`kqzvxm`); stable for the session's life.
    pub(crate) handle: String,
    pub(crate) title: String,
    pub(crate) kind: SessionKind,
    pub(crate) parent_id: Option<String>,
    pub(crate) fork_of: Option<String>,
    pub(crate) fork_seq: Option<i64>,
    pub(crate) agent: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) cwd: Option<String>,
    /// The durable settings as stored (`policy_json`); read them with [`Session::settings`].
    pub(crate) settings_json: String,
    pub(crate) status: SessionStatus,
    pub(crate) pid: Option<i64>,
    pub(crate) pid_start: Option<i64>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

/// What a new session starts with; everything else has defaults.
#[derive(Debug, Clone, Default)]
pub(crate) struct NewSession {
    /// A chosen id (`--session-id`); a new uuid v7 when `None`.
    pub(crate) id: Option<String>,
    pub(crate) title: String,
    pub(crate) kind: Option<SessionKind>,
    pub(crate) parent_id: Option<String>,
    pub(crate) fork_of: Option<String>,
    pub(crate) fork_seq: Option<i64>,
    pub(crate) agent: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) cwd: Option<String>,
    pub(crate) settings: Option<Settings>,
    /// A job's name for the session (`ag-prompt --name`), unique in its directory.
    pub(crate) name: Option<String>,
}

impl Session {
    /// The fields every JSON form of a session shares (`ag-log ls`/`show --json`, the header
    /// of an NDJSON export): one place, so they cannot drift apart.
    pub(crate) fn json_fields(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "title": self.title,
            "kind": self.kind.as_str(),
            "parent_id": self.parent_id,
            "fork_of": self.fork_of,
            "fork_seq": self.fork_seq,
            "agent": self.agent,
            "model": self.model,
            "cwd": self.cwd,
            "policy": self
                .settings()
                .map(|p| p.to_value())
                .unwrap_or_else(|_| self.settings_json.clone().into()),
            "status": self.status.as_str(),
        })
    }

    /// The session's settings (tools, system prompt); a damaged row is an error.
    pub(crate) fn settings(&self) -> Result<Settings> {
        Settings::from_json(&self.settings_json).map_err(|message| StoreError::BadSettings {
            session: self.id.clone(),
            message,
        })
    }
}

pub(super) const COLUMNS: &str =
    "id, title, kind, parent_id, fork_of, fork_seq, agent, model, cwd, \
                       policy_json, status, pid, pid_start, created_at, updated_at, handle";

pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<Session> {
    Ok(Session {
        id: r.get(0)?,
        title: r.get(1)?,
        kind: SessionKind::parse(&r.get::<_, String>(2)?),
        parent_id: r.get(3)?,
        fork_of: r.get(4)?,
        fork_seq: r.get(5)?,
        agent: r.get(6)?,
        model: r.get(7)?,
        cwd: r.get(8)?,
        settings_json: r.get(9)?,
        status: SessionStatus::parse(&r.get::<_, String>(10)?),
        pid: r.get(11)?,
        pid_start: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
        handle: r.get::<_, Option<String>>(15)?.unwrap_or_default(),
    })
}

impl Store {
    pub(crate) fn create_session(&self, new: NewSession) -> Result<Session> {
        let now = clock::now_ms();
        let id = match new.id {
            Some(id) => {
                if self.session(&id).is_ok() {
                    return Err(StoreError::SessionExists(id));
                }
                id
            }
            None => ids::new_id(),
        };
        let settings = new.settings.unwrap_or_default();
        let shell = self.scope.shell;
        self.conn()
            .execute(
                "INSERT INTO sessions (id, title, kind, parent_id, fork_of, fork_seq, agent, model, \
                 cwd, policy_json, status, created_at, updated_at, shell_pid, shell_start, name) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'idle', ?11, ?11, ?12, ?13, ?14)",
                params![
                    id,
                    new.title,
                    new.kind.unwrap_or(SessionKind::Chat).as_str(),
                    new.parent_id,
                    new.fork_of,
                    new.fork_seq,
                    new.agent,
                    new.model,
                    new.cwd,
                    settings.to_json(),
                    now,
                    shell.map(|s| s.0),
                    shell.map(|s| s.1),
                    new.name,
                ],
            )
            .map_err(|e| match (&new.name, e.sqlite_error_code()) {
                (Some(name), Some(rusqlite::ErrorCode::ConstraintViolation)) => {
                    StoreError::NameTaken(name.clone())
                }
                _ => self.classify(e),
            })?;
        super::refs::assign_handle(self.conn(), &id)?;
        self.session(&id)
    }

    /// The session named `name` in directory `cwd` (`ag-prompt --name`), if there is one.
    pub(crate) fn named(&self, cwd: &str, name: &str) -> Result<Option<Session>> {
        let id: Option<String> = self
            .conn()
            .query_row(
                "SELECT id FROM sessions WHERE cwd = ?1 AND name = ?2",
                params![cwd, name],
                |r| r.get(0),
            )
            .optional()?;
        id.map(|id| self.session(&id)).transpose()
    }

    /// A session by its full id.
    pub fn session(&self, id: &str) -> Result<Session> {
        self.conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()?
            .ok_or_else(|| StoreError::SessionNotFound(id.to_string()))
    }

    /// Sessions, most recently updated first, each with the length of its view.
    pub(crate) fn list_sessions(&self, limit: Option<u64>) -> Result<Vec<(Session, i64)>> {
        self.list_sessions_where(&Listing {
            limit,
            ..Listing::default()
        })
    }

    /// The sessions `which` selects, most recently updated first, with their view lengths.
    pub(crate) fn list_sessions_where(&self, which: &Listing) -> Result<Vec<(Session, i64)>> {
        let mut stmt = self.conn().prepare(&format!(
            "SELECT {COLUMNS}, \
               COALESCE((SELECT MAX(seq) FROM chunks c WHERE c.session_id = s.id), s.fork_seq, 0) \
             FROM sessions s \
             WHERE (?2 IS NULL OR s.cwd = ?2) AND (?3 IS NULL OR s.kind = ?3) \
               AND (?4 IS NULL OR s.updated_at >= ?4) \
             ORDER BY updated_at DESC, id DESC LIMIT ?1"
        ))?;
        let limit = which.limit.map_or(-1, |l| l as i64);
        let kind = which.kind.map(SessionKind::as_str);
        let rows: Vec<(Session, i64)> = stmt
            .query_map(params![limit, which.cwd, kind, which.since_ms], |r| {
                Ok((from_row(r)?, r.get::<_, i64>(16)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows.into_iter().map(|(s, n)| (self.reaped(s), n)).collect())
    }

    pub(crate) fn set_title(&self, id: &str, title: &str) -> Result<()> {
        let n = self
            .conn()
            .execute(
                "UPDATE sessions SET title = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, title, clock::now_ms()],
            )
            .map_err(|e| self.classify(e))?;
        if n == 0 {
            return Err(StoreError::SessionNotFound(id.to_string()));
        }
        Ok(())
    }
}
