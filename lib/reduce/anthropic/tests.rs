//! Tests for `reduce::anthropic`.

use serde_json::json;

use super::*;
use crate::reduce::testkit::{delta, open, seal};
use crate::reduce::SseParser;

fn run(sse: &str) -> (Vec<ChunkOp>, Result<StepEnd, StreamError>) {
    crate::reduce::testkit::run(AnthropicReducer::new(), sse)
}

const FULL: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01Aq9w938a90dw8q","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":1024,"cache_read_input_tokens":8192,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants the weather in San Francisco."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" I should call get_weather."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"GgxBdjrkzLoky3dl1pkiMOYds=="}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Okay, let's check"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" the weather for San Francisco, CA:"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":" \"San Fra"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\", \"unit\": \"fah"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"renheit\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

"#;

#[test]
fn full_stream() {
    let (ops, end) = run(FULL);
    assert_eq!(
        ops,
        vec![
            open(0, ChunkType::Thinking),
            delta(0, "The user wants the weather in San Francisco."),
            delta(0, " I should call get_weather."),
            seal(
                0,
                ChunkData::Thinking {
                    text: "The user wants the weather in San Francisco. I should call get_weather."
                        .into(),
                    signature: Some(
                        "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds==".into()
                    ),
                    redacted: None,
                }
            ),
            open(1, ChunkType::Text),
            delta(1, "Okay, let's check"),
            delta(1, " the weather for San Francisco, CA:"),
            seal(
                1,
                ChunkData::Text {
                    text: "Okay, let's check the weather for San Francisco, CA:".into()
                }
            ),
            open(2, ChunkType::ToolCall),
            delta(2, "{\"location\":"),
            delta(2, " \"San Fra"),
            delta(2, "ncisco, CA\", \"unit\": \"fah"),
            delta(2, "renheit\"}"),
            seal(
                2,
                ChunkData::ToolCall {
                    call_id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "San Francisco, CA", "unit": "fahrenheit"}),
                }
            ),
        ]
    );
    assert_eq!(
        end,
        Ok(StepEnd {
            stop_reason: StopReason::ToolUse,
            usage: Usage {
                input: 2095,
                output: 89,
                cache_read: 8192,
                cache_write: 1024
            },
            model: Some("claude-sonnet-4-5-20250929".into()),
        })
    );
}

#[test]
fn full_stream_fed_in_small_reads() {
    let mut p = SseParser::new();
    let mut r = AnthropicReducer::new();
    let mut ops = Vec::new();
    for piece in FULL.as_bytes().chunks(7) {
        for ev in p.push(piece) {
            ops.extend(r.event(&ev).unwrap());
        }
    }
    assert!(r.is_done());
    assert_eq!(ops, run(FULL).0);
    assert_eq!(r.finish().unwrap().stop_reason, StopReason::ToolUse);
}

#[test]
fn redacted_thinking_and_empty_text() {
    let (ops, end) = run(r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-3-7-sonnet-20250219","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}

event: message_stop
data: {"type":"message_stop"}

"#);
    assert_eq!(
        ops,
        vec![
            open(0, ChunkType::Thinking),
            seal(
                0,
                ChunkData::Thinking {
                    text: String::new(),
                    signature: None,
                    redacted: Some(
                        "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP".into()
                    ),
                }
            ),
            open(1, ChunkType::Text),
            seal(
                1,
                ChunkData::Text {
                    text: String::new()
                }
            ),
        ]
    );
    let end = end.unwrap();
    assert_eq!(end.stop_reason, StopReason::EndTurn);
    assert_eq!(
        end.usage,
        Usage {
            input: 12,
            output: 3,
            cache_read: 0,
            cache_write: 0
        }
    );
}

#[test]
fn error_event() {
    let (ops, end) = run(r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-opus-4-1-20250805","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2}}}

event: error
data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

"#);
    assert!(ops.is_empty());
    let err = end.unwrap_err();
    assert_eq!(
        err,
        StreamError::Provider {
            kind: "overloaded_error".into(),
            message: "Overloaded".into()
        }
    );
    assert!(err.retryable());
    assert_eq!(
        err.to_string(),
        "provider error (overloaded_error): Overloaded"
    );

    let (_, end) = run("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long\"}}\n\n");
    assert!(!end.unwrap_err().retryable());
}

#[test]
fn truncated_keeps_earlier_seals() {
    // The connection drops in the middle of the second block.
    let cut = FULL
        .find("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}")
        .unwrap();
    let (ops, end) = run(&FULL[..cut]);
    assert_eq!(end, Err(StreamError::Truncated));
    let seals: Vec<usize> = ops
        .iter()
        .filter(|op| matches!(op, ChunkOp::Seal { .. }))
        .map(ChunkOp::key)
        .collect();
    assert_eq!(
        seals,
        vec![0],
        "the thinking block sealed before the drop stays sealed"
    );
    assert_eq!(
        ops.last(),
        Some(&delta(1, " the weather for San Francisco, CA:"))
    );

    // Everything but message_stop: still not an answer.
    let cut = FULL.find("event: message_stop").unwrap();
    let mut r = AnthropicReducer::new();
    for ev in SseParser::new().push(&FULL.as_bytes()[..cut]) {
        r.event(&ev).unwrap();
    }
    assert!(!r.is_done());
    assert_eq!(r.finish(), Err(StreamError::Truncated));
}

#[test]
fn malformed_json() {
    let (_, end) =
        run("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\n\n");
    match end {
        Err(StreamError::Malformed { event, .. }) => assert_eq!(event, "content_block_start"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unparseable_tool_input_is_malformed() {
    let (ops, end) = run(r#"event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"bash","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"ls"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

"#);
    assert_eq!(
        ops,
        vec![open(0, ChunkType::ToolCall), delta(0, "{\"command\": \"ls")]
    );
    assert!(
        matches!(end, Err(StreamError::Malformed { ref event, .. }) if event == "content_block_stop")
    );
}

#[test]
fn tool_without_input_gets_empty_object() {
    let (ops, _) = run(r#"event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"peer_inbox","input":{}}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

"#);
    assert_eq!(
        ops[1],
        seal(
            0,
            ChunkData::ToolCall {
                call_id: "toolu_01".into(),
                name: "peer_inbox".into(),
                arguments: json!({})
            }
        )
    );
}

#[test]
fn unknown_events_and_blocks_are_ignored() {
    let (ops, end) = run(r#"event: message_start
data: {"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":5,"output_tokens":0}}}

event: some_future_event
data: not even json

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hi"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}

event: message_stop
data: {"type":"message_stop"}

"#);
    assert_eq!(
        ops,
        vec![
            open(0, ChunkType::Text),
            delta(0, "hi"),
            seal(0, ChunkData::Text { text: "hi".into() })
        ]
    );
    assert_eq!(end.unwrap().usage.output, 4);
}

#[test]
fn protocol_violations_are_malformed() {
    let bad = [
        // delta for a block never started
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
        // message_stop with a block still open
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        // a text delta aimed at a tool call
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
    ];
    for sse in bad {
        assert!(
            matches!(run(sse).1, Err(StreamError::Malformed { .. })),
            "{sse}"
        );
    }
}
