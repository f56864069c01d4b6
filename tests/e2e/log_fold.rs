//! `ag-log fold` and `ag-log ingest` end to end: a session folded into each dialect's request
//! (roles alternating, tool calls paired with results, a system prompt, streaming), and a
//! provider stream on stdin sealed into an assistant step (continuing an open turn, ending it,
//! and keeping what was sealed before a break).

use serde_json::{json, Value};

use crate::log_read::*;
use crate::support::TestEnv;

// ---------------------------------------------------------------------------------------------
// fold

#[test]
fn fold_anthropic_alternates_roles_and_pairs_tool_use_with_tool_result() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let body = env
        .log(&["fold", &c.s, "--dialect", "anthropic"])
        .ok()
        .json();
    assert!(
        body.get("system").is_none(),
        "no system prompt unless asked"
    );
    assert!(body.get("model").is_none(), "no model unless known");
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(
        msgs[0]["content"][0],
        json!({"type": "text", "text": "list the files"})
    );
    assert_eq!(
        msgs[1]["content"][0],
        json!({"type": "text", "text": "Let me look."})
    );
    assert_eq!(
        msgs[1]["content"][1],
        json!({"type": "tool_use", "id": "c1", "name": "glob", "input": {"pattern": "*.rs"}})
    );
    let result = &msgs[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "c1");
    assert_eq!(result["content"], "main.rs\nlib.rs");
    assert_eq!(msgs[3]["content"][0]["text"], "There are two Rust files.");
    assert_eq!(msgs[4]["content"][0]["text"], "and the tests?");
    assert_eq!(msgs[5]["content"][0]["text"], "None yet.");
    // turn_end records are display-only.
    assert!(!body.to_string().contains("turn_end"));
    // The default dialect is anthropic.
    assert_eq!(env.log(&["fold", &c.s]).ok().json(), body);
}

#[test]
fn fold_openai_gives_each_tool_result_a_tool_message() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let body = env.log(&["fold", &c.s, "--dialect", "openai"]).ok().json();
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(msgs[0]["content"], "list the files");
    let call = &msgs[1]["tool_calls"][0];
    assert_eq!(call["id"], "c1");
    assert_eq!(call["function"]["name"], "glob");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"pattern": "*.rs"}));
    assert_eq!(
        msgs[2],
        json!({"role": "tool", "tool_call_id": "c1", "content": "main.rs\nlib.rs"})
    );
    assert_eq!(msgs[5]["content"], "None yet.");
}

#[test]
fn fold_takes_a_system_prompt_as_text_or_file_and_a_model() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let body = env
        .log(&["fold", &c.s, "--system", "Be terse.", "--model", "claude-x"])
        .ok()
        .json();
    assert_eq!(body["system"][0]["text"], "Be terse.");
    assert_eq!(body["model"], "claude-x");
    assert_eq!(body["messages"][0]["role"], "user");

    let prompt = "You are a careful assistant.\nAnswer briefly.\n";
    env.write_file("prompts/system.md", prompt);
    let body = env
        .log(&["fold", &c.s, "--system", "@prompts/system.md"])
        .ok()
        .json();
    assert_eq!(body["system"][0]["text"], prompt);

    let body = env
        .log(&[
            "fold",
            &c.s,
            "--dialect",
            "openai",
            "--system",
            "@prompts/system.md",
            "--model",
            "gpt-x",
        ])
        .ok()
        .json();
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": prompt})
    );
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["model"], "gpt-x");

    let run = env.log(&["fold", &c.s, "--system", "@missing.md"]).code(1);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("missing.md"),
        "names the file: {}",
        run.stderr
    );
}

#[test]
fn fold_with_an_unknown_dialect_is_a_usage_error() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let run = env.log(&["fold", &c.s, "--dialect", "gemini"]).code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("gemini"), "{}", run.stderr);
    assert!(
        run.stderr.contains("anthropic") && run.stderr.contains("openai"),
        "lists the choices: {}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// ingest

const ANTHROPIC_STREAM: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":42,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"check."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"is\", \"days\": 3}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":17}}

event: message_stop
data: {"type":"message_stop"}

"#;

const OPENAI_STREAM: &str = r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"read it."},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"read","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"a.txt\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":9,"total_tokens":20}}

data: [DONE]

"#;

#[test]
fn ingest_anthropic_stream_appends_one_assistant_step() {
    let env = TestEnv::new();
    let s = env.new_session("ingest", "what is the weather?");
    let turn = env.chunks(&s)[0]["turn"].as_str().unwrap().to_string();
    let run = env.log_stdin(&["ingest", "-s", &s], ANTHROPIC_STREAM).ok();
    let printed = run.json_lines();
    let view = env.chunks(&s);
    assert_eq!(&view[1..], printed.as_slice(), "prints what it stored");
    assert_eq!(view.len(), 3, "no turn_end without --end-turn");

    assert_eq!(view[1]["role"], "assistant");
    assert_eq!(view[1]["type"], "text");
    assert_eq!(view[1]["data"], json!({"text": "Let me check."}));
    assert_eq!(view[2]["type"], "tool_call");
    assert_eq!(
        view[2]["data"],
        json!({"call_id": "toolu_01", "name": "get_weather", "arguments": {"city": "Paris", "days": 3}})
    );
    // One new step of the open turn.
    for c in &view[1..] {
        assert_eq!(c["turn"], turn.as_str(), "{c}");
        assert_eq!(c["step"], 1, "{c}");
    }
    // A second stream in the same open turn is the next step.
    env.log_stdin(&["ingest", "-q", "-s", &s], ANTHROPIC_STREAM)
        .ok();
    let view = env.chunks(&s);
    assert_eq!(view.len(), 5);
    assert_eq!(
        (view[3]["turn"].as_str(), view[3]["step"].as_i64()),
        (Some(turn.as_str()), Some(2))
    );
}

