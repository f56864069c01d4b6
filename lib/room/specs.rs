//! What a model is told about the room tools, in one table: the `peer_*` tools of `ag-prompt`'s
//! agents and the tools `ag-room mcp` offers another harness's agent. The two differ only
//! where they behave differently (how an agent hears versus how an MCP client reads).

use serde_json::{json, Value};

use crate::policy::Tool;

/// Who is told: an agent of `ag-prompt` (it hears at its step boundaries) or the agent of
/// another harness through `ag-room mcp` (it reads with `peer_inbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Audience {
    Agent,
    Mcp,
}

/// One tool as the model sees it.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) name: &'static str,
    pub(crate) description: String,
    pub(crate) schema: Value,
}

/// The room tools each audience is offered, in order.
pub(crate) const TOOLS: [Tool; 6] = [
    Tool::PeerMessage,
    Tool::PeerInbox,
    Tool::PeerWho,
    Tool::PeerPeek,
    Tool::PeerClaim,
    Tool::PeerRelease,
];

const ROOM_VS_DM: &str = "Without `session` the line goes to this worktree's room and every \
session working in this tree hears it; with `session` it is a direct message that only that \
session takes in (in another folder too). There is no \"all\" session: leave `session` out to \
reach everyone here.";

const TARGET: &str = "One session: its handle (as peer_who shows it), its id or a unique id \
prefix, its pid, or a unique fragment of its title or goal.";

/// The description and schema of a room tool; `None` for a tool that is not one.
pub(crate) fn spec(tool: Tool, to: Audience) -> Option<Spec> {
    let (description, schema) = match tool {
        Tool::PeerMessage => (message(to), message_schema()),
        Tool::PeerInbox => (
            match to {
                Audience::Agent => "Read the peer messages that were held back from your context \
                    (the \"N more\" note); reading them marks them delivered."
                    .to_string(),
                Audience::Mcp => "Read what was said to you or to the room since you last \
                    looked; reading marks it delivered, and the sender sees the receipt."
                    .to_string(),
            },
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        Tool::PeerWho => (
            "List the live sessions working in this worktree, one JSON object a line: name, \
             session (the handle to give peer_message or peer_peek), goal, last tool, how long \
             ago it last did something, and where. Changes nothing."
                .to_string(),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        Tool::PeerPeek => (
            "See what another session is doing: its goal, last prompt, last tool calls, last \
             words, and the peer lines it heard and said. Changes nothing."
                .to_string(),
            json!({
                "type": "object",
                "properties": {"session": {"type": "string", "description": TARGET}},
                "required": ["session"],
                "additionalProperties": false
            }),
        ),
        Tool::PeerClaim => (claim(to), claim_schema()),
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
    Some(Spec {
        name: tool.name(),
        description,
        schema,
    })
}

fn message(to: Audience) -> String {
    let after = match to {
        Audience::Agent => {
            "The result gives the message id and, for a direct message, the \
            handle to use next time. At your next step you see, one line each: a `delivered` \
            receipt when a session's model took your line in, and the replies to it."
        }
        Audience::Mcp => {
            "The result gives the message id and, for a direct message, the \
            handle to use next time. Replies and `delivered` receipts for your lines show in \
            peer_inbox."
        }
    };
    format!(
        "Say something to the other sessions working here. {ROOM_VS_DM} Keep it to one or two \
         sentences. {after}"
    )
}

fn message_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to say."},
            "session": {"type": "string", "description": format!("Make it a direct message. {TARGET}")},
            "in_reply_to": {"type": "string", "description": "The msg id of the line this answers."}
        },
        "required": ["text"],
        "additionalProperties": false
    })
}

fn claim(to: Audience) -> String {
    let refused = match to {
        Audience::Agent => {
            "their write and edit refuse, their bash sandbox sees your claimed files read-only, \
            their first bash of a turn is held back naming your claim, and a claimed file their \
            bash changes anyway is reported to you"
        }
        Audience::Mcp => {
            "the agents' write and edit refuse, their bash sandbox sees your claimed files \
            read-only, their first bash of a turn is held back naming your claim, and a claimed \
            file their bash changes anyway is reported to the room"
        }
    };
    format!(
        "Claim files before you change them, so other sessions in this worktree do not write \
         them meanwhile ({refused}). Fails naming the holder when someone else holds an \
         overlapping claim. A claim lasts until you release it, until ttl_s passes, or until \
         your session is removed or fails; it outlives the end of a turn."
    )
}

fn claim_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "paths": {"type": "array", "items": {"type": "string"}, "description": "Files, directories or globs, relative to your working directory."},
            "intent": {"type": "string", "description": "What you are about to do, in a few words."},
            "shared": {"type": "boolean", "description": "Others may claim the same paths as shared too (default false: exclusive)."},
            "ttl_s": {"type": "integer", "minimum": 1, "description": "Seconds until the claim expires (default 1800)."}
        },
        "required": ["paths", "intent"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_room_tool_has_an_object_schema_for_both_audiences() {
        for to in [Audience::Agent, Audience::Mcp] {
            for t in TOOLS {
                let s = spec(t, to).unwrap();
                assert_eq!(s.schema["type"], "object", "{}", s.name);
                assert!(!s.description.is_empty());
            }
        }
        assert!(spec(Tool::Read, Audience::Agent).is_none());
    }

    #[test]
    fn the_message_tool_never_offers_all() {
        let s = spec(Tool::PeerMessage, Audience::Agent).unwrap();
        assert!(s.description.contains("no \"all\" session"));
        assert!(!s.schema.to_string().contains("\"all\""));
    }
}
