//! Claude Code sessions with parallel tool calls: current files write one line per `tool_use`
//! block and hang each result off its own call, so the lines form a tree, and the next answer
//! may hang off any one result. Every call and every result of the source must arrive; they
//! are counted against the source by a reader of its own (every `tool_use` and `tool_result`
//! block outside sidechains), on a file of that shape and on every real fixture.

use serde_json::{json, Value};

use crate::import::fixtures;
use crate::support::TestEnv;

/// The calls and results a Claude Code file holds outside sidechains, read independently of
/// the importer.
fn source_counts(text: &str) -> (usize, usize) {
    let (mut calls, mut results) = (0, 0);
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v["isSidechain"] == true {
            continue;
        }
        for b in v["message"]["content"].as_array().into_iter().flatten() {
            match b["type"].as_str() {
                Some("tool_use") => calls += 1,
                Some("tool_result") => results += 1,
                _ => {}
            }
        }
    }
    (calls, results)
}

/// Import `path`; the calls and results of the main session.
fn imported_counts(env: &TestEnv, path: &str) -> (usize, usize, String) {
    let run = env.log(&["import", path]).ok();
    let id = run.json_lines()[0]["session"].as_str().unwrap().to_string();
    let chunks = env.log(&["cat", &id, "--json"]).ok().json_lines();
    let n = |ty: &str| chunks.iter().filter(|c| c["type"] == ty).count();
    (n("tool_call"), n("tool_result"), id)
}

fn line(uuid: &str, parent: Option<&str>, kind: &str, message: Value) -> String {
    json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "par-1",
           "cwd": "/w", "timestamp": "2026-03-01T10:00:00Z", "isSidechain": false,
           "message": message})
    .to_string()
}

