//! Presence on a shared backend: while a turn runs, its session says it is here — at the
//! start, then every [`heartbeat`] from a thread of its own, saying what it is doing now —
//! and leaves when the turn ends. A server that cannot be reached is a warning: the turn goes
//! on, and the heartbeat finds the server again when it is back. (On files presence is the
//! store's and none of this runs.)

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::thread::JoinHandle;

use super::super::Agent;
use crate::room::backend::Present;
use crate::room::nats::heartbeat;
use crate::room::{remote, Room};
use crate::store::Store;

/// A session's presence for the length of a turn; dropping it leaves.
pub(crate) struct Here {
    stop: Option<Sender<()>>,
    beat: Option<JoinHandle<()>>,
    room: Room,
    session: String,
}

impl Agent<'_> {
    /// Say this session is here, and keep saying it until the returned guard is dropped.
    pub(in crate::agent) fn be_here(&self) -> Option<Here> {
        if !self.rooms.backend().shared() {
            return None;
        }
        let key = crate::room::worktree_key(&self.cwd());
        let room = self.rooms.of_key(key.clone());
        let mut p: Present = remote::present_of(self.store, &self.session, &key);
        if let Err(e) = room.backend.announce(&room, &p) {
            self.warn(format!("cannot say this session is here: {e}"));
        }
        let (tx, rx) = channel::<()>();
        let (beat_room, path, id) = (
            room.clone(),
            self.store.path().to_path_buf(),
            self.session.id.clone(),
        );
        let beat = std::thread::Builder::new()
            .name("ag-presence".into())
            .spawn(move || {
                // Its own connection to the store: each beat says what the session is doing
                // now (title, goal, status, last tool, last words), not what it did at the start.
                let store = Store::open_path(&path).ok();
                let every = heartbeat();
                while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                    if let Some((st, s)) = store
                        .as_ref()
                        .and_then(|st| Some((st, st.session(&id).ok()?)))
                    {
                        p = remote::present_of(st, &s, &key);
                    }
                    p.at_ms = crate::clock::now_ms();
                    let _ = beat_room.backend.announce(&beat_room, &p);
                }
            })
            .ok();
        Some(Here {
            stop: Some(tx),
            beat,
            room,
            session: self.session.id.clone(),
        })
    }
}

impl Drop for Here {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(b) = self.beat.take() {
            let _ = b.join();
        }
        let _ = self.room.backend.leave(&self.room, &self.session);
    }
}
