//! Reading the log end to end: `cat` (text, NDJSON, Markdown, paging), `tail` (and `-f`), `ls`,
//! `show`, `fold`, `ingest`, `search`, `title`, `rm`, and a closed pipe.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::{chunk, TestEnv};

// ---------------------------------------------------------------------------------------------
// fixtures

fn ndjson(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// A two-turn conversation:
///
/// ```text
/// turn t1: #1 user "list the files"          step 0
///          #2 assistant "Let me look."        step 1
///          #3 → glob {"pattern":"*.rs"}      step 1
///          #4 ← glob "main.rs\nlib.rs"        step 1
///          #5 assistant "There are two…"      step 2
///          #6 turn_end in 10 out 5            step 2
/// turn t2: #7 user "and the tests?"           step 0
///          #8 assistant "None yet."           step 1
///          #9 turn_end in 20 out 7            step 1
/// ```
struct Conversation {
    s: String,
    t1: String,
    t2: String,
}

fn conversation(env: &TestEnv) -> Conversation {
    let s = env.new_session("fold demo", "list the files");
    let t1 = env.chunks(&s)[0]["turn"].as_str().unwrap().to_string();
    env.append(
        &s,
        &[
            chunk::step(chunk::assistant("Let me look."), &t1, 1),
            chunk::step(
                chunk::call("c1", "glob", json!({"pattern": "*.rs"})),
                &t1,
                1,
            ),
            chunk::step(chunk::result("c1", "glob", "main.rs\nlib.rs"), &t1, 1),
            chunk::step(chunk::assistant("There are two Rust files."), &t1, 2),
            chunk::step(chunk::turn_end(10, 5), &t1, 2),
        ],
    );
    let t2 = env
        .log(&["append", "-s", &s, "and the tests?"])
        .ok()
        .json_lines()[0]["turn"]
        .as_str()
        .unwrap()
        .to_string();
    env.append(
        &s,
        &[
            chunk::step(chunk::assistant("None yet."), &t2, 1),
            chunk::step(chunk::turn_end(20, 7), &t2, 1),
        ],
    );
    Conversation { s, t1, t2 }
}

fn seqs(lines: &[Value]) -> Vec<i64> {
    lines.iter().map(|c| c["seq"].as_i64().unwrap()).collect()
}

fn cat_seqs(env: &TestEnv, args: &[&str]) -> Vec<i64> {
    let mut all = vec!["cat", "--json"];
    all.extend_from_slice(args);
    seqs(&env.log(&all).ok().json_lines())
}

/// `chunk` without what the store assigns, ready to be appended elsewhere.
fn portable(c: &Value) -> Value {
    let mut c = c.clone();
    for k in ["id", "session", "seq", "ts"] {
        c.as_object_mut().unwrap().remove(k);
    }
    c
}

/// Kills the child when the test ends, pass or fail.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bash(env: &TestEnv, script: &str) -> crate::support::Run {
    let mut cmd = Command::new("bash");
    cmd.env_clear();
    for (k, v) in &env.env {
        cmd.env(k, v);
    }
    let out = cmd
        .current_dir(&env.cwd)
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    crate::support::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Position of each needle in `hay`, asserting all are present and in this order.
#[track_caller]
fn assert_in_order(hay: &str, needles: &[&str]) {
    let mut from = 0;
    for n in needles {
        match hay[from..].find(n) {
            Some(i) => from += i + n.len(),
            None => panic!("{n:?} missing (or out of order) in:\n{hay}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// cat

#[test]
fn cat_shows_a_readable_transcript_by_default() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let run = env.log(&["cat", &c.s]).ok();
    assert!(
        !run.stdout.trim_start().starts_with('{'),
        "not JSON by default:\n{}",
        run.stdout
    );
    assert_in_order(
        &run.stdout,
        &[
            "user: list the files",
            "assistant: Let me look.",
            "→ glob",
            "*.rs",
            "← glob",
            "main.rs",
            "assistant: There are two Rust files.",
            "user: and the tests?",
            "assistant: None yet.",
        ],
    );
    // `last` is the default session.
    assert_eq!(env.log(&["cat"]).ok().stdout, run.stdout);
}

#[test]
fn cat_json_is_ndjson_that_appends_back_into_an_equal_session() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let original = env.chunks(&c.s);
    assert_eq!(seqs(&original), (1..=9).collect::<Vec<_>>());
    for line in &original {
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["id", "session", "seq", "turn", "step", "role", "type", "data", "ts"]
        );
        assert_eq!(line["session"], c.s.as_str());
    }
    assert_eq!(
        env.log(&["cat", &c.s, "--format", "json"])
            .ok()
            .json_lines(),
        original
    );

    // Feed it back (without what the store assigns) into a new session.
    let input = ndjson(&original.iter().map(portable).collect::<Vec<_>>());
    let copy = env
        .log_stdin(&["append", "--new", "--title", "copy"], input)
        .ok()
        .json_lines();
    let s2 = copy[0]["session"].as_str().unwrap().to_string();
    assert_ne!(s2, c.s);
    let reread = env.chunks(&s2);
    assert_eq!(reread, copy);
    assert_eq!(seqs(&reread), seqs(&original));
    assert_eq!(
        reread.iter().map(portable).collect::<Vec<_>>(),
        original.iter().map(portable).collect::<Vec<_>>()
    );
    // And the copy folds to the same request.
    assert_eq!(
        env.log(&["fold", &s2]).ok().stdout,
        env.log(&["fold", &c.s]).ok().stdout
    );
}

#[test]
fn cat_markdown_has_role_headings_and_fenced_tool_results() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let md = env.log(&["cat", &c.s, "--format", "md"]).ok().stdout;
    assert_in_order(
        &md,
        &[
            "## user\n\nlist the files",
            "## assistant\n\nLet me look.",
            "**tool call** `glob`",
            "```json\n{\n  \"pattern\": \"*.rs\"\n}\n```",
            "**tool result** `glob`",
            "```\nmain.rs\nlib.rs\n```",
            "## assistant\n\nThere are two Rust files.",
            "## user\n\nand the tests?",
        ],
    );
}

#[test]
fn cat_limit_gives_the_newest_chunks() {
    let env = TestEnv::new();
    let c = conversation(&env);
    assert_eq!(cat_seqs(&env, &[&c.s, "--limit", "3"]), [7, 8, 9]);
    assert_eq!(cat_seqs(&env, &[&c.s, "--limit", "1"]), [9]);
    assert_eq!(
        cat_seqs(&env, &[&c.s, "--limit", "100"]),
        (1..=9).collect::<Vec<_>>()
    );
    assert_eq!(cat_seqs(&env, &[&c.s, "--limit", "0"]), Vec::<i64>::new());
    // Text output pages the same way.
    let text = env.log(&["cat", &c.s, "--limit", "1"]).ok().stdout;
    assert!(
        text.contains("turn end") && !text.contains("None yet."),
        "{text}"
    );
}

#[test]
fn cat_before_and_after_bound_by_seq() {
    let env = TestEnv::new();
    let c = conversation(&env);
    assert_eq!(cat_seqs(&env, &[&c.s, "--after", "6"]), [7, 8, 9]);
    assert_eq!(cat_seqs(&env, &[&c.s, "--before", "3"]), [1, 2]);
    assert_eq!(
        cat_seqs(&env, &[&c.s, "--after", "2", "--before", "6"]),
        [3, 4, 5]
    );
    assert_eq!(cat_seqs(&env, &[&c.s, "--after", "9"]), Vec::<i64>::new());
    assert_eq!(cat_seqs(&env, &[&c.s, "--before", "1"]), Vec::<i64>::new());
    // --limit keeps the newest N of what the bounds allow.
    assert_eq!(
        cat_seqs(&env, &[&c.s, "--limit", "2", "--before", "6"]),
        [4, 5]
    );
    assert_eq!(
        cat_seqs(&env, &[&c.s, "--limit", "5", "--after", "6"]),
        [7, 8, 9]
    );
}

#[test]
fn cat_turn_shows_only_that_turn() {
    let env = TestEnv::new();
    let c = conversation(&env);
    assert_eq!(cat_seqs(&env, &[&c.s, "--turn", &c.t1]), [1, 2, 3, 4, 5, 6]);
    assert_eq!(cat_seqs(&env, &[&c.s, "--turn", &c.t2]), [7, 8, 9]);
    assert_eq!(
        cat_seqs(&env, &[&c.s, "--turn", &c.t1, "--limit", "2"]),
        [5, 6]
    );
    assert_eq!(
        cat_seqs(&env, &[&c.s, "--turn", &c.t1, "--after", "4"]),
        [5, 6]
    );
    let text = env.log(&["cat", &c.s, "--turn", &c.t2]).ok().stdout;
    assert!(
        text.contains("and the tests?") && !text.contains("list the files"),
        "{text}"
    );
}

#[test]
fn cat_of_an_unknown_session_is_not_found() {
    let env = TestEnv::new();
    conversation(&env);
    let run = env.log(&["cat", "abcdef12"]).code(4);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("no session matches \"abcdef12\""),
        "{}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// tail

#[test]
fn tail_prints_the_newest_n() {
    let env = TestEnv::new();
    let c = conversation(&env);
    assert_eq!(
        seqs(
            &env.log(&["tail", "-n", "2", "--json", &c.s])
                .ok()
                .json_lines()
        ),
        [8, 9]
    );
    // The default is 10: the whole 9-chunk session.
    assert_eq!(
        seqs(&env.log(&["tail", "--json", &c.s]).ok().json_lines()),
        (1..=9).collect::<Vec<_>>()
    );
    let text = env.log(&["tail", "-n", "2", &c.s]).ok().stdout;
    assert!(
        text.contains("None yet.") && !text.contains("list the files"),
        "{text}"
    );
}

#[test]
fn tail_follow_prints_chunk_seal_and_turn_done_events_as_chunks_arrive() {
    let env = TestEnv::new();
    let s = env.new_session("live", "hello");
    let turn = env.chunks(&s)[0]["turn"].as_str().unwrap().to_string();
    let mut child = env
        .command("ag-log")
        .args(["tail", "-f", "--json", "-n", "1", &s])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _guard = KillOnDrop(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let next = || -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .expect("tail -f printed nothing before the deadline");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
    };

    // The newest existing chunk first: once it is out, the follower knows where it stands.
    let ev = next();
    assert_eq!(ev["type"], "chunk-seal", "{ev}");
    assert_eq!(ev["chunk"]["seq"], 1);
    assert_eq!(ev["chunk"]["data"]["text"], "hello");

    // Another process appends: each chunk arrives as a seal event.
    env.append(
        &s,
        &[chunk::step(chunk::assistant("streamed reply"), &turn, 1)],
    );
    let ev = next();
    assert_eq!(ev["type"], "chunk-seal", "{ev}");
    assert_eq!(ev["chunk"]["seq"], 2);
    assert_eq!(ev["chunk"]["session"], s.as_str());
    assert_eq!(ev["chunk"]["data"]["text"], "streamed reply");

    env.append(&s, &[chunk::step(chunk::turn_end(3, 4), &turn, 1)]);
    let ev = next();
    assert_eq!(ev["type"], "chunk-seal", "{ev}");
    assert_eq!(ev["chunk"]["seq"], 3);
    assert_eq!(ev["chunk"]["data"]["kind"], "turn_end");
    let ev = next();
    assert_eq!(ev["type"], "turn-done", "{ev}");
    assert_eq!(ev["turn"], turn.as_str());
    assert_eq!(ev["stop_reason"], "end_turn");
    assert_eq!(ev["usage"]["input"], 3);
    assert_eq!(ev["usage"]["output"], 4);

    // Nothing else (no repeats) while nothing is written.
    assert!(
        rx.recv_timeout(Duration::from_millis(700)).is_err(),
        "unexpected extra event"
    );
}

// ---------------------------------------------------------------------------------------------
// ls, show, title

#[test]
fn ls_lists_sessions_as_a_table_and_as_json() {
    let env = TestEnv::new();
    // An empty store lists nothing on stdout.
    assert_eq!(env.log(&["ls", "--json"]).ok().stdout, "");
    let empty = env.log(&["ls"]).ok();
    assert_eq!(empty.stdout, "");
    assert!(empty.stderr.contains("no sessions"), "{}", empty.stderr);

    let c = conversation(&env);
    let other = env.new_session("second one", "hi");
    let table = env.log(&["ls"]).ok().stdout;
    let header = table.lines().next().unwrap();
    let cols: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(cols, ["ID", "TITLE", "KIND", "CHUNKS", "STATUS", "UPDATED"]);
    let row = |title: &str| -> Vec<&str> {
        let line = table
            .lines()
            .find(|l| l.contains(title))
            .unwrap_or_else(|| panic!("{title} missing:\n{table}"));
        line.split_whitespace().collect()
    };
    let json = env.log(&["ls", "--json"]).ok().json_lines();
    let r = row("fold demo");
    assert_eq!(
        json[1]["handle"], r[0],
        "the ID column shows the handle: {r:?}"
    );
    assert_eq!(&r[1..6], ["fold", "demo", "chat", "9", "idle"]);
    assert_eq!(r.last(), Some(&"ago"), "{r:?}");
    let r = row("second one");
    assert_eq!(json[0]["handle"], r[0], "{r:?}");
    assert_eq!(&r[1..6], ["second", "one", "chat", "1", "idle"]);

    let json = env.log(&["ls", "--json"]).ok().json_lines();
    assert_eq!(json.len(), 2);
    // Most recently updated first.
    assert_eq!(json[0]["id"], other.as_str());
    assert_eq!(json[1]["id"], c.s.as_str());
    assert_eq!(json[1]["title"], "fold demo");
    assert_eq!(json[1]["kind"], "chat");
    assert_eq!(json[1]["chunks"], 9);
    assert_eq!(json[1]["status"], "idle");
    assert_eq!(json[0]["chunks"], 1);
    assert_eq!(
        env.log(&["ls", "--json", "--limit", "1"])
            .ok()
            .json_lines()
            .len(),
        1
    );
}

#[test]
fn ls_shows_handles_usable_as_references() {
    // uuid v7 ids made within about a minute of each other share their first 8 hex digits;
    // the table shows each session's short random handle instead, which always resolves.
    let env = TestEnv::new();
    let a = env.new_session("first", "a");
    let b = env.new_session("second", "b");
    let table = env.log(&["ls"]).ok().stdout;
    for (id, title) in [(&a, "first"), (&b, "second")] {
        let line = table
            .lines()
            .find(|l| l.contains(title))
            .unwrap_or_else(|| panic!("{title} missing:\n{table}"));
        let shown = line.split_whitespace().next().unwrap();
        assert_eq!(shown.len(), 6, "{shown:?} is not a handle");
        let run = env.log(&["cat", shown, "--json"]);
        assert_eq!(
            run.code, 0,
            "the ID `ls` shows for {title:?} ({shown}) does not resolve:\n{}\n{table}",
            run.stderr
        );
        assert_eq!(run.json_lines()[0]["session"], id.as_str());
    }
}

#[test]
fn show_summarises_counts_by_type_and_summed_usage() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let text = env.log(&["show", &c.s]).ok().stdout;
    let has_line = |words: &[&str]| {
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == words)
    };
    assert!(has_line(&["session", &c.s]), "{text}");
    assert!(has_line(&["title", "fold", "demo"]), "{text}");
    assert!(has_line(&["chunks", "9"]), "{text}");
    assert!(has_line(&["assistant", "text", "3"]), "{text}");
    assert!(has_line(&["assistant", "tool_call", "1"]), "{text}");
    assert!(has_line(&["tool", "tool_result", "1"]), "{text}");
    assert!(has_line(&["user", "text", "2"]), "{text}");
    assert!(has_line(&["system", "system", "2"]), "{text}");
    assert!(text.contains("2 turns"), "{text}");
    assert!(text.contains("input 30"), "{text}");
    assert!(text.contains("output 12"), "{text}");

    let v = env.log(&["show", &c.s, "--json"]).ok().json();
    assert_eq!(v["id"], c.s.as_str());
    assert_eq!(v["title"], "fold demo");
    assert_eq!(v["chunks"], 9);
    assert_eq!(
        v["usage"],
        json!({"turns": 2, "input": 30, "output": 12, "cache_read": 0, "cache_write": 0})
    );
    let count = |role: &str, ty: &str| {
        v["counts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["role"] == role && c["type"] == ty)
            .map(|c| c["count"].clone())
    };
    assert_eq!(count("assistant", "text"), Some(json!(3)));
    assert_eq!(count("tool", "tool_result"), Some(json!(1)));
    assert_eq!(count("peer", "peer"), None);
}

#[test]
fn title_sets_the_title_that_ls_and_show_report() {
    let env = TestEnv::new();
    let s = env.new_session("old name", "hi");
    let run = env.log(&["title", &s[..8], "new name"]).ok();
    assert!(run.stderr.contains("new name"), "{}", run.stderr);
    assert_eq!(
        env.log(&["ls", "--json"]).ok().json_lines()[0]["title"],
        "new name"
    );
    assert_eq!(
        env.log(&["show", &s, "--json"]).ok().json()["title"],
        "new name"
    );
    assert!(env
        .log(&["show", &s])
        .ok()
        .stdout
        .contains("title     new name"));
    env.log(&["title", "abcdef99", "x"]).code(4);
}

// ---------------------------------------------------------------------------------------------
// fold

#[test]
fn fold_anthropic_alternates_roles_and_pairs_tool_use_with_tool_result() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let body = env
        .log(&["fold", &c.s, "--dialect", "anthropic"])
        .ok()
        .json();
    assert!(
        body.get("system").is_none(),
        "no system prompt unless asked"
    );
    assert!(body.get("model").is_none(), "no model unless known");
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(
        msgs[0]["content"][0],
        json!({"type": "text", "text": "list the files"})
    );
    assert_eq!(
        msgs[1]["content"][0],
        json!({"type": "text", "text": "Let me look."})
    );
    assert_eq!(
        msgs[1]["content"][1],
        json!({"type": "tool_use", "id": "c1", "name": "glob", "input": {"pattern": "*.rs"}})
    );
    let result = &msgs[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "c1");
    assert_eq!(result["content"], "main.rs\nlib.rs");
    assert_eq!(msgs[3]["content"][0]["text"], "There are two Rust files.");
    assert_eq!(msgs[4]["content"][0]["text"], "and the tests?");
    assert_eq!(msgs[5]["content"][0]["text"], "None yet.");
    // turn_end records are display-only.
    assert!(!body.to_string().contains("turn_end"));
    // The default dialect is anthropic.
    assert_eq!(env.log(&["fold", &c.s]).ok().json(), body);
}

