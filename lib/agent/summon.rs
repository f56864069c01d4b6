//! Spawning from inside the agent loop: the `summon` and `retrieve` tools.

use serde_json::Value;

use super::Agent;
use crate::fold::ToolSpec;
use crate::tools::ToolOutput;

impl Agent<'_> {
    /// A `summon` or `retrieve` call; `None` for any other tool.
    pub(super) fn summon_tool(&self, _name: &str, _args: &Value) -> Option<ToolOutput> {
        None
    }

    /// The schema of `summon` or `retrieve` as this session may see it; `None` otherwise.
    pub(super) fn summon_tool_spec(&self, _name: &str) -> Option<ToolSpec> {
        None
    }
}
