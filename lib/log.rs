//! The chunk model of the log (DESIGN §2) and its NDJSON form.
//!
//! A chunk is one sealed block of a conversation: a user text, an assistant thinking block,
//! one tool call, one tool result, a peer message batch, or a system record. Chunks are
//! immutable once written; the log of a session is its chunks in `seq` order.

mod data;
pub(crate) mod event;
pub use event::Usage;
pub mod image;
mod ndjson;
mod peer;
mod stop;

pub use data::ChunkData;
pub(crate) use data::TURN_END;
pub(crate) use ndjson::{check_role_type, decode_line};
pub(crate) use peer::{PeerKind, PeerMessage, PeerPresent};
pub use stop::StopReason;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who produced a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    Tool,
    System,
    Peer,
}

impl Role {
    pub(crate) const ALL: [Role; 5] = [
        Role::User,
        Role::Assistant,
        Role::Tool,
        Role::System,
        Role::Peer,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
            Role::Peer => "peer",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of block a chunk holds; it decides the shape of `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkType {
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Error,
    System,
    Peer,
    Image,
}

impl ChunkType {
    pub(crate) const ALL: [ChunkType; 8] = [
        ChunkType::Text,
        ChunkType::Thinking,
        ChunkType::ToolCall,
        ChunkType::ToolResult,
        ChunkType::Error,
        ChunkType::System,
        ChunkType::Peer,
        ChunkType::Image,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ChunkType::Text => "text",
            ChunkType::Thinking => "thinking",
            ChunkType::ToolCall => "tool_call",
            ChunkType::ToolResult => "tool_result",
            ChunkType::Error => "error",
            ChunkType::System => "system",
            ChunkType::Peer => "peer",
            ChunkType::Image => "image",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<ChunkType> {
        ChunkType::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for ChunkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A stored chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub(crate) id: String,
    pub(crate) session: String,
    pub(crate) seq: i64,
    pub(crate) turn: String,
    pub(crate) step: i64,
    pub(crate) role: Role,
    pub(crate) data: ChunkData,
    /// Unix milliseconds.
    pub(crate) ts: i64,
}

impl Chunk {
    pub(crate) fn chunk_type(&self) -> ChunkType {
        self.data.chunk_type()
    }

    /// The NDJSON object: `{"id","session","seq","turn","step","role","type","data","ts"}`.
    pub(crate) fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), self.id.clone().into());
        m.insert("session".into(), self.session.clone().into());
        m.insert("seq".into(), self.seq.into());
        m.insert("turn".into(), self.turn.clone().into());
        m.insert("step".into(), self.step.into());
        m.insert("role".into(), self.role.as_str().into());
        m.insert("type".into(), self.chunk_type().as_str().into());
        m.insert("data".into(), self.data.to_value());
        m.insert("ts".into(), crate::clock::iso(self.ts).into());
        Value::Object(m)
    }

    /// One NDJSON line, without the newline.
    pub(crate) fn to_ndjson(&self) -> String {
        self.to_value().to_string()
    }
}

/// A chunk on its way in: what NDJSON input may carry. `id`, `session`, `seq` and `ts` are
/// assigned by the store when missing; `turn` may be left for the caller to fill.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    pub(crate) id: Option<String>,
    pub(crate) session: Option<String>,
    pub(crate) seq: Option<i64>,
    pub(crate) turn: Option<String>,
    pub(crate) step: i64,
    pub(crate) role: Role,
    pub(crate) data: ChunkData,
    pub(crate) ts: Option<i64>,
}

impl NewChunk {
    pub fn new(role: Role, data: ChunkData) -> NewChunk {
        NewChunk {
            id: None,
            session: None,
            seq: None,
            turn: None,
            step: 0,
            role,
            data,
            ts: None,
        }
    }

    pub(crate) fn in_turn(mut self, turn: &str, step: i64) -> NewChunk {
        self.turn = Some(turn.to_string());
        self.step = step;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_minimal_line() {
        let c = decode_line(1, r#"{"role":"user","type":"text","data":{"text":"hi"}}"#).unwrap();
        assert_eq!(c.role, Role::User);
        assert_eq!(c.data, ChunkData::text("hi"));
        assert_eq!(c.step, 0);
        assert!(c.turn.is_none());
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = decode_line(7, r#"{"type":"text","data":{"text":"hi"}}"#).unwrap_err();
        assert_eq!(e.to_string(), "line 7: field `role`: missing");
        let e = decode_line(2, r#"{"role":"user","type":"blob","data":{}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("type"));
        let e = decode_line(3, r#"{"role":"tool","type":"tool_result","data":"x"}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("data"));
        assert!(e.message.contains("JSON object"), "{e}");
        let e = decode_line(
            4,
            r#"{"seq":"1","role":"user","type":"text","data":{"text":""}}"#,
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("seq"));
        let e = decode_line(5, "{nope").unwrap_err();
        assert!(e.to_string().starts_with("line 5: malformed JSON"), "{e}");
    }

    #[test]
    fn a_turn_end_names_a_known_stop_reason() {
        let good = r#"{"kind":"turn_end","stop_reason":"max_steps"}"#;
        let d = ChunkData::from_json(ChunkType::System, good).unwrap();
        assert_eq!(d.stop_reason(), Some(StopReason::MaxSteps));
        for bad in [
            r#"{"kind":"turn_end","stop_reason":"done"}"#,
            r#"{"kind":"turn_end","stop_reason":3}"#,
            r#"{"kind":"turn_end"}"#,
        ] {
            let e = ChunkData::from_json(ChunkType::System, bad).unwrap_err();
            assert!(e.starts_with("turn_end: "), "{e}");
        }
        // Other records keep their free form.
        let note = ChunkData::from_json(ChunkType::System, r#"{"kind":"note","stop_reason":1}"#);
        assert_eq!(note.unwrap().stop_reason(), None);
    }

    #[test]
    fn chunk_round_trips_through_ndjson() {
        let c = Chunk {
            id: "c1".into(),
            session: "s1".into(),
            seq: 3,
            turn: "t1".into(),
            step: 1,
            role: Role::Assistant,
            data: ChunkData::Thinking {
                text: String::new(),
                signature: Some("sig".into()),
                redacted: None,
            },
            ts: 1_790_000_000_000,
        };
        let n = decode_line(1, &c.to_ndjson()).unwrap();
        assert_eq!(n.id.as_deref(), Some("c1"));
        assert_eq!(n.seq, Some(3));
        assert_eq!(n.ts, Some(c.ts));
        assert_eq!(n.data, c.data);
    }
}
