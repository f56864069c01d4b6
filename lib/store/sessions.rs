//! Sessions: their row and types, creation, references (full id, unique prefix, `last`),
//! listing, titles and short ids. Lineage is in `lineage`, forks and removal in `forks`.

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
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Chat => "chat",
            SessionKind::Side => "side",
            SessionKind::Subagent => "subagent",
            SessionKind::UserAgent => "user_agent",
        }
    }

    pub fn parse(s: &str) -> SessionKind {
        match s {
            "side" => SessionKind::Side,
            "subagent" => SessionKind::Subagent,
            "user_agent" => SessionKind::UserAgent,
            _ => SessionKind::Chat,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStatus {
    Idle,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::Running => "running",
            SessionStatus::Done => "done",
            SessionStatus::Failed => "failed",
            SessionStatus::Cancelled => "cancelled",
        }
    }

    fn parse(s: &str) -> SessionStatus {
        match s {
            "running" => SessionStatus::Running,
            "done" => SessionStatus::Done,
            "failed" => SessionStatus::Failed,
            "cancelled" => SessionStatus::Cancelled,
            _ => SessionStatus::Idle,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: String,
    pub title: String,
    pub kind: SessionKind,
    pub parent_id: Option<String>,
    pub fork_of: Option<String>,
    pub fork_seq: Option<i64>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub cwd: Option<String>,
    /// The durable settings as stored (`policy_json`); read them with [`Session::settings`].
    pub settings_json: String,
    pub status: SessionStatus,
    pub pid: Option<i64>,
    pub pid_start: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a new session starts with; everything else has defaults.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub title: String,
    pub kind: Option<SessionKind>,
    pub parent_id: Option<String>,
    pub fork_of: Option<String>,
    pub fork_seq: Option<i64>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub cwd: Option<String>,
    pub settings: Option<Settings>,
}

impl Session {
    /// The session's settings (tools, system prompt); a damaged row is an error.
    pub fn settings(&self) -> Result<Settings> {
        Settings::from_json(&self.settings_json).map_err(|message| StoreError::BadSettings {
            session: self.id.clone(),
            message,
        })
    }
}

pub(super) const COLUMNS: &str =
    "id, title, kind, parent_id, fork_of, fork_seq, agent, model, cwd, \
                       policy_json, status, pid, pid_start, created_at, updated_at";

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
    })
}

impl Store {
    pub fn create_session(&self, new: NewSession) -> Result<Session> {
        let now = clock::now_ms();
        let id = ids::new_id();
        let settings = new.settings.unwrap_or_default();
        self.conn()
            .execute(
                "INSERT INTO sessions (id, title, kind, parent_id, fork_of, fork_seq, agent, model, \
                 cwd, policy_json, status, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'idle', ?11, ?11)",
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
                    now
                ],
            )
            .map_err(|e| self.classify(e))?;
        self.session(&id)
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

    /// Resolve what a person typed: a full id, a unique prefix, or `last`.
    pub fn resolve(&self, reference: &str) -> Result<Session> {
        let reference = reference.trim();
        if reference == "last" {
            return self
                .conn()
                .query_row(
                    &format!(
                        "SELECT {COLUMNS} FROM sessions ORDER BY updated_at DESC, id DESC LIMIT 1"
                    ),
                    [],
                    from_row,
                )
                .optional()?
                .ok_or_else(|| StoreError::SessionNotFound("last".into()));
        }
        if reference.is_empty() || !reference.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(StoreError::SessionNotFound(reference.to_string()));
        }
        let lower = reference.to_ascii_lowercase();
        let mut stmt = self.conn().prepare(&format!(
            "SELECT {COLUMNS} FROM sessions WHERE id >= ?1 AND id < ?1 || 'g' ORDER BY id LIMIT 21"
        ))?;
        let found: Vec<Session> = stmt
            .query_map([&lower], from_row)?
            .collect::<rusqlite::Result<_>>()?;
        match found.len() {
            0 => Err(StoreError::SessionNotFound(reference.to_string())),
            1 => Ok(found.into_iter().next().unwrap()),
            _ => {
                if let Some(exact) = found.iter().find(|s| s.id == lower) {
                    return Ok(exact.clone());
                }
                Err(StoreError::Ambiguous {
                    reference: reference.to_string(),
                    candidates: found.into_iter().map(|s| (s.id, s.title)).collect(),
                })
            }
        }
    }

    /// The most recently updated session (`-c` in `ag-prompt`).
    pub fn last_session(&self) -> Result<Option<Session>> {
        match self.resolve("last") {
            Ok(s) => Ok(Some(s)),
            Err(StoreError::SessionNotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Sessions, most recently updated first, each with the length of its view.
    pub fn list_sessions(&self, limit: Option<u64>) -> Result<Vec<(Session, i64)>> {
        let mut stmt = self.conn().prepare(&format!(
            "SELECT {COLUMNS}, \
               COALESCE((SELECT MAX(seq) FROM chunks c WHERE c.session_id = s.id), s.fork_seq, 0) \
             FROM sessions s ORDER BY updated_at DESC, id DESC LIMIT ?1"
        ))?;
        let limit = limit.map_or(-1, |l| l as i64);
        let rows: Vec<(Session, i64)> = stmt
            .query_map([limit], |r| Ok((from_row(r)?, r.get::<_, i64>(15)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows.into_iter().map(|(s, n)| (self.reaped(s), n)).collect())
    }

    pub fn set_title(&self, id: &str, title: &str) -> Result<()> {
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

impl Store {
    /// The shortest prefix (at least 8 characters) that names this session alone among all
    /// sessions in the store: what tables show, and what a person can type back.
    pub fn short_id(&self, id: &str) -> Result<String> {
        let neighbour = |sql: &str| -> Result<Option<String>> {
            Ok(self
                .conn()
                .query_row(sql, [id], |r| r.get(0))
                .optional()?
                .flatten())
        };
        let before = neighbour("SELECT MAX(id) FROM sessions WHERE id < ?1")?;
        let after = neighbour("SELECT MIN(id) FROM sessions WHERE id > ?1")?;
        let common = |other: &Option<String>| {
            other.as_deref().map_or(0, |o| {
                id.bytes()
                    .zip(o.bytes())
                    .take_while(|(a, b)| a == b)
                    .count()
            })
        };
        let len = (common(&before).max(common(&after)) + 1)
            .max(8)
            .min(id.len());
        Ok(id[..len].to_string())
    }
}
