//! The HTTP providers against the fake provider server: streamed steps become chunk ops,
//! and every way a request or a stream can fail is a failed attempt with the right verdict.

use std::time::{Duration, Instant};

use ag::config::{Config, ProviderConfig, ProviderKind};
use ag::log::{ChunkData, ChunkType, Role, StopReason};
use ag::provider::{AttemptError, ModelError, Provider};
use ag::reduce::{ChunkOp, StepEnd, Usage};
use serde_json::{json, Value};

use crate::fake_provider::sse::{self, Block};
use crate::fake_provider::{FakeProvider, Reply};

/// Distinctive, so a leak into any message would be found.
const KEY: &str = "sk-ag-e2e-DO-NOT-LEAK-7f3a9c";

/// A provider named `fake/MODEL` of `kind` pointing at `fake`, its key variable looked up in
/// a closure (the process environment is shared by the tests running in parallel).
fn provider(fake: &FakeProvider, kind: &str) -> Box<dyn Provider> {
    provider_at(&base_url(fake, kind), kind)
}

fn base_url(fake: &FakeProvider, kind: &str) -> String {
    match kind {
        "openai" => format!("{}/v1", fake.url()),
        _ => fake.url(),
    }
}

fn provider_at(base_url: &str, kind: &str) -> Box<dyn Provider> {
    let var = "AG_E2E_PROVIDER_KEY".to_string();
    let vars = |v: &str| (v == "AG_E2E_PROVIDER_KEY").then(|| KEY.to_string());
    let mut config = Config::default();
    config.network.connect_timeout_s = 2.0;
    config.network.idle_timeout_s = 1.0;
    config.providers.insert(
        "fake".into(),
        ProviderConfig {
            kind: match kind {
                "openai" => ProviderKind::OpenAi,
                _ => ProviderKind::Anthropic,
            },
            base_url: base_url.into(),
            api_key_env: Some(var),
        },
    );
    ag::provider::resolve_with("fake/model-x", &config, &vars).expect("resolve the fake provider")
}

