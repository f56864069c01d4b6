//! Reading the log end to end: `cat` (text, NDJSON, Markdown, paging), `tail` (and `-f`), `ls`,
//! `show`, `fold`, `ingest`, `search`, `title`, `rm`, and a closed pipe.

use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::support::{chunk, TestEnv};

// ---------------------------------------------------------------------------------------------
// fixtures

pub(crate) fn ndjson(lines: &[Value]) -> String {
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
pub(crate) struct Conversation {
    pub s: String,
    pub t1: String,
    pub t2: String,
}

pub(crate) fn conversation(env: &TestEnv) -> Conversation {
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

pub(crate) fn seqs(lines: &[Value]) -> Vec<i64> {
    lines.iter().map(|c| c["seq"].as_i64().unwrap()).collect()
}

pub(crate) fn cat_seqs(env: &TestEnv, args: &[&str]) -> Vec<i64> {
    let mut all = vec!["cat", "--json"];
    all.extend_from_slice(args);
    seqs(&env.log(&all).ok().json_lines())
}

/// `chunk` without what the store assigns, ready to be appended elsewhere.
pub(crate) fn portable(c: &Value) -> Value {
    let mut c = c.clone();
    for k in ["id", "session", "seq", "ts"] {
        c.as_object_mut().unwrap().remove(k);
    }
    c
}

/// Kills the child when the test ends, pass or fail.
pub(crate) struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn bash(env: &TestEnv, script: &str) -> crate::support::Run {
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
pub(crate) fn assert_in_order(hay: &str, needles: &[&str]) {
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
    // In a pipe: one tab-separated row per session, no header (the terminal table is in
    // terminal.rs).
    let table = env.log(&["ls"]).ok().stdout;
    assert_eq!(table.lines().count(), 2, "{table}");
    let row = |title: &str| -> Vec<&str> {
        let line = table
            .lines()
            .find(|l| l.contains(title))
            .unwrap_or_else(|| panic!("{title} missing:\n{table}"));
        line.split('\t').collect()
    };
    let json = env.log(&["ls", "--json"]).ok().json_lines();
    let r = row("fold demo");
    assert_eq!(
        json[1]["handle"], r[0],
        "the ID column shows the handle: {r:?}"
    );
    assert_eq!(&r[1..5], ["fold demo", "chat", "9", "idle"]);
    assert!(r[5].ends_with(" ago"), "{r:?}");
    assert_eq!(r[6], ".", "{r:?}");
    let r = row("second one");
    assert_eq!(json[0]["handle"], r[0], "{r:?}");
    assert_eq!(&r[1..5], ["second one", "chat", "1", "idle"]);

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
        json!({"turns": 2, "input": 30, "output": 12, "cache_read": 0, "cache_write": 0,
               "cost_usd": 0.0})
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
// search

#[test]
fn search_finds_words_and_names_the_session_of_each_hit() {
    let env = TestEnv::new();
    let one = env.new_session("one", "the quick brown fox jumps");
    let two = env.new_session("two", "a lazy brown dog sleeps");
    env.append(&two, &[chunk::assistant("the dog is brown indeed")]);

    let run = env.log(&["search", "fox"]).ok();
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    assert!(
        lines[0].contains("fox") && !lines[0].contains("[fox]"),
        "{}",
        lines[0]
    );
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
        run.stdout.contains("brown") && run.stdout.contains(&crate::room::handle(&env, &one)),
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
        assert!(h["snippet"].as_str().unwrap().contains("dog"), "{h}");
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
fn search_shows_the_newest_match_first_and_ranks_on_request() {
    let env = TestEnv::new();
    // The oldest chunk is the best match (the word three times in a short text); the newest
    // mentions it once in a long one.
    let s = env.new_session("ranked", "heron heron heron");
    env.append(
        &s,
        &[chunk::assistant("a middling heron note about the marsh")],
    );
    let filler = "words about nothing in particular ".repeat(40);
    env.append(&s, &[chunk::assistant(&format!("{filler} heron {filler}"))]);
    let seqs = |args: &[&str]| -> Vec<i64> {
        env.log(args)
            .ok()
            .json_lines()
            .iter()
            .map(|h| h["seq"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(seqs(&["search", "heron", "--json"]), [3, 2, 1]);
    assert_eq!(seqs(&["search", "heron", "--json", "-s", &s]), [3, 2, 1]);
    let ranked = seqs(&["search", "heron", "--json", "--sort", "rank"]);
    assert_eq!(ranked[0], 1, "{ranked:?}");
    assert_eq!(ranked.len(), 3);
    assert_eq!(
        seqs(&["search", "heron", "--json", "--sort", "rank", "-s", &s, "--limit", "1"]),
        [1]
    );
    assert_eq!(seqs(&["search", "heron", "--json", "--limit", "2"]), [3, 2]);
    let help = env.log(&["search", "--help"]).ok().stdout;
    assert!(help.contains("--sort") && help.contains("newest"), "{help}");
}

#[test]
fn search_in_a_session_finds_its_hits_however_many_newer_sessions_match() {
    let env = TestEnv::new();
    let old = env.new_session("old", "heron one");
    env.append(
        &old,
        &[chunk::assistant("heron two"), chunk::turn_end(1, 1)],
    );
    let newer = env.new_session("newer", "heron elsewhere");
    let many: Vec<_> = (0..200)
        .map(|i| chunk::assistant(&format!("heron {i}")))
        .collect();
    env.append(&newer, &many);
    // A fork of the old session made after them: its view spans both ends.
    let fork = env
        .run("ag-fork", &[&old, "-q"])
        .ok()
        .stdout
        .trim()
        .to_string();
    env.append(&fork, &[chunk::assistant("heron in the fork")]);
    let texts = |args: &[&str]| -> Vec<String> {
        env.log(args)
            .ok()
            .json_lines()
            .iter()
            .map(|h| h["data"]["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        texts(&["search", "heron", "-s", &old, "--json"]),
        ["heron two", "heron one"]
    );
    assert_eq!(
        texts(&["search", "heron", "-s", &fork, "--json"]),
        ["heron in the fork", "heron two", "heron one"]
    );
    assert_eq!(
        texts(&["search", "heron", "-s", &newer, "--json", "--limit", "1"]),
        ["heron 199"]
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
    // System records are not searched.
    env.append(&s, &[chunk::turn_end(1, 1)]);
    assert_eq!(env.log(&["search", "end_turn"]).code(1).stdout, "");
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

#[test]
fn a_peer_chunk_that_only_names_who_is_here_reads_as_that() {
    let env = TestEnv::new();
    let s = env.new_session("roster", "hello");
    env.append(
        &s,
        &[
            json!({"role": "peer", "type": "peer", "data": {"messages": [], "omitted": 0,
            "room": "w-1", "roster": [{"session": "01a00000-0000-7000-8000-000000000001",
            "handle": "pqrstu", "name": "parser work", "goal": "fix it", "where": "."}]}}),
            json!({"role": "peer", "type": "peer", "data": {"messages": [], "omitted": 0,
            "room": "w-1", "roster": []}}),
        ],
    );
    let text = env.log(&["cat", &s]).ok().stdout;
    assert!(
        text.contains("in the room now: parser work (pqrstu)"),
        "{text}"
    );
    assert!(text.contains("in the room now: nobody else"), "{text}");
}
