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
