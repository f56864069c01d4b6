//! Compaction end to end: the real binaries, a real store and the fake provider in both
//! dialects. Manual compaction with a given summary (and every bad input), automatic
//! compaction past a small configured window, a provider's "too long" error (each dialect's
//! real message) compacting and retrying the step and teaching the window, a summarizer
//! that fails, and one whose input is summarized in slices. The peer rules, queued
//! compactions and forks are in `compaction_peers.rs`.

use serde_json::{json, Value};

use crate::fake_provider::sse::{self, Block};
use crate::fake_provider::{FakeProvider, Recorded, Reply};
use crate::prompt::{env_with, system_kind};
use crate::support::{chunk, TestEnv};

pub(crate) const ANTHROPIC: &str = "anthropic/claude-test";
pub(crate) const OPENAI: &str = "openai/gpt-test";

/// A small window for both test models (the seeded history passes half of it), a small
/// kept suffix.
pub(crate) fn small_window() -> String {
    window_of(9000)
}

pub(crate) fn window_of(tokens: u64) -> String {
    format!(
        "[context]\nkeep_tokens = 300\ncompact_at = 0.5\n\
         [models.\"{ANTHROPIC}\"]\ncontext_window = {tokens}\n\
         [models.\"{OPENAI}\"]\ncontext_window = {tokens}\n"
    )
}

/// A session of `turns` finished turns (about 700 tokens each: a question, a `write` call
/// and its result, a long answer), with a spent peer chunk in the middle. Returns its id.
pub(crate) fn seed(env: &TestEnv, turns: usize) -> String {
    let id = env.new_session(
        "seeded",
        "ask 0: GOAL-MARKER fix the parser in src/parse.rs",
    );
    let mut lines = Vec::new();
    for t in 0..turns {
        let turn = format!("turn{t}");
        if t > 0 {
            lines.push(chunk::step(
                chunk::user(&format!("ask {t}: keep going")),
                &turn,
                0,
            ));
        }
        lines.push(chunk::step(
            chunk::call(
                &format!("w{t}"),
                "write",
                json!({"path": format!("src/f{t}.rs"), "content": "x"}),
            ),
            &turn,
            1,
        ));
        lines.push(chunk::step(
            chunk::result(&format!("w{t}"), "write", "ok"),
            &turn,
            1,
        ));
        lines.push(chunk::step(
            chunk::assistant(&format!("answer {t}: {}", "words ".repeat(450))),
            &turn,
            2,
        ));
        if t == 1 {
            lines.push(json!({"role": "peer", "type": "peer", "turn": turn, "step": 2,
                "data": {"messages": [{"id": "0190aaaa-spent", "from": "bob", "text": "PEER-SPENT hold the build"}],
                         "omitted": 0, "room": "r"}}));
        }
        lines.push(chunk::step(chunk::turn_end(0, 0), &turn, 2));
    }
    env.append(&id, &lines);
    id
}

pub(crate) fn answer(dialect: &str, text: &str) -> Reply {
    Reply::Sse(match dialect {
        "anthropic" => sse::anthropic(&[Block::Text(text.into())], "end_turn", (30, 5, 0, 0)),
        _ => sse::openai(Some(text), &[], "stop", (30, 5)),
    })
}

pub(crate) fn model_of(dialect: &str) -> &'static str {
    if dialect == "anthropic" {
        ANTHROPIC
    } else {
        OPENAI
    }
}

/// The text of a request's messages, as JSON.
pub(crate) fn text_of(r: &Recorded) -> String {
    r.body["messages"].to_string()
}

/// The first user-side text of a request (the handoff after a compaction).
pub(crate) fn first_user_text(r: &Recorded) -> String {
    let msgs = r.body["messages"].as_array().unwrap();
    let m = msgs.iter().find(|m| m["role"] == "user").unwrap();
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks[0]["text"].as_str().unwrap_or("").to_string(),
        _ => String::new(),
    }
}