#[test]
fn fold_openai_gives_each_tool_result_a_tool_message() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let body = env.log(&["fold", &c.s, "--dialect", "openai"]).ok().json();
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(msgs[0]["content"], "list the files");
    let call = &msgs[1]["tool_calls"][0];
    assert_eq!(call["id"], "c1");
    assert_eq!(call["function"]["name"], "glob");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"pattern": "*.rs"}));
    assert_eq!(
        msgs[2],
        json!({"role": "tool", "tool_call_id": "c1", "content": "main.rs\nlib.rs"})
    );
    assert_eq!(msgs[5]["content"], "None yet.");
}

#[test]
fn fold_takes_a_system_prompt_as_text_or_file_and_a_model() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let body = env
        .log(&["fold", &c.s, "--system", "Be terse.", "--model", "claude-x"])
        .ok()
        .json();
    assert_eq!(body["system"][0]["text"], "Be terse.");
    assert_eq!(body["model"], "claude-x");
    assert_eq!(body["messages"][0]["role"], "user");

    let prompt = "You are a careful assistant.\nAnswer briefly.\n";
    env.write_file("prompts/system.md", prompt);
    let body = env
        .log(&["fold", &c.s, "--system", "@prompts/system.md"])
        .ok()
        .json();
    assert_eq!(body["system"][0]["text"], prompt);

    let body = env
        .log(&[
            "fold",
            &c.s,
            "--dialect",
            "openai",
            "--system",
            "@prompts/system.md",
            "--model",
            "gpt-x",
        ])
        .ok()
        .json();
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": prompt})
    );
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["model"], "gpt-x");

    let run = env.log(&["fold", &c.s, "--system", "@missing.md"]).code(1);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("missing.md"),
        "names the file: {}",
        run.stderr
    );
}

