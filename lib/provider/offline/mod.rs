//! The offline models: `echo` repeats the person's last words, `script:FILE` plays a TOML
//! script of steps. Both need no network, stream ops the way a real provider does, and are
//! deterministic, so demos, tests and CI runs of the agent loop are reproducible. This file
//! holds what they share: the emitter that streams blocks and the deterministic usage.

mod echo;
mod script;

pub(crate) use echo::EchoProvider;
pub(crate) use script::ScriptProvider;

use serde_json::Value;

use crate::log::{ChunkData, ChunkType, Role, StopReason};
use crate::provider::Sizes;
use crate::reduce::{ChunkOp, StepEnd, Usage};

/// Streams blocks as ops, numbering them like a reducer does, and counts what it said.
struct Emitter<'a> {
    sink: &'a mut dyn FnMut(ChunkOp),
    next_key: usize,
    chars: usize,
}

impl<'a> Emitter<'a> {
    fn new(sink: &'a mut dyn FnMut(ChunkOp)) -> Self {
        Emitter {
            sink,
            next_key: 0,
            chars: 0,
        }
    }

    fn open(&mut self, ty: ChunkType) -> usize {
        let key = self.next_key;
        self.next_key += 1;
        (self.sink)(ChunkOp::Open {
            key,
            role: Role::Assistant,
            ty,
        });
        key
    }

    fn deltas(&mut self, key: usize, text: &str) {
        for piece in word_groups(text) {
            (self.sink)(ChunkOp::Delta {
                key,
                text: piece.to_owned(),
            });
        }
        self.chars += text.chars().count();
    }

    fn text(&mut self, text: &str) {
        let key = self.open(ChunkType::Text);
        self.deltas(key, text);
        (self.sink)(ChunkOp::Seal {
            key,
            data: ChunkData::Text {
                text: text.to_owned(),
            },
        });
    }

    fn thinking(&mut self, text: &str, signature: &str) {
        let key = self.open(ChunkType::Thinking);
        self.deltas(key, text);
        let data = ChunkData::Thinking {
            text: text.to_owned(),
            signature: Some(signature.to_owned()),
            redacted: None,
        };
        (self.sink)(ChunkOp::Seal { key, data });
    }

    fn tool_call(&mut self, call_id: String, name: &str, arguments: Value) {
        let key = self.open(ChunkType::ToolCall);
        let json = arguments.to_string();
        self.chars += json.chars().count();
        (self.sink)(ChunkOp::Delta { key, text: json });
        let data = ChunkData::ToolCall {
            call_id,
            name: name.to_owned(),
            arguments,
        };
        (self.sink)(ChunkOp::Seal { key, data });
    }
}

/// `text` in up to four pieces cut after whitespace, so it streams like a model's output
/// and the pieces join back to exactly `text`.
fn word_groups(text: &str) -> Vec<&str> {
    let words: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    let per = words.len().div_ceil(4).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    for group in words.chunks(per) {
        let len: usize = group.iter().map(|w| w.len()).sum();
        out.push(&text[start..start + len]);
        start += len;
    }
    out
}

/// Deterministic usage: a quarter of the characters each way, the usual rough token size.
fn step_end(stop_reason: StopReason, sizes: &Sizes, output_chars: usize, model: &str) -> StepEnd {
    let input_chars = sizes.message_chars;
    StepEnd {
        stop_reason,
        usage: Usage {
            input: (input_chars / 4) as u64,
            output: (output_chars / 4) as u64,
            cache_read: 0,
            cache_write: 0,
        },
        model: Some(model.to_owned()),
    }
}

#[cfg(test)]
mod tests;
