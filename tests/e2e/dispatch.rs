//! `ag`: `ag log …` runs `ag-log …` with its exit status, `ag help` lists the commands, and
//! `ag help COMMAND` is the command's own help.

use crate::support::{Run, TestEnv};

fn ag(env: &TestEnv, args: &[&str]) -> Run {
    let out = env.command("ag").args(args).output().expect("spawn ag");
    Run::from_output(out)
}

#[test]
fn ag_runs_the_commands_with_their_arguments_and_status() {
    let env = TestEnv::new();
    let id = env.new_session("dispatched", "hello");
    let run = ag(&env, &["log", "ls", "-q"]).ok();
    assert_eq!(run.stdout, format!("{id}\n"));
    let run = ag(
        &env,
        &["prompt", "-m", "echo", "--output", "json", "say it"],
    )
    .ok();
    assert_eq!(run.json()["answer"], "say it");
    let missing = ag(&env, &["log", "show", "no-such-session"]);
    assert_eq!(missing.code, 4, "{}", missing.stderr);
    assert!(
        missing.stderr.starts_with("ag-log: error:"),
        "{}",
        missing.stderr
    );
}

#[test]
fn ag_help_lists_the_commands_and_help_command_is_its_help() {
    let env = TestEnv::new();
    for args in [&["help"][..], &[]] {
        let run = ag(&env, args).ok();
        for c in ["log", "prompt", "fork", "room", "summon"] {
            assert!(run.stdout.contains(c), "{c}: {}", run.stdout);
        }
    }
    let run = ag(&env, &["help", "log"]).ok();
    assert!(
        run.stdout.contains("append-only chunk log"),
        "{}",
        run.stdout
    );
    let run = ag(&env, &["help", "log", "cat"]).ok();
    assert!(run.stdout.contains("--turn"), "{}", run.stdout);
    let bad = ag(&env, &["nope"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("no command \"nope\""), "{}", bad.stderr);
    assert_eq!(ag(&env, &["--json", "log"]).code, 2);
}

/// `ag` holds every command: started as `ag-log` (as the installed `ag-log` starts it) it is
/// `ag-log`; the launchers run it under their own name; a launcher without `ag` beside it says
/// so and how to fix it.
#[test]
fn ag_is_every_command_under_its_name_and_the_launchers_need_it() {
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new();
    let id = env.new_session("multi-call", "hello");
    let mut as_log = env.command("ag");
    as_log.arg0("ag-log").args(["ls", "-q"]);
    let run = Run::from_output(as_log.output().unwrap()).ok();
    assert_eq!(run.stdout, format!("{id}\n"));
    let mut as_prompt = env.command("ag");
    as_prompt.arg0("/somewhere/ag-prompt").arg("--version");
    let run = Run::from_output(as_prompt.output().unwrap()).ok();
    assert!(run.stdout.starts_with("ag-prompt "), "{}", run.stdout);
    // Each launcher is its command, errors named after it.
    let missing = env.run("ag-fork", &["no-such-session"]);
    assert_eq!(missing.code, 4, "{}", missing.stderr);
    assert!(
        missing.stderr.starts_with("ag-fork: error:"),
        "{}",
        missing.stderr
    );
    // Alone, a launcher cannot run.
    let alone = env.dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    std::fs::copy(crate::support::bin("ag-summon"), alone.join("ag-summon")).unwrap();
    let out = std::process::Command::new(alone.join("ag-summon"))
        .arg("--version")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{stderr}");
    assert!(
        stderr.starts_with("ag-summon: error: there is no `ag` beside"),
        "{stderr}"
    );
    assert!(stderr.contains("install both"), "{stderr}");
}
