//! Small constructors for logs in tests: ids `c1, c2, …`, seq from 1.

use serde_json::{json, Value};

use crate::log::{Chunk, ChunkData, PeerMessage, Role};

#[derive(Debug, Default, Clone)]
pub(crate) struct Log {
    pub(crate) chunks: Vec<Chunk>,
    turn: String,
    step: i64,
}

impl Log {
    pub(crate) fn new() -> Log {
        Log {
            turn: "t1".into(),
            ..Log::default()
        }
    }

    /// Later chunks belong to `turn`, step 0.
    pub(crate) fn turn(&mut self, turn: &str) -> &mut Log {
        self.turn = turn.into();
        self.step = 0;
        self
    }

    pub(crate) fn step(&mut self, step: i64) -> &mut Log {
        self.step = step;
        self
    }

    pub(crate) fn len(&self) -> usize {
        self.chunks.len()
    }

    pub(crate) fn push(&mut self, role: Role, data: ChunkData) -> String {
        let seq = self.chunks.len() as i64 + 1;
        let id = format!("c{seq}");
        self.chunks.push(Chunk {
            id: id.clone(),
            session: "s1".into(),
            seq,
            turn: self.turn.clone(),
            step: self.step,
            role,
            data,
            ts: 1_790_000_000_000 + seq,
        });
        id
    }

    pub(crate) fn user(&mut self, text: &str) -> String {
        self.push(Role::User, ChunkData::text(text))
    }

    pub(crate) fn text(&mut self, text: &str) -> String {
        self.push(Role::Assistant, ChunkData::text(text))
    }

    pub(crate) fn thinking(&mut self, text: &str, signature: Option<&str>) -> String {
        self.push(
            Role::Assistant,
            ChunkData::Thinking {
                text: text.into(),
                signature: signature.map(Into::into),
                redacted: None,
            },
        )
    }

    pub(crate) fn redacted(&mut self, data: &str) -> String {
        self.push(
            Role::Assistant,
            ChunkData::Thinking {
                text: String::new(),
                signature: None,
                redacted: Some(data.into()),
            },
        )
    }

    pub(crate) fn call(&mut self, call_id: &str, name: &str, arguments: Value) -> String {
        self.push(
            Role::Assistant,
            ChunkData::ToolCall {
                call_id: call_id.into(),
                name: name.into(),
                arguments,
            },
        )
    }

    pub(crate) fn result(&mut self, call_id: &str, result: Value, is_error: bool) -> String {
        self.push(
            Role::Tool,
            ChunkData::ToolResult {
                call_id: call_id.into(),
                name: "read".into(),
                result,
                is_error,
                synthetic: false,
            },
        )
    }

    /// `messages`: (id, from, text).
    pub(crate) fn peer(&mut self, messages: &[(&str, &str, &str)], omitted: u64) -> String {
        let messages = messages
            .iter()
            .map(|(id, from, text)| PeerMessage {
                id: (*id).into(),
                from: (*from).into(),
                text: (*text).into(),
                ..Default::default()
            })
            .collect();
        self.push(
            Role::Peer,
            ChunkData::Peer {
                messages,
                omitted,
                room: "r1".into(),
                roster: None,
            },
        )
    }

    pub(crate) fn system(&mut self, kind: &str, fields: Value) -> String {
        self.push(Role::System, ChunkData::system(kind, fields))
    }

    pub(crate) fn turn_end(&mut self) -> String {
        self.system(
            "turn_end",
            json!({"stop_reason": "end_turn", "usage": {"input": 1, "output": 1}}),
        )
    }

    pub(crate) fn error(&mut self, message: &str) -> String {
        self.push(
            Role::System,
            ChunkData::Error {
                message: message.into(),
                status: Some(529),
            },
        )
    }

    pub(crate) fn abandon(&mut self, ids: &[String]) -> String {
        self.system(
            "attempt_abandoned",
            json!({"chunk_ids": ids, "reason": "stream broke"}),
        )
    }
}

/// Each message without its cache breakpoints, as JSON text: what must stay byte-identical.
pub(crate) fn strip_all(msgs: &[Value]) -> Vec<String> {
    msgs.iter()
        .map(|m| super::strip_cache_control(m).to_string())
        .collect()
}
