//! Room traffic inside the agent loop: what a session hears at step boundaries, the `peer_*`
//! tools, and the collision gate before `write` and `edit`.

use serde_json::Value;

use super::{Agent, AgentError, Event};
use crate::fold::ToolSpec;
use crate::tools::ToolOutput;

impl Agent<'_> {
    /// At a step boundary: take what this session hears from its rooms into the log.
    pub(super) fn hear(
        &self,
        _turn: &str,
        _step: i64,
        _on: &mut dyn FnMut(Event),
    ) -> Result<(), AgentError> {
        Ok(())
    }

    /// A `peer_*` tool call (it needs the store and the session, so it runs here); `None` for
    /// any other tool.
    pub(super) fn peer_tool(&self, _name: &str, _args: &Value) -> Option<ToolOutput> {
        None
    }

    /// The schema of a `peer_*` tool; `None` for any other tool.
    pub(super) fn peer_tool_spec(&self, _name: &str) -> Option<ToolSpec> {
        None
    }

    /// Before `write` or `edit`: an error result when another live session holds an exclusive
    /// claim on the path; `None` lets the call run.
    pub(super) fn collision(&self, _name: &str, _args: &Value) -> Option<ToolOutput> {
        None
    }
}
