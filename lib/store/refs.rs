//! References: what a person or a script types to name a session. In order: `last` and
//! `last~N` (read through the process's [`Scope`]), a full id, a handle or a unique handle
//! prefix, a unique id prefix, an exact title, a unique title fragment.

use rusqlite::{params, Connection, OptionalExtension};

use super::sessions::{from_row, COLUMNS};
use super::{Result, Session, Store, StoreError};
use crate::ids;

/// What `last` means for one process.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    /// The (canonical) current directory: `last` is a chat session made here.
    pub(crate) cwd: Option<String>,
    /// `AG_SESSION`: inside a session's tools, `last` is that session.
    pub(crate) pinned: Option<String>,
    /// `--any`: `last` is the latest chat session of any directory (and ignores `AG_SESSION`).
    pub(crate) any: bool,
    /// The calling shell (pid, start time): the sessions it made come first, so scripts
    /// running side by side in one directory each get their own.
    pub(crate) shell: Option<(i64, i64)>,
}

/// A session as a candidate in an error: what to type, and enough to recognise it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub(crate) handle: String,
    pub(crate) title: String,
    pub(crate) kind: String,
    pub(crate) cwd: String,
    pub(crate) updated_at: i64,
}

impl From<&Session> for Candidate {
    fn from(s: &Session) -> Candidate {
        Candidate {
            handle: s.handle.clone(),
            title: s.title.clone(),
            kind: s.kind.as_str().to_string(),
            cwd: s.cwd.clone().unwrap_or_default(),
            updated_at: s.updated_at,
        }
    }
}