/// Anthropic roles alternate from the user, and every `tool_use` is answered first thing in
/// the next message; OpenAI tool calls are each answered by a tool message at once.
pub(crate) fn assert_valid(r: &Recorded, dialect: &str) {
    let msgs = r.body["messages"].as_array().unwrap();
    if dialect == "anthropic" {
        for (i, m) in msgs.iter().enumerate() {
            assert_eq!(
                m["role"],
                if i % 2 == 0 { "user" } else { "assistant" },
                "{i}"
            );
            let uses: Vec<&Value> = m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| &b["id"])
                .collect();
            if !uses.is_empty() {
                let next: Vec<&Value> = msgs[i + 1]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .take_while(|b| b["type"] == "tool_result")
                    .map(|b| &b["tool_use_id"])
                    .collect();
                assert_eq!(uses, next, "message {i}");
            }
        }
    } else {
        let mut i = 0;
        while i < msgs.len() {
            assert_ne!(msgs[i]["role"], "tool", "an unanswered tool message at {i}");
            let calls = msgs[i]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            i += 1;
            for c in calls {
                assert_eq!(msgs[i]["tool_call_id"], c["id"]);
                i += 1;
            }
        }
    }
}

#[test]
fn compact_with_a_given_summary_folds_from_it_and_the_log_keeps_everything() {
    let env = env_with(None, "[context]\nkeep_tokens = 300\n");
    let id = seed(&env, 4);
    let before = env.chunks(&id).len();
    env.write_file("summary.md", "SUMMARY-GIVEN: the parser is half fixed.\n");
    let run = env.log(&["compact", &id, "--summary", "@summary.md"]).ok();
    assert!(run.stderr.contains("compacted "), "{}", run.stderr);
    assert!(run.stderr.contains(" tokens"), "{}", run.stderr);

    let chunks = env.chunks(&id);
    assert_eq!(
        chunks.len(),
        before + 1,
        "one record appended, nothing removed"
    );
    let rec = system_kind(&chunks, "compaction")[0]["data"].clone();
    assert_eq!(rec["trigger"], "manual");
    assert_eq!(rec["model"], "manual");
    assert_eq!(rec["summary"], "SUMMARY-GIVEN: the parser is half fixed.");
    let kept = rec["kept_from_seq"].as_i64().unwrap();
    assert_eq!(rec["through_seq"].as_i64().unwrap(), kept - 1);
    assert!(rec["tokens_after"].as_u64().unwrap() < rec["tokens_before"].as_u64().unwrap());
    let state = rec["state"].as_str().unwrap();
    assert!(state.contains("GOAL-MARKER"), "the goal: {state}");
    assert!(
        state.contains("src/f0.rs") && state.contains("src/f3.rs"),
        "files: {state}"
    );
    assert!(
        !state.contains("PEER-SPENT"),
        "no peer speech in the state: {state}"
    );

    for dialect in ["anthropic", "openai"] {
        let fold: Value = env.log(&["fold", &id, "--dialect", dialect]).ok().json();
        let text = fold["messages"].to_string();
        assert!(text.contains("SUMMARY-GIVEN"), "{dialect}: {text}");
        assert!(
            !text.contains("answer 0:"),
            "{dialect}: summarized turns are gone"
        );
        assert!(
            text.contains("ask 3: keep going"),
            "{dialect}: the kept suffix"
        );
        let full: Value = env
            .log(&["fold", &id, "--dialect", dialect, "--full"])
            .ok()
            .json();
        let full = full["messages"].to_string();
        assert!(
            full.contains("answer 0:") && !full.contains("SUMMARY-GIVEN"),
            "{dialect}"
        );
    }
    // `cat` still shows the whole log.
    let cat = env.log(&["cat", &id]).ok();
    assert!(cat.stdout.contains("answer 0:"));

    // Again: everything before the suffix is already summarized.
    let again = env.log(&["compact", &id, "--summary", "more"]).ok();
    assert!(
        again.stderr.contains("nothing to compact"),
        "{}",
        again.stderr
    );
    assert_eq!(env.chunks(&id).len(), before + 1);
}

