//! Scripts running side by side: each continues its own session with `-s last`, `-c` and
//! `AG_SESSION`, and no message lands in another script's session.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::TestEnv;

/// Start `sh -c SCRIPT sh N` in `dir` with the test's environment.
fn start(env: &TestEnv, dir: &std::path::Path, script: &str, n: usize) -> std::process::Child {
    let mut cmd = Command::new("sh");
    cmd.env_clear();
    for (k, v) in &env.env {
        cmd.env(k, v);
    }
    cmd.current_dir(dir)
        .args(["-c", script, "sh", &n.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_all(children: Vec<std::process::Child>) {
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a script failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Each session's (role, text) pairs, in order.
fn said(env: &TestEnv, session: &Value) -> Vec<(String, String)> {
    env.chunks(session["id"].as_str().unwrap())
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| {
            (
                c["role"].as_str().unwrap().to_string(),
                c["data"]["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every session holds exactly one script's one round: its first message, then each later
/// one with the same tag, and the echo model's answers to its own prompt.
fn assert_rounds_kept_apart(env: &TestEnv, expected_sessions: usize, later: &[&str]) {
    let sessions = env.log(&["ls", "--json", "--any"]).ok().json_lines();
    assert_eq!(sessions.len(), expected_sessions);
    for s in &sessions {
        let said = said(env, s);
        let tag = said[0]
            .1
            .strip_prefix("first ")
            .unwrap_or_else(|| panic!("starts with its first message: {said:?}"))
            .to_string();
        let users: Vec<&str> = said
            .iter()
            .filter(|(r, _)| r == "user")
            .map(|(_, t)| t.as_str())
            .collect();
        let mut want = vec![format!("first {tag}")];
        want.extend(later.iter().map(|w| format!("{w} {tag}")));
        assert_eq!(users, want, "session {}", s["id"]);
        for (role, text) in said.iter().filter(|(r, _)| r == "assistant") {
            assert!(
                text.contains(&tag),
                "{role}: {text:?} in session {}",
                s["id"]
            );
        }
    }
}

#[test]
fn four_scripts_in_their_own_directories_continue_their_own_sessions() {
    let env = TestEnv::new();
    let script = "for i in 1 2 3; do \
                    ag-log append -q --new \"first $1.$i\" >/dev/null || exit 1; \
                    ag-log append -q -s last \"second $1.$i\" >/dev/null || exit 1; \
                    ag-prompt -q -c -m echo \"third $1.$i\" >/dev/null || exit 1; \
                  done";
    let children = (1..=4)
        .map(|n| {
            let dir = env.cwd.join(format!("script{n}"));
            std::fs::create_dir_all(&dir).unwrap();
            start(&env, &dir, script, n)
        })
        .collect();
    wait_all(children);
    assert_rounds_kept_apart(&env, 12, &["second", "third"]);
}

#[test]
fn four_scripts_in_one_directory_pinned_by_ag_session_keep_apart() {
    let env = TestEnv::new();
    // A script pins its session once; `last`, `-c` and a nested shell all follow it.
    let script = "for i in 1 2 3; do \
                    AG_SESSION=$(ag-log append -q --new \"first $1.$i\") || exit 1; \
                    export AG_SESSION; \
                    ag-log append -q -s last \"second $1.$i\" >/dev/null || exit 1; \
                    ag-prompt -q -c -m echo \"third $1.$i\" >/dev/null || exit 1; \
                    sh -c 'ag-log append -q -s last \"fourth $1\"' sh \"$1.$i\" >/dev/null || exit 1; \
                  done";
    let children = (1..=4).map(|n| start(&env, &env.cwd, script, n)).collect();
    wait_all(children);
    assert_rounds_kept_apart(&env, 12, &["second", "third", "fourth"]);
}

/// `--name NAME` is one command for a job that keeps one session: the first run starts it
/// (titled NAME), later runs continue it, another directory has its own, and two runs
/// starting together end in the same session.
#[test]
fn a_named_session_is_made_on_the_first_run_and_continued_by_the_next() {
    let env = TestEnv::new();
    let run = |dir: &std::path::Path, prompt: &str| {
        let mut c = env.command("ag-prompt");
        c.current_dir(dir).args([
            "-m",
            "echo",
            "--name",
            "nightly review",
            "--output",
            "json",
            prompt,
        ]);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["session"].as_str().unwrap().to_string()
    };
    let first = run(&env.cwd, "monday");
    let second = run(&env.cwd, "tuesday");
    assert_eq!(first, second);
    let texts: Vec<String> = env
        .chunks(&first)
        .iter()
        .filter(|c| c["role"] == "user")
        .map(|c| c["data"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, ["monday", "tuesday"]);
    let shown = env.log(&["show", &first, "--json"]).ok().json();
    assert_eq!(shown["title"], "nightly review");
    // Another directory: a session of its own.
    let other = env.cwd.join("other");
    std::fs::create_dir_all(&other).unwrap();
    assert_ne!(run(&other, "wednesday"), first);
    // Two runs at once with a new name: one session, both prompts in it.
    let racers: Vec<_> = (0..2)
        .map(|i| {
            let mut c = env.command("ag-prompt");
            c.args(["-m", "echo", "--name", "race", &format!("racer {i}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    wait_all(racers);
    let named: Vec<Value> = env
        .log(&["ls", "--json", "--any"])
        .ok()
        .json_lines()
        .into_iter()
        .filter(|s| s["title"] == "race")
        .collect();
    assert_eq!(named.len(), 1, "{named:?}");
    let users = env
        .chunks(named[0]["id"].as_str().unwrap())
        .iter()
        .filter(|c| c["role"] == "user")
        .count();
    assert_eq!(users, 2);
    let bad = env.run("ag-prompt", &["-m", "echo", "--name", "x", "-c", "hi"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

/// Without a terminal (a cron job), `-c` continues only what the job's own shell made: never
/// the chat a person last had in the directory; the error says to use --name.
#[test]
fn continue_without_a_terminal_takes_only_the_jobs_own_session() {
    let env = TestEnv::new();
    // setsid: no controlling terminal, as under cron, wherever the tests run.
    let job = |script: &str| {
        let mut c = Command::new("setsid");
        c.env_clear();
        for (k, v) in &env.env {
            c.env(k, v);
        }
        c.current_dir(&env.cwd)
            .args(["-w", "sh", "-c", script])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let person = job("ag-prompt -m echo 'a person chatting' >/dev/null");
    assert!(person.status.success());
    let cron = job("ag-prompt -c -m echo 'nightly'");
    assert_eq!(
        cron.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&cron.stderr)
    );
    let err = String::from_utf8_lossy(&cron.stderr);
    assert!(err.contains("--name NAME"), "{err}");
    // Within one job, -c continues what that job made.
    let own = job(
        "ag-prompt -m echo 'step one' >/dev/null && ag-prompt -c -m echo 'step two' >/dev/null",
    );
    assert!(
        own.status.success(),
        "{}",
        String::from_utf8_lossy(&own.stderr)
    );
    let sessions = env.log(&["ls", "--json", "--any"]).ok().json_lines();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let two = sessions
        .iter()
        .find(|s| s["title"] == "step one")
        .expect("the job's session");
    let users = env
        .chunks(two["id"].as_str().unwrap())
        .iter()
        .filter(|c| c["role"] == "user")
        .count();
    assert_eq!(users, 2);
}
