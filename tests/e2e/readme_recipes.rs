//! The README's recipes, run exactly as written (each code block taken from README.md) in a
//! git repository, against a provider on loopback standing in for Anthropic.

use std::process::Command;

use serde_json::json;

use crate::fake_provider::sse::{self, Block};
use crate::fake_provider::{FakeProvider, Reply};
use crate::prompt::env_for;
use crate::support::TestEnv;

/// The first ```sh block after the paragraph that starts with `title`.
fn recipe(title: &str) -> String {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let at = readme
        .find(title)
        .unwrap_or_else(|| panic!("the README has no recipe {title:?}"));
    let rest = &readme[at..];
    let start = rest.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let end = rest[start..].find("```").expect("the block's end");
    rest[start..start + end].to_string()
}

/// Run a recipe block with `sh -e` in the test's repository; returns stdout.
fn run(env: &TestEnv, block: &str) -> (i32, String, String) {
    let mut c = Command::new("sh");
    c.env_clear();
    for (k, v) in &env.env {
        c.env(k, v);
    }
    let out = c
        .env("HOME", env.dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .current_dir(&env.cwd)
        .args(["-e", "-c", block])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn repo(fake: &FakeProvider) -> TestEnv {
    let env = env_for(fake);
    std::fs::write(
        env.dir.path().join(".gitconfig"),
        "[user]\n\tname = t\n\temail = t@example.com\n",
    )
    .unwrap();
    crate::room::git(&env.cwd, &["init", "-q"]);
    std::fs::write(
        env.cwd.join("parser.py"),
        "def parse(s):\n    return s.split()\n",
    )
    .unwrap();
    crate::room::git(&env.cwd, &["add", "."]);
    crate::room::git(&env.cwd, &["commit", "-qm", "parser"]);
    std::fs::write(
        env.cwd.join("parser.py"),
        "def parse(s):\n    if not s:\n        return []\n    return s.split()\n",
    )
    .unwrap();
    crate::room::git(&env.cwd, &["commit", "-qam", "parser: empty input"]);
    env
}

#[test]
fn the_ci_review_recipe_fails_the_build_on_a_fail_verdict() {
    let fake = FakeProvider::start();
    let env = repo(&fake);
    let block = recipe("**A review in CI");
    let verdict = |v: &str, why: &str| {
        Reply::Sse(sse::anthropic(
            &[Block::Tool {
                id: "toolu_1".into(),
                name: "final_answer".into(),
                input: json!({"verdict": v, "reasons": [why]}),
            }],
            "tool_use",
            (100, 20, 0, 0),
        ))
    };
    fake.push(verdict("pass", "handles empty input and is small"));
    let (code, out, err) = run(&env, &block);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("handles empty input and is small"), "{out}");
    // The diff went to the model with the prompt.
    let req = &fake.requests()[0];
    assert!(req.body.to_string().contains("if not s:"), "{}", req.body);
    fake.push(verdict("fail", "no test for the empty case"));
    let (code, out, _) = run(&env, &block);
    assert_ne!(code, 0, "a fail verdict must fail the step");
    assert!(out.contains("no test for the empty case"), "{out}");
}

#[test]
fn the_git_hook_recipe_posts_each_commit_to_the_room() {
    let fake = FakeProvider::start();
    let env = repo(&fake);
    let (code, out, err) = run(&env, &recipe("**A git hook"));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("post-commit: committed") && out.contains("parser: handle empty input"),
        "{out}"
    );
    // -q: the hook itself printed nothing.
    assert!(!err.contains("01a"), "{err}");
}

#[test]
fn the_nightly_recipe_keeps_one_session_across_runs() {
    let fake = FakeProvider::start();
    let env = repo(&fake);
    let block = recipe("**A nightly job");
    for night in ["monday", "tuesday"] {
        fake.push(Reply::Sse(sse::anthropic_text(&format!(
            "{night}: nothing to fix"
        ))));
        let (code, out, err) = run(&env, &block);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("{night}: nothing to fix")), "{out}");
    }
    let sessions = env.log(&["ls", "--json"]).ok().json_lines();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["title"], "nightly");
    // The second night's request carried the first night's answer.
    let second = &fake.requests()[1].body;
    assert!(
        second.to_string().contains("monday: nothing to fix"),
        "{second}"
    );
}
