//! Tests for `fold::anthropic`.

use serde_json::{json, Value};

use crate::fold::testkit::Log;
use crate::fold::{
    cache_breakpoints, fold, messages, strip_cache_control, Dialect, FoldOptions, ToolSpec,
    CONVERSATION_START, SYNTHETIC_RESULT,
};

fn msgs(log: &Log) -> Vec<Value> {
    messages(&log.chunks, Dialect::Anthropic)
}

/// The messages without cache markers, as one JSON array for exact comparison.
fn plain(log: &Log) -> Value {
    strip_cache_control(&Value::Array(msgs(log)))
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} things"),
        input_schema: json!({"type": "object", "properties": {}}),
    }
}

#[test]
fn body_keys_in_order_with_breakpoints_on_system_last_tool_and_tail() {
    let mut log = Log::new();
    log.user("hi");
    let opts = FoldOptions {
        model: Some("claude-x".into()),
        system: Some("You are terse.".into()),
        tools: vec![tool("read"), tool("grep")],
        max_tokens: None,
        thinking_budget: Some(2048),
        stream: true,
        openai: Default::default(),
    };
    let body = fold(&log.chunks, Dialect::Anthropic, &opts);
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "max_tokens",
            "system",
            "tools",
            "messages",
            "thinking",
            "stream"
        ]
    );
    assert_eq!(body["model"], "claude-x");
    assert_eq!(body["max_tokens"], 8192);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["tools"],
        json!([
            {"name": "read", "description": "read things", "input_schema": {"type": "object", "properties": {}}},
            {"name": "grep", "description": "grep things", "input_schema": {"type": "object", "properties": {}},
             "cache_control": {"type": "ephemeral"}}
        ])
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
    );
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(body["stream"], true);
    assert_eq!(cache_breakpoints(&body), 3);
}

#[test]
fn minimal_body_omits_what_is_unset() {
    let body = fold(&[], Dialect::Anthropic, &FoldOptions::default());
    assert_eq!(body, json!({"max_tokens": 8192, "messages": []}));
    let opts = FoldOptions {
        system: Some(String::new()),
        max_tokens: Some(100),
        ..FoldOptions::default()
    };
    let body = fold(&[], Dialect::Anthropic, &opts);
    assert_eq!(body, json!({"max_tokens": 100, "messages": []}));
    // A default that could not hold the thinking budget is raised above it.
    let opts = FoldOptions {
        thinking_budget: Some(10_000),
        ..FoldOptions::default()
    };
    let body = fold(&[], Dialect::Anthropic, &opts);
    assert_eq!(body["max_tokens"], 18_192);
}

#[test]
fn adjacent_user_side_content_merges_into_one_message() {
    let mut log = Log::new();
    log.user("first");
    log.system("notice", json!({"text": "x"}));
    log.peer(&[("0190aaaabbbb", "alice", "ping")], 0);
    log.user("second");
    assert_eq!(
        plain(&log),
        json!([{"role": "user", "content": [
            {"type": "text", "text": "first"},
            {"type": "text", "text": "<peer from=\"alice\" msg=\"0190aaaabbbb\">ping</peer>"},
            {"type": "text", "text": "second"},
        ]}])
    );
}

#[test]
fn a_step_is_one_assistant_message_and_its_results_open_the_next_user_message() {
    let mut log = Log::new();
    log.user("go");
    log.step(1);
    log.thinking("plan", Some("sig1"));
    log.text("Looking.");
    log.call("a", "read", json!({"path": "x"}));
    log.call("b", "grep", json!({"q": "y"}));
    log.result("b", json!("B out"), true);
    log.result("a", json!(["A", 1]), false);
    log.peer(&[("0190ccccdddd", "bob", "fyi")], 2);
    log.user("also this");
    log.step(2);
    log.text("Done.");
    assert_eq!(
        plain(&log),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig1"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "x"}},
                {"type": "tool_use", "id": "b", "name": "grep", "input": {"q": "y"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "[\"A\",1]"},
                {"type": "tool_result", "tool_use_id": "b", "content": "B out", "is_error": true},
                {"type": "text", "text": "<peer from=\"bob\" msg=\"0190ccccdddd\">fyi</peer>\n(2 more: call peer_inbox)"},
                {"type": "text", "text": "also this"},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        ])
    );
}

#[test]
fn thinking_signed_empty_is_kept_unsigned_dropped_redacted_replayed() {
    let mut log = Log::new();
    log.user("q");
    log.step(1);
    log.thinking("", Some("sig-empty"));
    log.thinking("no signature", None);
    log.thinking("empty signature", Some(""));
    log.redacted("opaque==");
    log.text("");
    log.text("answer");
    let m = plain(&log);
    assert_eq!(
        m[1]["content"],
        json!([
            {"type": "thinking", "thinking": "", "signature": "sig-empty"},
            {"type": "redacted_thinking", "data": "opaque=="},
            {"type": "text", "text": "answer"},
        ])
    );
}

