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
