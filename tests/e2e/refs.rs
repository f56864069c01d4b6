//! Naming sessions: `last` is this directory's (and this script's) latest chat session,
//! `AG_SESSION` and `--any`, handles, titles, `last~N`, `--session-id`, turn handles, and
//! hints that name only references that resolve.

use std::process::{Command, Stdio};

use crate::support::TestEnv;

fn in_dir(env: &TestEnv, dir: &std::path::Path, name: &str, args: &[&str]) -> crate::support::Run {
    let mut cmd = env.command(name);
    cmd.current_dir(dir).args(args);
    crate::support::Run::from_output(cmd.output().expect("spawn"))
}

fn subdir(env: &TestEnv, name: &str) -> std::path::PathBuf {
    let d = env.cwd.join(name);
    std::fs::create_dir_all(&d).unwrap();
    d.canonicalize().unwrap()
}

fn texts(env: &TestEnv, session: &str) -> Vec<String> {
    env.chunks(session)
        .iter()
        .filter_map(|c| c["data"]["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn four_scripts_side_by_side_in_one_directory_each_continue_their_own_session() {
    let env = TestEnv::new();
    let script = "for i in 1 2 3 4 5; do \
                    ag-log append -q --new \"first $1.$i\" >/dev/null || exit 1; \
                    ag-log append -q -s last \"second $1.$i\" || exit 1; \
                  done";
    let children: Vec<_> = (1..=4)
        .map(|n| {
            let mut cmd = Command::new("sh");
            cmd.env_clear();
            for (k, v) in env.command("ag-log").get_envs() {
                if let Some(v) = v {
                    cmd.env(k, v);
                }
            }
            cmd.current_dir(&env.cwd)
                .args(["-c", script, "sh", &n.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let sessions = env.log(&["ls", "--json"]).ok().json_lines();
    assert_eq!(sessions.len(), 20);
    for s in &sessions {
        let t = texts(&env, s["id"].as_str().unwrap());
        let n = t[0]
            .strip_prefix("first ")
            .expect("starts with its first message");
        assert_eq!(
            t,
            [format!("first {n}"), format!("second {n}")],
            "session {}",
            s["id"]
        );
    }
}

#[test]
fn last_is_the_latest_chat_session_of_this_directory_unless_ag_session_or_any() {
    let mut env = TestEnv::new();
    let (a, b, empty) = (subdir(&env, "a"), subdir(&env, "b"), subdir(&env, "c"));
    in_dir(
        &env,
        &a,
        "ag-prompt",
        &["-m", "echo", "--title", "in a", "hello a"],
    )
    .ok();
    let a_id = in_dir(&env, &a, "ag-log", &["show", "--json"]).ok().json()["id"].clone();
    // A side chat in a is newer, but is not a chat session: `last` skips it.
    in_dir(
        &env,
        &a,
        "ag-fork",
        &["last", "--btw", "what?", "-m", "echo"],
    )
    .ok();
    in_dir(
        &env,
        &b,
        "ag-log",
        &["append", "--new", "--title", "in b", "hello b"],
    )
    .ok();

    let last_a = in_dir(&env, &a, "ag-log", &["show", "last", "--json"])
        .ok()
        .json();
    assert_eq!(last_a["id"], a_id);
    assert_eq!(last_a["title"], "in a");
    let any = in_dir(&env, &a, "ag-log", &["show", "last", "--any", "--json"])
        .ok()
        .json();
    assert_eq!(any["title"], "in b");
    in_dir(&env, &a, "ag-prompt", &["-c", "-m", "echo", "again"]).ok();
    assert_eq!(texts(&env, a_id.as_str().unwrap()).last().unwrap(), "again");

    // Nothing here: -c says so and names what is near, by handles that resolve.
    let run = in_dir(&env, &empty, "ag-prompt", &["-c", "-m", "echo", "hi"]).code(4);
    assert!(
        run.stderr
            .contains(&format!("no chat session in {}", empty.display())),
        "{}",
        run.stderr
    );
    let named: Vec<&str> = run
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("  ")?.split_whitespace().next())
        .collect();
    assert_eq!(named.len(), 3, "{}", run.stderr);
    for h in named {
        in_dir(&env, &empty, "ag-log", &["show", h]).ok();
    }
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM sessions"),
        3,
        "nothing was created"
    );

    // Inside a session's tools, AG_SESSION is what `last` means.
    env.set("AG_SESSION", a_id.as_str().unwrap());
    let pinned = in_dir(&env, &b, "ag-log", &["show", "--json"]).ok().json();
    assert_eq!(pinned["id"], a_id);
    env.set("AG_SESSION", "019a0000-0000-7000-8000-000000000000");
    in_dir(&env, &b, "ag-log", &["show"]).code(4);
}

#[test]
fn handles_titles_and_last_n_name_sessions_and_every_shown_handle_resolves() {
    let env = TestEnv::new();
    let first = env.new_session("fix the parser", "one");
    let second = env.new_session("write the README", "two");
    let third = env.new_session("write the tests", "three");
    let rows = env.log(&["ls", "--json"]).ok().json_lines();
    let handle = |id: &str| {
        rows.iter().find(|r| r["id"] == id).unwrap()["handle"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let h1 = handle(&first);
    assert_eq!(h1.len(), 6);
    assert!(h1.bytes().all(|b| (b'k'..=b'z').contains(&b)), "{h1}");
    // The table shows handles, and each one names its session.
    let table = env.log(&["ls"]).ok().stdout;
    for id in [&first, &second, &third] {
        let h = handle(id);
        assert!(table.contains(&h), "{table}");
        assert_eq!(
            env.log(&["show", &h, "--json"]).ok().json()["id"],
            id.as_str()
        );
    }
    assert_eq!(
        env.log(&["show", &h1[..4], "--json"]).ok().json()["id"],
        first.as_str()
    );
    assert_eq!(
        env.log(&["show", "PARSER", "--json"]).ok().json()["id"],
        first.as_str()
    );
    assert_eq!(
        env.log(&["show", "last~1", "--json"]).ok().json()["id"],
        second.as_str()
    );
    assert_eq!(
        env.log(&["show", "last~2", "--json"]).ok().json()["id"],
        first.as_str()
    );
    env.log(&["show", "last~3"]).code(4);
    // Ambiguous: the hint lists handles, each of which resolves.
    let run = env.log(&["show", "write"]).code(2);
    let named: Vec<String> = run
        .stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("  ")?
                .split_whitespace()
                .next()
                .map(String::from)
        })
        .collect();
    assert_eq!(named.len(), 2, "{}", run.stderr);
    for h in &named {
        env.log(&["show", h]).ok();
    }
    // The note of a new session names it by a handle that works.
    let run = env.log(&["append", "--new", "four"]).ok();
    let note = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .unwrap();
    let h = note.split_whitespace().next().unwrap();
    assert_eq!(h.len(), 6, "{note}");
    assert_eq!(texts(&env, h), ["four"]);
}

#[test]
fn session_id_is_chosen_up_front_and_q_prints_it_alone() {
    let env = TestEnv::new();
    let id = "0192f0c4-1b2a-7c3d-8e4f-5a6b7c8d9e0f";
    let run = env
        .log(&["append", "--new", "-q", "--session-id", id, "hello"])
        .ok();
    assert_eq!(run.stdout, format!("{id}\n"));
    assert_eq!(run.stderr, "");
    assert_eq!(texts(&env, id), ["hello"]);
    let again = env
        .log(&["append", "--new", "--session-id", id, "x"])
        .code(3);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    env.log(&["append", "--new", "--session-id", "nope", "x"])
        .code(2);

    let id2 = "0192f0c4-1b2a-7c3d-8e4f-5a6b7c8d9e10";
    env.run(
        "ag-prompt",
        &["--new", "--session-id", id2, "-m", "echo", "hi"],
    )
    .ok();
    assert_eq!(texts(&env, id2)[0], "hi");
    env.run("ag-prompt", &["--session-id", id2, "-m", "echo", "hi"])
        .code(3);
    let q = env.log(&["append", "--new", "-q", "plain"]).ok();
    let line = q.stdout.trim();
    assert_eq!(line.len(), 36, "{:?}", q.stdout);
    assert_eq!(texts(&env, line), ["plain"]);
}

#[test]
fn turn_headers_show_handles_that_turn_accepts() {
    let env = TestEnv::new();
    env.run("ag-prompt", &["-m", "echo", "first turn"]).ok();
    env.run("ag-prompt", &["-c", "-m", "echo", "second turn"])
        .ok();
    let cat = env.log(&["cat"]).ok().stdout;
    let handles: Vec<&str> = cat
        .lines()
        .filter_map(|l| l.strip_prefix("── turn ")?.split_whitespace().next())
        .collect();
    assert_eq!(handles.len(), 2, "{cat}");
    let only = env.log(&["cat", "--turn", handles[1]]).ok().stdout;
    assert!(
        only.contains("second turn") && !only.contains("first turn"),
        "{only}"
    );
    let run = env.log(&["cat", "--turn", "zzzzzz"]).code(4);
    assert!(run.stderr.contains("has no turn"), "{}", run.stderr);
}

#[test]
fn a_store_from_before_handles_gets_one_for_every_session() {
    let env = TestEnv::new();
    let a = env.new_session("old one", "x");
    let b = env.new_session("old two", "y");
    {
        let conn = rusqlite::Connection::open(env.db()).unwrap();
        conn.execute_batch(
            "DROP INDEX sessions_handle; DROP INDEX sessions_cwd; DROP INDEX chunks_turn; DROP INDEX chunks_peer; DROP INDEX chunks_peer_said; DROP INDEX sessions_name; DROP INDEX chunks_turn_ends; DROP TABLE model_scales;
             ALTER TABLE sessions DROP COLUMN handle;
             ALTER TABLE sessions DROP COLUMN shell_pid;
             ALTER TABLE sessions DROP COLUMN shell_start;
             ALTER TABLE imports DROP COLUMN source_cwd;
             ALTER TABLE imports DROP COLUMN source_model;
             ALTER TABLE sessions DROP COLUMN compact_failures;
             ALTER TABLE sessions DROP COLUMN compact_failed_model;
             ALTER TABLE sessions DROP COLUMN name;
             ALTER TABLE turn_totals DROP COLUMN cost_usd;
             PRAGMA user_version = 6;",
        )
        .unwrap();
    }
    let rows = env.log(&["ls", "--json"]).ok().json_lines();
    let handles: Vec<&str> = rows.iter().map(|r| r["handle"].as_str().unwrap()).collect();
    assert_eq!(handles.len(), 2);
    assert_ne!(handles[0], handles[1]);
    for (h, id) in handles.iter().zip([&b, &a]) {
        assert_eq!(h.len(), 6);
        assert_eq!(
            env.log(&["show", h, "--json"]).ok().json()["id"],
            id.as_str()
        );
    }
}

/// A title typed in a folder means that folder's session first: two folders each with a
/// "parser" session each get their own; from a third folder the title is ambiguous.
#[test]
fn a_title_means_this_folders_session_first() {
    let env = TestEnv::new();
    let (a, b, c) = (env.cwd.join("a"), env.cwd.join("b"), env.cwd.join("c"));
    for d in [&a, &b, &c] {
        std::fs::create_dir_all(d).unwrap();
    }
    let made = |dir: &std::path::Path| {
        in_dir(
            &env,
            dir,
            "ag-log",
            &["append", "--new", "-q", "--title", "parser", "hi"],
        )
        .ok()
        .stdout
        .trim()
        .to_string()
    };
    let (in_a, in_b) = (made(&a), made(&b));
    let shown = |dir: &std::path::Path| in_dir(&env, dir, "ag-log", &["show", "parser", "--json"]);
    assert_eq!(shown(&a).ok().json()["id"], in_a.as_str());
    assert_eq!(shown(&b).ok().json()["id"], in_b.as_str());
    // A fragment too.
    assert_eq!(
        in_dir(&env, &a, "ag-log", &["show", "pars", "--json"])
            .ok()
            .json()["id"],
        in_a.as_str()
    );
    assert_eq!(shown(&c).code, 2, "ambiguous from elsewhere");
    in_dir(
        &env,
        &a,
        "ag-prompt",
        &["-s", "parser", "-m", "echo", "more"],
    )
    .ok();
    let texts = env.chunks(&in_b);
    assert_eq!(
        texts.len(),
        1,
        "folder b's session was not continued from a"
    );
}