fn request() -> Value {
    json!({"model": "model-x", "max_tokens": 1024, "stream": true,
           "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]})
}

fn run(p: &dyn Provider) -> (Vec<ChunkOp>, Result<StepEnd, AttemptError>) {
    let mut ops = Vec::new();
    let end = p.attempt(&request(), &mut |op| ops.push(op));
    (ops, end)
}

/// The failed attempt, checked never to carry the key.
#[track_caller]
fn failure(p: &dyn Provider) -> (Vec<ChunkOp>, AttemptError) {
    let (ops, end) = run(p);
    let e = end.expect_err("the attempt should fail");
    assert!(
        !e.message.contains(KEY) && !e.to_string().contains(KEY),
        "key leaked: {e}"
    );
    (ops, e)
}

fn sealed(ops: &[ChunkOp]) -> Vec<ChunkData> {
    ops.iter()
        .filter_map(|op| match op {
            ChunkOp::Seal { data, .. } => Some(data.clone()),
            _ => None,
        })
        .collect()
}

fn deltas(ops: &[ChunkOp], key: usize) -> usize {
    ops.iter()
        .filter(|op| matches!(op, ChunkOp::Delta { key: k, .. } if *k == key))
        .count()
}

fn error_body(message: &str) -> String {
    json!({"type": "error", "error": {"type": "some_error", "message": message}}).to_string()
}

#[test]
fn anthropic_step_streams_thinking_text_and_tool_call_with_usage() {
    let fake = FakeProvider::start();
    fake.push(Reply::Sse(sse::anthropic(
        &[
            Block::Thinking {
                text: "I should read the file.".into(),
                signature: "sig-abc".into(),
            },
            Block::Text("Reading README.md now.".into()),
            Block::Tool {
                id: "toolu_01".into(),
                name: "read".into(),
                input: json!({"path": "README.md", "limit": 20}),
            },
        ],
        "tool_use",
        (120, 33, 4000, 250),
    )));
    let p = provider(&fake, "anthropic");
    assert_eq!(p.name(), "fake/model-x");
    assert_eq!(p.api_model(), "model-x");

    let (ops, end) = run(p.as_ref());
    assert_eq!(
        end.unwrap(),
        StepEnd {
            stop_reason: StopReason::ToolUse,
            usage: Usage {
                input: 120,
                output: 33,
                cache_read: 4000,
                cache_write: 250
            },
            model: Some("claude-fake-1".into()),
        }
    );
    assert_eq!(
        ops[0],
        ChunkOp::Open {
            key: 0,
            role: Role::Assistant,
            ty: ChunkType::Thinking
        }
    );
    assert_eq!(
        sealed(&ops),
        vec![
            ChunkData::Thinking {
                text: "I should read the file.".into(),
                signature: Some("sig-abc".into()),
                redacted: None
            },
            ChunkData::Text {
                text: "Reading README.md now.".into()
            },
            ChunkData::ToolCall {
                call_id: "toolu_01".into(),
                name: "read".into(),
                arguments: json!({"path": "README.md", "limit": 20}),
            },
        ]
    );
    assert!(deltas(&ops, 1) >= 2, "text streams in pieces: {ops:?}");
    assert!(
        deltas(&ops, 2) >= 2,
        "tool input streams in pieces: {ops:?}"
    );

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(r.headers["x-api-key"], KEY);
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.headers["accept"], "text/event-stream");
    assert!(!r.headers.contains_key("authorization"));
    assert_eq!(r.body, request());
}

#[test]
fn openai_step_with_parallel_tool_calls() {
    let fake = FakeProvider::start();
    fake.push(Reply::Sse(sse::openai(
        Some("Let me look."),
        &[
            (
                "call_a".into(),
                "read".into(),
                json!({"path": "src/main.rs"}),
            ),
            (
                "call_b".into(),
                "grep".into(),
                json!({"pattern": "fn main", "glob": "*.rs"}),
            ),
        ],
        "tool_calls",
        (900, 41),
    )));
    let p = provider(&fake, "openai");
    let (ops, end) = run(p.as_ref());
    let end = end.unwrap();
    assert_eq!(end.stop_reason, StopReason::ToolUse);
    assert_eq!((end.usage.input, end.usage.output), (900, 41));
    assert_eq!(end.model.as_deref(), Some("gpt-fake-1"));
    assert_eq!(
        sealed(&ops),
        vec![
            ChunkData::Text {
                text: "Let me look.".into()
            },
            ChunkData::ToolCall {
                call_id: "call_a".into(),
                name: "read".into(),
                arguments: json!({"path": "src/main.rs"}),
            },
            ChunkData::ToolCall {
                call_id: "call_b".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "fn main", "glob": "*.rs"}),
            },
        ]
    );
    let r = &fake.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], format!("Bearer {KEY}"));
    assert!(!r.headers.contains_key("x-api-key"));
    assert_eq!(r.body, request());
}

#[test]
fn ops_reach_the_sink_as_the_stream_arrives() {
    let fake = FakeProvider::start();
    let body = sse::anthropic_text("one two three four");
    let events = body.matches("\n\n").count() as u32;
    let delay = Duration::from_millis(60);
    fake.push(Reply::SseSlow {
        body,
        piece_delay: delay,
    });
    let p = provider(&fake, "anthropic");
    let start = Instant::now();
    let mut first_op = None;
    let end = p.attempt(&request(), &mut |_| {
        first_op.get_or_insert_with(|| start.elapsed());
    });
    let total = start.elapsed();
    assert_eq!(end.unwrap().stop_reason, StopReason::EndTurn);
    let first = first_op.expect("some ops");
    assert!(total >= delay * (events - 1), "{total:?}");
    assert!(
        first + delay * 3 <= total,
        "first op at {first:?}, stream done at {total:?}"
    );
}

#[test]
fn rate_limit_is_retryable_after_the_servers_delay() {
    let fake = FakeProvider::start();
    fake.push(Reply::Status {
        code: 429,
        retry_after: Some(2),
        body: error_body("Number of request tokens has exceeded your per-minute rate limit"),
    });
    let (ops, e) = failure(provider(&fake, "anthropic").as_ref());
    assert!(ops.is_empty());
    assert_eq!(e.status, Some(429));
    assert!(e.retryable);
    assert_eq!(e.retry_after, Some(Duration::from_secs(2)));
    assert!(e.message.contains("per-minute rate limit"), "{e}");
}

#[test]
fn request_errors_are_not_retried() {
    let fake = FakeProvider::start();
    let p = provider(&fake, "anthropic");
    for code in [400, 401, 403, 404, 422] {
        fake.push(Reply::Status {
            code,
            retry_after: None,
            body: error_body(&format!("bad {code}")),
        });
        let (_, e) = failure(p.as_ref());
        assert_eq!(e.status, Some(code));
        assert!(!e.retryable, "{code}: {e}");
        assert_eq!(e.retry_after, None);
        assert_eq!(e.message, format!("bad {code}"));
    }
}

