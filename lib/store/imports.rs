//! Imported sessions: one transaction per source session creates the session (or finds the
//! one an earlier import made), records where it came from, and appends the chunks the store
//! does not have yet. The importer derives chunk ids from the source, so "what the store
//! has" is a prefix of what the source now holds, or the source was rewritten.

use rusqlite::{params, OptionalExtension};

use super::{Result, Session, Store, StoreError};
use crate::log::NewChunk;
use crate::{clock, ids};

/// Where an imported session comes from.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ImportSource {
    /// `claude-code`, `codex` or `ag`.
    pub(crate) source: String,
    pub(crate) source_id: String,
    pub(crate) path: String,
    pub(crate) tool_version: Option<String>,
    pub(crate) leaf: Option<String>,
    pub(crate) parent_source_id: Option<String>,
    /// The directory and model the source recorded: shown, never used (an imported session
    /// runs in the directory it was imported in, on the user's default model).
    pub(crate) cwd: Option<String>,
    pub(crate) model: Option<String>,
}

/// A session to import: its row and its whole log as the source holds it now.
#[derive(Debug, Clone)]
pub(crate) struct ImportPlan {
    pub(crate) source: ImportSource,
    pub(crate) session: super::NewSession,
    /// Keep this session id when the store has no session by that id (ag exports).
    pub(crate) keep_id: Option<String>,
    pub(crate) created_at: Option<i64>,
    /// Every chunk with its id set.
    pub(crate) chunks: Vec<NewChunk>,
}

#[derive(Debug, Clone)]
pub(crate) struct Imported {
    pub(crate) session: Session,
    pub(crate) appended: usize,
    pub(crate) created: bool,
}

impl Store {
    /// Import one source session in one transaction (see the module comment).
    pub(crate) fn import_session(&self, plan: ImportPlan) -> Result<Imported> {
        self.write(|_| self.import_in(plan))
    }

    fn import_in(&self, plan: ImportPlan) -> Result<Imported> {
        let conn = self.conn();
        let src = &plan.source;
        let mut existing: Option<String> = conn
            .query_row(
                "SELECT session_id FROM imports WHERE source = ?1 AND source_id = ?2",
                params![src.source, src.source_id],
                |r| r.get(0),
            )
            .optional()?;
        if existing.is_none() {
            if let Some(keep) = &plan.keep_id {
                if self.session(keep).is_ok() {
                    existing = Some(keep.clone());
                }
            }
        }
        let created = existing.is_none();
        let session = match existing {
            Some(id) => self.session(&id)?,
            None => self.create_imported(&plan)?,
        };
        let have = self.load_view(&session)?;
        let mut chunks = plan.chunks;
        let remap = src.source == "ag";
        for c in chunks.iter_mut() {
            let id = c.id.clone().unwrap_or_else(ids::new_id);
            c.id = Some(if remap {
                self.free_id(&session.id, id)?
            } else {
                id
            });
        }
        let same = |h: &crate::log::Chunk, c: Option<&NewChunk>| {
            c.is_some_and(|c| {
                c.id.as_ref() == Some(&h.id)
                    && c.turn.as_ref() == Some(&h.turn)
                    && c.step == h.step
                    && c.role == h.role
                    && c.data == h.data
            })
        };
        if let Some(at) = (0..have.len()).find(|&i| !same(&have[i], chunks.get(i))) {
            return Err(StoreError::Invalid(format!(
                "{} session {} no longer matches session {} from its chunk {} on (the source was \
                 rewound or rewritten, or the session was continued here); fork the session to \
                 keep it, or remove it with `ag-log rm {}`, and import again",
                src.source,
                src.source_id,
                session.id,
                at + 1,
                session.id
            )));
        }
        let new: Vec<NewChunk> = chunks.into_iter().skip(have.len()).collect();
        let last_ts = new.last().and_then(|c| c.ts);
        let appended =
            super::chunks::append_each(conn, &session.id, new.into_iter().map(Ok), &mut |_| {})?;
        self.finish_import(&session, &plan.session, src, last_ts)?;
        Ok(Imported {
            session: self.session(&session.id)?,
            appended,
            created,
        })
    }

