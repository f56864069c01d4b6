//! The tools `ag-room mcp` offers: the room's one table ([`crate::room::specs`]) for the MCP
//! audience.

use rmcp::model::Tool;

use super::room_server::schema;
use crate::room::specs::{spec, Audience, TOOLS};

pub(crate) fn tools() -> Vec<Tool> {
    TOOLS
        .iter()
        .filter_map(|t| spec(*t, Audience::Mcp))
        .map(|s| Tool::new(s.name, s.description, schema(s.schema)))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn six_tools_each_with_an_object_schema() {
        let tools = super::tools();
        assert_eq!(tools.len(), 6);
        for t in tools {
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
            assert!(t.description.is_some_and(|d| !d.is_empty()));
        }
    }
}