#[test]
fn compact_refuses_bad_summaries_and_writes_nothing() {
    let env = env_with(None, "[context]\nkeep_tokens = 300\n");
    let id = seed(&env, 3);
    let before = env.chunks(&id).len();
    env.write_file("empty.md", "  \n\n");
    std::fs::write(env.cwd.join("latin1.md"), b"caf\xe9 au lait").unwrap();
    for (arg, says) in [
        ("@empty.md", "the summary is empty"),
        ("@latin1.md", "not UTF-8"),
        ("", "the summary is empty"),
    ] {
        let run = env.log(&["compact", &id, "--summary", arg]).code(2);
        assert!(run.stderr.contains(says), "{arg}: {}", run.stderr);
    }
    let run = env.log(&["compact", &id, "--summary", "@missing.md"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("missing.md"), "{}", run.stderr);
    env.log(&["compact", "ffffffff", "--summary", "x"]).code(4);
    assert_eq!(env.chunks(&id).len(), before, "nothing was written");
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'"),
        0
    );
    // A session with nothing before its suffix compacts to nothing, successfully.
    let small = env.new_session("small", "hello");
    let run = env.log(&["compact", &small, "--summary", "x"]).ok();
    assert!(run.stderr.contains("nothing to compact"), "{}", run.stderr);
}

#[test]
fn a_session_past_a_small_window_compacts_automatically_and_keeps_going() {
    for dialect in ["anthropic", "openai"] {
        let fake = FakeProvider::start();
        let env = env_with(Some(&fake), &small_window());
        let id = seed(&env, 5);
        fake.push(answer(
            dialect,
            "SUMMARY-AUTO: goal is the parser; f0..f4 written.",
        ));
        fake.push(answer(dialect, "Carrying on from the summary."));
        let run = env
            .run(
                "ag-prompt",
                &["-s", &id, "-m", model_of(dialect), "--json", "go on"],
            )
            .ok();
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 2, "{dialect}: a summary, then the step");

        // The summarizer read the history and its prompt, never the peer's words.
        let s = text_of(&reqs[0]);
        assert!(
            s.contains("answer 0:") && s.contains("handoff summary"),
            "{dialect}"
        );
        assert!(
            !s.contains("PEER-SPENT"),
            "{dialect}: the summarizer saw a peer"
        );
        assert_valid(&reqs[0], dialect);

        // The step folds from the handoff: the summary, the durable state, then the suffix.
        let handoff = first_user_text(&reqs[1]);
        assert!(handoff.contains("SUMMARY-AUTO"), "{dialect}: {handoff}");
        assert!(
            handoff.contains("GOAL-MARKER"),
            "{dialect}: the goal survives"
        );
        assert!(
            handoff.contains("src/f4.rs"),
            "{dialect}: files written survive"
        );
        let step = text_of(&reqs[1]);
        assert!(
            !step.contains("answer 0:") && !step.contains("PEER-SPENT"),
            "{dialect}"
        );
        assert!(step.contains("go on"), "{dialect}: the prompt is kept");
        assert_valid(&reqs[1], dialect);

        let events = run.json_lines();
        let ev = events
            .iter()
            .find(|e| e["type"] == "compacted")
            .expect("an event");
        assert_eq!(ev["trigger"], "auto");
        assert!(ev["tokens_before"].as_u64().unwrap() > ev["tokens_after"].as_u64().unwrap());
        let chunks = env.chunks(&id);
        assert_eq!(system_kind(&chunks, "compaction").len(), 1, "{dialect}");
        let end = system_kind(&chunks, "turn_end");
        assert_eq!(end.last().unwrap()["data"]["stop_reason"], "end_turn");
        assert!(end.last().unwrap()["data"]["context_input"]
            .as_u64()
            .is_some());

        // The next turn starts from the same compaction: byte for byte the same handoff.
        fake.push(answer(dialect, "Still going."));
        let again = env
            .run(
                "ag-prompt",
                &["-s", &id, "-m", model_of(dialect), "and then?"],
            )
            .ok();
        assert!(!again.stderr.contains("compacted"), "{}", again.stderr);
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 3);
        let prefix = |r: &Recorded| {
            let mut m = r.body["messages"].as_array().unwrap().clone();
            m.truncate(1);
            let mut v = Value::Array(m);
            crate::prompt::strip_cache_control(&mut v);
            v.to_string()
        };
        assert_eq!(
            prefix(&reqs[1]),
            prefix(&reqs[2]),
            "{dialect}: the handoff moved"
        );
    }
}

