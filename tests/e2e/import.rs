//! `ag-log import` end to end: every shared fixture imported with exact expectations,
//! idempotent and incremental re-import, bad lines and foreign files, `--follow`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::TestEnv;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts")
}

pub fn fixture(rel: &str) -> String {
    fixtures().join(rel).to_string_lossy().into_owned()
}

/// One imported session as the store holds it, summed up.
#[derive(Debug, PartialEq)]
struct Summary {
    kind: String,
    parent: Option<String>,
    title: String,
    turns: i64,
    max_step: i64,
    by_type: String,
    turn_ends: i64,
    signed: i64,
}

fn summaries(env: &TestEnv) -> BTreeMap<String, Summary> {
    let conn = crate::support::rusqlite_open(&env.db());
    let mut stmt = conn
        .prepare(
            "SELECT i.source_id, s.kind, (SELECT source_id FROM imports WHERE session_id = s.parent_id), s.title, \
             (SELECT COUNT(DISTINCT turn_id) FROM chunks WHERE session_id = s.id), \
             (SELECT MAX(step) FROM chunks WHERE session_id = s.id), \
             (SELECT group_concat(type || '=' || n, ' ') FROM (SELECT type, COUNT(*) n FROM chunks WHERE session_id = s.id GROUP BY type ORDER BY type)), \
             (SELECT COUNT(*) FROM chunks WHERE session_id = s.id AND json_extract(data_json, '$.kind') = 'turn_end'), \
             (SELECT COUNT(*) FROM chunks WHERE session_id = s.id AND json_extract(data_json, '$.signature') IS NOT NULL) \
             FROM sessions s JOIN imports i ON i.session_id = s.id",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            Summary {
                kind: r.get(1)?,
                parent: r.get(2)?,
                title: r.get(3)?,
                turns: r.get(4)?,
                max_step: r.get(5)?,
                by_type: r.get(6)?,
                turn_ends: r.get(7)?,
                signed: r.get(8)?,
            },
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[allow(clippy::too_many_arguments)]
fn s(
    kind: &str,
    parent: Option<&str>,
    title: &str,
    turns: i64,
    max_step: i64,
    by_type: &str,
    turn_ends: i64,
    signed: i64,
) -> Summary {
    Summary {
        kind: kind.into(),
        parent: parent.map(str::to_string),
        title: title.into(),
        turns,
        max_step,
        by_type: by_type.into(),
        turn_ends,
        signed,
    }
}

#[test]
fn every_fixture_imports_into_exactly_the_expected_sessions() {
    let env = TestEnv::new();
    let run = env.log(&["import", &fixtures().to_string_lossy()]).ok();
    let reports: BTreeMap<String, (i64, i64)> = run
        .json_lines()
        .iter()
        .map(|l| {
            (
                l["source_id"].as_str().unwrap().to_string(),
                (
                    l["chunks"].as_i64().unwrap(),
                    l["skipped"].as_i64().unwrap(),
                ),
            )
        })
        .collect();
    let cc = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7";
    let private = "4c2ddfdc-b619-4525-8d03-1950fb1b0257";
    let expected: BTreeMap<String, (Summary, i64, i64)> = [
        ("019e1625-789d-76c0-80ab-3724b5ddb799".to_string(),
         (s("chat", None, "show tools", 2, 63, "system=30 text=15 tool_call=102 tool_result=102", 2, 0), 249, 134)),
        ("11111111-1111-4111-8111-111111111111".into(),
         (s("chat", None, "List the synthetic files.", 1, 4, "system=1 text=2 thinking=1 tool_call=3 tool_result=3", 0, 0), 10, 3)),
        ("3fb74381-1bf4-475e-8c6f-442d872b1bcf".into(),
         (s("chat", None, "show tools", 4, 2, "system=4 text=10 thinking=6 tool_call=2 tool_result=2", 4, 6), 24, 6)),
        (private.into(),
         (s("chat", None, "create hello.py, md and js", 3, 3, "system=3 text=7 tool_call=6 tool_result=6", 3, 0), 22, 6)),
        (format!("{private}:50243ee8:9dbb4e8d-73e8-4af5-9f90-c76b7404477c"),
         (s("subagent", Some(private), "Warmup", 1, 1, "text=2", 0, 0), 2, 0)),
        ("55604662-cf2a-4331-851a-ec234028f8ca".into(),
         // The /model command and its output are records after the turn (they open the next).
         (s("chat", None, "mix phx.server doesnt seem to start", 2, 1, "system=3 text=2 thinking=1 tool_call=2 tool_result=2", 1, 1), 10, 5)),
        (cc.into(),
         (s("chat", None, "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください", 1, 10, "text=4 tool_call=13 tool_result=13", 0, 0), 30, 1)),
        (format!("{cc}:sidechain:6340ddef-f656-4b72-a065-82390f637678"),
         (s("subagent", Some(cc), "Examine the package.json file(s) in /path/to/Demo and any subdirectories. Focus…", 1, 3, "system=1 text=3 tool_call=2 tool_result=2", 1, 0), 8, 0)),
        (format!("{cc}:sidechain:83e2917c-8940-4df6-a5a5-f2514f0d08c5"),
         (s("subagent", Some(cc), "Analyze the current project structure in /path/to/Demo. Focus on:", 1, 7, "system=1 text=3 tool_call=6 tool_result=6", 1, 0), 16, 0)),
        // The rewind's first branch is left out; the compaction is a record of its own.
        ("s1".into(),
         (s("chat", None, "Start", 4, 1, "system=5 text=8", 4, 0), 13, 2)),
        ("spawn-test-uuid".into(),
         (s("chat", None, "run a review", 1, 2, "system=1 text=1 tool_call=3 tool_result=1", 1, 0), 6, 4)),
    ]
    .into_iter()
    .collect();
    let got = summaries(&env);
    for (id, (summary, chunks, skipped)) in &expected {
        assert_eq!(got.get(id), Some(summary), "session {id}");
        assert_eq!(
            reports.get(id),
            Some(&(*chunks, *skipped)),
            "report of {id}"
        );
    }
    assert_eq!(got.len(), expected.len(), "{:#?}", got.keys());
}

#[test]
fn claude_rewinds_compactions_and_sources_are_kept_as_they_happened() {
    let env = TestEnv::new();
    let run = env
        .log(&[
            "import",
            &fixture("claude-code/dag_compact_after_rewind.jsonl"),
        ])
        .ok();
    let id = run.json_lines()[0]["session"].as_str().unwrap().to_string();
    let texts: Vec<String> = env
        .chunks(&id)
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| c["data"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        texts,
        [
            "Start",
            "Ready",
            "Second attempt",
            "Second answer",
            "Keep going",
            "Kept going",
            "After compaction",
            "Final answer"
        ]
    );
    let compaction = env
        .chunks(&id)
        .into_iter()
        .find(|c| c["data"]["kind"] == "compaction")
        .unwrap();
    let d = &compaction["data"];
    assert_eq!(d["trigger"], "auto");
    assert_eq!(d["tokens_before"], 150000);
    assert_eq!(d["through_seq"], compaction["seq"].as_i64().unwrap() - 1);
    assert_eq!(d["kept_from_seq"], compaction["seq"].as_i64().unwrap());
    assert!(d["summary"]
        .as_str()
        .unwrap()
        .contains("the user asked for a plan"));
    // The fold starts from the imported compaction: the summary, then what came after.
    let body = env.log(&["fold", &id, "--dialect", "openai"]).ok().json();
    let first = body["messages"][0]["content"].as_str().unwrap();
    assert!(first.contains("the user asked for a plan"), "{first}");
    assert!(first.contains("After compaction"), "{first}");
    assert!(!body.to_string().contains("Second attempt"), "{body}");
    let full = env
        .log(&["fold", &id, "--dialect", "openai", "--full"])
        .ok()
        .json();
    assert!(full.to_string().contains("Second attempt"));
    assert!(
        !full.to_string().contains("First attempt"),
        "the rewound branch is not there"
    );
    let show = env.log(&["show", &id, "--json"]).ok().json();
    let source = &show["source"];
    assert_eq!(source["source"], "claude-code");
    assert_eq!(source["source_id"], "s1");
    assert_eq!(source["tool_version"], "2.1.0");
    assert_eq!(
        source["leaf"], "p1a",
        "the branch taken is named by its leaf"
    );
    assert!(source["path"]
        .as_str()
        .unwrap()
        .ends_with("dag_compact_after_rewind.jsonl"));
}

/// A session's log without what differs between stores (the session id).
fn log_of(env: &TestEnv, session: &str) -> Vec<Value> {
    env.chunks(session)
        .into_iter()
        .map(|mut c| {
            c.as_object_mut().unwrap().remove("session");
            c
        })
        .collect()
}

#[test]
fn reimport_is_idempotent_and_a_grown_file_appends_only_its_new_part() {
    for rel in [
        "claude-code/3fb74381-1bf4-475e-8c6f-442d872b1bcf.jsonl",
        "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    ] {
        let full = std::fs::read_to_string(fixture(rel)).unwrap();
        let lines: Vec<&str> = full.lines().collect();
        let env = TestEnv::new();
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        let mut text = String::new();
        let mut id = String::new();
        let mut total = 0;
        // The file grows in three pieces; each import appends what is new.
        for cut in [lines.len() / 3, lines.len() * 2 / 3, lines.len()] {
            text = lines[..cut].iter().map(|l| format!("{l}\n")).collect();
            let path = env.write_file(name, &text);
            let run = env.log(&["import", &path.to_string_lossy()]).ok();
            let report = &run.json_lines()[0];
            id = report["session"].as_str().unwrap().to_string();
            total += report["chunks"].as_i64().unwrap();
        }
        assert_eq!(text, full);
        let again = env.log(&["import", &fixture(rel)]).ok();
        assert_eq!(
            again.json_lines()[0]["chunks"],
            0,
            "nothing new: nothing appended"
        );
        assert_eq!(again.json_lines()[0]["session"], id.as_str());
        assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM sessions"), 1);
        let fresh = TestEnv::new();
        let run = fresh.log(&["import", &fixture(rel)]).ok();
        let fresh_id = run.json_lines()[0]["session"].as_str().unwrap().to_string();
        let grown = log_of(&env, &id);
        assert_eq!(grown.len() as i64, total);
        assert_eq!(
            grown,
            log_of(&fresh, &fresh_id),
            "{rel}: grown import == fresh import"
        );
    }
}

#[test]
fn a_rewritten_source_is_refused_and_nothing_changes() {
    let env = TestEnv::new();
    let full =
        std::fs::read_to_string(fixture("claude-code/dag_compact_after_rewind.jsonl")).unwrap();
    let path = env.write_file("s1.jsonl", &full);
    env.log(&["import", &path.to_string_lossy()]).ok();
    let before = env.sqlite_count("SELECT COUNT(*) FROM chunks");
    // The first answer now says something else: the source was rewritten.
    std::fs::write(&path, full.replace("\"Ready\"", "\"Not ready\"")).unwrap();
    let run = env.log(&["import", &path.to_string_lossy()]).code(1);
    assert!(run.stderr.contains("no longer matches"), "{}", run.stderr);
    assert!(run.stderr.contains("s1.jsonl"), "{}", run.stderr);
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM chunks"), before);
}

#[test]
fn malformed_lines_are_reported_with_file_and_line_and_counted() {
    let env = TestEnv::new();
    let mut text = std::fs::read_to_string(fixture(
        "codex/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
    ))
    .unwrap();
    text.insert_str(0, "");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.insert(3, "{\"timestamp\": truncated".into());
    lines.insert(5, "[1,2,3]".into());
    let path = env.write_file("bad.jsonl", &(lines.join("\n") + "\n"));
    let run = env.log(&["import", &path.to_string_lossy()]).ok();
    assert!(
        run.stderr.contains("bad.jsonl:4: skipped: malformed JSON"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("bad.jsonl:6: skipped: expected a JSON object"),
        "{}",
        run.stderr
    );
    let report = &run.json_lines()[0];
    assert_eq!(report["skipped"], 5, "3 event/unknown lines + 2 malformed");
    assert_eq!(report["chunks"], 10);
    let quiet = TestEnv::new();
    let run = quiet.log(&["import", "-q", &path.to_string_lossy()]).ok();
    assert_eq!(run.stdout, "", "-q prints nothing");
    assert_eq!(quiet.sqlite_count("SELECT COUNT(*) FROM chunks"), 10);
}

#[test]
fn a_file_in_neither_format_is_refused_and_writes_nothing() {
    let env = TestEnv::new();
    let path = env.write_file("notes.jsonl", "{\"hello\":\"world\"}\n{\"n\":2}\n");
    let run = env.log(&["import", &path.to_string_lossy()]).code(1);
    assert!(
        run.stderr.starts_with("ag-log: error: ")
            && run.stderr.contains(
                "notes.jsonl: not a Claude Code session file, a Codex rollout or an ag export"
            ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint: "), "{}", run.stderr);
    let bin = env.write_file("x.jsonl", "\u{0}\u{1}binary\n");
    env.log(&["import", &bin.to_string_lossy()]).code(1);
    let wrong = env
        .log(&[
            "import",
            "--from",
            "codex",
            &fixture("claude-code/agent-50243ee8.jsonl"),
        ])
        .code(1);
    assert!(
        wrong.stderr.contains("not a codex file"),
        "{}",
        wrong.stderr
    );
    env.log(&["import", "/nonexistent/file.jsonl"]).code(4);
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM sessions"), 0);
}

#[test]
fn odd_input_is_imported_without_failing() {
    let env = TestEnv::new();
    let huge = "x".repeat(3_000_000);
    let lines = [
        // unknown line types and fields, missing fields, odd ids, bad bytes, a huge line
        r#"{"type":"queue-operation","operation":"enqueue"}"#.to_string(),
        r#"{"type":"user","uuid":"call:1/bad id","parentUuid":null,"sessionId":"odd","message":{"role":"user","content":"hi"}}"#.to_string(),
        r#"{"type":"assistant","uuid":"a 1","parentUuid":"call:1/bad id","sessionId":"odd","message":{"id":"m1","content":[{"type":"tool_use","id":"call:1/bad id","name":"Read","input":{"p":1}},{"type":"mystery"}]}}"#.to_string(),
        format!(r#"{{"type":"user","uuid":"r1","parentUuid":"a 1","sessionId":"odd","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"call:1/bad id","content":"{huge}"}}]}}}}"#),
        r#"{"type":"assistant","uuid":"a2","parentUuid":"r1","sessionId":"odd","message":{"id":"m2","content":[{"type":"text","text":"caf\u00e9 "}],"stop_reason":"end_turn"}}"#.to_string(),
        r#"{"type":"assistant","uuid":"a3","parentUuid":"a2","sessionId":"odd"}"#.to_string(),
    ];
    let mut bytes = lines.join("\n").into_bytes();
    bytes.extend_from_slice(b"\n{\"type\":\"user\",\"uuid\":\"u9\",\"parentUuid\":\"a3\",\"sessionId\":\"odd\",\"message\":{\"content\":\"bad \xff byte\"}}\n");
    let path = env.cwd.join("odd.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let run = env.log(&["import", &path.to_string_lossy()]).ok();
    let report = &run.json_lines()[0];
    assert_eq!(report["source_id"], "odd");
    let id = report["session"].as_str().unwrap();
    let chunks = env.chunks(id);
    let types: Vec<&str> = chunks.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["text", "tool_call", "tool_result", "text", "system", "text"]
    );
    assert_eq!(
        chunks[2]["data"]["result"].as_str().unwrap().len(),
        huge.len()
    );
    assert_eq!(chunks[5]["data"]["text"], "bad \u{fffd} byte");
    // The id goes to each provider in a form it accepts, the same for the call and its result.
    let body = env.log(&["fold", id, "--dialect", "openai"]).ok().json();
    let sent = body["messages"][1]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        sent.starts_with("call_1_bad_id_") && sent.len() <= 40,
        "{sent}"
    );
    assert_eq!(body["messages"][2]["tool_call_id"], sent.as_str());
    let body = env.log(&["fold", id, "--dialect", "anthropic"]).ok().json();
    assert_eq!(body["messages"][1]["content"][0]["id"], sent.as_str());
    assert_eq!(
        body["messages"][2]["content"][0]["tool_use_id"],
        sent.as_str()
    );
}

#[test]
fn follow_imports_lines_appended_while_it_runs() {
    let env = TestEnv::new();
    let dir = env.cwd.join("projects");
    std::fs::create_dir_all(&dir).unwrap();
    let full =
        std::fs::read_to_string(fixture("claude-code/dag_compact_after_rewind.jsonl")).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let path = dir.join("s1.jsonl");
    std::fs::write(&path, format!("{}\n", lines[..2].join("\n"))).unwrap();
    let child = env
        .command("ag-log")
        .args(["import", "--follow", &dir.to_string_lossy()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let wait_for = |n: i64| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let have = rusqlite::Connection::open_with_flags(
                env.db(),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0);
            if have == n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {n} chunks, have {have}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for(3);
    // Half a line first: it waits until the line is whole.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    use std::io::Write;
    let rest = lines[2..].join("\n") + "\n";
    let (a, b) = rest.split_at(40);
    f.write_all(a.as_bytes()).unwrap();
    f.flush().unwrap();
    f.write_all(b.as_bytes()).unwrap();
    f.flush().unwrap();
    wait_for(13);
    // A new session file is picked up too, however many pieces the copy is seen in.
    std::fs::copy(
        fixture("claude-code/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"),
        dir.join("new.jsonl"),
    )
    .unwrap();
    wait_for(13 + 22);
    // SAFETY: kill(2) takes two integers.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // One line per import pass: the sessions they name, and the chunks they add up to.
    let mut added: std::collections::BTreeMap<String, i64> = Default::default();
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        *added
            .entry(v["source_id"].as_str().unwrap().into())
            .or_default() += v["chunks"].as_i64().unwrap();
    }
    let want = [
        ("4c2ddfdc-b619-4525-8d03-1950fb1b0257".to_string(), 22),
        ("s1".to_string(), 13),
    ];
    assert_eq!(added, want.into_iter().collect(), "{stdout}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("skipped"),
        "a half-written line is not malformed"
    );
}

/// Claude Code's slash commands arrive as what the person typed (a user message of the older
/// format), or as a record of the command and of its output without terminal colours (the
/// newer `local_command` lines): not as tags.
#[test]
fn imported_slash_commands_read_as_typed() {
    let env = TestEnv::new();
    let import = |rel: &str| {
        env.log(&["import", "-q", &fixture(rel)]).ok();
        env.log(&["ls", "-q", "--any"])
            .ok()
            .stdout
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    let id = import("claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl");
    let first = &env.chunks(&id)[0];
    let text = first["data"]["text"].as_str().unwrap();
    assert!(text.starts_with("/orchestrator "), "{text}");
    assert!(!text.contains("<command"), "{text}");

    let id = import("claude-code/55604662-cf2a-4331-851a-ec234028f8ca.jsonl");
    let records: Vec<String> = env
        .chunks(&id)
        .iter()
        .filter(|c| c["data"]["kind"] == "local_command")
        .map(|c| c["data"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        records,
        [
            "/model",
            "output of the command: Kept model as Default (recommended)"
        ]
    );
    let cat = env.log(&["cat", &id]).ok().stdout;
    assert!(
        cat.contains("/model") && !cat.contains("<command-name>"),
        "{cat}"
    );
}

/// Many files: each is read and parsed while the one before is stored. What is stored, what is
/// printed and what is reported stays in the order of the files, and a bad file in the middle
/// stops nothing around it.
#[test]
fn a_directory_of_many_files_is_stored_in_order_around_a_bad_one() {
    let env = TestEnv::new();
    let rollout = std::fs::read_to_string(fixture(
        "codex/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
    ))
    .unwrap();
    let id = "11111111-1111-4111-8111-111111111111";
    let mut ids = Vec::new();
    for i in 0..30 {
        let copy = format!("11111111-1111-4111-8111-{i:012}");
        env.write_file(&format!("many/r{i:02}.jsonl"), &rollout.replace(id, &copy));
        ids.push(copy);
    }
    env.write_file("many/r15x.jsonl", "{\"hello\":\"world\"}\n");
    let dir = env.cwd.join("many");
    let run = env.log(&["import", &dir.to_string_lossy()]).code(1);
    let printed: Vec<String> = run
        .json_lines()
        .iter()
        .map(|v| v["source_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(printed, ids, "one line per file, in the files' order");
    assert!(
        run.stderr
            .contains("r15x.jsonl: not a Claude Code session file"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("1 of 31 files could not be imported"),
        "{}",
        run.stderr
    );
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM sessions"), 30);
    // Stored in the files' order: each session was created after the one before it.
    let conn = crate::support::rusqlite_open(&env.db());
    let order: Vec<String> = conn
        .prepare(
            "SELECT imports.source_id FROM imports JOIN sessions ON sessions.id = \
             imports.session_id ORDER BY sessions.rowid",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(order, ids);
}

/// A file that cannot be imported is reported once while following, not on every pass: its
/// length and time are remembered as for a file that imported.
#[test]
fn follow_reports_a_bad_file_once() {
    let env = TestEnv::new();
    let dir = env.cwd.join("projects");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.jsonl"), "{\"hello\":\"world\"}\n").unwrap();
    let full =
        std::fs::read_to_string(fixture("claude-code/dag_compact_after_rewind.jsonl")).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let path = dir.join("s1.jsonl");
    std::fs::write(&path, format!("{}\n", lines[..2].join("\n"))).unwrap();
    let child = env
        .command("ag-log")
        .args(["import", "--follow", &dir.to_string_lossy()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let chunks = || {
        rusqlite::Connection::open_with_flags(env.db(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while chunks() < 3 {
        assert!(Instant::now() < deadline, "the first pass did not import");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Two more passes, each started by a write to the good file: every file is looked at.
    for (from, to) in [(2, 5), (5, lines.len())] {
        let before = chunks();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, (lines[from..to].join("\n") + "\n").as_bytes()).unwrap();
        drop(f);
        while chunks() == before {
            assert!(Instant::now() < deadline, "a later pass did not import");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // SAFETY: kill(2) takes two integers.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches("bad.jsonl: not a Claude Code session file")
            .count(),
        1,
        "{stderr}"
    );
}