#[test]
fn fold_with_an_unknown_dialect_is_a_usage_error() {
    let env = TestEnv::new();
    let c = conversation(&env);
    let run = env.log(&["fold", &c.s, "--dialect", "gemini"]).code(2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("gemini"), "{}", run.stderr);
    assert!(
        run.stderr.contains("anthropic") && run.stderr.contains("openai"),
        "lists the choices: {}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// ingest

const ANTHROPIC_STREAM: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":42,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"check."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"is\", \"days\": 3}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":17}}

event: message_stop
data: {"type":"message_stop"}

"#;

const OPENAI_STREAM: &str = r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"read it."},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"read","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"a.txt\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":9,"total_tokens":20}}

data: [DONE]

"#;

#[test]
fn ingest_anthropic_stream_appends_one_assistant_step() {
    let env = TestEnv::new();
    let s = env.new_session("ingest", "what is the weather?");
    let turn = env.chunks(&s)[0]["turn"].as_str().unwrap().to_string();
    let run = env.log_stdin(&["ingest", "-s", &s], ANTHROPIC_STREAM).ok();
    let printed = run.json_lines();
    let view = env.chunks(&s);
    assert_eq!(&view[1..], printed.as_slice(), "prints what it stored");
    assert_eq!(view.len(), 3, "no turn_end without --end-turn");

    assert_eq!(view[1]["role"], "assistant");
    assert_eq!(view[1]["type"], "text");
    assert_eq!(view[1]["data"], json!({"text": "Let me check."}));
    assert_eq!(view[2]["type"], "tool_call");
    assert_eq!(
        view[2]["data"],
        json!({"call_id": "toolu_01", "name": "get_weather", "arguments": {"city": "Paris", "days": 3}})
    );
    // One new step of the open turn.
    for c in &view[1..] {
        assert_eq!(c["turn"], turn.as_str(), "{c}");
        assert_eq!(c["step"], 1, "{c}");
    }
    // A second stream in the same open turn is the next step.
    env.log_stdin(&["ingest", "-q", "-s", &s], ANTHROPIC_STREAM)
        .ok();
    let view = env.chunks(&s);
    assert_eq!(view.len(), 5);
    assert_eq!(
        (view[3]["turn"].as_str(), view[3]["step"].as_i64()),
        (Some(turn.as_str()), Some(2))
    );
}

