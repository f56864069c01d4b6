//! A busy session: `ag-prompt --wait` waits for the turn that takes a queued prompt and prints
//! its answer; `ag-log rm` refuses a running session (exit 3), and asks on a terminal.

use std::time::Duration;

use crate::prompt::{env_with, script, spawn, wait_for_chunk};
use crate::support::TestEnv;

/// A session held mid-turn by a gate: the first step says "working" and waits for `gate`;
/// the next step answers whatever was queued meanwhile.
fn held(env: &TestEnv, gate: &std::path::Path) -> (crate::prompt::Bg, String) {
    let model = script(
        env,
        "held.toml",
        &format!(
            "[[step]]\ntext = \"working\"\nwait_for = {gate:?}\n\
             tool_calls = [{{ name = \"glob\", arguments = {{ pattern = \"*.none\" }} }}]\n\
             [[step]]\ntext = \"the answer to the queued question\"\n"
        ),
    );
    let mut bg = spawn(env, &["-m", &model, "--title", "held", "start"]);
    let id = bg.session();
    wait_for_chunk(env, &id, |c| c["role"] == "assistant");
    (bg, id)
}

#[test]
fn wait_blocks_until_the_turn_that_took_the_prompt_ends_and_prints_its_answer() {
    let env = env_with(None, "");
    let gate = env.cwd.join("gate-wait");
    let (bg, id) = held(&env, &gate);
    let mut waiter = env
        .command("ag-prompt")
        .args([
            "-s",
            &id,
            "-m",
            "echo",
            "--wait",
            "--output",
            "json",
            "what now?",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The prompt is queued before the gate opens, so the running turn takes it.
    let queued = crate::prompt::wait_until(Duration::from_secs(30), || {
        env.sqlite_count("SELECT COUNT(*) FROM queued_input") == 1
    });
    assert!(queued, "the prompt was not queued");
    assert!(
        waiter.try_wait().unwrap().is_none(),
        "--wait returned early"
    );
    std::fs::write(&gate, "").unwrap();
    let owner = bg.wait(Duration::from_secs(30));
    assert_eq!(owner.code, 0, "{}", owner.stderr);
    let out = crate::support::Run::from_output(waiter.wait_with_output().unwrap());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["answer"], "the answer to the queued question");
    assert_eq!(v["session"], id.as_str());
    assert!(
        out.stderr.contains("waiting for that turn to end"),
        "{}",
        out.stderr
    );

    // Without --wait the queued prompt says so and returns at once (as before).
    let no_wait = env.run(
        "ag-prompt",
        &["-s", &id, "-m", "echo", "--wait", "--no-queue", "x"],
    );
    assert_eq!(
        no_wait.code, 2,
        "--wait and --no-queue conflict: {}",
        no_wait.stderr
    );
}

#[test]
fn rm_refuses_a_running_session_and_removes_it_once_idle() {
    let env = env_with(None, "");
    let gate = env.cwd.join("gate-rm");
    let (bg, id) = held(&env, &gate);
    let run = env.log(&["rm", &id]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("is running"), "{}", run.stderr);
    assert_eq!(env.log(&["show", &id]).code, 0, "nothing was removed");
    std::fs::write(&gate, "").unwrap();
    assert_eq!(bg.wait(Duration::from_secs(30)).code, 0);
    // No terminal: no question, no hang.
    env.log(&["rm", &id]).ok();
    assert_eq!(env.log(&["show", &id]).code, 4);
}

/// Runs `ag-log ARGS` on a pseudo-terminal (util-linux `script`), typing `answer`.
fn on_terminal(env: &TestEnv, args: &str, answer: &str) -> crate::support::Run {
    use std::io::Write;
    let cmd = format!("{} {args}", crate::support::bin("ag-log").display());
    let mut child = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&env.cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answer.as_bytes()).unwrap();
    // Closing stdin would end the terminal session before the question is read: keep it open
    // until the command is done.
    let out = std::thread::spawn(move || child.wait_with_output().unwrap());
    let run = crate::support::Run::from_output(out.join().unwrap());
    drop(stdin);
    run
}

#[test]
fn rm_asks_on_a_terminal_unless_forced() {
    let env = TestEnv::new();
    let id = env.new_session("keep me", "hello");
    let run = on_terminal(&env, &format!("rm {id}"), "n\n");
    assert!(run.stdout.contains("remove"), "{}", run.stdout);
    assert!(run.stdout.contains("keep me"), "{}", run.stdout);
    assert_eq!(env.log(&["show", &id]).code, 0, "answered no: kept");
    let run = on_terminal(&env, &format!("rm {id}"), "y\n");
    assert!(run.stdout.contains("[y/N]"), "{}", run.stdout);
    assert_eq!(env.log(&["show", &id]).code, 4, "answered yes: removed");
    let id = env.new_session("forced", "hello");
    let run = on_terminal(&env, &format!("rm -f {id}"), "");
    assert!(!run.stdout.contains("[y/N]"), "{}", run.stdout);
    assert_eq!(env.log(&["show", &id]).code, 4);
}
