//! Parents and their subagents: an interrupt while a parent waits for a subagent cancels it,
//! and a parent whose subagents run is removed only with `--cascade`, which cancels them first.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::prompt::{env_with, script, session_id, spawn, wait_until};
use crate::support::{rusqlite_open, TestEnv};

fn with_slow_agent(env: &TestEnv) {
    env.write_file(
        ".ag/scripts/slow.toml",
        "[[step]]\nwait_for = \"never\"\ntext = \"too late\"\n",
    );
    env.write_file(
        ".ag/agents/slow.toml",
        "description = \"Takes its time\"\nis_subagent = true\nmodels = [\"script:../scripts/slow.toml\"]\n",
    );
}

fn status_pid(env: &TestEnv, id: &str) -> (String, Option<i64>) {
    let conn = rusqlite_open(&env.db());
    conn.query_row(
        "SELECT status, pid FROM sessions WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

fn children(env: &TestEnv, parent: &str) -> Vec<Value> {
    env.run("ag-summon", &["ps", "--json", "--parent", parent])
        .ok()
        .json_lines()
}

fn gone(pid: i64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next().map(str::to_string));
    stat.is_empty() || matches!(state.as_deref(), Some("Z" | "X"))
}

/// The running child of `parent`, once it has an owner process: (id, pid).
fn running_child(env: &TestEnv, parent: &str) -> (String, i64) {
    let mut found = None;
    let ok = wait_until(Duration::from_secs(30), || {
        found = children(env, parent).first().and_then(|k| {
            let id = k["id"].as_str()?.to_string();
            match status_pid(env, &id) {
                (s, Some(pid)) if s == "running" => Some((id, pid)),
                _ => None,
            }
        });
        found.is_some()
    });
    assert!(ok, "no running child of {parent}");
    found.unwrap()
}

#[test]
fn ctrl_c_on_a_parent_waiting_in_summon_cancels_the_subagent() {
    let env = env_with(None, "");
    with_slow_agent(&env);
    let parent = script(
        &env,
        "parent.toml",
        "[[step]]\ntool_calls = [{ name = \"summon\", arguments = { agent = \"slow\", task = \"q\" } }]\n\
         [[step]]\ntext = \"never reached\"\n",
    );
    let mut p = spawn(&env, &["-m", &parent, "--tools", "read,summon", "go"]);
    let pid_parent = p.session();
    let (child, pid) = running_child(&env, &pid_parent);
    // SAFETY: kill(2) takes two integers.
    unsafe { libc::kill(p.pid() as i32, libc::SIGINT) };
    let r = p.wait(Duration::from_secs(30));
    assert_eq!(r.code, 130, "{}", r.stderr);
    let t = Instant::now();
    while !gone(pid) && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(pid), "the subagent's process is gone");
    assert_eq!(status_pid(&env, &child).0, "cancelled");
    let res = env
        .chunks(&pid_parent)
        .into_iter()
        .find(|c| c["type"] == "tool_result" && c["data"]["name"] == "summon")
        .expect("the summon call has its result");
    assert!(
        res["data"]["result"]
            .as_str()
            .unwrap()
            .contains("status: cancelled (the turn was interrupted while waiting for it)"),
        "{res}"
    );
}

#[test]
fn removing_a_parent_with_running_subagents_needs_cascade_which_cancels_them() {
    let env = env_with(None, "");
    with_slow_agent(&env);
    let parent = script(
        &env,
        "parent.toml",
        "[[step]]\ntool_calls = [{ name = \"summon\", arguments = { agent = \"slow\", task = \"q\", background = true } }]\n\
         [[step]]\ntext = \"started\"\n",
    );
    let run = env
        .run(
            "ag-prompt",
            &["-m", &parent, "--tools", "read,summon", "go"],
        )
        .ok();
    let parent_id = session_id(&run);
    let (child, pid) = running_child(&env, &parent_id);
    let refused = env.log(&["rm", "-f", &parent_id]).code(3);
    assert!(
        refused.stderr.contains("running subagents") && refused.stderr.contains("--cascade"),
        "{}",
        refused.stderr
    );
    assert_eq!(status_pid(&env, &child).0, "running", "nothing was touched");
    let removed = env.log(&["rm", "-f", &parent_id, "--cascade"]).ok();
    assert!(
        removed.stderr.contains(&format!("cancelled {child}")),
        "{}",
        removed.stderr
    );
    assert!(gone(pid));
    assert_eq!(status_pid(&env, &child).0, "cancelled");
    env.log(&["show", &parent_id]).code(4);
}
