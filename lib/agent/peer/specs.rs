//! What the model is told about the `peer_*` tools: descriptions and JSON schemas.

use serde_json::json;

use super::super::Agent;
use crate::fold::ToolSpec;
use crate::policy::Tool;

const ROOM_VS_DM: &str = "Without `session` the line goes to this worktree's room and every \
session working in this tree hears it; with `session` it is a direct message only that session \
takes in (in another folder too).";

impl Agent<'_> {
    /// The schema of a `peer_*` tool; `None` for any other tool.
    pub(in crate::agent) fn peer_tool_spec(&self, tool: Tool) -> Option<ToolSpec> {
        let (description, schema) = match tool {
            Tool::PeerMessage => (
                format!(
                    "Say something to the other sessions working here. {ROOM_VS_DM} Keep it to one \
                     or two sentences. The result says it was posted; the addressee's `delivered` \
                     receipt follows when its next step takes the line in."
                ),
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
            Tool::PeerInbox => (
                format!(
                    "Read the peer messages that were held back from your context (the \"N more\" \
                     note); reading them marks them delivered. {ROOM_VS_DM}"
                ),
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
            ),
            Tool::PeerPeek => (
                "See what another session is doing: its goal, last prompt, last tool calls and \
                 last words. Changes nothing."
                    .to_string(),
                json!({
                    "type": "object",
                    "properties": {
                        "session": {"type": "string", "description": "Its id, a unique id prefix, its pid, or a unique fragment of its title or goal."}
                    },
                    "required": ["session"],
                    "additionalProperties": false
                }),
            ),
            Tool::PeerClaim => (
                "Claim files before you change them, so other sessions in this worktree do not \
                 write them meanwhile. Fails naming the holder when someone else holds an \
                 overlapping claim. Claims end when released, after ttl_s, or when you stop."
                    .to_string(),
                json!({
                    "type": "object",
                    "properties": {
                        "paths": {"type": "array", "items": {"type": "string"}, "description": "Files, directories or globs, relative to your directory."},
                        "intent": {"type": "string", "description": "What you are about to do, in a few words."},
                        "shared": {"type": "boolean", "description": "Others may claim the same paths as shared too (default false: exclusive)."},
                        "ttl_s": {"type": "integer", "minimum": 1, "description": "Seconds until the claim expires (default 1800)."}
                    },
                    "required": ["paths", "intent"],
                    "additionalProperties": false
                }),
            ),
            Tool::PeerRelease => (
                "Release your claims: those overlapping `paths`, or all of them.".to_string(),
                json!({
                    "type": "object",
                    "properties": {
                        "paths": {"type": "array", "items": {"type": "string"}, "description": "Release the claims overlapping these paths (default: all yours)."}
                    },
                    "additionalProperties": false
                }),
            ),
            _ => return None,
        };
        Some(ToolSpec {
            name: tool.name().to_string(),
            description,
            input_schema: schema,
        })
    }
}
