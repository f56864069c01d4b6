//! Approvals (`--approval ask`): a call to a tool that changes something waits for a person.
//! On a real terminal (tmux) the person allows once, denies with a reason the model reads, or
//! allows for the session (remembered for the next turn); every decision is a chunk. Without a
//! terminal such a call is denied with a tool error, never left waiting; `--yes` allows what
//! the policy allows.

use std::os::unix::process::CommandExt;

use serde_json::Value;

use crate::prompt::{env_with, script, session_of};
use crate::sandbox::results;
use crate::support::{Run, TestEnv};
use crate::tmux::{self, Tmux};

/// A script whose first turn writes `a.txt`, runs `touch b.txt`, writes `c.txt`, then `d.txt`;
/// its second writes `e.txt`. The chat's approval test plays it too.
pub(crate) fn four_calls(env: &TestEnv) -> String {
    script(
        env,
        "four.toml",
        r#"
[[step]]
tool_calls = [{ name = "write", arguments = { path = "a.txt", content = "alpha\n" } }]
[[step]]
tool_calls = [{ name = "bash", arguments = { command = "touch b.txt" } }]
[[step]]
tool_calls = [{ name = "write", arguments = { path = "c.txt", content = "gamma\n" } }]
[[step]]
tool_calls = [{ name = "write", arguments = { path = "d.txt", content = "delta\n" } }]
[[step]]
text = "done"
[[step]]
tool_calls = [{ name = "write", arguments = { path = "e.txt", content = "epsilon\n" } }]
[[step]]
text = "done again"
"#,
    )
}

/// Run `ag-prompt` in a session of its own: no controlling terminal, whatever runs the tests.
fn without_terminal(env: &TestEnv, args: &[&str]) -> Run {
    let mut cmd = env.command("ag-prompt");
    cmd.args(args);
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    Run::from_output(cmd.output().expect("spawn"))
}

fn approvals(env: &TestEnv, id: &str) -> Vec<Value> {
    env.chunks(id)
        .into_iter()
        .filter(|c| c["data"]["kind"] == "approval")
        .map(|c| c["data"].clone())
        .collect()
}

#[test]
fn ask_without_a_terminal_denies_and_yes_allows() {
    let env = env_with(None, "");
    let model = four_calls(&env);
    let run = without_terminal(
        &env,
        &[
            "-m",
            &model,
            "--tools",
            "+write,+bash",
            "--approval",
            "ask",
            "go",
        ],
    );
    let run = run.ok();
    let id = session_of(&run.stderr).unwrap();
    let r = results(&env, &id);
    assert_eq!(r.len(), 4, "{r:?}");
    for (text, is_error) in &r {
        assert!(*is_error, "{r:?}");
        assert!(
            text.contains("there is no terminal to ask") && text.contains("--yes"),
            "{text}"
        );
    }
    for f in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        assert!(!env.cwd.join(f).exists(), "{f} was written");
    }
    // Nobody decided anything: nothing is recorded as a decision.
    assert!(approvals(&env, &id).is_empty());
    // The session keeps its mode; `--yes` allows this run's calls without asking.
    let run = without_terminal(&env, &["-m", &model, "--yes", "-s", &id, "again"]).ok();
    assert!(run.stdout.contains("done again"), "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("e.txt")).unwrap(),
        "epsilon\n"
    );
    let show = env.log(&["show", &id, "--json"]).ok().json_lines();
    assert_eq!(show[0]["policy"]["approval"]["mode"], "ask", "{show:?}");
}

#[test]
fn a_bad_approval_mode_is_refused_before_anything_runs() {
    let env = env_with(None, "");
    let run = env.run(
        "ag-prompt",
        &["-m", "echo", "--approval", "sometimes", "hi"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown approval mode"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_person_allows_once_denies_with_a_reason_and_allows_for_the_session() {
    if !tmux::available() {
        return;
    }
    let env = env_with(None, "");
    let model = four_calls(&env);
    let term = Tmux::shell(&env);
    term.line(&format!(
        "ag-prompt -m {model} --tools +write,+bash --approval ask go 2>../err; echo END-$?"
    ));
    // The first write: its diff, then "once".
    let screen = term.wait_for("the first question", |s| s.contains("approve? write"));
    assert!(screen.contains("+alpha"), "{screen}");
    term.line("y");
    let screen = term.wait_for("the bash question", |s| s.contains("$ touch b.txt"));
    assert!(screen.contains("approve? bash"), "{screen}");
    term.line("n not in this folder");
    term.wait_for("the second write", |s| s.contains("+gamma"));
    term.line("a");
    term.wait_for_line("END-0");
    let screen = term.screen();
    // `d.txt` was written without a question: write is allowed for the session now.
    assert!(!screen.contains("+delta"), "{screen}");
    for (f, there) in [
        ("a.txt", true),
        ("b.txt", false),
        ("c.txt", true),
        ("d.txt", true),
    ] {
        assert_eq!(env.cwd.join(f).exists(), there, "{f}");
    }
    let err = std::fs::read_to_string(env.dir.path().join("err")).unwrap();
    let id = session_of(&err).unwrap();
    let r = results(&env, &id);
    assert!(!r[0].1 && !r[2].1 && !r[3].1, "{r:?}");
    assert!(
        r[1].1 && r[1].0.contains("denied it: not in this folder"),
        "{r:?}"
    );
    let a = approvals(&env, &id);
    let decisions: Vec<(&str, &str, &str)> = a
        .iter()
        .map(|d| {
            (
                d["tool"].as_str().unwrap(),
                d["decision"].as_str().unwrap(),
                d["by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("write", "allow-once", "terminal"),
            ("bash", "deny", "terminal"),
            ("write", "allow-session", "terminal"),
        ]
    );
    assert_eq!(a[1]["reason"], "not in this folder");
    // `ag-log cat` says who allowed what.
    let cat = env.log(&["cat", &id]).ok().stdout;
    assert!(
        cat.contains("approval: bash denied by terminal: not in this folder"),
        "{cat}"
    );
    // The next turn remembers it: its write asks nobody, even with no terminal.
    let run = without_terminal(&env, &["-m", &model, "-s", &id, "again"]).ok();
    assert!(run.stdout.contains("done again"), "{}", run.stdout);
    assert!(env.cwd.join("e.txt").exists());
}
