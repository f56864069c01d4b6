//! `ag-prompt` when the provider misbehaves: retried statuses (429 with Retry-After, 500, 529),
//! dropped connections, truncated and malformed streams, stalls past the idle timeout, nothing
//! listening, client errors that are not retried, and a provider that stays unavailable.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fake_provider::sse;
use crate::fake_provider::{FakeProvider, Reply};
use crate::prompt::*;
use crate::support::{Run, TestEnv};

// ---------------------------------------------------------------------------------------------
// Resilience

fn error_body(message: &str) -> String {
    json!({"type": "error", "error": {"type": "api_error", "message": message}}).to_string()
}

fn status(code: u16, retry_after: Option<u64>) -> Reply {
    Reply::Status {
        code,
        retry_after,
        body: error_body(&format!("fake status {code}")),
    }
}

/// One failed attempt (`first`), then a good answer: exit 0, two requests, the answer logged.
fn recovers_after(first: Reply) -> (FakeProvider, TestEnv, Run, Vec<Value>) {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    recovers_in(fake, env, first)
}

fn recovers_in(
    fake: FakeProvider,
    env: TestEnv,
    first: Reply,
) -> (FakeProvider, TestEnv, Run, Vec<Value>) {
    fake.push(first);
    fake.push(Reply::Sse(sse::anthropic_text("recovered answer")));
    let run = prompt(&env, &[], "hello there").ok();
    assert_eq!(fake.requests().len(), 2, "one retry");
    assert!(run.stdout.contains("recovered answer"), "{}", run.stdout);
    let chunks = env.chunks(&session_id(&run));
    assert_eq!(last_turn_end(&chunks)["data"]["stop_reason"], "end_turn");
    assert!(of_type(&chunks, None, "error").is_empty());
    let answers = of_type(&chunks, Some("assistant"), "text");
    assert_eq!(answers.last().unwrap()["data"]["text"], "recovered answer");
    // The retry is the same request.
    let reqs = fake.requests();
    assert_eq!(reqs[0].body["messages"], reqs[1].body["messages"]);
    (fake, env, run, chunks)
}

#[test]
fn prompt_retries_429_after_retry_after() {
    let start = Instant::now();
    let (_fake, _env, run, _) = recovers_after(status(429, Some(1)));
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was not honoured ({:?})",
        start.elapsed()
    );
    assert!(run.stderr.contains("429"), "{}", run.stderr);
}

#[test]
fn prompt_retries_500() {
    recovers_after(status(500, None));
}

#[test]
fn prompt_retries_529_overloaded() {
    recovers_after(status(529, None));
}

#[test]
fn prompt_retries_a_dropped_connection() {
    recovers_after(Reply::Drop);
}

/// A stream cut right after its first text block sealed.
fn cut_after_first_block(first: &str) -> String {
    let full = sse::anthropic(
        &[text(first), text("never finished")],
        "end_turn",
        (10, 5, 0, 0),
    );
    let at = full.find("event: content_block_stop").unwrap();
    let end = at + full[at..].find("\n\n").unwrap() + 2;
    full[..end].to_string()
}

#[test]
fn prompt_truncated_stream_is_retried_and_its_sealed_chunk_abandoned() {
    let (fake, _env, _run, chunks) =
        recovers_after(Reply::Truncate(cut_after_first_block("abandoned words")));
    let stale: Vec<&Value> = of_type(&chunks, Some("assistant"), "text")
        .into_iter()
        .filter(|c| c["data"]["text"] == "abandoned words")
        .collect();
    assert_eq!(stale.len(), 1, "the sealed block stays in the log");
    let abandoned = system_kind(&chunks, "attempt_abandoned");
    assert_eq!(abandoned.len(), 1);
    assert_eq!(abandoned[0]["data"]["chunk_ids"], json!([stale[0]["id"]]));
    assert!(abandoned[0]["seq"].as_i64() > stale[0]["seq"].as_i64());
    assert!(abandoned[0]["data"]["reason"]
        .as_str()
        .is_some_and(|r| !r.is_empty()));
    let next = &fake.requests()[1];
    assert!(
        !next.raw_body.contains("abandoned words"),
        "the retry must not replay the abandoned text: {}",
        next.raw_body
    );
}