#[test]
fn server_errors_are_retried() {
    let fake = FakeProvider::start();
    let p = provider(&fake, "openai");
    for code in [500, 502, 503, 529] {
        fake.push(Reply::Status {
            code,
            retry_after: None,
            body: json!({"error": {"message": "Overloaded", "type": "overloaded_error"}})
                .to_string(),
        });
        let (_, e) = failure(p.as_ref());
        assert_eq!(e.status, Some(code));
        assert!(e.retryable, "{code}: {e}");
        assert_eq!(e.message, "Overloaded");
    }
    // A body that is not JSON still gives a readable one-line message.
    fake.push(Reply::Status {
        code: 502,
        retry_after: None,
        body: format!("<html>\n<body>{}</body></html>", "bad gateway ".repeat(100)),
    });
    let (_, e) = failure(p.as_ref());
    assert!(e.retryable);
    assert!(
        e.message.chars().count() <= 300 && !e.message.contains('\n'),
        "{e}"
    );
}

#[test]
fn an_unscripted_request_gets_a_500() {
    let fake = FakeProvider::start();
    let (_, e) = failure(provider(&fake, "anthropic").as_ref());
    assert_eq!(e.status, Some(500));
    assert!(e.message.contains("no scripted reply"), "{e}");
}

#[test]
fn a_dropped_connection_is_a_retryable_transport_error() {
    let fake = FakeProvider::start();
    fake.push(Reply::Drop);
    let (ops, e) = failure(provider(&fake, "anthropic").as_ref());
    assert!(ops.is_empty());
    assert!(e.retryable, "{e}");
    assert_eq!(e.status, None);
    assert!(e.message.contains("127.0.0.1"), "{e}");
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn connection_refused_is_retryable_and_names_the_host() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let p = provider_at(&format!("http://127.0.0.1:{port}"), "anthropic");
    let (_, e) = failure(p.as_ref());
    assert!(e.retryable, "{e}");
    assert_eq!(e.status, None);
    assert!(
        e.message
            .contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{e}"
    );
}

#[test]
fn a_truncated_stream_fails_but_keeps_the_blocks_sealed_before_the_cut() {
    let fake = FakeProvider::start();
    let full = sse::anthropic(
        &[
            Block::Text("The first block is whole.".into()),
            Block::Text("The second is cut".into()),
        ],
        "end_turn",
        (10, 10, 0, 0),
    );
    // Cut inside the second block, after its first delta.
    let second = full.find("\"index\":1").expect("a second block");
    let cut = second + full[second..].find("text_delta").unwrap() + 40;
    fake.push(Reply::Truncate(full[..cut].to_owned()));
    let (ops, e) = failure(provider(&fake, "anthropic").as_ref());
    assert!(e.retryable, "{e}");
    assert!(e.message.contains("stop event"), "{e}");
    assert_eq!(
        sealed(&ops),
        vec![ChunkData::Text {
            text: "The first block is whole.".into()
        }]
    );
    assert!(
        ops.contains(&ChunkOp::Open {
            key: 1,
            role: Role::Assistant,
            ty: ChunkType::Text
        }),
        "the cut block was opened: {ops:?}"
    );

    // The same for OpenAI: the finish chunk and [DONE] never came.
    let full = sse::openai(Some("partial answer"), &[], "stop", (5, 5));
    let cut = full.find("\"finish_reason\":\"stop\"").unwrap();
    let cut = full[..cut].rfind("data:").unwrap();
    fake.push(Reply::Truncate(full[..cut].to_owned()));
    let (ops, e) = failure(provider(&fake, "openai").as_ref());
    assert!(e.retryable && e.message.contains("stop event"), "{e}");
    assert!(sealed(&ops).is_empty(), "nothing was complete: {ops:?}");
}

#[test]
fn a_malformed_event_is_a_retryable_failure() {
    let fake = FakeProvider::start();
    let good = sse::anthropic_text("fine so far");
    let start = good.find("event: content_block_start").unwrap();
    fake.push(Reply::Sse(format!(
        "{}event: content_block_delta\ndata: {{not json\n\n{}",
        &good[..start],
        &good[start..]
    )));
    let (_, e) = failure(provider(&fake, "anthropic").as_ref());
    assert!(e.retryable, "{e}");
    assert_eq!(e.status, None);
    assert!(e.message.contains("malformed"), "{e}");
}