fn call(msg: &str, id: &str) -> Value {
    json!({"role": "assistant", "id": msg, "model": "claude-sonnet-4-5", "stop_reason": null,
           "content": [{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": id}}]})
}

fn result(id: &str) -> Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": format!("contents of {id}")}]})
}

#[test]
fn parallel_tool_calls_keep_every_result_on_import() {
    let env = TestEnv::new();
    // Two rounds of three parallel calls. Each result hangs off its own call; the next answer
    // hangs off the first result, not the last.
    let mut lines = vec![line(
        "u0",
        None,
        "user",
        json!({"role": "user", "content": "read them all"}),
    )];
    let mut parent = "u0".to_string();
    for round in 0..2 {
        let msg = format!("msg_{round}");
        let ids: Vec<String> = (0..3).map(|k| format!("toolu_{round}{k}")).collect();
        for (k, id) in ids.iter().enumerate() {
            let uuid = format!("a{round}{k}");
            lines.push(line(&uuid, Some(&parent), "assistant", call(&msg, id)));
            parent = uuid;
        }
        for (k, id) in ids.iter().enumerate() {
            lines.push(line(
                &format!("r{round}{k}"),
                Some(&format!("a{round}{k}")),
                "user",
                result(id),
            ));
        }
        parent = format!("r{round}0");
    }
    lines.push(line(
        "fin",
        Some(&parent),
        "assistant",
        json!({"role": "assistant", "id": "msg_end", "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
               "content": [{"type": "text", "text": "all read"}]}),
    ));
    let text = lines.join("\n") + "\n";
    let path = env.dir.path().join("par-1.jsonl");
    std::fs::write(&path, &text).unwrap();
    let (calls, results, id) = imported_counts(&env, &path.to_string_lossy());
    assert_eq!((calls, results), source_counts(&text));
    assert_eq!((calls, results), (6, 6));
    // A continued session tells the model each call's real result.
    let fold = env.log(&["fold", &id]).ok().stdout;
    assert!(!fold.contains("no result"), "{fold}");
    for round in 0..2 {
        for k in 0..3 {
            assert!(
                fold.contains(&format!("contents of toolu_{round}{k}")),
                "{round}{k}"
            );
        }
    }
}

#[test]
fn every_real_claude_code_fixture_keeps_every_call_and_result() {
    let dir = fixtures().join("claude-code");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for f in files.iter().filter(|f| {
        f.extension().is_some_and(|e| e == "jsonl")
            && !f
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("agent-")
    }) {
        let env = TestEnv::new();
        let text = std::fs::read_to_string(f).unwrap();
        let (calls, results, _) = imported_counts(&env, &f.to_string_lossy());
        assert_eq!((calls, results), source_counts(&text), "{}", f.display());
    }
}

/// A compaction that kept the end of the conversation (`compactMetadata.preservedSegment`,
/// Claude Code 2.x): the kept lines sit before the boundary in the file and point back into
/// the summarized part; the next prompt hangs off the segment's tail. The import relinks the
/// segment after the summary, as Claude Code does when it loads the file: the fold is the
/// summary, then the kept lines verbatim, then what came after; every call and result arrives.
#[test]
fn a_compaction_that_preserves_a_segment_keeps_it_after_its_summary() {
    let text_msg = |id: &str, text: &str| {
        json!({"role": "assistant", "id": id, "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
               "content": [{"type": "text", "text": text}]})
    };
    let user = |text: &str| json!({"role": "user", "content": text});
    let pre = vec![
        line("u1", None, "user", user("START-PROMPT")),
        line("a1", Some("u1"), "assistant", text_msg("m1", "ready")),
        line("u2", Some("a1"), "user", user("read x")),
        line("a2", Some("u2"), "assistant", call("m2", "toolu_x")),
        line("r1", Some("a2"), "user", result("toolu_x")),
        line(
            "a3",
            Some("r1"),
            "assistant",
            text_msg("m3", "SUMMARIZED-ANSWER"),
        ),
        // The kept part: a prompt, then two parallel calls and their answer.
        line("u3", Some("a3"), "user", user("KEPT-PROMPT")),
        line("a5a", Some("u3"), "assistant", call("m5", "toolu_a")),
        line("a5b", Some("a5a"), "assistant", call("m5", "toolu_b")),
        line("r2", Some("a5a"), "user", result("toolu_a")),
        line("r3", Some("a5b"), "user", result("toolu_b")),
        line("a6", Some("r2"), "assistant", text_msg("m6", "KEPT-ANSWER")),
    ];
    let boundary = json!({"type": "system", "subtype": "compact_boundary", "uuid": "cb",
        "parentUuid": null, "logicalParentUuid": "a6", "sessionId": "par-1", "cwd": "/w",
        "timestamp": "2026-03-01T10:00:00Z", "isSidechain": false, "content": "Conversation compacted",
        "compactMetadata": {"trigger": "manual", "preTokens": 5000,
            "preservedSegment": {"headUuid": "u3", "anchorUuid": "cs", "tailUuid": "a6"}}})
    .to_string();
    let mut summary: Value = serde_json::from_str(&line(
        "cs",
        Some("cb"),
        "user",
        user("SUMMARY-OF-START: the user asked to read x."),
    ))
    .unwrap();
    summary["isCompactSummary"] = json!(true);
    let after = vec![
        line("u5", Some("a6"), "user", user("AFTER-PROMPT")),
        line(
            "a7",
            Some("u5"),
            "assistant",
            text_msg("m7", "AFTER-ANSWER"),
        ),
    ];
    for ends_at_compaction in [false, true] {
        let env = TestEnv::new();
        let mut lines = pre.clone();
        lines.push(boundary.clone());
        lines.push(summary.to_string());
        if !ends_at_compaction {
            lines.extend(after.clone());
        }
        let text = lines.join("\n") + "\n";
        let path = env.dir.path().join("par-1.jsonl");
        std::fs::write(&path, &text).unwrap();
        let (calls, results, id) = imported_counts(&env, &path.to_string_lossy());
        assert_eq!((calls, results), source_counts(&text));
        assert_eq!((calls, results), (3, 3));
        let fold = env.log(&["fold", &id]).ok().stdout;
        let at = |s: &str| {
            fold.find(s)
                .unwrap_or_else(|| panic!("{s} is not in the fold: {fold}"))
        };
        assert!(at("SUMMARY-OF-START") < at("KEPT-PROMPT"));
        assert!(at("KEPT-PROMPT") < at("contents of toolu_a"));
        assert!(at("contents of toolu_b") < at("KEPT-ANSWER"));
        if !ends_at_compaction {
            assert!(at("KEPT-ANSWER") < at("AFTER-PROMPT"));
            assert!(at("AFTER-PROMPT") < at("AFTER-ANSWER"));
        }
        // The summarized part is gone from the fold, and only from the fold.
        assert!(!fold.contains("SUMMARIZED-ANSWER"), "{fold}");
        assert!(!fold.contains("no result"), "{fold}");
        let full = env.log(&["fold", &id, "--full"]).ok().stdout;
        assert!(full.find("SUMMARIZED-ANSWER").unwrap() < full.find("KEPT-PROMPT").unwrap());
    }
}
