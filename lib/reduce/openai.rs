//! The OpenAI Chat Completions stream (`data:`-only events ending with `data: [DONE]`), with
//! the quirks of the compatible servers (Ollama, llama.cpp, vLLM, LM Studio, OpenRouter).

use serde_json::Value;

use super::{
    non_empty, parse_arguments, read_count, ChunkOp, Reducer, SseEvent, StepEnd, StreamError, Usage,
};
use crate::log::{ChunkData, ChunkType, Role, StopReason};

const EV: &str = "chat.completion.chunk";

/// Reduces one Chat Completions stream.
#[derive(Debug, Default)]
pub(crate) struct OpenAiReducer {
    /// The open text or thinking block: the format interleaves them freely, so a switch
    /// from one to the other seals the first.
    prose: Option<Prose>,
    /// Open tool calls in arrival order. They cannot be sealed before `finish_reason`: the
    /// format never says when one call's arguments are complete.
    calls: Vec<Call>,
    next_key: usize,
    /// Tool calls sealed in this step, to tell a tool step from a final answer.
    sealed_calls: usize,
    usage: Usage,
    model: Option<String>,
    finish_reason: Option<String>,
    done: bool,
}

#[derive(Debug)]
struct Prose {
    key: usize,
    thinking: bool,
    text: String,
}

#[derive(Debug)]
struct Call {
    index: u64,
    key: usize,
    id: String,
    name: String,
    args: String,
}

impl OpenAiReducer {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn open(&mut self, ty: ChunkType, ops: &mut Vec<ChunkOp>) -> usize {
        let key = self.next_key;
        self.next_key += 1;
        ops.push(ChunkOp::Open {
            key,
            role: Role::Assistant,
            ty,
        });
        key
    }

    fn seal_prose(&mut self, ops: &mut Vec<ChunkOp>) {
        if let Some(Prose {
            key,
            thinking,
            text,
        }) = self.prose.take()
        {
            let data = if thinking {
                ChunkData::Thinking {
                    text,
                    signature: None,
                    redacted: None,
                }
            } else {
                ChunkData::Text { text }
            };
            ops.push(ChunkOp::Seal { key, data });
        }
    }

    fn prose(&mut self, thinking: bool, piece: &str, ops: &mut Vec<ChunkOp>) {
        if self.prose.as_ref().is_some_and(|p| p.thinking != thinking) {
            self.seal_prose(ops);
        }
        let key = match &mut self.prose {
            Some(p) => {
                p.text.push_str(piece);
                p.key
            }
            None => {
                let ty = if thinking {
                    ChunkType::Thinking
                } else {
                    ChunkType::Text
                };
                let key = self.open(ty, ops);
                self.prose = Some(Prose {
                    key,
                    thinking,
                    text: piece.to_owned(),
                });
                key
            }
        };
        ops.push(ChunkOp::Delta {
            key,
            text: piece.to_owned(),
        });
    }

