//! `ag-fork` end to end: O(1) forks read through the lineage, the cut, synthetic closers,
//! removal with forks, and the read-only side chat (`--btw`) against the fake provider.

use serde_json::{json, Value};

use crate::fake_provider::sse::{self, Block};
use crate::fake_provider::{FakeProvider, Reply};
use crate::prompt::{env_for, of_type, session_id, strip_cache_control, MODEL};
use crate::support::chunk::{self, step};
use crate::support::TestEnv;

/// A parent with two completed turns (the second runs a tool); returns (id, its length).
fn two_turns(env: &TestEnv) -> (String, usize) {
    let id = env
        .log_stdin(
            &["append", "--new", "--title", "main job"],
            format!("{}\n", step(chunk::user("first question"), "t1", 0)),
        )
        .ok()
        .json_lines()[0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    env.append(
        &id,
        &[
            step(chunk::assistant("first answer"), "t1", 1),
            step(chunk::turn_end(10, 2), "t1", 1),
            step(chunk::user("read the notes"), "t2", 0),
            step(
                chunk::call("c1", "read", json!({"path": "notes.txt"})),
                "t2",
                1,
            ),
            step(chunk::result("c1", "read", "1\thello"), "t2", 1),
            step(chunk::assistant("the notes say hello"), "t2", 2),
            step(chunk::turn_end(20, 3), "t2", 2),
        ],
    );
    (id, 8)
}

fn fork(env: &TestEnv, args: &[&str]) -> String {
    let run = env.run("ag-fork", args).ok();
    let id = run.stdout.trim().to_string();
    assert_eq!(id.len(), 36, "{run:?}");
    id
}

fn fold(env: &TestEnv, id: &str) -> String {
    env.log(&["fold", id]).ok().stdout
}

fn ls_ids(env: &TestEnv) -> Vec<String> {
    env.log(&["ls", "--json"])
        .ok()
        .json_lines()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn fork_reads_the_lineage_and_folds_like_its_source() {
    let env = TestEnv::new();
    let (parent, n) = two_turns(&env);
    let parent_fold = fold(&env, &parent);
    let child = fork(&env, &[&parent]);
    assert_ne!(child, parent);

    // Nothing copied: one sessions row, no chunk.
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM sessions"), 2);
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM chunks"), n as i64);
    assert_eq!(env.chunks(&child), env.chunks(&parent));
    assert_eq!(fold(&env, &child), parent_fold, "byte-identical fold");

    let show = env.log(&["show", &child]).ok().stdout;
    assert!(show.contains("lineage"), "{show}");
    assert!(
        show.contains(&format!("{parent} \"main job\" through seq {n}")),
        "{show}"
    );
    assert!(show.contains("fork of main job"), "{show}");
    let shown = env.log(&["show", &child, "--json"]).ok().json();
    assert_eq!(shown["lineage"][0]["session"], parent.as_str());
    assert_eq!(shown["lineage"][0]["through_seq"], n);

    // The parent goes on: the child's view and fold stay as they were.
    env.append(
        &parent,
        &[
            step(chunk::user("more work"), "t3", 0),
            step(chunk::assistant("done more"), "t3", 1),
            step(chunk::turn_end(30, 4), "t3", 1),
        ],
    );
    assert_eq!(fold(&env, &child), parent_fold);
    let pc = env.chunks(&parent);
    assert_eq!(env.chunks(&child), pc[..n].to_vec());

    // The child's own chunks continue the numbering after the cut.
    let own = env.append(&child, &[step(chunk::user("child speaks"), "c1", 0)]);
    assert_eq!(own[0]["seq"], n as i64 + 1);
    let found = env.log(&["search", "speaks", "-s", &child]).ok().stdout;
    assert!(found.contains("speaks"), "{found}");
    let found = env.log(&["search", "notes", "-s", &child]).ok().stdout;
    assert!(
        found.contains("say hello"),
        "inherited chunks are found: {found}"
    );

    // A fork of a fork: the cut is the grandparent's latest turn end still.
    let grand = {
        env.append(
            &child,
            &[
                step(chunk::assistant("child answer"), "c1", 1),
                step(chunk::turn_end(1, 1), "c1", 1),
            ],
        );
        let run = env
            .run("ag-fork", &[&child, "--json", "--title", "grandchild"])
            .ok();
        run.json()
    };
    assert_eq!(grand["fork_of"], child.as_str());
    assert_eq!(grand["fork_seq"], n as i64 + 3);
    assert_eq!(grand["title"], "grandchild");
    assert_eq!(grand["kind"], "chat");
    let g = grand["id"].as_str().unwrap();
    assert_eq!(env.chunks(g), env.chunks(&child));
    assert_eq!(fold(&env, g), fold(&env, &child));
    let show = env.log(&["show", g]).ok().stdout;
    assert!(show.contains(&parent) && show.contains(&child), "{show}");

    // --at cuts earlier: the view is the prefix.
    let early = fork(&env, &[&parent, "--at", "3"]);
    assert_eq!(env.chunks(&early), pc[..3].to_vec());
    env.run("ag-fork", &[&parent, "--at", "0"]).code(2);
    env.run("ag-fork", &[&parent, "--at", "999"]).code(2);
    env.run("ag-fork", &["nosuch"]).code(4);
}

#[test]
fn fork_at_inside_an_open_turn_closes_the_open_calls() {
    let env = TestEnv::new();
    let (parent, n) = two_turns(&env);
    env.append(
        &parent,
        &[
            step(chunk::user("do two things"), "t3", 0),
            step(chunk::call("a", "read", json!({"path": "x"})), "t3", 1),
            step(chunk::call("b", "glob", json!({"pattern": "*"})), "t3", 1),
            step(chunk::result("a", "read", "ok"), "t3", 1),
            step(chunk::call("c", "grep", json!({"pattern": "y"})), "t3", 2),
        ],
    );
    let len = n as i64 + 5;
    let parent_fold = fold(&env, &parent);
    let run = env
        .run("ag-fork", &[&parent, "--at", &len.to_string(), "--json"])
        .ok();
    let v = run.json();
    assert_eq!(v["closed"], 2);
    let child = v["id"].as_str().unwrap();
    let chunks = env.chunks(child);
    assert_eq!(chunks.len() as i64, len + 2);
    let closers = &chunks[len as usize..];
    for (c, (id, name)) in closers.iter().zip([("b", "glob"), ("c", "grep")]) {
        assert_eq!(c["session"], child);
        assert_eq!(c["type"], "tool_result");
        assert_eq!(c["data"]["call_id"], id);
        assert_eq!(c["data"]["name"], name);
        assert_eq!(c["data"]["is_error"], true);
        assert_eq!(c["data"]["synthetic"], true);
        assert_eq!(c["turn"], "t3");
    }
    // Persisted closers fold exactly like the fold's own stand-ins: a valid request.
    assert_eq!(fold(&env, child), parent_fold);
    // A cut between a call and its result closes the call too.
    let mid = fork(&env, &[&parent, "--at", "5"]);
    let mc = env.chunks(&mid);
    assert_eq!(mc.len(), 6);
    assert_eq!(mc[5]["data"]["call_id"], "c1");
    assert_eq!(mc[5]["data"]["synthetic"], true);
}

#[test]
fn fork_without_a_completed_turn_is_refused() {
    let env = TestEnv::new();
    let id = env.new_session("fresh", "no answer yet");
    let before = ls_ids(&env);
    let run = env.run("ag-fork", &[&id]).code(3);
    assert!(run.stderr.contains("no completed turn"), "{}", run.stderr);
    assert!(run.stderr.contains("--at"), "{}", run.stderr);
    let run = env
        .run("ag-fork", &[&id, "--btw", "what?", "-m", "echo"])
        .code(3);
    assert!(
        run.stderr
            .contains("the side chat needs one completed turn in this session first"),
        "{}",
        run.stderr
    );
    assert_eq!(ls_ids(&env), before, "no child created");
    // --at still works inside the open turn.
    fork(&env, &[&id, "--at", "1"]);
}

#[test]
fn removing_a_forked_session_needs_cascade() {
    let env = TestEnv::new();
    let (parent, _) = two_turns(&env);
    let child = fork(&env, &[&parent]);
    let grand = fork(&env, &[&child, "--at", "2"]);
    let run = env.log(&["rm", &parent]).code(3);
    assert!(run.stderr.contains("has forks"), "{}", run.stderr);
    assert_eq!(ls_ids(&env).len(), 3);
    env.log(&["rm", &parent, "--cascade"]).ok();
    assert!(ls_ids(&env).is_empty());
    let _ = grand;
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM chunks"), 0);
}

#[test]
fn fork_tools_narrow_and_never_widen() {
    let env = TestEnv::new();
    let (parent, _) = two_turns(&env);
    // A session with no stored list has the read-only default; asking for write adds nothing.
    let run = env
        .run("ag-fork", &[&parent, "--tools", "read,write", "--json"])
        .ok();
    assert_eq!(run.json()["tools"], json!(["read"]));
    assert!(run.stderr.contains("may not use write"), "{}", run.stderr);
    let run = env.run("ag-fork", &[&parent, "--read-only", "--json"]).ok();
    assert_eq!(
        run.json()["tools"],
        json!(["read", "glob", "grep", "recall"])
    );
}

// ---------------------------------------------------------------------------------------------
// The side chat

fn tool(id: &str, name: &str, input: Value) -> Block {
    Block::Tool {
        id: id.into(),
        name: name.into(),
        input,
    }
}

/// A parent run through ag-prompt against the fake: a read, then an answer (two requests).
fn prompted_parent(fake: &FakeProvider, env: &TestEnv, tools: &str) -> String {
    env.write_file("notes.txt", "hello from the notes\n");
    fake.push(Reply::Sse(sse::anthropic(
        &[
            Block::Text("Reading.".into()),
            tool("toolu_1", "read", json!({"path": "notes.txt"})),
        ],
        "tool_use",
        (10, 5, 0, 0),
    )));
    fake.push(Reply::Sse(sse::anthropic_text("The notes say hello.")));
    let run = env
        .run(
            "ag-prompt",
            &[
                "-m",
                MODEL,
                "--system",
                "You are the main agent.",
                "--tools",
                tools,
                "what do the notes say?",
            ],
        )
        .ok();
    session_id(&run)
}

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn sneaky_answer(fake: &FakeProvider, answer: &str) {
    fake.push(Reply::Sse(sse::anthropic(
        &[
            tool(
                "toolu_w",
                "write",
                json!({"path": "pwned.txt", "content": "x"}),
            ),
            tool("toolu_b", "bash", json!({"command": "touch pwned"})),
        ],
        "tool_use",
        (10, 5, 0, 0),
    )));
    fake.push(Reply::Sse(sse::anthropic_text(answer)));
}

#[track_caller]
fn assert_denied(chunks: &[Value], names: &[&str]) {
    let results = of_type(chunks, Some("tool"), "tool_result");
    let denied: Vec<&Value> = results
        .iter()
        .copied()
        .filter(|r| names.contains(&r["data"]["name"].as_str().unwrap()))
        .collect();
    assert_eq!(denied.len(), names.len(), "{chunks:?}");
    for r in denied {
        assert_eq!(r["data"]["is_error"], true);
        assert!(
            r["data"]["result"]
                .as_str()
                .unwrap()
                .contains("not allowed"),
            "{r}"
        );
    }
}

#[test]
fn btw_is_a_read_only_side_chat_at_every_layer() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    let parent = prompted_parent(&fake, &env, "all");
    let parent_len = env.chunks(&parent).len();
    sneaky_answer(&fake, "The notes say hello; I changed nothing.");
    let q = "what do the notes say, and could you also fix the typo in them while you are at it?";
    let run = env.run("ag-fork", &[&parent, "--btw", q]).ok();
    assert!(
        run.stdout
            .contains("The notes say hello; I changed nothing."),
        "{}",
        run.stdout
    );
    let child = session_id(&run);
    assert!(run.stderr.contains(&child));
    assert!(!env.cwd.join("pwned.txt").exists());
    assert!(!env.cwd.join("pwned").exists());

    let shown = env.log(&["show", &child, "--json"]).ok().json();
    assert_eq!(shown["kind"], "side");
    assert_eq!(shown["fork_of"], parent.as_str());
    assert_eq!(shown["fork_seq"], parent_len as i64);
    let title = shown["title"].as_str().unwrap();
    assert!(title.starts_with("BTW · what do the notes say"), "{title}");
    assert!(title.ends_with('…'), "{title}");
    let show = env.log(&["show", &child]).ok().stdout;
    assert!(
        show.contains("tools     read, glob, grep, recall"),
        "{show}"
    );
    assert!(show.contains("lineage"), "{show}");

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4);
    let first = &reqs[2].body;
    assert_eq!(names(&first["tools"]), ["read", "glob", "grep", "recall"]);
    let system = first["system"].to_string();
    assert!(system.contains("You are the main agent."), "{system}");
    assert!(system.contains("read-only side chat forked from the conversation above"));
    assert!(system.contains("send them back to the main conversation"));
    let chunks = env.chunks(&child);
    assert_denied(&chunks, &["write", "bash"]);

    // Follow-ups stay read-only, --tools all or not, also after a rename.
    for (i, rename) in [false, true].into_iter().enumerate() {
        if rename {
            env.log(&["title", &child, "just a chat"]).ok();
        }
        sneaky_answer(&fake, "still nothing");
        let run = env
            .run(
                "ag-prompt",
                &["-s", &child, "--tools", "all", "now write it"],
            )
            .ok();
        assert!(run.stdout.contains("still nothing"));
        assert!(!env.cwd.join("pwned.txt").exists());
        let reqs = fake.requests();
        let req = &reqs[4 + 2 * i].body;
        assert_eq!(names(&req["tools"]), ["read", "glob", "grep", "recall"]);
        assert!(req["system"].to_string().contains("read-only side chat"));
        let chunks = env.chunks(&child);
        let results: Vec<&Value> = of_type(&chunks, Some("tool"), "tool_result")
            .into_iter()
            .filter(|r| r["data"]["name"] != "read")
            .collect();
        assert_eq!(results.len(), 2 * (i + 2), "the inherited read aside");
        assert!(results.iter().all(|r| r["data"]["is_error"] == true));
    }
    assert_eq!(
        env.log(&["show", &child, "--json"]).ok().json()["title"],
        "just a chat"
    );
}