#[test]
fn ingest_end_turn_adds_a_turn_end_with_the_usage() {
    let env = TestEnv::new();
    let s = env.new_session("ingest", "what is the weather?");
    env.log_stdin(&["ingest", "-s", &s, "--end-turn"], ANTHROPIC_STREAM)
        .ok();
    let view = env.chunks(&s);
    assert_eq!(view.len(), 4);
    let end = &view[3];
    assert_eq!(
        (end["role"].as_str(), end["type"].as_str()),
        (Some("system"), Some("system"))
    );
    assert_eq!(end["turn"], view[0]["turn"]);
    assert_eq!(end["step"], 1);
    assert_eq!(end["data"]["kind"], "turn_end");
    assert_eq!(end["data"]["stop_reason"], "tool_use");
    assert_eq!(end["data"]["model"], "claude-test");
    assert_eq!(
        end["data"]["usage"],
        json!({"input": 42, "output": 17, "cache_read": 0, "cache_write": 0})
    );
    let usage = &env.log(&["show", &s, "--json"]).ok().json()["usage"];
    assert_eq!(
        (
            usage["turns"].as_i64(),
            usage["input"].as_i64(),
            usage["output"].as_i64()
        ),
        (Some(1), Some(42), Some(17))
    );

    // After a finished turn, the next stream starts a new turn.
    env.log_stdin(&["ingest", "-q", "-s", &s], ANTHROPIC_STREAM)
        .ok();
    let view = env.chunks(&s);
    assert_ne!(view[4]["turn"], view[0]["turn"]);
    assert_eq!(view[4]["turn"], view[5]["turn"]);
}

#[test]
fn ingest_truncated_stream_keeps_the_sealed_block_and_records_an_error() {
    let env = TestEnv::new();
    let s = env.new_session("ingest", "what is the weather?");
    let cut = ANTHROPIC_STREAM
        .find("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1")
        .unwrap();
    let run = env
        .log_stdin(
            &["ingest", "-s", &s, "--end-turn"],
            &ANTHROPIC_STREAM[..cut],
        )
        .code(1);
    assert!(run.stderr.starts_with("ag-log: error: "), "{}", run.stderr);
    assert!(run.stderr.contains("incomplete"), "{}", run.stderr);
    assert!(
        run.stderr.contains("ended before its stop event"),
        "{}",
        run.stderr
    );

    let view = env.chunks(&s);
    assert_eq!(view.len(), 3, "{view:#?}");
    assert_eq!(view[1]["type"], "text");
    assert_eq!(view[1]["data"]["text"], "Let me check.");
    assert_eq!(view[2]["type"], "error");
    assert!(
        view[2]["data"]["message"]
            .as_str()
            .unwrap()
            .contains("ended before its stop event"),
        "{}",
        view[2]
    );
    assert!(view
        .iter()
        .all(|c| c["type"] != "tool_call" && c["data"]["kind"] != "turn_end"));
    assert_eq!(view[2]["turn"], view[0]["turn"]);
}

#[test]
fn ingest_openai_stream_with_the_openai_dialect() {
    let env = TestEnv::new();
    let s = env.new_session("ingest", "read a.txt");
    env.log_stdin(
        &["ingest", "-s", &s, "--dialect", "openai", "--end-turn"],
        OPENAI_STREAM,
    )
    .ok();
    let view = env.chunks(&s);
    let types: Vec<&str> = view.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["text", "text", "tool_call", "system"]);
    assert_eq!(view[1]["data"]["text"], "Let me read it.");
    assert_eq!(
        view[2]["data"],
        json!({"call_id": "call_abc", "name": "read", "arguments": {"path": "a.txt"}})
    );
    assert_eq!(view[3]["data"]["stop_reason"], "tool_use");
    assert_eq!(view[3]["data"]["usage"]["input"], 11);
    assert_eq!(view[3]["data"]["usage"]["output"], 9);
    assert_eq!(view[3]["data"]["model"], "gpt-test");
    assert!(view[1..]
        .iter()
        .all(|c| c["step"] == 1 && c["turn"] == view[0]["turn"]));

    // The same stream read as anthropic is not a complete answer.
    let other = env.new_session("wrong dialect", "x");
    env.log_stdin(&["ingest", "-q", "-s", &other], OPENAI_STREAM)
        .code(1);
}