    fn tool_call(&mut self, pos: usize, tc: &Value, ops: &mut Vec<ChunkOp>) {
        let index = tc["index"].as_u64().unwrap_or(pos as u64);
        let id = non_empty(&tc["id"]);
        let f = &tc["function"];
        // Some servers reuse index 0 for every parallel call and tell them apart by id only.
        let current = self.calls.iter().rposition(|c| c.index == index);
        let slot = match current {
            Some(p)
                if !id.is_some_and(|id| !self.calls[p].id.is_empty() && self.calls[p].id != id) =>
            {
                p
            }
            _ => {
                self.seal_prose(ops);
                let key = self.open(ChunkType::ToolCall, ops);
                let call = Call {
                    index,
                    key,
                    id: String::new(),
                    name: String::new(),
                    args: String::new(),
                };
                self.calls.push(call);
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if let (true, Some(id)) = (call.id.is_empty(), id) {
            call.id = id.to_owned();
        }
        // The name comes once; servers that repeat it in every fragment repeat it whole.
        if let (true, Some(name)) = (call.name.is_empty(), non_empty(&f["name"])) {
            call.name = name.to_owned();
        }
        let piece = match &f["arguments"] {
            Value::String(s) => s.clone(),
            // A few servers send the arguments already parsed.
            v @ (Value::Object(_) | Value::Array(_)) => v.to_string(),
            _ => String::new(),
        };
        if !piece.is_empty() {
            call.args.push_str(&piece);
            ops.push(ChunkOp::Delta {
                key: call.key,
                text: piece,
            });
        }
    }

    /// Seals every open block, in key (open) order so the log order matches the stream's.
    fn seal_all(&mut self, ops: &mut Vec<ChunkOp>) -> Result<(), StreamError> {
        let mut sealed = Vec::new();
        self.seal_prose(&mut sealed);
        for Call {
            key,
            id,
            name,
            args,
            ..
        } in std::mem::take(&mut self.calls)
        {
            let arguments = parse_arguments(&args, EV, &name)?;
            // The id is what ties the result back to the call; a server that omits it still
            // needs one that is unique within the step.
            let call_id = if id.is_empty() {
                format!("call_{key}")
            } else {
                id
            };
            sealed.push(ChunkOp::Seal {
                key,
                data: ChunkData::ToolCall {
                    call_id,
                    name,
                    arguments,
                },
            });
            self.sealed_calls += 1;
        }
        sealed.sort_by_key(ChunkOp::key);
        ops.extend(sealed);
        Ok(())
    }

    fn choice(&mut self, c: &Value, ops: &mut Vec<ChunkOp>) -> Result<(), StreamError> {
        let d = &c["delta"];
        // DeepSeek and vLLM say `reasoning_content`, Ollama and OpenRouter `reasoning`.
        if let Some(r) = non_empty(&d["reasoning_content"]).or_else(|| non_empty(&d["reasoning"])) {
            self.prose(true, r, ops);
        }
        if let Some(text) = non_empty(&d["content"]) {
            self.prose(false, text, ops);
        }
        if let Some(tcs) = d["tool_calls"].as_array() {
            for (pos, tc) in tcs.iter().enumerate() {
                self.tool_call(pos, tc, ops);
            }
        }
        if let Some(reason) = non_empty(&c["finish_reason"]) {
            self.seal_all(ops)?;
            self.finish_reason = Some(reason.to_owned());
        }
        Ok(())
    }

    fn stop_reason(&self, finish_reason: &str) -> StopReason {
        match finish_reason {
            // Some servers say `stop` after a tool-call step; the calls decide.
            "stop" if self.sealed_calls > 0 => StopReason::ToolUse,
            "stop" => StopReason::EndTurn,
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "length" => StopReason::MaxTokens,
            "content_filter" => StopReason::Refusal,
            // Servers that speak Anthropic's words here are taken at their word.
            other => StopReason::from_provider(other),
        }
    }
}

impl Reducer for OpenAiReducer {
    fn event(&mut self, ev: &SseEvent) -> Result<Vec<ChunkOp>, StreamError> {
        let data = ev.data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        let mut ops = Vec::new();
        if data == "[DONE]" {
            self.done = true;
            // Deltas that trailed the finish_reason still need their seal.
            if self.finish_reason.is_some() {
                self.seal_all(&mut ops)?;
            }
            return Ok(ops);
        }
        let v: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(_) if ev.event.as_deref() == Some("error") => {
                return Err(StreamError::Provider {
                    kind: "error".into(),
                    message: data.to_owned(),
                });
            }
            Err(e) => return Err(StreamError::malformed(EV, format!("{e}: {data}"))),
        };
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            return Err(provider_error(e));
        }
        if let Some(model) = non_empty(&v["model"]) {
            self.model = Some(model.to_owned());
        }
        let u = &v["usage"];
        if u.is_object() {
            read_count(u, "prompt_tokens", &mut self.usage.input);
            read_count(u, "completion_tokens", &mut self.usage.output);
            read_count(
                &u["prompt_tokens_details"],
                "cached_tokens",
                &mut self.usage.cache_read,
            );
        }
        // `choices` may be null or empty (the usage-only chunk); only the first choice is ours
        // since we never ask for n > 1.
        for c in v["choices"].as_array().into_iter().flatten() {
            if c["index"].as_u64().unwrap_or(0) == 0 {
                self.choice(c, &mut ops)?;
            }
        }
        Ok(ops)
    }

    fn finish(&mut self) -> Result<StepEnd, StreamError> {
        match (&self.finish_reason, self.done) {
            (Some(reason), true) => Ok(StepEnd {
                stop_reason: self.stop_reason(reason),
                usage: self.usage,
                model: self.model.clone(),
            }),
            _ => Err(StreamError::Truncated),
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

/// `{"message","type","param","code"}` from OpenAI; compatible servers vary, and some give
/// only a numeric `code`, which [`StreamError::retryable`] reads as an HTTP status.
fn provider_error(e: &Value) -> StreamError {
    let kind = non_empty(&e["type"])
        .map(str::to_owned)
        .or_else(|| match &e["code"] {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .unwrap_or_else(|| "error".to_owned());
    let message = match e {
        Value::String(s) => s.clone(),
        _ => e["message"]
            .as_str()
            .map_or_else(|| e.to_string(), str::to_owned),
    };
    StreamError::Provider { kind, message }
}

#[cfg(test)]
mod tests;