#[test]
fn an_error_event_inside_the_stream_fails_the_attempt() {
    let fake = FakeProvider::start();
    let good = sse::anthropic_text("about to be overloaded");
    let start = good.find("event: content_block_start").unwrap();
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    fake.push(Reply::Sse(format!(
        "{}event: error\ndata: {overloaded}\n\n",
        &good[..start]
    )));
    let (_, e) = failure(provider(&fake, "anthropic").as_ref());
    assert!(e.retryable, "{e}");
    assert!(e.message.contains("Overloaded"), "{e}");
}

#[test]
fn a_stalled_stream_fails_after_the_idle_timeout() {
    let fake = FakeProvider::start();
    let good = sse::anthropic_text("this answer stalls");
    let cut = good.find("event: content_block_stop").unwrap();
    fake.push(Reply::Stall {
        prefix: good[..cut].to_owned(),
        for_: Duration::from_secs(60),
    });
    let p = provider(&fake, "anthropic");
    let start = Instant::now();
    let (ops, e) = failure(p.as_ref());
    let took = start.elapsed();
    assert!(e.retryable, "{e}");
    assert!(e.message.contains("no progress for 1 s"), "{e}");
    // The stall lasts a minute: ending within half of it is the idle timeout, whatever the
    // load, and never before the timeout's second.
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(30),
        "{took:?}"
    );
    assert!(!ops.is_empty(), "the ops before the stall were delivered");
    assert!(sealed(&ops).is_empty());
}

#[test]
fn the_key_never_appears_in_an_error_even_when_the_server_echoes_it() {
    let fake = FakeProvider::start();
    fake.push(Reply::Status {
        code: 401,
        retry_after: None,
        body: error_body(&format!("invalid x-api-key: {KEY}")),
    });
    let (_, e) = failure(provider(&fake, "anthropic").as_ref());
    assert!(!e.retryable);
    assert!(e.message.contains("invalid x-api-key: [key]"), "{e}");

    fake.push(Reply::Sse(format!(
        "data: {}\n\n",
        json!({"error": {"message": format!("bad key {KEY}"), "type": "invalid_request_error"}})
    )));
    let (_, e) = failure(provider(&fake, "openai").as_ref());
    assert!(!e.retryable, "{e}");
}

#[test]
fn missing_and_unknown_providers_are_model_errors() {
    let mut config = Config::default();
    config.providers.insert(
        "nokey".into(),
        ProviderConfig {
            kind: ProviderKind::OpenAi,
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key_env: Some("AG_E2E_PROVIDER_KEY_NEVER_SET".into()),
        },
    );
    let err = |model: &str| match ag::provider::resolve_with(model, &config, &|_| None) {
        Ok(p) => panic!("{model} resolved to {}", p.name()),
        Err(e) => e,
    };
    assert!(
        matches!(err("nokey/m"), ModelError::MissingKey { var, .. } if var == "AG_E2E_PROVIDER_KEY_NEVER_SET")
    );
    assert!(matches!(
        err("nowhere/m"),
        ModelError::UnknownProvider { .. }
    ));
    assert!(matches!(err("fake/"), ModelError::MissingName(_)));
    assert!(matches!(err(""), ModelError::NoModel));
}

#[test]
fn a_local_server_without_a_key_variable_gets_no_auth_header() {
    let fake = FakeProvider::start();
    fake.push(Reply::Sse(sse::openai(
        Some("hi from llama"),
        &[],
        "stop",
        (3, 4),
    )));
    let mut config = Config::default();
    config.network.idle_timeout_s = 1.0;
    config.providers.insert(
        "ollama".into(),
        ProviderConfig {
            kind: ProviderKind::OpenAi,
            base_url: format!("{}/v1/", fake.url()),
            api_key_env: None,
        },
    );
    let p = ag::provider::resolve("ollama/llama3.2", &config).unwrap();
    let (ops, end) = run(p.as_ref());
    assert_eq!(end.unwrap().stop_reason, StopReason::EndTurn);
    assert_eq!(
        sealed(&ops),
        vec![ChunkData::Text {
            text: "hi from llama".into()
        }]
    );
    let r = &fake.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert!(!r.headers.contains_key("authorization") && !r.headers.contains_key("x-api-key"));
}
