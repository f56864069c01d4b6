//! Removing sessions (`ag-log rm`): what may be removed, the running subagents a removal
//! cancels first (`--cascade`) or that refuse it, and the removal. The command resolves the
//! references, asks the person on a terminal, and words what happened.

use crate::store::{Session, SessionStatus, Store, StoreError};

/// Why nothing may be removed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RemoveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A session to remove has subagents still working, and `--cascade` was not given.
    #[error("{session} has running subagents: {}; nothing was removed", .running.join(", "))]
    RunningSubagents {
        session: String,
        running: Vec<String>,
    },
}

/// The plan of a removal: the running subagents to cancel first.
#[derive(Debug)]
pub(crate) struct Removal {
    pub(crate) cancel: Vec<Session>,
}

/// Check that `targets` may be removed, before anything is: none runs a turn now, and none
/// has subagents still working unless `cascade` (which cancels them first).
pub(crate) fn check(
    store: &Store,
    targets: &[Session],
    cascade: bool,
) -> Result<Removal, RemoveError> {
    for s in targets {
        let s = store.reaped(s.clone());
        if let (SessionStatus::Running, Some(owner)) = (s.status, s.pid) {
            return Err(StoreError::Running { id: s.id, owner }.into());
        }
    }
    let mut cancel = Vec::new();
    for s in targets {
        let running: Vec<Session> = store
            .spawned(Some(&s.id))?
            .into_iter()
            .filter(|k| {
                super::spawn::effective_status(store, k)
                    .is_ok_and(|st| st == SessionStatus::Running)
            })
            .collect();
        if !running.is_empty() && !cascade {
            return Err(RemoveError::RunningSubagents {
                session: s.handle.clone(),
                running: running.iter().map(|k| k.handle.clone()).collect(),
            });
        }
        cancel.extend(running);
    }
    Ok(Removal { cancel })
}

/// What a removal did, as it happens.
pub(crate) enum Removed {
    /// A running subagent was cancelled (its final status).
    Cancelled { id: String, status: SessionStatus },
    /// A session is gone.
    Gone(String),
}

/// Carry out a checked removal: cancel the subagents, then remove each target (with its
/// forks when `cascade`); a target a cascade already took is skipped.
pub(crate) fn remove(
    store: &Store,
    removal: Removal,
    targets: &[Session],
    cascade: bool,
    on: &mut dyn FnMut(Removed),
) -> Result<(), RemoveError> {
    for k in removal.cancel {
        let st = super::spawn::cancel(store, &k, std::time::Duration::from_secs(3))?;
        on(Removed::Cancelled {
            id: k.id,
            status: st,
        });
    }
    for s in targets {
        let removed = match store.remove_session(&s.id, cascade) {
            Ok(r) => r,
            Err(StoreError::SessionNotFound(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        for id in removed {
            on(Removed::Gone(id));
        }
    }
    Ok(())
}
