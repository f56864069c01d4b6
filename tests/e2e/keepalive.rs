//! OpenAI keep-alives through a whole `ag-prompt` turn: a `: ping` comment, a chunk with no
//! choices and a chunk whose delta is empty are not progress, so a stream of nothing else ends
//! the turn at the idle timeout; and a stream that does progress is still ended by the attempt
//! deadline. The turn then ends as an error (exit 75), recorded, and the session is not left
//! `running`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::fake_provider::{FakeProvider, Reply};
use crate::support::TestEnv;

const MODEL: &str = "openai/gpt-keepalive";

/// The three keep-alive forms OpenAI-compatible servers send.
fn keep_alives() -> [(&'static str, String); 3] {
    let chunk = |choices: Value| {
        let v = json!({"id": "chatcmpl-ka", "object": "chat.completion.chunk",
                       "created": 1_700_000_000, "model": "gpt-keepalive", "choices": choices});
        format!("data: {v}\n\n")
    };
    [
        ("a `: ping` comment", ": ping\n\n".to_string()),
        ("a chunk with no choices", chunk(json!([]))),
        (
            "an empty delta",
            chunk(json!([{"index": 0, "delta": {}, "finish_reason": null}])),
        ),
    ]
}

/// The opening of an answer: the role delta, which is not progress either.
fn opening() -> String {
    let v = json!({"id": "chatcmpl-ka", "object": "chat.completion.chunk",
                   "created": 1_700_000_000, "model": "gpt-keepalive",
                   "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                "finish_reason": null}]});
    format!("data: {v}\n\n")
}

fn text_delta(text: &str) -> String {
    let v = json!({"id": "chatcmpl-ka", "object": "chat.completion.chunk",
                   "created": 1_700_000_000, "model": "gpt-keepalive",
                   "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!("data: {v}\n\n")
}

/// One attempt, the given timeouts, the fake as the OpenAI endpoint.
fn env(fake: &FakeProvider, network: &str) -> TestEnv {
    let mut env = TestEnv::new();
    let dir = env.dir.path().join("config/ag");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!("[network]\nconnect_timeout_s = 10\nmax_attempts = 1\n{network}\n"),
    )
    .unwrap();
    env.set("OPENAI_BASE_URL", format!("{}/v1", fake.url()));
    env.set("OPENAI_API_KEY", crate::prompt::OPENAI_KEY);
    env
}

/// The turn ended as an error with `needle` in its message, recorded in the log, and the
/// session is no longer running.
fn ended_in_error(env: &TestEnv, stderr: &str, needle: &str) {
    assert!(stderr.contains(needle), "{stderr}");
    let id = crate::prompt::session_of(stderr).expect("the session is named");
    let chunks = env.chunks(&id);
    let error = chunks
        .iter()
        .find(|c| c["type"] == "error")
        .expect("an error chunk");
    assert!(
        error["data"]["message"].as_str().unwrap().contains(needle),
        "{error}"
    );
    let end = chunks.last().unwrap();
    assert_eq!(end["data"]["kind"], "turn_end", "{end}");
    assert_eq!(end["data"]["stop_reason"], "error", "{end}");
    let ls = env.log(&["ls", "--json"]).ok().json_lines();
    assert_ne!(ls[0]["status"], "running", "{ls:?}");
}

#[test]
fn openai_keep_alives_alone_end_the_turn_at_the_idle_timeout() {
    for (form, keep_alive) in keep_alives() {
        let fake = FakeProvider::start();
        // Keep-alives every 200 ms for 6 s: if one of them counted as progress, the idle
        // timer (1 s) would never fire, and the stream would end without a stop event instead.
        fake.push(Reply::SseSlow {
            body: format!("{}{}", opening(), keep_alive.repeat(30)),
            piece_delay: Duration::from_millis(200),
        });
        let env = env(&fake, "idle_timeout_s = 1");
        let run = env.run("ag-prompt", &["-m", MODEL, "hello"]).code(75);
        assert!(
            run.stderr.contains("no progress for 1 s"),
            "{form}: {}",
            run.stderr
        );
        ended_in_error(&env, &run.stderr, "no progress for 1 s");
        assert_eq!(run.stdout, "", "{form}: nothing was answered");
    }
}

#[test]
fn openai_keep_alives_between_progress_do_not_outlast_the_attempt_deadline() {
    let fake = FakeProvider::start();
    // Text every few pieces, keep-alives between, for about 8 s: never idle for 10 s, so
    // only the 1 s attempt deadline can end it.
    let mut body = opening();
    for i in 0..40 {
        body.push_str(&text_delta(&format!("w{i} ")));
        for (_, k) in keep_alives() {
            body.push_str(&k);
        }
    }
    fake.push(Reply::SseSlow {
        body,
        piece_delay: Duration::from_millis(50),
    });
    let env = env(&fake, "idle_timeout_s = 10\nattempt_timeout_s = 1");
    let run = env.run("ag-prompt", &["-m", MODEL, "hello"]).code(75);
    ended_in_error(&env, &run.stderr, "network.attempt_timeout_s");
}
