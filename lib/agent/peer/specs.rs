//! The `peer_*` tools as this session's model is told about them: the room's one table
//! ([`crate::room::specs`]) for the agent audience.

use super::super::Agent;
use crate::fold::ToolSpec;
use crate::policy::Tool;
use crate::room::specs::{spec, Audience};

impl Agent<'_> {
    /// The schema of a `peer_*` tool; `None` for any other tool.
    pub(in crate::agent) fn peer_tool_spec(&self, tool: Tool) -> Option<ToolSpec> {
        let s = spec(tool, Audience::Agent)?;
        Some(ToolSpec {
            name: s.name.to_string(),
            description: s.description,
            input_schema: s.schema,
        })
    }
}
