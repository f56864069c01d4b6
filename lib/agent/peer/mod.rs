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

fn warn(w: String) {
    eprintln!("ag: warning: {w}");
}

impl Agent<'_> {
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