#[test]
fn ingest_end_turn_adds_a_turn_end_with_the_usage() {
    let env = TestEnv::new();
    let s = env.new_session("ingest", "what is the weather?");
    env.log_stdin(&["ingest", "-s", &s, "--end-turn"], ANTHROPIC_STREAM)
        .ok();
    let view = env.chunks(&s);
    assert_eq!(view.len(), 4);
    let end = &view[3];
    assert_eq!(
        (end["role"].as_str(), end["type"].as_str()),
        (Some("system"), Some("system"))
    );
    assert_eq!(end["turn"], view[0]["turn"]);
    assert_eq!(end["step"], 1);
    assert_eq!(end["data"]["kind"], "turn_end");
    assert_eq!(end["data"]["stop_reason"], "tool_use");
    assert_eq!(end["data"]["model"], "claude-test");
    assert_eq!(
        end["data"]["usage"],
        json!({"input": 42, "output": 17, "cache_read": 0, "cache_write": 0})
    );
    let usage = &env.log(&["show", &s, "--json"]).ok().json()["usage"];
    assert_eq!(
        (
            usage["turns"].as_i64(),
            usage["input"].as_i64(),
            usage["output"].as_i64()
        ),
        (Some(1), Some(42), Some(17))
    );

    // After a finished turn, the next stream starts a new turn.
    env.log_stdin(&["ingest", "-q", "-s", &s], ANTHROPIC_STREAM)
        .ok();
    let view = env.chunks(&s);
    assert_ne!(view[4]["turn"], view[0]["turn"]);
    assert_eq!(view[4]["turn"], view[5]["turn"]);
}