    fn create_imported(&self, plan: &ImportPlan) -> Result<Session> {
        let conn = self.conn();
        let id = match &plan.keep_id {
            Some(k) if uuid::Uuid::parse_str(k).is_ok() => k.to_ascii_lowercase(),
            _ => ids::new_id(),
        };
        let src = &plan.source;
        let parent: Option<String> = match &src.parent_source_id {
            None => None,
            Some(p) if src.source == "ag" => self.session(p).ok().map(|s| s.id),
            Some(p) => conn
                .query_row(
                    "SELECT session_id FROM imports WHERE source = ?1 AND source_id = ?2",
                    params![src.source, p],
                    |r| r.get(0),
                )
                .optional()?,
        };
        let new = &plan.session;
        let at = plan.created_at.unwrap_or_else(clock::now_ms);
        let settings = new.settings.clone().unwrap_or_default();
        conn.execute(
            "INSERT INTO sessions (id, title, kind, parent_id, agent, model, cwd, policy_json, \
             status, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'idle', ?9, ?9)",
            params![
                id,
                new.title,
                new.kind.unwrap_or(super::SessionKind::Chat).as_str(),
                parent,
                new.agent,
                new.model,
                new.cwd,
                settings.to_json(),
                at
            ],
        )?;
        super::refs::assign_handle(conn, &id)?;
        conn.execute(
            "INSERT INTO imports (session_id, source, source_id, path, tool_version, leaf, \
             parent_source_id, imported_at, source_cwd, source_model) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                id,
                src.source,
                src.source_id,
                src.path,
                src.tool_version,
                src.leaf,
                src.parent_source_id,
                clock::now_ms(),
                src.cwd,
                src.model
            ],
        )?;
        self.session(&id)
    }

    /// `id` when no chunk has it, else an id derived from it and the session (an export
    /// read back into the store it came from, next to the original).
    fn free_id(&self, session_id: &str, id: String) -> Result<String> {
        let owner: Option<String> = self
            .conn()
            .prepare_cached("SELECT session_id FROM chunks WHERE id = ?1")?
            .query_row([&id], |r| r.get(0))
            .optional()?;
        Ok(match owner {
            Some(s) if s != session_id => crate::import::stable_id(&["ag-copy", session_id, &id]),
            _ => id,
        })
    }

    fn finish_import(
        &self,
        session: &Session,
        new: &super::NewSession,
        src: &ImportSource,
        last_ts: Option<i64>,
    ) -> Result<()> {
        let conn = self.conn();
        // The session was last active when its source was, not when it was imported.
        let updated = last_ts
            .unwrap_or(session.updated_at)
            .max(session.created_at);
        conn.execute(
            "UPDATE sessions SET updated_at = MAX(?2, CASE WHEN ?3 THEN 0 ELSE updated_at END), \
               title = CASE WHEN title = '' THEN ?4 ELSE title END, \
               cwd = COALESCE(cwd, ?5) WHERE id = ?1",
            params![session.id, updated, last_ts.is_some(), new.title, new.cwd],
        )?;
        conn.execute(
            "UPDATE imports SET path = ?2, tool_version = COALESCE(?3, tool_version), \
             leaf = COALESCE(?4, leaf), imported_at = ?5, \
             source_cwd = COALESCE(?6, source_cwd), source_model = COALESCE(?7, source_model) \
             WHERE session_id = ?1",
            params![
                session.id,
                src.path,
                src.tool_version,
                src.leaf,
                clock::now_ms(),
                src.cwd,
                src.model
            ],
        )?;
        // Subagents imported before their parent find it now.
        conn.execute(
            "UPDATE sessions SET parent_id = ?1 WHERE parent_id IS NULL AND id != ?1 AND id IN \
             (SELECT session_id FROM imports WHERE source = ?2 AND parent_source_id = ?3)",
            params![session.id, src.source, src.source_id],
        )?;
        Ok(())
    }

    /// Where an imported session came from; `None` for a session made here.
    pub(crate) fn import_source(&self, session_id: &str) -> Result<Option<ImportSource>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT source, source_id, path, tool_version, leaf, parent_source_id, \
                 source_cwd, source_model FROM imports WHERE session_id = ?1",
                [session_id],
                |r| {
                    Ok(ImportSource {
                        source: r.get(0)?,
                        source_id: r.get(1)?,
                        path: r.get(2)?,
                        tool_version: r.get(3)?,
                        leaf: r.get(4)?,
                        parent_source_id: r.get(5)?,
                        cwd: r.get(6)?,
                        model: r.get(7)?,
                    })
                },
            )
            .optional()?)
    }
}