#[test]
fn btw_json_prints_the_fork_and_live_events() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    let parent = prompted_parent(&fake, &env, "read-only");
    fake.push(Reply::Sse(sse::anthropic_text("yes")));
    let run = env
        .run("ag-fork", &[&parent, "--btw", "ok?", "--json"])
        .ok();
    let lines = run.json_lines();
    assert_eq!(lines[0]["type"], "fork");
    assert_eq!(lines[0]["kind"], "side");
    assert_eq!(lines[0]["title"], "BTW · ok?");
    assert_eq!(lines[0]["tools"], json!(["read", "glob", "grep", "recall"]));
    assert!(lines.iter().any(|l| l["type"] == "turn-done"));
}

#[test]
fn btw_model_unavailable_keeps_the_child_and_says_so() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    let parent = prompted_parent(&fake, &env, "read-only");
    for _ in 0..3 {
        fake.push(Reply::Status {
            code: 503,
            retry_after: None,
            body:
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "down"}})
                    .to_string(),
        });
    }
    let run = env
        .run("ag-fork", &[&parent, "--btw", "still there?"])
        .code(75);
    let child = session_id(&run);
    assert!(
        run.stderr.contains(&format!(
            "the model is unavailable; the side chat {child} was kept"
        )),
        "{}",
        run.stderr
    );
    assert!(ls_ids(&env).contains(&child));
    let chunks = env.chunks(&child);
    assert_eq!(of_type(&chunks, None, "error").len(), 1);
}