#[test]
fn ingest_truncated_stream_keeps_the_sealed_block_and_records_an_error() {
    let env = TestEnv::new();
    let s = env.new_session("ingest", "what is the weather?");
    let cut = ANTHROPIC_STREAM
        .find("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1")
        .unwrap();
    let run = env
        .log_stdin(
            &["ingest", "-s", &s, "--end-turn"],
            &ANTHROPIC_STREAM[..cut],
        )
        .code(1);
    assert!(run.stderr.starts_with("ag-log: error: "), "{}", run.stderr);
    assert!(run.stderr.contains("incomplete"), "{}", run.stderr);
    assert!(
        run.stderr.contains("ended before its stop event"),
        "{}",
        run.stderr
    );

    let view = env.chunks(&s);
    assert_eq!(view.len(), 3, "{view:#?}");
    assert_eq!(view[1]["type"], "text");
    assert_eq!(view[1]["data"]["text"], "Let me check.");
    assert_eq!(view[2]["type"], "error");
    assert!(
        view[2]["data"]["message"]
            .as_str()
            .unwrap()
            .contains("ended before its stop event"),
        "{}",
        view[2]
    );
    assert!(view
        .iter()
        .all(|c| c["type"] != "tool_call" && c["data"]["kind"] != "turn_end"));
    assert_eq!(view[2]["turn"], view[0]["turn"]);
}

