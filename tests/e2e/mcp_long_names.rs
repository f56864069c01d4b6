//! An MCP server whose tool name is longer than the providers take: MCP allows 128
//! characters, OpenAI and Anthropic 64 of `[a-zA-Z0-9_-]`. The server is the official MCP
//! Python SDK's; the model is LLMock, which calls what it is offered. In both dialects the
//! request names the tool in 64 characters, and the call comes back to the right tool.

use crate::peers::{program, Llmock};
use crate::prompt::{env_with, session_id};
use crate::sandbox::results;

#[test]
fn a_100_character_mcp_tool_name_works_in_both_dialects() {
    let (Some(python), Some(mock)) = (program("python"), Llmock::start(&[])) else {
        return;
    };
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/peers/long_tool_server.py"
    );
    let mut env = env_with(
        None,
        &format!(
            "[mcp.weather]\ncommand = {:?}\nargs = [{server:?}]\n",
            python
        ),
    );
    env.set("OPENAI_BASE_URL", mock.openai_url())
        .set("OPENAI_API_KEY", "sk-llmock")
        .set("ANTHROPIC_BASE_URL", mock.anthropic_url())
        .set("ANTHROPIC_API_KEY", "sk-ant-llmock");
    for model in ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"] {
        let run = env
            .run(
                "ag-prompt",
                &["-m", model, "--tools", "mcp__weather__*", "weather?"],
            )
            .ok();
        let r = results(&env, &session_id(&run));
        assert!(
            r.first()
                .is_some_and(|(text, err)| !err && text.starts_with("weather in ")),
            "{model}: {r:?}\n{}",
            run.stderr
        );
    }
    let log = mock.requests();
    let requests = log["requests"].as_array().unwrap();
    for r in requests {
        for t in r["body"]["tools"].as_array().into_iter().flatten() {
            let name = t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .unwrap();
            assert!(name.len() <= 64, "{name}");
            assert!(name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-'));
            assert!(
                name.starts_with("mcp__weather__fetch_the_current"),
                "{name}"
            );
        }
    }
}

/// A call that reports progress (MCP `notifications/progress`) keeps its timeout from running
/// out; a silent one as slow times out and is cancelled. The server is the official Python
/// SDK's, the call timeout 1 s, each call about 2.4 s.
#[test]
fn mcp_progress_notifications_keep_a_slow_call_alive() {
    let Some(python) = program("python") else {
        return;
    };
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/peers/progress_server.py"
    );
    let env = env_with(
        None,
        &format!("[mcp.slow]\ncommand = {python:?}\nargs = [{server:?}]\ncall_timeout_s = 1\n"),
    );
    let model = crate::prompt::script(
        &env,
        "slow.toml",
        "[[step]]\ntool_calls = [{ name = \"mcp__slow__slow_with_progress\" }]\n\
         [[step]]\ntool_calls = [{ name = \"mcp__slow__slow_silent\" }]\n\
         [[step]]\ntext = \"both called\"\n",
    );
    let run = env
        .run(
            "ag-prompt",
            &["-m", &model, "--tools", "mcp__slow__*", "go"],
        )
        .ok();
    let r = results(&env, &session_id(&run));
    assert_eq!(r.len(), 2, "{r:?}\n{}", run.stderr);
    assert_eq!(r[0], ("done with progress".to_string(), false), "{r:?}");
    assert!(r[1].1 && r[1].0.contains("did not answer"), "{r:?}");
}
