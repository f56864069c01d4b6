//! The offline models at the provider boundary: what they stream and how they end.

use std::time::Duration;

use serde_json::json;

use super::echo::NOTHING_TO_ECHO;
use super::*;
use crate::provider::{AttemptError, ModelError, Provider};
use crate::reduce::ChunkOp;

fn run(p: &dyn Provider, body: &Value) -> (Vec<ChunkOp>, Result<StepEnd, AttemptError>) {
    let mut ops = Vec::new();
    let end = p.attempt(body, &mut |op| ops.push(op));
    (ops, end)
}

/// The sealed data of each block, in order.
fn sealed(ops: &[ChunkOp]) -> Vec<ChunkData> {
    ops.iter()
        .filter_map(|op| match op {
            ChunkOp::Seal { data, .. } => Some(data.clone()),
            _ => None,
        })
        .collect()
}

/// Every block opens, streams and seals in order, and its deltas add up to what it seals.
fn assert_well_formed(ops: &[ChunkOp]) {
    let mut key = 0;
    let mut i = 0;
    while i < ops.len() {
        assert!(
            matches!(ops[i], ChunkOp::Open { key: k, .. } if k == key),
            "{ops:?}"
        );
        i += 1;
        let mut streamed = String::new();
        while let ChunkOp::Delta { key: k, text } = &ops[i] {
            assert_eq!(*k, key);
            streamed.push_str(text);
            i += 1;
        }
        match &ops[i] {
            ChunkOp::Seal { key: k, data } => {
                assert_eq!(*k, key);
                match data {
                    ChunkData::Text { text } | ChunkData::Thinking { text, .. } => {
                        assert_eq!(&streamed, text)
                    }
                    ChunkData::ToolCall { arguments, .. } => {
                        assert_eq!(
                            serde_json::from_str::<Value>(&streamed).unwrap(),
                            *arguments
                        )
                    }
                    other => panic!("unexpected seal {other:?}"),
                }
            }
            other => panic!("expected seal, got {other:?}"),
        }
        i += 1;
        key += 1;
    }
}

fn text(t: &str) -> ChunkData {
    ChunkData::Text { text: t.into() }
}

#[test]
fn echo_repeats_the_last_user_words_and_skips_tool_results_and_peers() {
    let body = json!({"model": "echo", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "first question"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "file text"},
            {"type": "text", "text": "<peer from=\"bob (0190cccc)\" msg=\"0190ccccdddd\">fyi</peer>\n(2 more: call peer_inbox)"},
            {"type": "text", "text": "say this back", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "and this"},
        ]},
    ]});
    let (ops, end) = run(&EchoProvider::new(), &body);
    assert_well_formed(&ops);
    assert_eq!(sealed(&ops), vec![text("say this back\nand this")]);
    assert!(
        ops.iter()
            .filter(|op| matches!(op, ChunkOp::Delta { .. }))
            .count()
            >= 2
    );
    let end = end.unwrap();
    assert_eq!(end.stop_reason, StopReason::EndTurn);
    assert_eq!(
        end.usage.output,
        ("say this back\nand this".len() / 4) as u64
    );
    assert_eq!(
        end.usage.input,
        (body["messages"].to_string().len() / 4) as u64
    );
    // Deterministic.
    assert_eq!(run(&EchoProvider::new(), &body).1.unwrap(), end);
}

#[test]
fn echo_with_nothing_of_the_persons_to_echo() {
    for body in [
        json!({"messages": []}),
        json!({}),
        json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "earlier"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "x"},
                {"type": "text", "text": "(3 more: call peer_inbox)"},
            ]},
        ]}),
    ] {
        let (ops, end) = run(&EchoProvider::new(), &body);
        assert_eq!(sealed(&ops), vec![text(NOTHING_TO_ECHO)], "{body}");
        assert_eq!(end.unwrap().stop_reason, StopReason::EndTurn);
    }
    let body = json!({"messages": [{"role": "user", "content": "plain string"}]});
    assert_eq!(
        sealed(&run(&EchoProvider::new(), &body).0),
        vec![text("plain string")]
    );
}