#[test]
fn ingest_openai_stream_with_the_openai_dialect() {
    let env = TestEnv::new();
    let s = env.new_session("ingest", "read a.txt");
    env.log_stdin(
        &["ingest", "-s", &s, "--dialect", "openai", "--end-turn"],
        OPENAI_STREAM,
    )
    .ok();
    let view = env.chunks(&s);
    let types: Vec<&str> = view.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["text", "text", "tool_call", "system"]);
    assert_eq!(view[1]["data"]["text"], "Let me read it.");
    assert_eq!(
        view[2]["data"],
        json!({"call_id": "call_abc", "name": "read", "arguments": {"path": "a.txt"}})
    );
    assert_eq!(view[3]["data"]["stop_reason"], "tool_use");
    assert_eq!(view[3]["data"]["usage"]["input"], 11);
    assert_eq!(view[3]["data"]["usage"]["output"], 9);
    assert_eq!(view[3]["data"]["model"], "gpt-test");
    assert!(view[1..]
        .iter()
        .all(|c| c["step"] == 1 && c["turn"] == view[0]["turn"]));

    // The same stream read as anthropic is not a complete answer.
    let other = env.new_session("wrong dialect", "x");
    env.log_stdin(&["ingest", "-q", "-s", &other], OPENAI_STREAM)
        .code(1);
}

