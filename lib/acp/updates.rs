//! The session's log as ACP `session/update` notifications: a running turn's events as they
//! happen ([`Relay`]), and a stored session's chunks when an editor loads it ([`replay`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, ImageContent, SessionNotification, SessionUpdate, StopReason,
    TextContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::Value;

use super::rpc::Conn;
use crate::agent::Event;
use crate::log::{Chunk, ChunkData, ChunkType, Role};

/// Send one update about `session`.
pub(crate) fn send(conn: &Conn, session: &str, update: SessionUpdate) {
    let n = SessionNotification::new(session.to_string(), update);
    conn.notify(
        "session/update",
        serde_json::to_value(n).expect("a session update serializes"),
    );
}

pub(crate) fn text(t: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(t)))
}

/// The protocol's stop reason for how a turn ended.
pub(crate) fn stop_reason(r: crate::log::StopReason) -> StopReason {
    use crate::log::StopReason as S;
    match r {
        S::MaxTokens | S::ContextWindowExceeded => StopReason::MaxTokens,
        S::MaxSteps | S::MaxCost => StopReason::MaxTurnRequests,
        S::Refusal => StopReason::Refusal,
        S::Interrupted => StopReason::Cancelled,
        S::EndTurn | S::ToolUse | S::StopSequence | S::PauseTurn | S::Unknown | S::Error => {
            StopReason::EndTurn
        }
    }
}

/// A running turn's events, relayed to the editor as they happen.
pub(crate) struct Relay<'a> {
    conn: Arc<Conn>,
    session: String,
    cwd: PathBuf,
    /// Tool calls announced and not yet finished (id and tool), in the order they run.
    open_calls: Vec<(String, String)>,
    /// The turn's approvals: a call that waits for the editor's permission is marked running
    /// by the permission's answer, not before.
    approval: Option<&'a std::sync::Mutex<crate::agent::Approval>>,
    /// Whether the current attempt has streamed text that a retry would discard.
    streamed: bool,
    /// How the turn ended, once it has.
    pub(crate) stop: Option<crate::log::StopReason>,
}

impl<'a> Relay<'a> {
    pub(crate) fn new(
        conn: Arc<Conn>,
        session: &str,
        cwd: &Path,
        approval: Option<&'a std::sync::Mutex<crate::agent::Approval>>,
    ) -> Relay<'a> {
        Relay {
            conn,
            session: session.to_string(),
            cwd: cwd.to_path_buf(),
            open_calls: Vec::new(),
            approval,
            streamed: false,
            stop: None,
        }
    }

    fn send(&self, update: SessionUpdate) {
        send(&self.conn, &self.session, update);
    }

    pub(crate) fn event(&mut self, ev: Event) {
        match ev {
            Event::Delta { ty, text, .. } if !text.is_empty() => match ty {
                ChunkType::Text => {
                    self.streamed = true;
                    self.send(SessionUpdate::AgentMessageChunk(self::text(text)));
                }
                ChunkType::Thinking => {
                    self.send(SessionUpdate::AgentThoughtChunk(self::text(text)))
                }
                _ => {}
            },
            Event::Seal(c) => self.sealed(&c),
            Event::Retry { reason, .. } if self.streamed => {
                self.streamed = false;
                self.send(SessionUpdate::AgentMessageChunk(self::text(format!(
                    "\n[discarded: {reason}; trying again]\n"
                ))));
            }
            Event::AttemptEnd { ok: true } => {
                self.streamed = false;
                // The step's calls run now, in order.
                self.start_next();
            }
            Event::TurnDone { stop_reason, .. } => self.stop = Some(stop_reason),
            _ => {}
        }
    }

    fn sealed(&mut self, c: &Chunk) {
        match &c.data {
            ChunkData::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                let call = super::tools::announce(call_id, name, arguments, &self.cwd, true);
                self.open_calls.push((call_id.clone(), name.clone()));
                self.send(SessionUpdate::ToolCall(call));
            }
            ChunkData::ToolResult { call_id, .. } => {
                self.send(SessionUpdate::ToolCallUpdate(finished(&c.data)));
                self.open_calls.retain(|(id, _)| id != call_id);
                self.start_next();
            }
            // Input that joined the turn at a later step (queued from another shell, a room).
            ChunkData::Text { .. } | ChunkData::Peer { .. } if c.step > 0 => {
                if let Some(u) = user_side(c) {
                    self.send(u);
                }
            }
            _ => {}
        }
    }

    /// The next call of the step is running.
    fn start_next(&self) {
        if let Some((id, tool)) = self.open_calls.first() {
            let asks = self
                .approval
                .is_some_and(|a| a.lock().unwrap_or_else(|e| e.into_inner()).must_ask(tool));
            if asks {
                return;
            }
            let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
            self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                id.clone(),
                fields,
            )));
        }
    }
}

