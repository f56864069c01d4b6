//! `ag-summon` agent definitions end to end: the catalog reads `.ag`, `.claude` and user
//! definitions and reports malformed ones, `ag-prompt --agent` runs one, and the example
//! definitions load.

use std::path::Path;

use crate::prompt::{env_with, session_id};
use crate::summon::*;

#[test]
fn the_catalog_reports_malformed_definitions_and_reads_claude_agents() {
    let env = env_with(None, "");
    with_agents(&env);
    env.write_file(
        ".ag/agents/broken.toml",
        "name = \"Broken\"\nis_subagent = true\nmax_steps = \"many\"\nmodels = []\n",
    );
    env.write_file(
        ".claude/agents/code-reviewer.md",
        "---\nname: code-reviewer\ndescription: Reviews diffs\ntools: Read, Grep, WebFetch\nmodel: sonnet\n---\nYou review code.\n",
    );
    env.write_file(
        ".claude/agents/broken.md",
        "---\nname: broken-claude\ndescription: [oops\n---\nYou break.\n",
    );
    let run = env.run("ag-summon", &["agents", "--json"]).ok();
    assert!(
        run.stderr.contains("broken.toml:3") && run.stderr.contains("skipped"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("broken.md:3: description: unclosed `[` list")
            && run.stderr.contains("; skipped"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("code-reviewer.md:4") && run.stderr.contains("WebFetch"),
        "{}",
        run.stderr
    );
    let agents = run.json_lines();
    let slugs: Vec<&str> = agents.iter().filter_map(|a| a["slug"].as_str()).collect();
    assert!(
        !slugs.contains(&"broken") && !slugs.contains(&"broken-claude"),
        "{slugs:?}"
    );
    for s in [
        "code-reviewer",
        "explorer",
        "finder",
        "reviewer",
        "slow",
        "worker",
    ] {
        assert!(slugs.contains(&s), "{s} missing from {slugs:?}");
    }
    let cr = agents
        .iter()
        .find(|a| a["slug"] == "code-reviewer")
        .unwrap();
    assert_eq!(cr["kind"], "subagent");
    assert_eq!(cr["tools"], serde_json::json!(["read", "grep"]));
    assert_eq!(cr["source"], "project");
    assert!(cr["path"].as_str().unwrap().ends_with("code-reviewer.md"));
    let explorer = agents.iter().find(|a| a["slug"] == "explorer").unwrap();
    assert_eq!(explorer["source"], "built-in");
    assert!(explorer["path"].is_null());

    // A user-level definition is overridden by the project's of the same name, in a folder
    // the user trusts (untrusted, the project's is skipped: see trust.rs).
    env.run("ag-prompt", &["--trust"]).ok();
    let user = env.dir.path().join("config/ag/agents");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("finder.toml"),
        "description = \"user's\"\nis_subagent = true\n",
    )
    .unwrap();
    std::fs::write(
        user.join("mine.toml"),
        "description = \"only mine\"\nis_subagent = true\n",
    )
    .unwrap();
    let agents = env
        .run("ag-summon", &["agents", "--json"])
        .ok()
        .json_lines();
    let get = |s: &str| agents.iter().find(|a| a["slug"] == s).cloned().unwrap();
    assert_eq!(get("finder")["description"], "Finds answers");
    assert_eq!(get("mine")["description"], "only mine");

    // Usage errors.
    env.run("ag-summon", &["q"]).code(2);
    env.run("ag-summon", &["--agent", "nobody", "q"]).code(4);
    let run = env.run("ag-summon", &["--agent", "helper", "q"]).code(2);
    assert!(
        run.stderr.contains("not a subagent definition"),
        "{}",
        run.stderr
    );
}

#[test]
fn ag_prompt_runs_an_agent_definition() {
    let env = env_with(None, "");
    with_agents(&env);
    let run = env
        .run(
            "ag-prompt",
            &["--agent", "finder", "--tools", "read,bash", "what?"],
        )
        .ok();
    assert_eq!(run.stdout.trim(), "The answer is 42.");
    assert!(run.stderr.contains("does not have bash"), "{}", run.stderr);
    let id = session_id(&run);
    let r = row(&env, &id);
    assert_eq!(r["kind"], "chat");
    assert_eq!(r["agent"], "finder");
    assert_eq!(r["policy"]["tools"], serde_json::json!(["read"]));
    assert_eq!(r["policy"]["system"], "You find answers.");
    assert_eq!(r["status"], "idle");
    // -m wins over the definition's models.
    let run = env
        .run("ag-prompt", &["--agent", "finder", "-m", "echo", "echo me"])
        .ok();
    assert_eq!(run.stdout.trim(), "echo me");
    let _ = Path::new("");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// The README walk-through: examples/agents copied into a project, a parent on the offline
/// script that summons `notes-reader` in the background and retrieves its answer.
#[test]
fn the_example_definitions_load_and_the_walkthrough_parent_runs() {
    let env = env_with(None, "");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agents");
    copy_dir(&examples, &env.cwd.join(".ag/agents"));
    // Your own definitions in your own project: trusted, so `explorer` may replace the
    // built-in and `gardener`/`tester` keep their tools.
    env.run("ag-prompt", &["--trust"]).ok();
    env.write_file(
        "notes.md",
        "# Notes\n\n- [ ] parser: handle empty input\n- [ ] docs: write the README\n",
    );
    let run = env.run("ag-summon", &["agents", "--json"]).ok();
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let slugs: Vec<String> = run
        .json_lines()
        .iter()
        .filter_map(|a| a["slug"].as_str().map(str::to_string))
        .collect();
    for s in ["explorer", "tester", "notes-reader"] {
        assert!(slugs.iter().any(|x| x == s), "{s}: {slugs:?}");
    }
    let parent = format!(
        "script:{}",
        examples.join("scripts/summon-parent.toml").display()
    );
    let run = env
        .run(
            "ag-prompt",
            &[
                "-m",
                &parent,
                "--tools",
                "read,glob,summon,retrieve",
                "What is still open?",
            ],
        )
        .ok();
    assert!(run.stdout.contains("two open tasks"), "{}", run.stdout);
    let id = session_id(&run);
    let got = tool_results(&env, &id, "retrieve");
    let text = got[0]["data"]["result"].as_str().unwrap();
    assert!(
        text.contains("status: done") && text.contains("Open tasks: parser"),
        "{text}"
    );
}
