//! Spawned agents (`ag-summon`): the process recorded for a child session, its final status,
//! and the children of a session.

use rusqlite::params;

use super::sessions::{from_row, COLUMNS};
use super::{NewSession, Result, Session, Store};
use crate::clock;

impl Store {
    /// Create a child session already `running` with no process yet, in one transaction: its
    /// row (policy, model and all) and the starting mark land together, so no reader ever sees
    /// it `idle` (where another `ag-prompt` could take it) and a failure leaves nothing behind.
    pub(crate) fn create_child(&self, new: NewSession) -> Result<Session> {
        let child = self.write(|_| {
            let child = self.create_session(new)?;
            self.mark_starting(&child.id)?;
            Ok(child)
        })?;
        self.session(&child.id)
    }

    /// A child about to be started: `running` with no process yet, so `ag-prompt` (which
    /// claims it) and watchers (which wait for it) both see it as under way.
    pub(crate) fn mark_starting(&self, id: &str) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE sessions SET status = 'running', pid = NULL, pid_start = NULL, updated_at = ?2 WHERE id = ?1",
                params![id, clock::now_ms()],
            )
            .map_err(|e| self.classify(e))?;
        Ok(())
    }

    /// Record the process started for a child, unless `ag-prompt` already claimed (or even
    /// finished) it.
    pub(crate) fn record_process(&self, id: &str, pid: i64, start: Option<i64>) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE sessions SET pid = ?2, pid_start = ?3 WHERE id = ?1 AND status = 'running' AND pid IS NULL",
                params![id, pid, start],
            )
            .map_err(|e| self.classify(e))?;
        Ok(())
    }

    /// Set a final status and forget the process. With `only_pid`, only while that process
    /// is still the recorded one (so a finished turn's own status is never overwritten).
    pub(crate) fn finish_child(
        &self,
        id: &str,
        status: &str,
        only_pid: Option<i64>,
    ) -> Result<bool> {
        let n = match only_pid {
            Some(pid) => self.conn().execute(
                "UPDATE sessions SET status = ?2, pid = NULL, pid_start = NULL, updated_at = ?3 \
                 WHERE id = ?1 AND status = 'running' AND pid = ?4",
                params![id, status, clock::now_ms(), pid],
            ),
            None => self.conn().execute(
                "UPDATE sessions SET status = ?2, pid = NULL, pid_start = NULL, updated_at = ?3 WHERE id = ?1",
                params![id, status, clock::now_ms()],
            ),
        }
        .map_err(|e| self.classify(e))?;
        if n > 0 {
            self.ended_as(id, status);
        }
        Ok(n > 0)
    }

    /// Subagents and user agents, oldest first: the children of `parent`, or all of them.
    pub(crate) fn spawned(&self, parent: Option<&str>) -> Result<Vec<Session>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM sessions WHERE kind IN ('subagent', 'user_agent') \
             AND (?1 IS NULL OR parent_id = ?1) ORDER BY created_at, id"
        );
        let mut stmt = self.conn().prepare(&sql)?;
        let rows = stmt
            .query_map([parent], from_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{NewSession, SessionKind, SessionStatus, Store};
    use crate::policy::Policy;
    use crate::settings::Settings;

    fn child() -> NewSession {
        NewSession {
            title: "finder: q".into(),
            kind: Some(SessionKind::Subagent),
            agent: Some("finder".into()),
            model: Some("echo".into()),
            settings: Some(Settings::with_tools(&Policy::of(["read"]))),
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
        assert_eq!(c.settings().unwrap().tools().names(), ["read"]);

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
