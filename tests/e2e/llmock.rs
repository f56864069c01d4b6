//! `ag-prompt` against LLMock, a provider mock nobody on this project wrote: a turn in each
//! dialect answers, and the request LLMock recorded is the one each API documents.

use crate::peers::Llmock;
use crate::prompt::env_with;

#[test]
fn a_turn_in_each_dialect_against_llmock_answers_and_sends_a_streamed_request() {
    let Some(mock) = Llmock::start(&["--tool-mode", "off"]) else {
        return;
    };
    let mut env = env_with(None, "");
    env.set("OPENAI_BASE_URL", mock.openai_url())
        .set("OPENAI_API_KEY", "sk-llmock")
        .set("ANTHROPIC_BASE_URL", mock.anthropic_url())
        .set("ANTHROPIC_API_KEY", "sk-ant-llmock");
    for model in ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"] {
        let run = env.run("ag-prompt", &["-m", model, "hello there"]).ok();
        assert!(
            !run.stdout.trim().is_empty(),
            "{model}: no answer\n{}",
            run.stderr
        );
    }
    let log = mock.requests();
    let requests = log["requests"].as_array().expect("llmock's requests");
    let paths: Vec<&str> = requests
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/v1/chat/completions", "/anthropic/v1/messages"]);
    for r in requests {
        assert_eq!(r["status"], 200, "{r}");
        assert_eq!(r["completed"], true, "{r}");
        assert_eq!(r["body"]["stream"], true, "{r}");
        assert!(
            r["body"]["messages"]
                .as_array()
                .is_some_and(|m| !m.is_empty()),
            "{r}"
        );
    }
    assert_eq!(mock.verdict()["passed"], true, "{}", mock.verdict());
}