/// Give session `id` a handle when it has none, retrying on the (rare) collision.
pub(super) fn assign_handle(conn: &Connection, id: &str) -> Result<()> {
    for _ in 0..16 {
        match conn.execute(
            "UPDATE sessions SET handle = ?2 WHERE id = ?1 AND handle IS NULL",
            params![id, ids::new_handle()],
        ) {
            Ok(_) => return Ok(()),
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Invalid(format!(
        "no free handle for session {id} after 16 tries"
    )))
}

/// The migration step that gives every existing session a handle.
pub(super) fn fill_handles(conn: &Connection) -> Result<()> {
    let ids: Vec<String> = conn
        .prepare("SELECT id FROM sessions WHERE handle IS NULL")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in ids {
        assign_handle(conn, &id)?;
    }
    Ok(())
}

/// `last` or `last~N`: Some(N).
fn last_offset(reference: &str) -> Option<u32> {
    match reference.strip_prefix("last")? {
        "" => Some(0),
        rest => rest.strip_prefix('~')?.parse().ok(),
    }
}

impl Store {
    /// Set what `last` means for the rest of this process (the CLI decides it once).
    pub(crate) fn set_scope(&mut self, scope: Scope) {
        self.scope = scope;
    }

    /// What `ag-prompt -c` continues: `last`, or with `own_only` (a job without a terminal:
    /// cron, CI) only a session the calling shell made, never the chat a person last had in
    /// this directory.
    pub(crate) fn continued(&self, own_only: bool) -> Result<Session> {
        self.last(0, own_only)
    }

    /// How a session id is shown to people, the one rule for every table, header and hint:
    /// the session's handle, which every command accepts and which stays unique; an id the
    /// store does not know is shown whole (a prefix of it could stop being unique later).
    pub(crate) fn shown(&self, id: &str) -> String {
        match self.session(id) {
            Ok(s) if !s.handle.is_empty() => s.handle,
            _ => id.to_string(),
        }
    }

    /// Resolve what a person typed; see the module comment for the order.
    pub(crate) fn resolve(&self, reference: &str) -> Result<Session> {
        let reference = reference.trim();
        if let Some(n) = last_offset(reference) {
            return self.last(n, false);
        }
        if let Some(s) = self.resolve_id(reference)? {
            return Ok(s);
        }
        self.by_title(reference)
    }

    /// A full id, a handle or unique handle prefix, or a unique id prefix (at least 4
    /// characters); None when nothing matches. Room targets use this before their own rules.
    pub(crate) fn resolve_id(&self, reference: &str) -> Result<Option<Session>> {
        let reference = reference.trim();
        if reference.is_empty() {
            return Ok(None);
        }
        if let Ok(s) = self.session(reference) {
            return Ok(Some(s));
        }
        if ids::looks_like_handle(reference) {
            if let Some(s) = self.by_prefix("handle", reference)? {
                return Ok(Some(s));
            }
        }
        if reference.len() >= 4 && reference.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return self.by_prefix("id", &reference.to_ascii_lowercase());
        }
        Ok(None)
    }

    /// The one session whose `column` starts with `prefix`, None when none does.
    fn by_prefix(&self, column: &str, prefix: &str) -> Result<Option<Session>> {
        let found = self.query(
            &format!("WHERE {column} >= ?1 AND {column} < ?1 || '~' ORDER BY {column} LIMIT 21"),
            params![prefix],
        )?;
        self.one(prefix, found)
    }

    /// A session by exact title (case-insensitive), else by a unique title fragment: this
    /// directory's sessions first (a title typed here means a session of here), then any.
    fn by_title(&self, reference: &str) -> Result<Session> {
        if reference.is_empty() {
            return Err(StoreError::SessionNotFound(String::new()));
        }
        let here = if self.scope.any {
            None
        } else {
            self.scope.cwd.clone()
        };
        for cwd in [here, None] {
            if let Some(s) = self.titled(reference, cwd.as_deref())? {
                return Ok(s);
            }
        }
        Err(StoreError::SessionNotFound(reference.to_string()))
    }

    /// [`Store::by_title`] among the sessions of `cwd` (all sessions when `None`).
    fn titled(&self, reference: &str, cwd: Option<&str>) -> Result<Option<Session>> {
        let exact = self.query(
            "WHERE lower(title) = lower(?1) AND (?2 IS NULL OR cwd = ?2) \
             ORDER BY updated_at DESC LIMIT 21",
            params![reference, cwd],
        )?;
        if let Some(s) = self.one(reference, exact)? {
            return Ok(Some(s));
        }
        let fragment = self.query(
            "WHERE title != '' AND instr(lower(title), lower(?1)) > 0 AND (?2 IS NULL OR cwd = ?2) \
             ORDER BY updated_at DESC LIMIT 21",
            params![reference, cwd],
        )?;
        self.one(reference, fragment)
    }

    /// Sessions whose handle, or a word of whose title, is a near miss of `reference` (a
    /// typo), closest first, at most three; among the 500 most recently updated.
    pub(crate) fn near(&self, reference: &str) -> Result<Vec<Candidate>> {
        let r = reference.trim().to_lowercase();
        if r.is_empty() {
            return Ok(Vec::new());
        }
        let limit = (r.chars().count() / 3).clamp(1, 3);
        let mut scored: Vec<(usize, Session)> = self
            .query("ORDER BY updated_at DESC LIMIT 500", [])?
            .into_iter()
            .filter_map(|s| {
                let title = s.title.to_lowercase();
                let words = title
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty());
                let d = words
                    .chain(std::iter::once(s.handle.as_str()))
                    .map(|w| crate::text::edit_distance(&r, w))
                    .min()?;
                (d <= limit).then_some((d, s))
            })
            .collect();
        scored.sort_by_key(|(d, _)| *d);
        Ok(scored
            .iter()
            .take(3)
            .map(|(_, s)| Candidate::from(s))
            .collect())
    }

    fn one(&self, reference: &str, found: Vec<Session>) -> Result<Option<Session>> {
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.into_iter().next()),
            _ => Err(StoreError::Ambiguous {
                reference: reference.to_string(),
                candidates: found.iter().map(Candidate::from).collect(),
            }),
        }
    }

    fn query(&self, tail: &str, args: impl rusqlite::Params) -> Result<Vec<Session>> {
        let mut stmt = self
            .conn()
            .prepare(&format!("SELECT {COLUMNS} FROM sessions {tail}"))?;
        let rows = stmt
            .query_map(args, from_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// `last~n`: `AG_SESSION` for `last` when set; else the n-th latest chat session of this
    /// directory, the calling shell's own first (or of every directory with `--any`).
    fn last(&self, n: u32, own_only: bool) -> Result<Session> {
        let scope = &self.scope;
        if let (Some(pinned), 0, false) = (&scope.pinned, n, scope.any) {
            return self
                .session(pinned)
                .map_err(|_| StoreError::SessionNotFound(format!("AG_SESSION={pinned}")));
        }
        let (pid, start) = scope.shell.unwrap_or((-1, -1));
        let cwd = if scope.any { None } else { scope.cwd.clone() };
        let found = self
            .conn()
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM sessions WHERE kind = 'chat' \
                     AND (?1 IS NULL OR cwd = ?1) \
                     AND (NOT ?5 OR (shell_pid IS ?2 AND shell_start IS ?3)) \
                     ORDER BY (shell_pid IS ?2 AND shell_start IS ?3) DESC, \
                       updated_at DESC, id DESC LIMIT 1 OFFSET ?4"
                ),
                params![cwd, pid, start, n, own_only && !scope.any],
                from_row,
            )
            .optional()?;
        match found {
            Some(s) => Ok(s),
            None if n > 0 => Err(StoreError::SessionNotFound(format!("last~{n}"))),
            None => Err(StoreError::NoLast {
                cwd: cwd.unwrap_or_else(|| "this store".into()),
                nearest: self.nearest(scope.cwd.as_deref())?,
                own_only: own_only && !scope.any,
            }),
        }
    }

    /// The sessions a person who found no `last` here may have meant: this directory's other
    /// kinds, then its parents' and children's, then the rest; the latest first in each.
    fn nearest(&self, cwd: Option<&str>) -> Result<Vec<Candidate>> {
        let recent = self.query("ORDER BY updated_at DESC, id DESC LIMIT 200", [])?;
        let rank = |s: &Session| -> u8 {
            let (Some(here), Some(there)) = (cwd, s.cwd.as_deref()) else {
                return 2;
            };
            let inside = |a: &str, b: &str| a.strip_prefix(b).is_some_and(|r| r.starts_with('/'));
            if here == there {
                0
            } else if inside(here, there) || inside(there, here) {
                1
            } else {
                2
            }
        };
        let mut ranked: Vec<(u8, &Session)> = recent.iter().map(|s| (rank(s), s)).collect();
        ranked.sort_by_key(|(r, _)| *r);
        Ok(ranked.into_iter().take(3).map(|(_, s)| s.into()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewSession;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_path(&dir.path().join("ag.db")).unwrap();
        (dir, store)
    }

    fn new(store: &Store, title: &str, cwd: &str) -> Session {
        store
            .create_session(NewSession {
                title: title.into(),
                cwd: Some(cwd.into()),
                ..Default::default()
            })
            .unwrap()
    }

    #[test]
    fn handles_prefixes_and_titles_resolve() {
        let (_d, store) = store();
        let a = new(&store, "fix the parser", "/w");
        let b = new(&store, "write the README", "/w");
        assert_eq!(a.handle.len(), ids::HANDLE_LEN);
        assert_ne!(a.handle, b.handle);
        assert_eq!(store.resolve(&a.handle).unwrap().id, a.id);
        assert_eq!(store.resolve(&b.id[..]).unwrap().id, b.id);
        assert_eq!(store.resolve("PARSER").unwrap().id, a.id);
        assert_eq!(store.resolve("write the readme").unwrap().id, b.id);
        assert!(matches!(
            store.resolve("the"),
            Err(StoreError::Ambiguous { .. })
        ));
        assert!(matches!(
            store.resolve("nothing"),
            Err(StoreError::SessionNotFound(_))
        ));
    }

    #[test]
    fn last_is_this_directory_and_shell_and_last_n_counts_back() {
        let (_d, mut store) = store();
        store.set_scope(Scope {
            cwd: Some("/a".into()),
            shell: Some((7, 70)),
            ..Default::default()
        });
        let mine = new(&store, "mine", "/a");
        store.set_scope(Scope {
            cwd: Some("/a".into()),
            shell: Some((8, 80)),
            ..Default::default()
        });
        let theirs = new(&store, "theirs", "/a");
        let elsewhere = new(&store, "elsewhere", "/b");
        assert_eq!(store.resolve("last").unwrap().id, theirs.id);
        assert_eq!(store.resolve("last~1").unwrap().id, mine.id);
        store.set_scope(Scope {
            cwd: Some("/a".into()),
            shell: Some((7, 70)),
            ..Default::default()
        });
        assert_eq!(store.resolve("last").unwrap().id, mine.id);
        store.set_scope(Scope {
            cwd: Some("/a".into()),
            any: true,
            ..Default::default()
        });
        assert_eq!(store.resolve("last").unwrap().id, elsewhere.id);
        store.set_scope(Scope {
            cwd: Some("/a/sub".into()),
            ..Default::default()
        });
        match store.resolve("last") {
            Err(StoreError::NoLast { nearest, .. }) => {
                let titles: Vec<&str> = nearest.iter().map(|c| c.title.as_str()).collect();
                assert_eq!(titles, ["theirs", "mine", "elsewhere"]);
            }
            other => panic!("{other:?}"),
        }
        store.set_scope(Scope {
            pinned: Some(mine.id.clone()),
            cwd: Some("/b".into()),
            ..Default::default()
        });
        assert_eq!(store.resolve("last").unwrap().id, mine.id);
    }
}
