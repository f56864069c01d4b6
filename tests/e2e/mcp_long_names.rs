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

/// A test home with `[mcp.slow]`, the official Python SDK's progress server (plus `extra`
/// lines in its table); `None` when the peers are not installed outside CI.
fn progress_env(extra: &str) -> Option<crate::support::TestEnv> {
    let python = program("python")?;
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/peers/progress_server.py"
    );
    Some(env_with(
        None,
        &format!("[mcp.slow]\ncommand = {python:?}\nargs = [{server:?}]\n{extra}"),
    ))
}

/// A call that reports progress (MCP `notifications/progress`) keeps its timeout from running
/// out; a silent one as slow times out and is cancelled. The server is the official Python
/// SDK's, the call timeout 1 s, each call about 2.4 s.
#[test]
fn mcp_progress_notifications_keep_a_slow_call_alive() {
    let Some(env) = progress_env("call_timeout_s = 1\n") else {
        return;
    };
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

/// A tool whose server requires a client capability `ag` does not declare (here the MCP tasks
/// extension, refused by the official Python SDK with its "missing required client
/// capability" error) is a tool error that says so, one stderr line, and is not offered again
/// for the rest of the run; the server's other tools stay.
#[test]
fn a_tool_that_needs_mcp_tasks_is_withdrawn_after_its_server_says_so() {
    use crate::fake_provider::sse::{self, Block};
    use crate::fake_provider::{FakeProvider, Reply};
    let Some(python) = program("python") else {
        return;
    };
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/tasks_server.py");
    let fake = FakeProvider::start();
    let env = env_with(
        Some(&fake),
        &format!("[mcp.tasks]\ncommand = {python:?}\nargs = [{server:?}]\n"),
    );
    fake.push(Reply::Sse(sse::anthropic(
        &[Block::Tool {
            id: "toolu_1".into(),
            name: "mcp__tasks__index_repository".into(),
            input: serde_json::json!({"path": "."}),
        }],
        "tool_use",
        (50, 5, 0, 0),
    )));
    fake.push(Reply::Sse(sse::anthropic_text("indexed another way")));
    let run = env
        .run(
            "ag-prompt",
            &[
                "-m",
                crate::prompt::MODEL,
                "--tools",
                "mcp__tasks__*",
                "index",
            ],
        )
        .ok();
    let r = results(&env, &session_id(&run));
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].1, "not an error: {r:?}");
    assert!(
        r[0].0.contains("extension io.modelcontextprotocol/tasks") && r[0].0.contains("withdrawn"),
        "{r:?}"
    );
    assert_eq!(
        run.stderr.matches("needs the client capability").count(),
        1,
        "{}",
        run.stderr
    );
    let names = |i: usize| -> Vec<String> {
        fake.requests()[i].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(names(0).contains(&"mcp__tasks__index_repository".to_string()));
    assert_eq!(names(1), ["mcp__tasks__ping"], "offered after the refusal");
}

/// What a server reports of a call reaches the person: each notification is a `tool-progress`
/// event under `--json`, and on a terminal the status line shows the tool, its figures and
/// the server's words, escaped (the server's message tries to clear the screen).
#[test]
fn mcp_progress_shows_as_events_and_on_the_terminal_status_line() {
    let Some(env) = progress_env("") else {
        return;
    };
    let model = crate::prompt::script(
        &env,
        "slow.toml",
        "[[step]]\ntool_calls = [{ name = \"mcp__slow__slow_with_progress\" }]\n\
         [[step]]\ntext = \"called\"\n",
    );
    let run = env
        .run(
            "ag-prompt",
            &["--json", "-m", &model, "--tools", "mcp__slow__*", "go"],
        )
        .ok();
    let events: Vec<serde_json::Value> = run
        .json_lines()
        .into_iter()
        .filter(|e| e["type"] == "tool-progress")
        .collect();
    assert!(events.len() >= 4, "{}", run.stdout);
    for e in &events {
        assert_eq!(e["name"], "mcp__slow__slow_with_progress");
        assert_eq!(e["total"], 8.0);
        let p = e["progress"].as_f64().unwrap() as i64;
        assert_eq!(e["message"], format!("chunk {p}\u{1b}[2J"));
    }
    let figures: Vec<f64> = events
        .iter()
        .map(|e| e["progress"].as_f64().unwrap())
        .collect();
    assert!(figures.windows(2).all(|w| w[0] < w[1]), "{figures:?}");

    // On a terminal: the status line, the server's escape shown as text.
    let cmd = format!(
        "{} -m {model} --tools 'mcp__slow__*' go",
        crate::support::bin("ag-prompt").display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .env("TERM", "xterm")
        .current_dir(&env.cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1) from util-linux");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("mcp__slow__slow_with_progress: ") && screen.contains("/8 chunk "),
        "{screen}"
    );
    assert!(
        !screen.contains("\u{1b}[2J"),
        "the server's escape reached the terminal"
    );
    assert!(screen.contains("called"), "{screen}");
}