// ---------------------------------------------------------------------------------------------
// search

#[test]
fn search_finds_words_and_brackets_the_hit() {
    let env = TestEnv::new();
    let one = env.new_session("one", "the quick brown fox jumps");
    let two = env.new_session("two", "a lazy brown dog sleeps");
    env.append(&two, &[chunk::assistant("the dog is brown indeed")]);

    let run = env.log(&["search", "fox"]).ok();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    assert!(lines[0].contains("[fox]"), "{}", lines[0]);
    assert!(
        lines[0].starts_with(&crate::room::handle(&env, &one)),
        "{}",
        lines[0]
    );

    assert_eq!(env.log(&["search", "brown"]).ok().stdout.lines().count(), 3);
    // All words must occur.
    let both = env.log(&["search", "brown", "fox"]).ok().stdout;
    assert_eq!(both.lines().count(), 1, "{both}");

    // -s narrows to one session.
    let run = env.log(&["search", "brown", "-s", &one]).ok();
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("[brown]") && run.stdout.contains(&crate::room::handle(&env, &one)),
        "{}",
        run.stdout
    );

    let hits = env
        .log(&["search", "dog", "-s", &two, "--json"])
        .ok()
        .json_lines();
    assert_eq!(hits.len(), 2);
    for h in &hits {
        assert_eq!(h["session"], two.as_str());
        assert!(h["snippet"].as_str().unwrap().contains("[dog]"), "{h}");
        assert!(h["data"]["text"].as_str().unwrap().contains("dog"), "{h}");
        assert!(
            h["seq"].as_i64().is_some() && h["id"].as_str().is_some(),
            "{h}"
        );
    }
    assert_eq!(
        env.log(&["search", "dog", "--json", "--limit", "1"])
            .ok()
            .json_lines()
            .len(),
        1
    );
}

