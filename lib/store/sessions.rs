//! Sessions: creation, references (full id, unique prefix, `last`), listing, lineage, removal.

use rusqlite::{params, OptionalExtension, Row, TransactionBehavior};
use serde_json::Value;

use super::{Result, Store, StoreError};
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
    /// Allowed tools and prompt sections; durable so a rename or a resume never loses it.
    pub policy: Value,
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
    pub policy: Option<Value>,
}

pub(super) const COLUMNS: &str =
    "id, title, kind, parent_id, fork_of, fork_seq, agent, model, cwd, \
                       policy_json, status, pid, pid_start, created_at, updated_at";

pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<Session> {
    let policy: String = r.get(9)?;
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
        policy: serde_json::from_str(&policy).unwrap_or(Value::Object(Default::default())),
        status: SessionStatus::parse(&r.get::<_, String>(10)?),
        pid: r.get(11)?,
        pid_start: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
    })
}

/// One segment of a session's view: the chunks of `session` with `lo < seq <= hi`.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub session: String,
    pub lo: i64,
    pub hi: i64,
}

impl Store {
    pub fn create_session(&self, new: NewSession) -> Result<Session> {
        let now = clock::now_ms();
        let id = ids::new_id();
        let policy = new
            .policy
            .unwrap_or_else(|| Value::Object(Default::default()));
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
                    policy.to_string(),
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
        let rows = stmt
            .query_map([limit], |r| Ok((from_row(r)?, r.get::<_, i64>(15)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
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

    /// The sessions forked directly from `id`.
    pub fn forks_of(&self, id: &str) -> Result<Vec<String>> {
        let mut stmt = self
            .conn()
            .prepare("SELECT id FROM sessions WHERE fork_of = ?1 ORDER BY id")?;
        let rows = stmt
            .query_map([id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Remove a session, its chunks, queued input and index entries. A session that others
    /// fork from is refused unless `cascade`, which removes the forks (recursively) first.
    /// Returns the ids removed.
    pub fn remove_session(&self, id: &str, cascade: bool) -> Result<Vec<String>> {
        self.remove_tree(id, cascade).map_err(|e| match e {
            StoreError::Sql(e) => self.classify(e),
            e => e,
        })
    }

    fn remove_tree(&self, id: &str, cascade: bool) -> Result<Vec<String>> {
        let tx = rusqlite::Transaction::new_unchecked(self.conn(), TransactionBehavior::Immediate)
            .map_err(|e| self.classify(e))?;
        // Collect the fork tree, leaves last, so children go before their sources.
        let mut order = vec![id.to_string()];
        let mut i = 0;
        while i < order.len() {
            let mut stmt = tx.prepare_cached("SELECT id FROM sessions WHERE fork_of = ?1")?;
            let kids: Vec<String> = stmt
                .query_map([&order[i]], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            if i == 0 && !kids.is_empty() && !cascade {
                return Err(StoreError::HasForks {
                    id: id.to_string(),
                    forks: kids,
                });
            }
            order.extend(kids);
            i += 1;
        }
        for sid in order.iter().rev() {
            tx.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE session_id = ?1)",
                [sid],
            )?;
            tx.execute("DELETE FROM chunks WHERE session_id = ?1", [sid])?;
            tx.execute("DELETE FROM queued_input WHERE session_id = ?1", [sid])?;
            // Subagents outlive their parent as independent sessions.
            tx.execute(
                "UPDATE sessions SET parent_id = NULL WHERE parent_id = ?1",
                [sid],
            )?;
            tx.execute("DELETE FROM sessions WHERE id = ?1", [sid])?;
        }
        // Rowids of removed chunks may be handed out again: make sure the index catches up
        // from below any reused one.
        tx.execute(
            "UPDATE fts_state SET last_rowid = MIN(last_rowid, (SELECT COALESCE(MAX(rowid), 0) FROM chunks)) WHERE id = 1",
            [],
        )?;
        tx.commit().map_err(|e| self.classify(e))?;
        Ok(order)
    }

    /// The lineage of a session, oldest ancestor first: `(session, fork_seq)` pairs where
    /// `fork_seq` is the last seq the next one down inherits.
    pub fn lineage(&self, session: &Session) -> Result<Vec<Session>> {
        let mut chain = vec![session.clone()];
        let mut cur = session.clone();
        while let Some(src) = cur.fork_of.clone() {
            if chain.len() > 10_000 || chain.iter().any(|s| s.id == src) {
                return Err(StoreError::Invalid(format!(
                    "session {} has a cyclic fork lineage",
                    session.id
                )));
            }
            let parent = self.session(&src)?;
            chain.push(parent.clone());
            cur = parent;
        }
        chain.reverse();
        Ok(chain)
    }

    /// The segments that make up a session's view, in seq order.
    pub fn segments(&self, session: &Session) -> Result<Vec<Segment>> {
        let chain = self.lineage(session)?;
        let mut segs = Vec::with_capacity(chain.len());
        // Walk from the session up: each ancestor is capped by the fork_seq of its child.
        let mut hi = i64::MAX;
        for s in chain.iter().rev() {
            let lo = s.fork_seq.unwrap_or(0);
            segs.push(Segment {
                session: s.id.clone(),
                lo,
                hi,
            });
            hi = hi.min(lo);
        }
        segs.reverse();
        segs.retain(|s| s.hi > s.lo);
        Ok(segs)
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

impl Store {
    /// Create a fork (DESIGN §2, "Forks are O(1)"): one sessions row naming its source and the
    /// last inherited seq, plus `closers` (the synthetic results of calls the cut leaves open),
    /// in one transaction. Nothing is copied. The cut must lie inside the source's view.
    pub fn create_fork(
        &self,
        new: NewSession,
        closers: Vec<crate::log::NewChunk>,
    ) -> Result<(Session, Vec<crate::log::Chunk>)> {
        let (Some(src), Some(cut)) = (new.fork_of.clone(), new.fork_seq) else {
            return Err(StoreError::Invalid(
                "a fork needs a source session and a cut".into(),
            ));
        };
        let tx = rusqlite::Transaction::new_unchecked(self.conn(), TransactionBehavior::Immediate)
            .map_err(|e| self.classify(e))?;
        let source = self.session(&src)?;
        let len = self.view_len(&source)?;
        if cut < 0 || cut > len {
            return Err(StoreError::Invalid(format!(
                "seq {cut} is outside session {src} (its log has {len} chunks)"
            )));
        }
        let session = self.create_session(new)?;
        let stored = super::chunks::append_in(&tx, &session.id, closers).map_err(|e| match e {
            StoreError::Sql(e) => self.classify(e),
            e => e,
        })?;
        tx.commit().map_err(|e| self.classify(e))?;
        let session = self.session(&session.id)?;
        Ok((session, stored))
    }
}
