//! Room traffic inside the agent loop: what a session hears at step boundaries (`hear`, with
//! the pure choice of what a peer chunk carries in `batch`), the `peer_*` tools (`tools`, their
//! schemas in `specs`), and the collision gate before `write` and `edit` (`tools`).

mod batch;
mod hear;
mod specs;
mod tools;

use std::path::PathBuf;

use super::Agent;
use crate::room::inbox;
use crate::room::presence::Me;
use crate::room::Room;

impl Agent<'_> {
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
        inbox::rooms_for(self.home, &self.cwd())
    }
}