#[test]
fn search_without_a_match_prints_nothing_and_exits_1() {
    let env = TestEnv::new();
    let s = env.new_session("one", "nothing to see here");
    let run = env.log(&["search", "zebra"]).code(1);
    assert_eq!(run.stdout, "");
    let run = env.log(&["search", "zebra", "--json", "-s", &s]).code(1);
    assert_eq!(run.stdout, "");
    // Only text chunks are indexed: a tool result's words are not hits.
    env.append(&s, &[chunk::result("c1", "read", "zebra crossing")]);
    assert_eq!(env.log(&["search", "zebra"]).code(1).stdout, "");
}

// ---------------------------------------------------------------------------------------------
// rm

#[test]
fn rm_removes_the_session_its_chunks_and_its_search_hits() {
    let env = TestEnv::new();
    let gone = env.new_session("gone", "the aardvark speaks");
    env.append(&gone, &[chunk::assistant("aardvark reply")]);
    let kept = env.new_session("kept", "the aardvark stays");
    assert_eq!(
        env.log(&["search", "aardvark"]).ok().stdout.lines().count(),
        3
    );

    // A typo among the references removes nothing.
    env.log(&["rm", &gone, "ffffffff"]).code(4);
    assert_eq!(env.chunks(&gone).len(), 2);

    let run = env.log(&["rm", &gone]).ok();
    assert!(
        run.stderr.contains(&format!("removed {gone}")),
        "{}",
        run.stderr
    );
    let run = env.log(&["cat", &gone]).code(4);
    assert!(run.stderr.contains("no session matches"), "{}", run.stderr);
    let ls = env.log(&["ls", "--json"]).ok().json_lines();
    assert_eq!(ls.len(), 1);
    assert_eq!(ls[0]["id"], kept.as_str());
    let hits = env.log(&["search", "aardvark", "--json"]).ok().json_lines();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["session"], kept.as_str());
    assert_eq!(
        env.sqlite_count(&format!(
            "SELECT COUNT(*) FROM chunks WHERE session_id = '{gone}'"
        )),
        0
    );
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM chunks_fts"), 1);
    assert_eq!(env.chunks(&kept).len(), 1);
    env.log(&["rm", &gone]).code(4);
}

#[test]
fn cat_escapes_terminal_control_characters_for_people_but_not_in_json() {
    let env = TestEnv::new();
    let evil = "evil \u{1b}[2Jwipe\u{7} done";
    let s = env.new_session("evil", "hi");
    env.append(&s, &[chunk::assistant(evil)]);
    let text = env.log(&["cat", &s]).ok().stdout;
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains("wipe") && text.contains("done"), "{text:?}");
    assert!(!env
        .log(&["cat", &s, "--format", "md"])
        .ok()
        .stdout
        .is_empty());
    // NDJSON carries the text exactly.
    assert_eq!(env.chunks(&s)[1]["data"]["text"], evil);
}

// ---------------------------------------------------------------------------------------------
// pipes

#[test]
fn a_closed_pipe_ends_quietly() {
    let env = TestEnv::new();
    let s = env.new_session("long", "start");
    let filler = "lorem ipsum dolor sit amet ".repeat(4);
    let lines: Vec<Value> = (2..=5000)
        .map(|i| chunk::assistant(&format!("{i} {filler}")))
        .collect();
    let input = ndjson(&lines);
    env.log_stdin(&["append", "-q", "-s", &s], input).ok();
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM chunks"), 5000);

    // Several MB of output into a reader that leaves after one line.
    let script = format!(
        "ag-log cat {s} --json | head -n 1 >/dev/null; echo \"json=${{PIPESTATUS[0]}}\"\n\
         ag-log cat {s} | head -n 1 >/dev/null; echo \"text=${{PIPESTATUS[0]}}\"\n\
         ag-log cat {s} --format md | head -n 1 >/dev/null; echo \"md=${{PIPESTATUS[0]}}\"\n\
         ag-log tail -n 5000 --json {s} | head -n 1 >/dev/null; echo \"tail=${{PIPESTATUS[0]}}\"\n"
    );
    let run = bash(&env, &script);
    assert_eq!(
        run.stdout, "json=0\ntext=0\nmd=0\ntail=0\n",
        "stderr: {}",
        run.stderr
    );
    assert_eq!(run.stderr, "", "a closed pipe is not an error");
}
