//! The Anthropic Messages stream: `message_start`, `content_block_start/delta/stop`,
//! `message_delta`, `message_stop`, `ping`, `error`.

use serde_json::Value;

use super::{
    non_empty, parse_arguments, read_count, ChunkOp, Reducer, SseEvent, StepEnd, StreamError, Usage,
};
use crate::log::{ChunkData, ChunkType, Role, StopReason};

const EVENTS: [&str; 8] = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
];

/// Reduces one Anthropic Messages stream.
#[derive(Debug, Default)]
pub(crate) struct AnthropicReducer {
    /// Open blocks by the provider's content index.
    open: Vec<(u64, usize, Block)>,
    /// Open blocks of types the log cannot hold (server tools, future types): their deltas
    /// and stop are swallowed so a newer API does not break an older client.
    skipped: Vec<u64>,
    next_key: usize,
    usage: Usage,
    model: Option<String>,
    stop_reason: Option<StopReason>,
    done: bool,
}

#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
}

impl AnthropicReducer {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn open_block(&mut self, v: &Value, ops: &mut Vec<ChunkOp>) -> Result<(), StreamError> {
        const EV: &str = "content_block_start";
        let index = index(v, EV)?;
        if self.open.iter().any(|b| b.0 == index) || self.skipped.contains(&index) {
            return Err(StreamError::malformed(
                EV,
                format!("block {index} started twice"),
            ));
        }
        let cb = &v["content_block"];
        let mut initial = None;
        let (ty, block) = match cb["type"].as_str() {
            Some("text") => {
                initial = non_empty(&cb["text"]).map(str::to_owned);
                (
                    ChunkType::Text,
                    Block::Text(initial.clone().unwrap_or_default()),
                )
            }
            Some("thinking") => {
                initial = non_empty(&cb["thinking"]).map(str::to_owned);
                let block = Block::Thinking {
                    text: initial.clone().unwrap_or_default(),
                    signature: cb["signature"].as_str().unwrap_or_default().to_owned(),
                };
                (ChunkType::Thinking, block)
            }
            Some("redacted_thinking") => {
                let data = cb["data"].as_str().ok_or_else(|| {
                    StreamError::malformed(
                        EV,
                        format!("redacted_thinking block {index} has no data"),
                    )
                })?;
                (ChunkType::Thinking, Block::Redacted(data.to_owned()))
            }
            Some("tool_use") => {
                let (Some(id), Some(name)) = (non_empty(&cb["id"]), non_empty(&cb["name"])) else {
                    return Err(StreamError::malformed(
                        EV,
                        format!("tool_use block {index} lacks id or name"),
                    ));
                };
                // The start carries `input: {}` and the real input follows as fragments; a
                // non-empty start input (no fragments) is kept as the whole argument text.
                let json = match &cb["input"] {
                    Value::Object(m) if !m.is_empty() => cb["input"].to_string(),
                    _ => String::new(),
                };
                (
                    ChunkType::ToolCall,
                    Block::Tool {
                        id: id.to_owned(),
                        name: name.to_owned(),
                        json,
                    },
                )
            }
            _ => {
                self.skipped.push(index);
                return Ok(());
            }
        };
        let key = self.next_key;
        self.next_key += 1;
        self.open.push((index, key, block));
        ops.push(ChunkOp::Open {
            key,
            role: Role::Assistant,
            ty,
        });
        if let Some(text) = initial {
            ops.push(ChunkOp::Delta { key, text });
        }
        Ok(())
    }

    fn delta(&mut self, v: &Value, ops: &mut Vec<ChunkOp>) -> Result<(), StreamError> {
        const EV: &str = "content_block_delta";
        let index = index(v, EV)?;
        if self.skipped.contains(&index) {
            return Ok(());
        }
        let Some((_, key, block)) = self.open.iter_mut().find(|b| b.0 == index) else {
            return Err(StreamError::malformed(
                EV,
                format!("block {index} is not open"),
            ));
        };
        let key = *key;
        let d = &v["delta"];
        let dtype = d["type"].as_str().unwrap_or_default();
        let field = match dtype {
            "text_delta" => "text",
            "thinking_delta" => "thinking",
            "signature_delta" => "signature",
            "input_json_delta" => "partial_json",
            // citations_delta and whatever comes next carry nothing the log keeps.
            _ => return Ok(()),
        };
        let piece = d[field]
            .as_str()
            .ok_or_else(|| StreamError::malformed(EV, format!("{dtype} without {field}")))?;
        let target = match (dtype, block) {
            ("text_delta", Block::Text(text)) => text,
            ("thinking_delta", Block::Thinking { text, .. }) => text,
            ("signature_delta", Block::Thinking { signature, .. }) => {
                // The signature is opaque replay data, not something to show as it streams.
                signature.push_str(piece);
                return Ok(());
            }
            ("input_json_delta", Block::Tool { json, .. }) => json,
            (_, block) => {
                return Err(StreamError::malformed(
                    EV,
                    format!("{dtype} for block {index} ({block:?})"),
                ));
            }
        };
        if !piece.is_empty() {
            target.push_str(piece);
            ops.push(ChunkOp::Delta {
                key,
                text: piece.to_owned(),
            });
        }
        Ok(())
    }

