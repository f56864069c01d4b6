//! Room traffic inside the agent loop: what a session hears at step boundaries (`hear`, with
//! the pure choice of what a peer chunk carries in `batch`), the `peer_*` tools (`tools`, their
//! schemas in `specs`), and the collision gate around `write`, `edit` and `bash` (`gate`).

mod batch;
mod beat;
mod gate;
mod hear;
mod specs;
mod tools;

pub(super) use gate::Before;

use std::path::PathBuf;

use super::Agent;
use crate::room::presence::Me;
use crate::room::Room;

/// What the peer channel remembers within one process: the roster the model was last shown
/// (loaded from the log on first use), the turn under way, the turn already nudged, and the
/// claims the model was told about before a `bash` call in that turn.
#[derive(Debug, Default)]
pub(crate) struct PeerState {
    /// `None`: not loaded yet; `Some(None)`: never shown one.
    pub(super) roster_told: Option<Option<Vec<String>>>,
    pub(super) turn: Option<String>,
    pub(super) nudged_turn: Option<String>,
    pub(super) bash_told: Option<(Option<String>, Vec<String>)>,
}

impl Agent<'_> {
    fn peer_state(&self) -> std::sync::MutexGuard<'_, PeerState> {
        self.peer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Note a warning; the loop reports it as an [`super::Event::Warning`] after the tool call
    /// or step boundary that raised it.
    fn warn(&self, w: String) {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(w);
    }

    /// Report the warnings noted so far.
    pub(in crate::agent) fn report_warnings(&self, on: &mut dyn FnMut(super::Event)) {
        let ws = std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()));
        for w in ws {
            on(super::Event::Warning(w));
        }
    }

    fn me(&self) -> Me {
        Me::session(&self.session)
    }

    fn cwd(&self) -> PathBuf {
        self.tool_ctx.cwd.clone()
    }

    fn rooms(&self) -> Vec<Room> {
        self.rooms.heard_in(&self.cwd())
    }
}