#[test]
fn a_step_with_nothing_to_send_leaves_no_message() {
    let mut log = Log::new();
    log.user("q");
    log.step(1);
    log.thinking("unsigned", None);
    log.text("");
    log.step(2);
    log.text("hello");
    let m = plain(&log);
    assert_eq!(m.as_array().unwrap().len(), 2);
    assert_eq!(m[1]["content"], json!([{"type": "text", "text": "hello"}]));
}

#[test]
fn adjacent_assistant_steps_merge_and_a_leading_assistant_gets_a_start_message() {
    let mut log = Log::new();
    log.step(1);
    log.text("one");
    log.step(2);
    log.thinking("t", Some("s"));
    log.text("two");
    let m = plain(&log);
    assert_eq!(
        m,
        json!([
            {"role": "user", "content": [{"type": "text", "text": CONVERSATION_START}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "one"},
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "text", "text": "two"},
            ]},
        ])
    );
}

#[test]
fn unmatched_call_gets_the_synthetic_result_where_the_real_one_would_go() {
    let mut log = Log::new();
    log.user("q");
    log.step(1);
    log.call("a", "read", json!({}));
    log.call("b", "read", json!({}));
    log.result("b", json!("B"), false);
    log.user("next");
    let m = plain(&log);
    assert_eq!(
        m[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "a", "content": SYNTHETIC_RESULT, "is_error": true},
            {"type": "tool_result", "tool_use_id": "b", "content": "B"},
            {"type": "text", "text": "next"},
        ])
    );
    // Even with nothing after it, the call is answered, so the request stays valid.
    log.chunks.truncate(3);
    let m = plain(&log);
    assert_eq!(m[2]["content"][0]["content"], SYNTHETIC_RESULT);
    assert_eq!(m[2]["content"][1]["content"], SYNTHETIC_RESULT);
}

#[test]
fn orphan_result_is_dropped() {
    let mut log = Log::new();
    log.user("q");
    log.result("ghost", json!("boo"), false);
    log.step(1);
    log.text("a");
    assert_eq!(
        plain(&log),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        ])
    );
}

#[test]
fn abandoned_attempt_is_left_out() {
    let mut log = Log::new();
    log.user("q");
    log.step(1);
    let a = log.thinking("first try", Some("s1"));
    let b = log.call("x", "read", json!({}));
    log.error("connection reset");
    log.abandon(&[a, b]);
    log.thinking("second try", Some("s2"));
    log.call("y", "read", json!({}));
    log.result("y", json!("Y"), false);
    assert_eq!(
        plain(&log),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "second try", "signature": "s2"},
                {"type": "tool_use", "id": "y", "name": "read", "input": {}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "y", "content": "Y"}]},
        ])
    );
}

#[test]
fn tool_input_is_always_an_object() {
    let mut log = Log::new();
    log.user("q");
    log.step(1);
    log.call("a", "read", json!("{\"path\":\"x\"}"));
    log.call("b", "read", json!(""));
    log.call("c", "read", Value::Null);
    log.call("d", "read", json!([1, 2]));
    log.call("e", "read", json!("not json"));
    let m = plain(&log);
    let inputs: Vec<&Value> = m[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["input"])
        .collect();
    assert_eq!(
        inputs,
        [
            &json!({"path": "x"}),
            &json!({}),
            &json!({}),
            &json!({"arguments": [1, 2]}),
            &json!({"arguments": "not json"}),
        ]
    );
}

#[test]
fn rolling_breakpoint_sits_on_the_last_block_that_can_hold_it() {
    let mut log = Log::new();
    log.user("q");
    log.step(1);
    log.text("a");
    log.thinking("trailing", Some("s"));
    let m = msgs(&log);
    assert_eq!(cache_breakpoints(&Value::Array(m.clone())), 1);
    assert_eq!(
        m[1]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(m[1]["content"][1].get("cache_control").is_none());
    // Only the tail carries one; earlier messages are clean.
    log.step(2);
    log.call("k", "read", json!({}));
    log.result("k", json!("K"), false);
    let m = msgs(&log);
    assert_eq!(m.len(), 3);
    assert_eq!(cache_breakpoints(&Value::Array(m[..2].to_vec())), 0);
    assert_eq!(
        m[2]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[test]
fn never_more_than_four_breakpoints() {
    let mut log = Log::new();
    for t in 0..5 {
        log.turn(&format!("t{t}"));
        log.user("q");
        log.step(1);
        log.call(&format!("c{t}"), "read", json!({}));
        log.result(&format!("c{t}"), json!("r"), false);
    }
    let opts = FoldOptions {
        system: Some("s".into()),
        tools: (0..10).map(|i| tool(&format!("t{i}"))).collect(),
        ..FoldOptions::default()
    };
    let body = fold(&log.chunks, Dialect::Anthropic, &opts);
    assert_eq!(cache_breakpoints(&body), 3);
}