#[test]
fn btw_prompt_rejected_keeps_the_child() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    let parent = prompted_parent(&fake, &env, "read-only");
    fake.push(Reply::Status {
        code: 400,
        retry_after: None,
        body: json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}})
            .to_string(),
    });
    let run = env.run("ag-fork", &[&parent, "--btw", "huh?"]).code(1);
    let child = session_id(&run);
    assert!(
        run.stderr.contains(&format!(
            "the side-chat prompt was rejected; the side chat {child} was kept for inspection"
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("400"), "{}", run.stderr);
    assert!(ls_ids(&env).contains(&child));
    assert_eq!(fake.requests().len(), 3, "a 400 is not retried");
}

#[test]
fn btw_keep_cache_shares_the_parent_prefix_and_still_denies_writes() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    let parent = prompted_parent(&fake, &env, "all");
    sneaky_answer(&fake, "answered from cache");
    let run = env
        .run(
            "ag-fork",
            &[&parent, "--btw", "what was read?", "--keep-cache"],
        )
        .ok();
    assert!(run.stdout.contains("answered from cache"));
    assert!(!env.cwd.join("pwned.txt").exists());
    assert!(!env.cwd.join("pwned").exists());
    let child = session_id(&run);
    assert_denied(&env.chunks(&child), &["write", "bash"]);

    let reqs = fake.requests();
    let (last_parent, first_side) = (&reqs[1], &reqs[2]);
    assert_eq!(
        first_side.body["tools"], last_parent.body["tools"],
        "the offered tools are the parent's"
    );
    assert_eq!(
        names(&first_side.body["tools"]).len(),
        ag::policy::Tool::all().count()
    );
    let mut ps = last_parent.body["system"].clone();
    let mut ss = first_side.body["system"].clone();
    strip_cache_control(&mut ps);
    strip_cache_control(&mut ss);
    assert_eq!(ps, ss);
    assert_eq!(
        first_side.body["system"].to_string(),
        last_parent.body["system"].to_string(),
        "system byte-identical"
    );
    // The parent's last request messages are a byte prefix of the side chat's first.
    let mut pm = last_parent.body["messages"].clone();
    let mut sm = first_side.body["messages"].clone();
    strip_cache_control(&mut pm);
    strip_cache_control(&mut sm);
    let pm = pm.as_array().unwrap();
    let sm = sm.as_array().unwrap();
    assert!(sm.len() > pm.len());
    let prefix = |v: &[Value]| serde_json::to_string(v).unwrap();
    let p = prefix(pm);
    let s = prefix(&sm[..pm.len()]);
    assert_eq!(p, s);
    // The rules travel with the question.
    let q = sm.last().unwrap().to_string();
    assert!(q.contains("read-only side chat"), "{q}");
    assert!(q.contains("what was read?"), "{q}");
    // The policy still says read-only.
    let shown = env.log(&["show", &child, "--json"]).ok().json();
    assert_eq!(shown["kind"], "side");
}
