//! `ag-log append` refusals end to end: every kind of bad batch is refused with a clear error
//! naming the line and field, and nothing of it is written.

use serde_json::json;

use crate::support::{chunk, TestEnv};

// ---------------------------------------------------------------------------------------------
// helpers
use crate::log_append::*;

#[test]
fn malformed_json_on_the_last_line_appends_none_of_the_batch() {
    let env = TestEnv::new();
    let s = env.new_session("bad", "start");
    let input = format!(
        "{}{{\"role\": \"assistant\", \"type\": \n",
        ndjson(&[chunk::assistant("one"), chunk::assistant("two")])
    );
    let run = refused(&env, &s, &["append", "-s", &s], input, 1);
    assert!(run.stderr.contains("line 3"), "{}", run.stderr);
    assert!(run.stderr.contains("malformed JSON"), "{}", run.stderr);
    assert!(
        run.stderr.contains("nothing was appended"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_line_missing_role_is_refused_naming_line_and_field() {
    let env = TestEnv::new();
    let s = env.new_session("bad", "start");
    let input = ndjson(&[
        chunk::assistant("ok"),
        json!({"type": "text", "data": {"text": "who?"}}),
    ]);
    let run = refused(&env, &s, &["append", "-s", &s], input, 1);
    assert!(
        run.stderr.contains("stdin line 2: field `role`: missing"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unknown_chunk_type_is_refused() {
    let env = TestEnv::new();
    let s = env.new_session("bad", "start");
    let input = ndjson(&[json!({"role": "assistant", "type": "blob", "data": {}})]);
    let run = refused(&env, &s, &["append", "-s", &s], input, 1);
    assert!(
        run.stderr.contains("line 1: field `type`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("\"blob\""), "{}", run.stderr);
}

#[test]
fn a_tool_result_whose_data_is_not_an_object_is_refused() {
    let env = TestEnv::new();
    let s = env.new_session("bad", "start");
    let input = ndjson(&[
        chunk::call("c1", "read", json!({})),
        json!({"role": "tool", "type": "tool_result", "data": "file contents"}),
    ]);
    let run = refused(&env, &s, &["append", "-s", &s], input, 1);
    assert!(
        run.stderr.contains("line 2: field `data`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("JSON object"), "{}", run.stderr);
}

#[test]
fn a_seq_given_as_a_string_is_refused() {
    let env = TestEnv::new();
    let s = env.new_session("bad", "start");
    let mut c = chunk::assistant("x");
    c["seq"] = "2".into();
    let run = refused(&env, &s, &["append", "-s", &s], ndjson(&[c]), 1);
    assert!(
        run.stderr
            .contains("line 1: field `seq`: expected an integer"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_seq_that_is_not_the_next_one_rolls_back_the_whole_batch() {
    let env = TestEnv::new();
    let s = env.new_session("bad", "start");
    // Line 1 is fine (seq 2 is next) and passes decoding; line 2 claims seq 7: the store refuses
    // it mid-transaction, and line 1 must not survive.
    let mut ok = chunk::assistant("fine");
    ok["seq"] = 2.into();
    let mut bad = chunk::assistant("skips ahead");
    bad["seq"] = 7.into();
    let run = refused(&env, &s, &["append", "-s", &s], ndjson(&[ok, bad]), 1);
    assert!(
        run.stderr.contains("stdin line 2: field `seq`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("(3)"),
        "names the expected seq: {}",
        run.stderr
    );
}

#[test]
fn a_chunk_id_that_already_exists_rolls_back_the_whole_batch() {
    let env = TestEnv::new();
    let s = env.new_session("bad", "start");
    let existing = env.chunks(&s)[0]["id"].as_str().unwrap().to_string();
    let mut dup = chunk::assistant("dup");
    dup["id"] = existing.clone().into();
    let run = refused(
        &env,
        &s,
        &["append", "-s", &s],
        ndjson(&[chunk::assistant("fine"), dup]),
        1,
    );
    assert!(
        run.stderr.contains("stdin line 2: field `id`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&existing), "{}", run.stderr);
}

#[test]
fn a_chunk_naming_another_session_is_refused() {
    let env = TestEnv::new();
    let s = env.new_session("target", "start");
    let other = env.new_session("other", "start");
    let mut c = chunk::assistant("misdirected");
    c["session"] = other.clone().into();
    let run = refused(&env, &s, &["append", "-s", &s], ndjson(&[c]), 1);
    assert!(run.stderr.contains("field `session`"), "{}", run.stderr);
    assert_eq!(env.chunks(&other).len(), 1);
}

#[test]
fn empty_stdin_is_a_usage_error() {
    let env = TestEnv::new();
    let s = env.new_session("empty", "start");
    let run = refused(&env, &s, &["append", "-s", &s], "", 2);
    assert!(run.stderr.contains("no chunks"), "{}", run.stderr);
    // Blank lines are not chunks either.
    let run = refused(&env, &s, &["append", "-s", &s], "\n  \n\n", 2);
    assert!(run.stderr.contains("no chunks"), "{}", run.stderr);
}

#[test]
fn a_non_utf8_byte_is_refused_naming_the_line() {
    let env = TestEnv::new();
    let s = env.new_session("bytes", "start");
    let mut input = ndjson(&[chunk::assistant("fine")]).into_bytes();
    input.extend_from_slice(
        b"{\"role\":\"assistant\",\"type\":\"text\",\"data\":{\"text\":\"caf\xff\"}}\n",
    );
    let run = refused(&env, &s, &["append", "-s", &s], input, 1);
    assert!(run.stderr.contains("stdin line 2"), "{}", run.stderr);
    assert!(run.stderr.contains("UTF-8"), "{}", run.stderr);
}

#[test]
fn new_with_a_bad_batch_creates_no_session() {
    let env = TestEnv::new();
    // A line that does not decode.
    let run = env
        .log_stdin(&["append", "--new"], "{\"role\":\"user\"}\n")
        .code(1);
    assert!(run.stderr.contains("line 1"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    // Lines that decode but that the store refuses: the session row goes with them.
    let mut late = chunk::assistant("second");
    late["seq"] = 5.into();
    let run = env
        .log_stdin(
            &["append", "--new", "--title", "doomed"],
            ndjson(&[chunk::user("first"), late]),
        )
        .code(1);
    assert!(
        run.stderr.contains("stdin line 2: field `seq`"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.lines().any(|l| l.starts_with("session ")),
        "no session was announced: {}",
        run.stderr
    );

    let ls = env.log(&["ls", "--json"]).ok();
    assert_eq!(ls.stdout, "", "no session left behind");
    assert_eq!(
        counts(&env),
        Counts {
            sessions: 0,
            chunks: 0,
            indexed: 0
        }
    );
}

/// A large batch: `n` lines of text, each ~120 bytes, with blank lines among the first ones, so
/// line numbers must count them.
fn big_batch(n: usize) -> Vec<String> {
    let mut lines: Vec<String> = (0..n)
        .map(|i| chunk::assistant(&format!("line {i}: {}", "x".repeat(100))).to_string())
        .collect();
    lines.insert(10, String::new());
    lines.insert(20, "   ".into());
    lines
}

fn joined(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn a_large_batch_names_its_first_bad_line() {
    let env = TestEnv::new();
    let s = env.new_session("big", "start");
    let mut lines = big_batch(12_000);
    // A bad line late in the batch is named by its own line number.
    lines[11_000] = "{\"role\": \"assistant\"".into();
    let run = refused(&env, &s, &["append", "-s", &s], joined(&lines), 1);
    assert!(run.stderr.contains("line 11001"), "{}", run.stderr);
    assert!(run.stderr.contains("malformed JSON"), "{}", run.stderr);
    // With another early on, the early one is reported.
    lines[100] = "{\"type\": \"text\", \"data\": {\"text\": \"who?\"}}".into();
    let run = refused(&env, &s, &["append", "-s", &s], joined(&lines), 1);
    assert!(
        run.stderr.contains("stdin line 101: field `role`: missing"),
        "{}",
        run.stderr
    );
    // A line the store refuses late in the batch names its line too.
    let mut lines = big_batch(12_000);
    let mut late = chunk::assistant("skips ahead");
    late["seq"] = 99_999.into();
    lines[9_000] = late.to_string();
    let run = refused(&env, &s, &["append", "-s", &s], joined(&lines), 1);
    assert!(
        run.stderr.contains("stdin line 9001: field `seq`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_large_batch_is_appended_whole_and_in_order() {
    let env = TestEnv::new();
    let s = env.new_session("big", "start");
    let lines = big_batch(12_000);
    env.log_stdin(&["append", "-q", "-s", &s], joined(&lines))
        .code(0);
    let chunks = env.chunks(&s);
    assert_eq!(
        chunks.len(),
        12_001,
        "the first chunk and the 12,000 appended"
    );
    for (i, c) in chunks[1..].iter().enumerate() {
        let text = c["data"]["text"].as_str().unwrap_or("");
        assert!(
            text.starts_with(&format!("line {i}: ")),
            "chunk {i}: {text}"
        );
        assert_eq!(c["seq"], i as i64 + 2, "chunk {i}");
    }
}

#[test]
fn a_batch_spooled_to_disk_is_appended_whole_or_not_at_all() {
    let env = TestEnv::new();
    let s = env.new_session("spooled", "start");
    // Over 32 MiB: spooled to a file in the store's directory, not held in memory.
    let big = "y".repeat(100_000);
    let mut lines: Vec<String> = (0..340)
        .map(|i| chunk::assistant(&format!("{i} {big}")).to_string())
        .collect();
    assert!(
        joined(&lines).len() > 32 << 20,
        "large enough to be spooled"
    );
    lines.push("{\"role\": \"assistant\", \"type\": \"text\"}".into());
    let run = refused(&env, &s, &["append", "-s", &s], joined(&lines), 1);
    assert!(
        run.stderr.contains("stdin line 341: field `data`"),
        "{}",
        run.stderr
    );
    lines.pop();
    env.log_stdin(&["append", "-q", "-s", &s], joined(&lines))
        .code(0);
    let chunks = env.chunks(&s);
    assert_eq!(chunks.len(), 341, "the first chunk and the 340 appended");
    assert!(chunks[340]["data"]["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("339 ")));
    let spools: Vec<_> = std::fs::read_dir(env.db().parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".spool"))
        .collect();
    assert!(spools.is_empty(), "the spool file is gone: {spools:?}");
}
