//! `ag-summon ps`, `ag-room who` and `ag-room claims` print the way `ag-log ls` does: a table
//! that fits the terminal (cut with `…`) on a terminal, tab-separated rows without header or
//! padding in a pipe, ids only with `-q`. And `ag-summon AGENT TASK` runs an agent.

use std::time::Duration;

use crate::prompt::{env_with, script, spawn, wait_until};
use crate::summon::with_agents;
use crate::support::{Run, TestEnv};

/// `BIN ARGS` on a pseudo-terminal `columns` wide (util-linux `script`).
fn on_terminal(env: &TestEnv, bin: &str, args: &str, columns: u16) -> Run {
    let cmd = format!("{} {args}", crate::support::bin(bin).display());
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .env("COLUMNS", columns.to_string())
        .current_dir(&env.cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1) from util-linux");
    let mut run = Run::from_output(out);
    run.stdout = run.stdout.replace("\r\n", "\n");
    run
}

/// The pipe form: one row per line, `cols` tab-separated cells each.
#[track_caller]
fn rows(run: &Run, cols: usize) -> Vec<Vec<String>> {
    let rows: Vec<Vec<String>> = run
        .stdout
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    assert!(
        rows.iter().all(|r| r.len() == cols),
        "{cols} columns, no header:\n{}",
        run.stdout
    );
    rows
}

/// The terminal form: a header naming `first`, every line within `columns`, a cut marked.
#[track_caller]
fn fits(run: &Run, first: &str, columns: usize) {
    assert_eq!(run.code, 0, "{}", run.stdout);
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(lines[0].contains(first), "a header: {}", run.stdout);
    for l in &lines {
        assert!(
            l.chars().count() <= columns,
            "{} chars: {l:?}",
            l.chars().count()
        );
    }
    assert!(
        run.stdout.contains('…'),
        "a long cell is cut: {}",
        run.stdout
    );
}

const LONG: &str =
    "a task described at such length that no narrow terminal could ever show it whole";

#[test]
fn summon_runs_agent_then_task_and_ps_prints_a_table_rows_or_ids() {
    let env = env_with(None, "");
    with_agents(&env);
    let run = env.run("ag-summon", &["finder", LONG]).ok();
    assert!(run.stdout.contains("The answer is 42."), "{}", run.stdout);
    // The flag form still works, and the wrong forms say what the right one is.
    env.run("ag-summon", &["--agent", "finder", "again"]).ok();
    let one = env.run("ag-summon", &["where is it?"]).code(2);
    assert!(
        one.stderr.contains("ag-summon AGENT TASK"),
        "{}",
        one.stderr
    );
    let twice = env
        .run("ag-summon", &["-a", "finder", "finder", "x"])
        .code(2);
    assert!(
        twice.stderr.contains("ag-summon AGENT TASK"),
        "{}",
        twice.stderr
    );
    env.run("ag-summon", &["agents"]).ok();

    let ps = env.run("ag-summon", &["ps", "--all"]).ok();
    let ps_rows = rows(&ps, 7);
    assert_eq!(ps_rows.len(), 2, "{}", ps.stdout);
    assert!(
        ps_rows.iter().all(|r| r[2] == "finder" && r[3] == "done"),
        "{ps_rows:?}"
    );
    let ids = env.run("ag-summon", &["ps", "--all", "-q"]).ok();
    let ids: Vec<&str> = ids.stdout.lines().collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|i| i.len() == 36), "{ids:?}");
    fits(&on_terminal(&env, "ag-summon", "ps --all", 60), "AGENT", 60);
}

#[test]
fn who_and_claims_print_a_table_rows_or_ids() {
    let env = env_with(None, "");
    let gate = env.dir.path().join("gate");
    let model = script(
        &env,
        "wait.toml",
        &format!(
            "[[step]]\ntext = \"waiting\"\nwait_for = \"{}\"\n",
            gate.display()
        ),
    );
    let mut bg = spawn(&env, &["-m", &model, LONG]);
    let id = bg.session();
    let live = wait_until(Duration::from_secs(30), || {
        env.run("ag-room", &["who", "-q"]).stdout.contains(&id)
    });
    let who = env.run("ag-room", &["who"]);
    let who_q = env.run("ag-room", &["who", "-q"]);
    let who_tty = on_terminal(&env, "ag-room", "who", 70);
    std::fs::write(&gate, "").unwrap();
    bg.wait(Duration::from_secs(30));
    assert!(live, "the session never showed as live");
    let who_rows = rows(&who.ok(), 9);
    assert_eq!(who_rows.len(), 1);
    assert!(
        who_rows[0][1].starts_with("a task described"),
        "{who_rows:?}"
    );
    assert_eq!(who_q.ok().stdout, format!("{id}\n"));
    fits(&who_tty, "GOAL", 70);

    env.run(
        "ag-room",
        &["claim", "--from", "bob", "--intent", LONG, "src/*"],
    )
    .ok();
    let claims = env.run("ag-room", &["claims"]).ok();
    let rows = rows(&claims, 6);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][3], "src/*");
    assert_eq!(rows[0][5], LONG);
    let ids = env.run("ag-room", &["claims", "-q"]).ok();
    assert_eq!(ids.stdout, format!("{}\n", rows[0][0]));
    fits(&on_terminal(&env, "ag-room", "claims", 60), "INTENT", 60);
    let none = TestEnv::new();
    let empty = none.run("ag-room", &["claims"]).ok();
    assert_eq!(empty.stdout, "");
}
