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