#[test]
fn prompt_malformed_event_is_retried() {
    let full = sse::anthropic_text("garbled reply");
    let at = full.find("event: content_block_start").unwrap();
    let bad = format!(
        "{}event: content_block_delta\ndata: {{\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {{oops\n\n{}",
        &full[..at],
        &full[at..]
    );
    let (_fake, _env, _run, chunks) = recovers_after(Reply::Sse(bad));
    assert!(of_type(&chunks, Some("assistant"), "text")
        .iter()
        .all(|c| c["data"]["text"] != "garbled reply"));
}

#[test]
fn prompt_stall_past_idle_timeout_is_a_failed_attempt() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    let config = env.dir.path().join("config/ag/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let one = text.replace(&format!("idle_timeout_s = {IDLE_S}"), "idle_timeout_s = 1");
    assert_ne!(text, one);
    std::fs::write(&config, one).unwrap();
    let start = Instant::now();
    let (fake, _env, _run, chunks) = recovers_in(
        fake,
        env,
        Reply::Stall {
            prefix: cut_after_first_block("stalled words"),
            for_: Duration::from_secs(3),
        },
    );
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "idle timeout is 1 s"
    );
    // What the stalled attempt sealed is abandoned, and never taken as the answer.
    let abandoned = system_kind(&chunks, "attempt_abandoned");
    assert_eq!(abandoned.len(), 1);
    let stale = of_type(&chunks, Some("assistant"), "text")
        .into_iter()
        .find(|c| c["data"]["text"] == "stalled words")
        .expect("the sealed block stays");
    assert_eq!(abandoned[0]["data"]["chunk_ids"], json!([stale["id"]]));
    assert!(!fake.requests()[1].raw_body.contains("stalled words"));
}

#[test]
fn prompt_exits_75_when_nothing_listens() {
    let fake = FakeProvider::start();
    let mut env = env_for(&fake);
    // A port that was just free: connection refused on every attempt.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    env.set("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"));
    let run = prompt(&env, &[], "anyone there?").code(75);
    assert!(run.stderr.contains("3 attempts"), "{}", run.stderr);
    let chunks = env.chunks(&session_id(&run));
    assert_eq!(of_type(&chunks, None, "error").len(), 1);
    assert_eq!(last_turn_end(&chunks)["data"]["stop_reason"], "error");
}

#[test]
fn prompt_client_errors_are_not_retried() {
    for code in [400, 401, 403, 404, 422] {
        let fake = FakeProvider::start();
        let env = env_for(&fake);
        fake.push(status(code, None));
        fake.push(Reply::Sse(sse::anthropic_text("must not be asked for")));
        let run = prompt(&env, &[], "hello").code(1);
        assert_eq!(fake.requests().len(), 1, "HTTP {code} must not be retried");
        assert!(run.stderr.contains(&code.to_string()), "{}", run.stderr);
        assert!(!run.stdout.contains("must not be asked for"));
        let chunks = env.chunks(&session_id(&run));
        let errors = of_type(&chunks, None, "error");
        assert_eq!(errors.len(), 1, "HTTP {code}: {chunks:?}");
        assert_eq!(errors[0]["data"]["status"], code);
        assert_eq!(last_turn_end(&chunks)["data"]["stop_reason"], "error");
        assert_eq!(
            env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'"),
            0
        );
    }
}

#[test]
fn prompt_exits_75_when_the_provider_stays_unavailable() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    for _ in 0..3 {
        fake.push(status(503, None));
    }
    fake.push(Reply::Sse(sse::anthropic_text("too late")));
    let run = prompt(&env, &[], "hello").code(75);
    assert_eq!(fake.requests().len(), 3, "max_attempts = 3");
    let chunks = env.chunks(&session_id(&run));
    let errors = of_type(&chunks, None, "error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["data"]["status"], 503);
    assert_eq!(last_turn_end(&chunks)["data"]["stop_reason"], "error");
    assert!(!run.stdout.contains("too late"));
}
