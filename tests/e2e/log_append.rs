//! `ag-log append` end to end: one user text or an NDJSON batch, written atomically; bad input
//! refused with a clear error and nothing half-written; the store's own failure modes (not a
//! database, too new, read-only, no home); private files; concurrent writers.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::support::{chunk, rusqlite_open, Run, TestEnv};

// ---------------------------------------------------------------------------------------------
// helpers

pub(crate) fn ndjson(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// What the store holds, as counted behind the binary's back.
#[derive(Debug, PartialEq)]
pub(crate) struct Counts {
    pub(crate) sessions: i64,
    pub(crate) chunks: i64,
    pub(crate) indexed: i64,
}

pub(crate) fn counts(env: &TestEnv) -> Counts {
    Counts {
        sessions: env.sqlite_count("SELECT COUNT(*) FROM sessions"),
        chunks: env.sqlite_count("SELECT COUNT(*) FROM chunks"),
        indexed: env.sqlite_count("SELECT COUNT(*) FROM chunks_fts"),
    }
}

/// Run `ag-log ARGS` with STDIN, expect exit CODE with an `ag-log: error:` message and empty
/// stdout, and check that neither the store nor the session's view changed.
#[track_caller]
pub(crate) fn refused(
    env: &TestEnv,
    session: &str,
    args: &[&str],
    stdin: impl AsRef<[u8]>,
    code: i32,
) -> Run {
    let before = counts(env);
    let view_before = env.chunks(session);
    let run = env.log_stdin(args, stdin).code(code);
    assert_eq!(run.stdout, "", "a refused append prints no chunks");
    assert!(
        run.stderr.starts_with("ag-log: error: "),
        "stderr: {}",
        run.stderr
    );
    assert_eq!(counts(env), before, "the store changed: {}", run.stderr);
    assert_eq!(
        env.chunks(session),
        view_before,
        "the session's view changed"
    );
    run
}

pub(crate) fn is_uuid_v7(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && b[14] == b'7'
        && s.chars()
            .enumerate()
            .all(|(i, c)| [8, 13, 18, 23].contains(&i) || c.is_ascii_hexdigit())
}

pub(crate) fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

pub(crate) fn chmod(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// `bash -c SCRIPT` in the test environment (cleared env, AG_HOME, PATH with the binaries).
pub(crate) fn bash(env: &TestEnv, script: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.env_clear();
    for (k, v) in &env.env {
        cmd.env(k, v);
    }
    cmd.current_dir(&env.cwd)
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null());
    cmd
}

/// Permission bits mean nothing to root. Probe instead of asking for the uid: a directory we
/// cannot write to, unless we are root (or have CAP_DAC_OVERRIDE).
pub(crate) fn permission_bits_are_enforced(env: &TestEnv) -> bool {
    let probe = env.dir.path().join("probe-ro");
    std::fs::create_dir(&probe).unwrap();
    chmod(&probe, 0o500);
    let enforced = std::fs::write(probe.join("x"), b"x").is_err();
    chmod(&probe, 0o700);
    std::fs::remove_dir_all(&probe).unwrap();
    enforced
}

pub(crate) fn setpriv_available() -> bool {
    Command::new("setpriv")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub(crate) fn user_version(env: &TestEnv) -> i64 {
    env.sqlite_count("PRAGMA user_version")
}

pub(crate) fn schema_sql(env: &TestEnv) -> String {
    rusqlite_open(&env.db())
        .query_row(
            "SELECT group_concat(sql, ';') FROM sqlite_master ORDER BY name",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// one user text

#[test]
fn append_text_with_new_creates_a_session_and_prints_the_stored_chunk() {
    let mut env = TestEnv::new();
    env.set("AG_FAKE_NOW_MS", "1790000000123");
    let run = env
        .log(&["append", "--new", "--title", "first", "Hi there"])
        .ok();

    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    let c = &lines[0];
    let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["id", "session", "seq", "turn", "step", "role", "type", "data", "ts"]
    );
    let session = c["session"].as_str().unwrap();
    assert!(is_uuid_v7(session), "{session}");
    assert!(is_uuid_v7(c["id"].as_str().unwrap()), "{c}");
    assert!(is_uuid_v7(c["turn"].as_str().unwrap()), "{c}");
    assert_ne!(c["id"], c["turn"]);
    assert_eq!(c["seq"], 1);
    assert_eq!(c["step"], 0);
    assert_eq!(c["role"], "user");
    assert_eq!(c["type"], "text");
    assert_eq!(c["data"], json!({"text": "Hi there"}));
    assert_eq!(c["ts"], "2026-09-21T14:13:20.123Z");

    // stderr names the new session.
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("session ") && l.ends_with(session)),
        "stderr: {}",
        run.stderr
    );

    // What was printed is what was stored.
    assert_eq!(env.chunks(session), lines);
    let ls = env.log(&["ls", "--json"]).ok().json_lines();
    assert_eq!(ls.len(), 1);
    assert_eq!(ls[0]["id"], session);
    assert_eq!(ls[0]["title"], "first");
    assert_eq!(ls[0]["chunks"], 1);
    assert_eq!(ls[0]["cwd"], env.cwd.to_string_lossy().as_ref());
}

#[test]
fn append_quiet_prints_nothing_but_still_appends() {
    let env = TestEnv::new();
    // With --new, -q prints the new session's id alone (for `id=$(ag-log append --new -q …)`).
    let run = env.log(&["append", "-q", "--new", "quietly"]).ok();
    assert_eq!(run.stderr, "");
    let ls = env.log(&["ls", "--json"]).ok().json_lines();
    assert_eq!(ls.len(), 1);
    let session = ls[0]["id"].as_str().unwrap().to_string();
    assert_eq!(run.stdout, format!("{session}\n"));

    let run = env.log(&["append", "-q", "-s", &session, "again"]).ok();
    assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("", ""));
    let run = env
        .log_stdin(
            &["append", "-q", "-s", &session],
            ndjson(&[chunk::assistant("hi")]),
        )
        .ok();
    assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("", ""));

    let texts: Vec<Value> = env
        .chunks(&session)
        .iter()
        .map(|c| c["data"]["text"].clone())
        .collect();
    assert_eq!(texts, [json!("quietly"), json!("again"), json!("hi")]);
}