#[test]
fn a_too_long_error_compacts_retries_the_step_and_teaches_the_window() {
    let cases = [
        (
            "anthropic",
            json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": "prompt is too long: 215337 tokens > 200000 maximum"}}),
            200_000,
        ),
        (
            "openai",
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. \
                However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            128_000,
        ),
    ];
    for (dialect, body, window) in cases {
        let fake = FakeProvider::start();
        let env = env_with(Some(&fake), "[context]\nkeep_tokens = 300\n");
        let id = seed(&env, 3);
        fake.push(Reply::Status {
            code: 400,
            retry_after: None,
            body: body.to_string(),
        });
        fake.push(answer(dialect, "SUMMARY-OVERFLOW"));
        fake.push(answer(dialect, "Done after compacting."));
        let run = env
            .run("ag-prompt", &["-s", &id, "-m", model_of(dialect), "go on"])
            .ok();
        assert!(
            run.stdout.contains("Done after compacting."),
            "{dialect}: {}",
            run.stdout
        );
        assert!(
            run.stderr.contains("compacted "),
            "{dialect}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("attempt 2"),
            "{dialect}: not retried as a failure"
        );
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 3, "{dialect}");
        assert!(
            first_user_text(&reqs[2]).contains("SUMMARY-OVERFLOW"),
            "{dialect}"
        );
        let chunks = env.chunks(&id);
        let rec = &system_kind(&chunks, "compaction")[0]["data"];
        assert_eq!(rec["trigger"], "overflow");
        assert_eq!(
            rec["tokens_before"],
            if dialect == "anthropic" {
                215_337
            } else {
                130_512
            }
        );
        assert!(
            crate::prompt::of_type(&chunks, None, "error").is_empty(),
            "{dialect}"
        );

        // The window the provider stated is remembered for that endpoint, by a new process
        // too.
        let models = env
            .run("ag-prompt", &["models", "--json"])
            .ok()
            .json_lines();
        let key = format!("{}@127.0.0.1:", model_of(dialect));
        let learned = models
            .iter()
            .find(|m| m["model"].as_str().is_some_and(|s| s.starts_with(&key)))
            .unwrap_or_else(|| panic!("{dialect}: {models:?}"));
        assert_eq!(learned["context_window"], window);
        assert_eq!(learned["source"], "learned");
        let show = env.log(&["show", &id, "--json"]).ok().json();
        assert_eq!(show["context"]["window"], window, "{dialect}: {show}");
        assert_eq!(show["context"]["last_input"], 30);
    }
}

