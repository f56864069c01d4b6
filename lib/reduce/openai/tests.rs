//! Tests for `reduce::openai`.

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
            stop_reason: StopReason::EndTurn,
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
    assert_eq!(end.unwrap().stop_reason, StopReason::MaxTokens);
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
    assert_eq!(end.stop_reason, StopReason::ToolUse);
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
    assert_eq!(end.stop_reason, StopReason::ToolUse);
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