#[test]
fn append_dash_reads_the_message_from_stdin() {
    let env = TestEnv::new();
    let run = env
        .log_stdin(&["append", "--new", "-"], "line one\nline two\n")
        .ok();
    let c = &run.json_lines()[0];
    assert_eq!(c["role"], "user");
    assert_eq!(c["type"], "text");
    // The trailing newline of the input is not part of the message; inner ones are.
    assert_eq!(c["data"]["text"], "line one\nline two");
    let session = c["session"].as_str().unwrap().to_string();

    let run = env
        .log_stdin(&["append", "-s", &session, "-"], "second\n")
        .ok();
    let c = &run.json_lines()[0];
    assert_eq!(
        (c["seq"].as_i64(), c["data"]["text"].as_str()),
        (Some(2), Some("second"))
    );

    // A blank message on stdin is a usage error and appends nothing.
    let run = refused(&env, &session, &["append", "-s", &session, "-"], "  \n", 2);
    assert!(run.stderr.contains("empty"), "{}", run.stderr);
}

#[test]
fn append_to_a_session_continues_its_seq() {
    let env = TestEnv::new();
    let s = env.new_session("seqs", "one");
    let prefix = &s[..8];
    let two = env.log(&["append", "-s", &s, "two"]).ok().json_lines();
    let three = env
        .log(&["append", "-s", prefix, "three"])
        .ok()
        .json_lines();
    let four = env.log(&["append", "-s", "last", "four"]).ok().json_lines();
    let batch = env.append(&s, &[chunk::assistant("five"), chunk::assistant("six")]);
    let seqs: Vec<i64> = [two, three, four, batch]
        .concat()
        .iter()
        .map(|c| c["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [2, 3, 4, 5, 6]);
    let view: Vec<i64> = env
        .chunks(&s)
        .iter()
        .map(|c| c["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(view, [1, 2, 3, 4, 5, 6]);
    // Every text append is its own new turn.
    let turns: BTreeSet<String> = env.chunks(&s)[..4]
        .iter()
        .map(|c| c["turn"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(turns.len(), 4);
}

// ---------------------------------------------------------------------------------------------
// NDJSON batches

#[test]
fn append_ndjson_batch_assigns_ids_seqs_and_one_new_turn_per_invocation() {
    let env = TestEnv::new();
    let s = env.new_session("batch", "start");
    let first_turn = env.chunks(&s)[0]["turn"].as_str().unwrap().to_string();

    let mut call = chunk::call("c1", "glob", json!({"pattern": "*.rs"}));
    call["step"] = 1.into();
    let explicit = chunk::step(chunk::result("c1", "glob", "main.rs"), "my-turn", 4);
    let a = env.append(&s, &[chunk::assistant("a1"), call, explicit]);
    assert_eq!(a.len(), 3);
    for (c, seq) in a.iter().zip(2..) {
        assert_eq!(c["seq"], seq, "{c}");
        assert_eq!(c["session"], s.as_str());
        assert!(is_uuid_v7(c["id"].as_str().unwrap()), "{c}");
        assert!(c["ts"].as_str().unwrap().ends_with('Z'), "{c}");
    }
    let ids: BTreeSet<&str> = a.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3, "ids are distinct");
    // No turn: both share one new turn; a missing step is 0; explicit turn and step are kept.
    let batch_turn = a[0]["turn"].as_str().unwrap();
    assert!(is_uuid_v7(batch_turn));
    assert_ne!(batch_turn, first_turn);
    assert_eq!(a[1]["turn"], batch_turn);
    assert_eq!(
        (a[0]["step"].as_i64(), a[1]["step"].as_i64()),
        (Some(0), Some(1))
    );
    assert_eq!(
        (a[2]["turn"].as_str(), a[2]["step"].as_i64()),
        (Some("my-turn"), Some(4))
    );
    assert_eq!(
        a[1]["data"],
        json!({"call_id": "c1", "name": "glob", "arguments": {"pattern": "*.rs"}})
    );
    assert_eq!(a[2]["role"], "tool");
    assert_eq!(a[2]["type"], "tool_result");

    // The next invocation gets a turn of its own.
    let b = env.append(&s, &[chunk::assistant("b1"), chunk::assistant("b2")]);
    assert_eq!(b[0]["seq"], 5);
    assert_eq!(b[0]["turn"], b[1]["turn"]);
    assert_ne!(b[0]["turn"], batch_turn);
    assert_ne!(b[0]["turn"], first_turn.as_str());

    // What was printed is what was stored, in order.
    let view = env.chunks(&s);
    assert_eq!(view.len(), 6);
    assert_eq!(&view[1..], [a, b].concat().as_slice());
}

#[test]
fn append_keeps_an_explicit_id_seq_and_ts() {
    let env = TestEnv::new();
    let s = env.new_session("explicit", "start");
    let mut c = chunk::assistant("given");
    c["id"] = "my-chunk-id".into();
    c["session"] = s.clone().into();
    c["seq"] = 2.into();
    c["ts"] = "2025-01-02T03:04:05.678Z".into();
    let mut d = chunk::assistant("unix ms");
    d["seq"] = 3.into();
    d["ts"] = 1735787045678i64.into();
    let out = env.append(&s, &[c, d]);
    assert_eq!(out[0]["id"], "my-chunk-id");
    assert_eq!(out[0]["seq"], 2);
    assert_eq!(out[0]["ts"], "2025-01-02T03:04:05.678Z");
    assert_eq!(out[1]["seq"], 3);
    assert_eq!(out[1]["ts"], "2025-01-02T03:04:05.678Z");
    assert_eq!(&env.chunks(&s)[1..], out.as_slice());
}

// ---------------------------------------------------------------------------------------------
// bad input: a clear error naming what and where, and nothing written

#[test]
fn an_unknown_session_is_not_found_and_nothing_is_created() {
    let env = TestEnv::new();
    let s = env.new_session("known", "start");
    let missing = "0000aaaa-0000-7000-8000-000000000000";
    let run = refused(&env, &s, &["append", "-s", missing, "hello?"], "", 4);
    assert!(run.stderr.contains(missing), "{}", run.stderr);
    let run = refused(
        &env,
        &s,
        &["append", "-s", "ffff"],
        ndjson(&[chunk::assistant("x")]),
        4,
    );
    assert!(
        run.stderr.contains("no session matches \"ffff\""),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint:"), "{}", run.stderr);
    // Not a hex prefix at all.
    refused(&env, &s, &["append", "-s", "nonsense", "hello?"], "", 4);
    assert_eq!(env.log(&["ls", "--json"]).ok().json_lines().len(), 1);
}

#[test]
fn an_ambiguous_prefix_is_a_usage_error_listing_the_candidates() {
    let env = TestEnv::new();
    let a = env.new_session("alpha", "a");
    let b = env.new_session("beta", "b");
    // uuid v7 ids start with the timestamp: two made back to back share a long prefix.
    let common: String = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect();
    assert!(!common.is_empty(), "{a} and {b} share no prefix");
    let run = refused(&env, &a, &["append", "-s", &common, "which one?"], "", 2);
    assert!(run.stderr.contains("matches 2 sessions"), "{}", run.stderr);
    let handles: Vec<String> = env
        .log(&["ls", "--json"])
        .ok()
        .json_lines()
        .iter()
        .map(|r| r["handle"].as_str().unwrap().to_string())
        .collect();
    assert!(
        handles.iter().all(|h| run.stderr.contains(h.as_str())),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("alpha") && run.stderr.contains("beta"),
        "{}",
        run.stderr
    );
    // Reading is refused the same way.
    env.log(&["cat", &common]).code(2);
    // A full id is never ambiguous.
    env.log(&["append", "-s", &a, "this one"]).ok();
}