    fn stop_block(&mut self, v: &Value, ops: &mut Vec<ChunkOp>) -> Result<(), StreamError> {
        const EV: &str = "content_block_stop";
        let index = index(v, EV)?;
        if let Some(p) = self.skipped.iter().position(|&i| i == index) {
            self.skipped.swap_remove(p);
            return Ok(());
        }
        let Some(p) = self.open.iter().position(|b| b.0 == index) else {
            return Err(StreamError::malformed(
                EV,
                format!("block {index} is not open"),
            ));
        };
        let (_, key, block) = self.open.remove(p);
        let data = match block {
            Block::Text(text) => ChunkData::Text { text },
            Block::Thinking { text, signature } => ChunkData::Thinking {
                text,
                signature: (!signature.is_empty()).then_some(signature),
                redacted: None,
            },
            Block::Redacted(data) => ChunkData::Thinking {
                text: String::new(),
                signature: None,
                redacted: Some(data),
            },
            Block::Tool { id, name, json } => {
                let arguments = parse_arguments(&json, EV, &name)?;
                ChunkData::ToolCall {
                    call_id: id,
                    name,
                    arguments,
                }
            }
        };
        ops.push(ChunkOp::Seal { key, data });
        Ok(())
    }

    fn read_usage(&mut self, u: &Value) {
        read_count(u, "input_tokens", &mut self.usage.input);
        read_count(u, "output_tokens", &mut self.usage.output);
        read_count(u, "cache_read_input_tokens", &mut self.usage.cache_read);
        read_count(
            u,
            "cache_creation_input_tokens",
            &mut self.usage.cache_write,
        );
    }
}

fn index(v: &Value, event: &str) -> Result<u64, StreamError> {
    v["index"]
        .as_u64()
        .ok_or_else(|| StreamError::malformed(event, "no block index"))
}

impl Reducer for AnthropicReducer {
    fn event(&mut self, ev: &SseEvent) -> Result<Vec<ChunkOp>, StreamError> {
        let name = ev.event.as_deref();
        if self.done || name.is_some_and(|n| !EVENTS.contains(&n)) || name == Some("ping") {
            return Ok(Vec::new());
        }
        let label = name.unwrap_or("message");
        let v: Value =
            serde_json::from_str(&ev.data).map_err(|e| StreamError::malformed(label, e))?;
        // The payload's `type` is authoritative; the SSE name is only a fallback.
        let Some(ty) = v["type"].as_str().or(name) else {
            return Err(StreamError::malformed(label, "event has no type"));
        };
        let mut ops = Vec::new();
        match ty {
            "message_start" => {
                let m = &v["message"];
                if let Some(model) = non_empty(&m["model"]) {
                    self.model = Some(model.to_owned());
                }
                self.read_usage(&m["usage"]);
            }
            "content_block_start" => self.open_block(&v, &mut ops)?,
            "content_block_delta" => self.delta(&v, &mut ops)?,
            "content_block_stop" => self.stop_block(&v, &mut ops)?,
            "message_delta" => {
                if let Some(reason) = non_empty(&v["delta"]["stop_reason"]) {
                    self.stop_reason = Some(StopReason::from_provider(reason));
                }
                // Newer API versions repeat input and cache counts here, cumulatively.
                self.read_usage(&v["usage"]);
            }
            "message_stop" => {
                if let Some((index, ..)) = self.open.first() {
                    return Err(StreamError::malformed(
                        ty,
                        format!("block {index} was never stopped"),
                    ));
                }
                self.done = true;
            }
            "error" => {
                let e = &v["error"];
                return Err(StreamError::Provider {
                    kind: e["type"].as_str().unwrap_or("error").to_owned(),
                    message: e["message"]
                        .as_str()
                        .map_or_else(|| ev.data.clone(), str::to_owned),
                });
            }
            _ => {}
        }
        Ok(ops)
    }

    fn finish(&mut self) -> Result<StepEnd, StreamError> {
        if !self.done {
            return Err(StreamError::Truncated);
        }
        Ok(StepEnd {
            stop_reason: self.stop_reason.unwrap_or(StopReason::Unknown),
            usage: self.usage,
            model: self.model.clone(),
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests;
