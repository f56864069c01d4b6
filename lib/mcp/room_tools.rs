//! The tools `ag-room mcp` offers: names, descriptions and input schemas, one flat table.

use rmcp::model::Tool;
use serde_json::json;

use super::room_server::tool;

pub fn tools() -> Vec<Tool> {
    vec![
        tool(
            "peer_message",
            "Say something to the agents and people working in this worktree. Without `session` \
             the line goes to this worktree's room and every agent working in this tree hears \
             it at its next step; with `session` it is a direct message. Keep it to one or two \
             sentences; the result gives the message id.",
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "What to say."},
                    "session": {"type": "string", "description": "Make it a direct message to this session: its id, a unique id prefix, its pid, or a unique fragment of its title or goal."},
                    "in_reply_to": {"type": "string", "description": "The id of the message this answers."}
                },
                "required": ["text"],
                "additionalProperties": false
            }),
        ),
        tool(
            "peer_inbox",
            "Read what was said to you or to the room since you last looked; reading marks it \
             delivered, and the sender sees the receipt.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        tool(
            "peer_peek",
            "See what a session is doing: its goal, last prompt, last tool calls and last words. \
             Changes nothing.",
            json!({
                "type": "object",
                "properties": {
                    "session": {"type": "string", "description": "Its id, a unique id prefix, its pid, or a unique fragment of its title or goal."}
                },
                "required": ["session"],
                "additionalProperties": false
            }),
        ),
        tool(
            "peer_who",
            "The live sessions in this worktree, one JSON object a line: name, short id, goal, \
             last tool, age.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        tool(
            "peer_claim",
            "Claim files before you change them, so the agents in this worktree do not write \
             them meanwhile (their write and edit tools refuse). Fails naming the holder when \
             someone else holds an overlapping claim. Claims end when released, after ttl_s, or \
             when this server stops.",
            json!({
                "type": "object",
                "properties": {
                    "paths": {"type": "array", "items": {"type": "string"}, "description": "Files, directories or globs, relative to the worktree directory this server runs in."},
                    "intent": {"type": "string", "description": "What you are about to do, in a few words."},
                    "shared": {"type": "boolean", "description": "Others may claim the same paths as shared too (default false: exclusive)."},
                    "ttl_s": {"type": "integer", "minimum": 1, "description": "Seconds until the claim expires (default 1800)."}
                },
                "required": ["paths", "intent"],
                "additionalProperties": false
            }),
        ),
        tool(
            "peer_release",
            "Release your claims: those overlapping `paths`, or all of them.",
            json!({
                "type": "object",
                "properties": {
                    "paths": {"type": "array", "items": {"type": "string"}, "description": "Release the claims overlapping these paths (default: all yours)."}
                },
                "additionalProperties": false
            }),
        ),
    ]
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