const SCRIPT: &str = r#"
# a two-step script
[[step]]
thinking = "I should look."
text = "Let me read the README file first."
[[step.tool_calls]]
name = "read"
arguments = { path = "README.md" }
[[step.tool_calls]]
name = "grep"
arguments = { pattern = "x", limit = 3 }
id = "mine"

[[step]]
text = "Done."
"#;

fn request(assistant_messages: usize) -> Value {
    let mut messages = vec![json!({"role": "user", "content": [{"type": "text", "text": "go"}]})];
    for _ in 0..assistant_messages {
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": "…"}]}));
        messages.push(json!({"role": "user", "content": [{"type": "text", "text": "more"}]}));
    }
    json!({"model": "script", "messages": messages})
}

#[test]
fn script_steps_follow_the_assistant_message_count() {
    let p = ScriptProvider::parse("s.toml", SCRIPT).unwrap();
    assert_eq!(p.name(), "script:s.toml");
    assert_eq!(p.len(), 2);

    let (ops, end) = run(&p, &request(0));
    assert_well_formed(&ops);
    assert_eq!(
        sealed(&ops),
        vec![
            ChunkData::Thinking {
                text: "I should look.".into(),
                signature: Some("script".into()),
                redacted: None
            },
            text("Let me read the README file first."),
            ChunkData::ToolCall {
                call_id: "call_0_0".into(),
                name: "read".into(),
                arguments: json!({"path": "README.md"})
            },
            ChunkData::ToolCall {
                call_id: "mine".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "x", "limit": 3})
            },
        ]
    );
    assert_eq!(end.unwrap().stop_reason, StopReason::ToolUse);

    let (ops, end) = run(&p, &request(1));
    assert_eq!(sealed(&ops), vec![text("Done.")]);
    assert_eq!(end.unwrap().stop_reason, StopReason::EndTurn);

    // A retry of the same request gets the same step.
    assert_eq!(sealed(&run(&p, &request(1)).0), vec![text("Done.")]);

    let (ops, end) = run(&p, &request(2));
    assert!(ops.is_empty());
    let e = end.unwrap_err();
    assert!(!e.retryable);
    assert!(
        e.message.contains("s.toml") && e.message.contains("2 steps"),
        "{}",
        e.message
    );
}

#[test]
fn script_errors_name_the_file_and_line() {
    let e = ScriptProvider::parse("bad.toml", "[[step]]\ntext = \"a\"\ncolour = \"red\"\n")
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ModelError::BadScript { .. }));
    assert!(
        msg.contains("bad.toml") && msg.contains("line 3") && msg.contains("colour"),
        "{msg}"
    );

    let e = ScriptProvider::parse(
        "t.toml",
        "[[step]]\n[[step.tool_calls]]\nname = \"read\"\narguments = 3\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("step 1, tool call 1"), "{e}");

    let e = ScriptProvider::parse("t.toml", "[[step]]\ntext = \n").unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");

    let e = ScriptProvider::load("/nonexistent/ag-script.toml").unwrap_err();
    assert!(matches!(e, ModelError::Script { .. }), "{e}");
    assert!(e.to_string().contains("/nonexistent/ag-script.toml"));
}

#[test]
fn script_delay_holds_the_stop() {
    let p = ScriptProvider::parse("d.toml", "[[step]]\ntext = \"slow\"\ndelay_ms = 150\n").unwrap();
    let t = std::time::Instant::now();
    let (ops, end) = run(&p, &request(0));
    assert!(t.elapsed() >= Duration::from_millis(150));
    assert_eq!(sealed(&ops), vec![text("slow")]);
    assert_eq!(end.unwrap().stop_reason, StopReason::EndTurn);
}

#[test]
fn word_groups_rejoin_exactly() {
    for t in [
        "one",
        "a b",
        "Let me read the README file first.",
        "  lead\nand trail  ",
        "",
    ] {
        let g = word_groups(t);
        assert_eq!(g.concat(), t);
        assert!(g.len() <= 4);
    }
    assert!(word_groups("a b c d e f g h").len() >= 2);
}