#[test]
fn a_failing_summarizer_leaves_the_session_as_it_was() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), &small_window());
    let id = seed(&env, 5);
    let before = env.chunks(&id);
    let refuse = || {
        Reply::Status {
        code: 400,
        retry_after: None,
        body: json!({"type": "error", "error": {"type": "invalid_request_error", "message": "no summaries today"}})
            .to_string(),
    }
    };
    fake.push(refuse());
    let run = env
        .run("ag-prompt", &["-s", &id, "-m", ANTHROPIC, "--compact"])
        .code(1);
    assert!(run.stderr.contains("no summaries today"), "{}", run.stderr);
    assert!(run.stderr.contains("as it was"), "{}", run.stderr);
    assert_eq!(env.chunks(&id), before, "nothing written");
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'"),
        0
    );

    // An automatic compaction that fails says why, and the turn goes on.
    fake.push(refuse());
    fake.push(answer("anthropic", "Answered without compacting."));
    let run = env
        .run("ag-prompt", &["-s", &id, "-m", ANTHROPIC, "go on"])
        .ok();
    assert!(
        run.stderr.contains("could not compact (auto)"),
        "{}",
        run.stderr
    );
    // …and names the way out.
    assert!(
        run.stderr
            .contains(&format!("ag-log compact {id} --summary TEXT")),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("Answered without compacting."));
    assert!(system_kind(&env.chunks(&id), "compaction").is_empty());
}

#[test]
fn ag_prompt_compact_compacts_now_then_runs_the_prompt() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), "[context]\nkeep_tokens = 300\n");
    let id = seed(&env, 3);
    fake.push(answer("anthropic", "SUMMARY-MANUAL"));
    let run = env
        .run("ag-prompt", &["-s", &id, "-m", ANTHROPIC, "--compact"])
        .ok();
    assert!(run.stderr.contains("compacted "), "{}", run.stderr);
    let chunks = env.chunks(&id);
    let rec = &system_kind(&chunks, "compaction")[0]["data"];
    assert_eq!(rec["trigger"], "manual");
    assert_eq!(rec["model"], ANTHROPIC);
    assert_eq!(rec["summary"], "SUMMARY-MANUAL");
    // Nothing new before the suffix: says so, and a prompt still runs.
    fake.push(answer("anthropic", "Fine."));
    let run = env
        .run(
            "ag-prompt",
            &["-s", &id, "-m", ANTHROPIC, "--compact", "carry on"],
        )
        .ok();
    assert!(run.stderr.contains("nothing to compact"), "{}", run.stderr);
    assert!(run.stdout.contains("Fine."));
    assert_eq!(fake.requests().len(), 2);
    env.run("ag-prompt", &["-m", ANTHROPIC, "--compact"])
        .code(2);
}

#[test]
fn a_summarizer_input_too_long_for_its_window_is_summarized_in_slices() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), &window_of(4000));
    let id = seed(&env, 5);
    // The summarizer's first request is refused as too long; then slices, each one summary.
    fake.push(Reply::Status {
        code: 400,
        retry_after: None,
        body: json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 5000 tokens > 4000 maximum"}})
        .to_string(),
    });
    for i in 1..=12 {
        fake.push(answer("anthropic", &format!("SLICE-{i}")));
    }
    let run = env
        .run("ag-prompt", &["-s", &id, "-m", ANTHROPIC, "go on"])
        .ok();
    let reqs = fake.requests();
    let summarizing: Vec<&Recorded> = reqs
        .iter()
        .filter(|r| text_of(r).contains("handoff summary"))
        .collect();
    let k = summarizing.len() - 1;
    assert!(k >= 2, "{k} slices");
    for (i, r) in summarizing.iter().enumerate().skip(2) {
        // Each later slice reads the summary so far, never the whole history again.
        let t = text_of(r);
        assert!(t.contains("Summary of the earlier part"), "{t}");
        assert!(t.contains(&format!("SLICE-{}", i - 1)), "{t}");
        assert!(!t.contains("answer 0:"), "slice {i} re-reads the start");
        assert_valid(r, "anthropic");
    }
    let chunks = env.chunks(&id);
    let rec = &system_kind(&chunks, "compaction")[0]["data"];
    assert_eq!(rec["summary"], format!("SLICE-{k}"));
    assert!(
        run.stdout.contains(&format!("SLICE-{}", k + 1)),
        "{}",
        run.stdout
    );
}
