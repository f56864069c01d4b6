//! The OpenAI Chat Completions stream (`data:`-only events ending with `data: [DONE]`), with
//! the quirks of the compatible servers (Ollama, llama.cpp, vLLM, LM Studio, OpenRouter).

use serde_json::Value;

use super::{
    non_empty, parse_arguments, read_count, ChunkOp, Reducer, SseEvent, StepEnd, StreamError, Usage,
};
use crate::log::{ChunkData, ChunkType, Role};

const EV: &str = "chat.completion.chunk";

/// Reduces one Chat Completions stream.
#[derive(Debug, Default)]
pub struct OpenAiReducer {
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
    pub fn new() -> Self {
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

    fn stop_reason(&self, finish_reason: &str) -> String {
        match finish_reason {
            // Some servers say `stop` after a tool-call step; the calls decide.
            "stop" if self.sealed_calls > 0 => "tool_use",
            "stop" => "end_turn",
            "tool_calls" | "function_call" => "tool_use",
            "length" => "max_tokens",
            other => other,
        }
        .to_owned()
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
                usage: self.usage.clone(),
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
mod tests {
    use serde_json::json;

    use super::*;
    use crate::reduce::testkit::{delta, open, seal};

    fn run(sse: &str) -> (Vec<ChunkOp>, Result<StepEnd, StreamError>) {
        crate::reduce::testkit::run(OpenAiReducer::new(), sse)
    }
    fn call(id: &str, name: &str, arguments: Value) -> ChunkData {
        ChunkData::ToolCall {
            call_id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn text_stream_with_usage_chunk() {
        let (ops, end) = run(
            r#"data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"! How can I help?"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":{"prompt_tokens":1117,"completion_tokens":9,"total_tokens":1126,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}

data: [DONE]

"#,
        );
        assert_eq!(
            ops,
            vec![
                open(0, ChunkType::Text),
                delta(0, "Hello"),
                delta(0, "! How can I help?"),
                seal(
                    0,
                    ChunkData::Text {
                        text: "Hello! How can I help?".into()
                    }
                ),
            ]
        );
        assert_eq!(
            end,
            Ok(StepEnd {
                stop_reason: "end_turn".into(),
                usage: Usage {
                    input: 1117,
                    output: 9,
                    cache_read: 1024,
                    cache_write: 0
                },
                model: Some("gpt-4o-mini-2024-07-18".into()),
            })
        );
    }

    #[test]
    fn reasoning_then_text() {
        let (ops, end) = run(
            r#"data: {"id":"1","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""},"finish_reason":null}]}

data: {"id":"1","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"Two plus two"},"finish_reason":null}]}

data: {"id":"1","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":null,"reasoning_content":" is four."},"finish_reason":null}]}

data: {"id":"1","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":"4","reasoning_content":null},"finish_reason":null}]}

data: {"id":"1","object":"chat.completion.chunk","created":1,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":"","reasoning_content":null},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30,"prompt_tokens_details":{"cached_tokens":0}}}

data: [DONE]

"#,
        );
        assert_eq!(
            ops,
            vec![
                open(0, ChunkType::Thinking),
                delta(0, "Two plus two"),
                delta(0, " is four."),
                seal(
                    0,
                    ChunkData::Thinking {
                        text: "Two plus two is four.".into(),
                        signature: None,
                        redacted: None
                    }
                ),
                open(1, ChunkType::Text),
                delta(1, "4"),
                seal(1, ChunkData::Text { text: "4".into() }),
            ]
        );
        assert_eq!(end.unwrap().stop_reason, "max_tokens");
    }

    #[test]
    fn tool_calls_by_index_with_fragments() {
        let (ops, end) = run(
            r#"data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me look."},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"lo"}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"cation\": \"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_7bJvGxbWkqQ3RSqb5cQUpLgP","type":"function","function":{"name":"get_time","arguments":""}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\": "}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"CET\"}"}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}

data: [DONE]

"#,
        );
        assert_eq!(
            ops,
            vec![
                open(0, ChunkType::Text),
                delta(0, "Let me look."),
                seal(
                    0,
                    ChunkData::Text {
                        text: "Let me look.".into()
                    }
                ),
                open(1, ChunkType::ToolCall),
                delta(1, "{\"lo"),
                delta(1, "cation\": \"Paris\"}"),
                open(2, ChunkType::ToolCall),
                delta(2, "{\"tz\": "),
                delta(2, "\"CET\"}"),
                seal(
                    1,
                    call(
                        "call_DdmO9pD3xa9XTPNJ32zg2hcA",
                        "get_weather",
                        json!({"location": "Paris"})
                    )
                ),
                seal(
                    2,
                    call(
                        "call_7bJvGxbWkqQ3RSqb5cQUpLgP",
                        "get_time",
                        json!({"tz": "CET"})
                    )
                ),
            ]
        );
        let end = end.unwrap();
        assert_eq!(end.stop_reason, "tool_use");
        assert_eq!(end.usage, Usage::default());
    }

    #[test]
    fn parallel_calls_reusing_index_zero() {
        let (ops, end) = run(
            r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3:8b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.txt\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3:8b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b2","type":"function","function":{"name":"read","arguments":"{\"path\":"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3:8b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b2","function":{"arguments":"\"b.txt\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3:8b","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

"#,
        );
        assert_eq!(
            ops,
            vec![
                open(0, ChunkType::ToolCall),
                delta(0, "{\"path\":\"a.txt\"}"),
                open(1, ChunkType::ToolCall),
                delta(1, "{\"path\":"),
                delta(1, "\"b.txt\"}"),
                seal(0, call("call_a1", "read", json!({"path": "a.txt"}))),
                seal(1, call("call_b2", "read", json!({"path": "b.txt"}))),
            ]
        );
        assert_eq!(end.unwrap().model.as_deref(), Some("qwen3:8b"));
    }

    #[test]
    fn choices_null_usage_chunk_and_stop_after_calls() {
        let (ops, end) = run(
            r#"data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"glob","arguments":""}}]},"finish_reason":null}]}

data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"llama","choices":null,"usage":{"prompt_tokens":50,"completion_tokens":7,"total_tokens":57}}

data: [DONE]

"#,
        );
        assert_eq!(
            ops,
            vec![
                open(0, ChunkType::ToolCall),
                seal(0, call("call_x", "glob", json!({})))
            ]
        );
        let end = end.unwrap();
        assert_eq!(end.stop_reason, "tool_use");
        assert_eq!(
            end.usage,
            Usage {
                input: 50,
                output: 7,
                cache_read: 0,
                cache_write: 0
            }
        );
    }

    #[test]
    fn no_done_is_truncated() {
        let sse = r#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

"#;
        let (ops, end) = run(sse);
        assert_eq!(
            ops.last(),
            Some(&seal(0, ChunkData::Text { text: "Hi".into() }))
        );
        assert_eq!(end, Err(StreamError::Truncated));

        // Nor is [DONE] without a finish_reason an answer.
        let (_, end) = run("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n");
        assert_eq!(end, Err(StreamError::Truncated));
    }

    #[test]
    fn error_object() {
        let (ops, end) = run(
            r#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Par"},"finish_reason":null}]}

data: {"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}

"#,
        );
        assert_eq!(ops, vec![open(0, ChunkType::Text), delta(0, "Par")]);
        let err = end.unwrap_err();
        assert_eq!(
            err,
            StreamError::Provider {
                kind: "server_error".into(),
                message: "The server had an error while processing your request. Sorry about that!"
                    .into(),
            }
        );
        assert!(err.retryable());

        // OpenRouter: only a numeric code.
        let (_, end) = run("data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"error\":{\"code\":502,\"message\":\"Provider returned error\"},\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"error\"}]}\n\n");
        let err = end.unwrap_err();
        assert_eq!(
            err,
            StreamError::Provider {
                kind: "502".into(),
                message: "Provider returned error".into()
            }
        );
        assert!(err.retryable());
    }

    #[test]
    fn malformed() {
        let (_, end) = run("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"\n\n");
        assert!(matches!(end, Err(StreamError::Malformed { .. })));

        let (_, end) = run(
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\": "}}]},"finish_reason":null}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

"#,
        );
        assert!(matches!(end, Err(StreamError::Malformed { .. })));
    }

    #[test]
    fn missing_ids_get_unique_ones_and_comments_are_skipped() {
        let (ops, end) = run(r#": OPENROUTER PROCESSING

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read","arguments":"{}"}},{"index":1,"function":{"name":"glob","arguments":{"pattern":"*.rs"}}}]},"finish_reason":"tool_calls"}]}

data: [DONE]

"#);
        assert_eq!(
            ops,
            vec![
                open(0, ChunkType::ToolCall),
                delta(0, "{}"),
                open(1, ChunkType::ToolCall),
                delta(1, "{\"pattern\":\"*.rs\"}"),
                seal(0, call("call_0", "read", json!({}))),
                seal(1, call("call_1", "glob", json!({"pattern": "*.rs"}))),
            ]
        );
        assert!(end.is_ok());
    }
}