/// The update that finishes a call: its result, and whether it failed.
fn finished(data: &ChunkData) -> ToolCallUpdate {
    let ChunkData::ToolResult {
        call_id,
        result,
        is_error,
        ..
    } = data
    else {
        unreachable!("finished() takes tool results")
    };
    let status = match is_error {
        true => ToolCallStatus::Failed,
        false => ToolCallStatus::Completed,
    };
    let fields = ToolCallUpdateFields::new()
        .status(status)
        .content(super::tools::result_content(result))
        .raw_output(Value::clone(result));
    ToolCallUpdate::new(call_id.clone(), fields)
}

/// A user-side chunk as the editor shows it: the person's words and images, and what peers
/// said in the room (marked with who said it).
fn user_side(c: &Chunk) -> Option<SessionUpdate> {
    let block = match &c.data {
        ChunkData::Text { text } if c.role == Role::User => {
            ContentBlock::Text(TextContent::new(text.clone()))
        }
        ChunkData::Image { media_type, data } => {
            ContentBlock::Image(ImageContent::new(data.clone(), media_type.clone()))
        }
        ChunkData::Peer { messages, room, .. } => {
            let lines: Vec<String> = messages
                .iter()
                .map(|m| format!("[{room}] {}: {}", m.from, m.text))
                .collect();
            ContentBlock::Text(TextContent::new(lines.join("\n")))
        }
        _ => return None,
    };
    Some(SessionUpdate::UserMessageChunk(ContentChunk::new(block)))
}

/// A stored session's chunks as the updates that rebuild its conversation in the editor:
/// what the person said, the answers and thinking, and each tool call with its outcome.
/// Records (turn ends, compactions) and errors are not part of the conversation.
pub(crate) fn replay(conn: &Conn, session: &str, cwd: &Path, chunks: &[Chunk]) {
    for c in chunks {
        let update = match &c.data {
            ChunkData::Text { text } if c.role == Role::Assistant => {
                Some(SessionUpdate::AgentMessageChunk(self::text(text.clone())))
            }
            ChunkData::Thinking { text, .. } if !text.is_empty() => {
                Some(SessionUpdate::AgentThoughtChunk(self::text(text.clone())))
            }
            ChunkData::ToolCall {
                call_id,
                name,
                arguments,
            } => Some(SessionUpdate::ToolCall(super::tools::announce(
                call_id, name, arguments, cwd, false,
            ))),
            ChunkData::ToolResult { .. } => Some(SessionUpdate::ToolCallUpdate(finished(&c.data))),
            _ => user_side(c),
        };
        if let Some(u) = update {
            send(conn, session, u);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stop_reason_has_the_protocols_word() {
        use crate::log::StopReason as S;
        let word = |r| serde_json::to_value(stop_reason(r)).unwrap();
        assert_eq!(word(S::EndTurn), "end_turn");
        assert_eq!(word(S::MaxTokens), "max_tokens");
        assert_eq!(word(S::MaxSteps), "max_turn_requests");
        assert_eq!(word(S::Refusal), "refusal");
        assert_eq!(word(S::Interrupted), "cancelled");
    }
}
