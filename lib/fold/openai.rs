//! The OpenAI Chat Completions dialect (also what Ollama, llama.cpp, vLLM and friends speak):
//! the system prompt is the first message, every assistant `tool_calls` is followed at once by
//! one `tool` message per call, and thinking is not replayed.

use serde_json::{json, Value};

use super::{obj, Block, FoldOptions, Item};

pub(super) fn body(items: &[Item], opts: &FoldOptions) -> Value {
    let mut body = serde_json::Map::new();
    if let Some(model) = &opts.model {
        body.insert("model".into(), model.clone().into());
    }
    let mut msgs = Vec::new();
    if let Some(system) = opts.system.as_deref().filter(|s| !s.is_empty()) {
        msgs.push(json!({"role": "system", "content": system}));
    }
    msgs.extend(messages(items));
    body.insert("messages".into(), msgs.into());
    if !opts.tools.is_empty() {
        let tools: Vec<Value> = opts
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                }})
            })
            .collect();
        body.insert("tools".into(), tools.into());
    }
    if let Some(max_tokens) = opts.max_tokens {
        body.insert("max_tokens".into(), max_tokens.into());
    }
    if opts.stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

pub(super) fn messages(items: &[Item]) -> Vec<Value> {
    let mut msgs: Vec<Value> = Vec::new();
    for item in items {
        match item {
            Item::User(text) => {
                // One string, parts joined by a blank line: local servers often accept only
                // string content. Only the tail message ever grows, so earlier bytes hold.
                if let Some(Value::String(content)) = msgs
                    .last_mut()
                    .filter(|m| m["role"] == "user")
                    .and_then(|m| m.get_mut("content"))
                {
                    content.push_str("\n\n");
                    content.push_str(text);
                } else {
                    msgs.push(obj([
                        ("role", "user".into()),
                        ("content", text.as_ref().into()),
                    ]));
                }
            }
            Item::Step { blocks, replies } => {
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::Text(t) if !t.is_empty() => Some(*t),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<Value> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::Call {
                            id,
                            name,
                            arguments,
                        } => Some(obj([
                            ("id", (*id).into()),
                            ("type", "function".into()),
                            (
                                "function",
                                obj([("name", (*name).into()), ("arguments", args(arguments))]),
                            ),
                        ])),
                        _ => None,
                    })
                    .collect();
                if texts.is_empty() && calls.is_empty() {
                    continue;
                }
                let content = if texts.is_empty() {
                    Value::Null
                } else {
                    texts.join("\n\n").into()
                };
                let mut msg = obj([("role", "assistant".into()), ("content", content)]);
                // An empty tool_calls array is rejected, so the key is there only with calls.
                if !calls.is_empty() {
                    msg["tool_calls"] = calls.into();
                }
                msgs.push(msg);
                msgs.extend(replies.iter().map(|r| {
                    obj([
                        ("role", "tool".into()),
                        ("tool_call_id", r.call_id.into()),
                        ("content", r.content.as_ref().into()),
                    ])
                }));
            }
        }
    }
    msgs
}

/// Arguments go over the wire as JSON text; text already stored that way is kept verbatim.
fn args(arguments: &Value) -> Value {
    match arguments {
        Value::String(_) => arguments.clone(),
        other => other.to_string().into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::fold::testkit::Log;
    use crate::fold::{
        cache_breakpoints, fold, messages, Dialect, FoldOptions, ToolSpec, SYNTHETIC_RESULT,
    };

    fn msgs(log: &Log) -> Value {
        Value::Array(messages(&log.chunks, Dialect::OpenAi))
    }

    #[test]
    fn body_keys_in_order_with_system_first_and_function_tools() {
        let mut log = Log::new();
        log.user("hi");
        let opts = FoldOptions {
            model: Some("gpt-x".into()),
            system: Some("You are terse.".into()),
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "read a file".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: Some(500),
            thinking_budget: Some(1000),
            stream: true,
        };
        let body = fold(&log.chunks, Dialect::OpenAi, &opts);
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
                "messages",
                "tools",
                "max_tokens",
                "stream",
                "stream_options"
            ]
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}])
        );
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {
                "name": "read", "description": "read a file", "parameters": {"type": "object"}}}])
        );
        assert_eq!(body["max_tokens"], 500);
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(cache_breakpoints(&body), 0);
        // Unset options leave no trace.
        let body = fold(&log.chunks, Dialect::OpenAi, &FoldOptions::default());
        assert_eq!(
            body,
            json!({"messages": [{"role": "user", "content": "hi"}]})
        );
    }

    #[test]
    fn a_step_becomes_assistant_tool_calls_then_one_tool_message_per_call() {
        let mut log = Log::new();
        log.user("go");
        log.step(1);
        log.thinking("private", Some("sig"));
        log.call("a", "read", json!({"path": "x", "n": 1}));
        log.call("b", "grep", json!("{\"q\": \"verbatim\"}"));
        log.call("c", "glob", json!({}));
        log.result("b", json!("B"), true);
        log.result("a", json!({"lines": 3}), false);
        log.user("and then");
        log.step(2);
        log.text("Done.");
        log.text("Really.");
        assert_eq!(
            msgs(&log),
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"x\",\"n\":1}"}},
                    {"id": "b", "type": "function", "function": {"name": "grep", "arguments": "{\"q\": \"verbatim\"}"}},
                    {"id": "c", "type": "function", "function": {"name": "glob", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "a", "content": "{\"lines\":3}"},
                {"role": "tool", "tool_call_id": "b", "content": "B"},
                {"role": "tool", "tool_call_id": "c", "content": SYNTHETIC_RESULT},
                {"role": "user", "content": "and then"},
                {"role": "assistant", "content": "Done.\n\nReally."},
            ])
        );
    }

    #[test]
    fn adjacent_user_side_content_joins_one_string() {
        let mut log = Log::new();
        log.user("first");
        log.error("boom");
        log.peer(&[("0190aaaabbbb", "alice", "ping")], 1);
        log.user("second");
        assert_eq!(
            msgs(&log),
            json!([{"role": "user", "content":
                "first\n\n<peer from=\"alice (0190aaaa)\" msg=\"0190aaaabbbb\">ping</peer>\n(1 more: call peer_inbox)\n\nsecond"}])
        );
    }

    #[test]
    fn text_with_calls_thinking_only_steps_and_orphans() {
        let mut log = Log::new();
        log.user("q");
        log.result("ghost", json!("boo"), false);
        log.step(1);
        log.thinking("only thinking", Some("s"));
        log.step(2);
        log.text("Checking.");
        log.call("a", "read", json!({}));
        log.result("a", json!("A"), false);
        assert_eq!(
            msgs(&log),
            json!([
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "A"},
            ])
        );
    }

    #[test]
    fn abandoned_attempt_is_left_out() {
        let mut log = Log::new();
        log.user("q");
        log.step(1);
        let a = log.text("half");
        let b = log.call("x", "read", json!({}));
        log.abandon(&[a, b]);
        log.text("whole");
        assert_eq!(
            msgs(&log),
            json!([
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "whole"},
            ])
        );
    }
}
