//! `ag-prompt`'s safety end to end: the fail-closed guard and the read-only default set, file
//! tools confined to the working directory, the step limit, and the provider key, which reaches
//! the request header and nothing else (store, logs, tools, files).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::fake_provider::sse;
use crate::fake_provider::{FakeProvider, Reply};
use crate::prompt::*;

// ---------------------------------------------------------------------------------------------
// The guard and path confinement

#[test]
fn prompt_guard_denies_tools_outside_the_read_only_default() {
    let env = env_with(None, "");
    let model = script(
        &env,
        "sneaky.toml",
        r#"
[[step]]
text = "writing"
tool_calls = [{ name = "write", arguments = { path = "pwned.txt", content = "owned" } }]
[[step]]
tool_calls = [
  { name = "bash", arguments = { command = "touch pwned" } },
  { name = "launch_missiles", arguments = { target = "pwned" } },
]
[[step]]
text = "I could not change anything."
[[step]]
tool_calls = [{ name = "write", arguments = { path = "pwned2.txt", content = "owned" } }]
[[step]]
text = "still nothing."
"#,
    );
    let run = env.run("ag-prompt", &["-m", &model, "try to write"]).ok();
    assert!(run.stdout.contains("I could not change anything."));
    assert!(!env.cwd.join("pwned.txt").exists());
    assert!(!env.cwd.join("pwned").exists());
    let id = session_id(&run);
    let chunks = env.chunks(&id);
    let results = of_type(&chunks, Some("tool"), "tool_result");
    assert_eq!(results.len(), 3);
    for (r, name) in results.iter().zip(["write", "bash"]) {
        assert_eq!(r["data"]["name"], name);
        assert_eq!(r["data"]["is_error"], true);
        assert!(
            r["data"]["result"]
                .as_str()
                .unwrap()
                .contains("not allowed"),
            "{r}"
        );
    }
    // A tool nobody implements is denied too (fail-closed).
    assert_eq!(results[2]["data"]["name"], "launch_missiles");
    assert_eq!(results[2]["data"]["is_error"], true);
    assert!(results[2]["data"]["result"]
        .as_str()
        .unwrap()
        .contains("unknown tool"));

    // --tools cannot widen an existing session.
    let run = env
        .run(
            "ag-prompt",
            &["-s", &id, "-m", &model, "--tools", "all", "again"],
        )
        .ok();
    assert!(run.stderr.contains("may not use"), "{}", run.stderr);
    assert!(!env.cwd.join("pwned2.txt").exists());
    let chunks = env.chunks(&id);
    let results = of_type(&chunks, Some("tool"), "tool_result");
    assert_eq!(results.len(), 4);
    assert_eq!(results[3]["data"]["name"], "write");
    assert_eq!(results[3]["data"]["is_error"], true);
    assert!(results[3]["data"]["result"]
        .as_str()
        .unwrap()
        .contains("not allowed"));
}

#[test]
fn prompt_offers_only_the_read_only_tools_by_default() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    fake.push(Reply::Sse(sse::anthropic(
        &[tool(
            "toolu_w",
            "write",
            json!({"path": "pwned.txt", "content": "owned"}),
        )],
        "tool_use",
        (10, 5, 0, 0),
    )));
    fake.push(Reply::Sse(sse::anthropic_text("ok, I cannot.")));
    let run = prompt(&env, &[], "write something").ok();
    assert!(!env.cwd.join("pwned.txt").exists());
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        let names: Vec<&str> = r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "read",
                "glob",
                "grep",
                "peer_message",
                "peer_inbox",
                "peer_who",
                "peer_peek",
                "peer_claim",
                "peer_release",
                "recall"
            ]
        );
    }
    let chunks = env.chunks(&session_id(&run));
    let results = of_type(&chunks, Some("tool"), "tool_result");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["data"]["is_error"], true);
    assert!(results[0]["data"]["result"]
        .as_str()
        .unwrap()
        .contains("not allowed"));
    // The denial went back to the model as an error result.
    let sent = reqs[1].body["messages"].to_string();
    assert!(
        sent.contains("toolu_w") && sent.contains("not allowed"),
        "{sent}"
    );
}

#[test]
fn prompt_file_tools_stay_inside_the_cwd() {
    let env = env_with(None, "");
    let outside = env.dir.path().join("outside.txt");
    std::fs::write(&outside, "SECRET OUTSIDE CONTENT\n").unwrap();
    let outside_dir = env.dir.path().join("outside_dir");
    std::fs::create_dir_all(&outside_dir).unwrap();
    std::os::unix::fs::symlink(&outside_dir, env.cwd.join("dirlink")).unwrap();
    std::os::unix::fs::symlink(&outside, env.cwd.join("filelink")).unwrap();
    let not_there = env.dir.path().join("not_there.txt");
    std::os::unix::fs::symlink(&not_there, env.cwd.join("danglink")).unwrap();
    let model = script(
        &env,
        "escape.toml",
        r#"
[[step]]
tool_calls = [
  { name = "read", arguments = { path = "../outside.txt" } },
  { name = "write", arguments = { path = "dirlink/new.txt", content = "escaped" } },
  { name = "write", arguments = { path = "filelink", content = "overwritten" } },
  { name = "write", arguments = { path = "../escaped.txt", content = "escaped" } },
  { name = "read", arguments = { path = "filelink" } },
  { name = "write", arguments = { path = "danglink", content = "created outside" } },
]
[[step]]
text = "done trying"
"#,
    );
    let run = env
        .run(
            "ag-prompt",
            &["-m", &model, "--tools", "read,write", "escape"],
        )
        .ok();
    let chunks = env.chunks(&session_id(&run));
    let results = of_type(&chunks, Some("tool"), "tool_result");
    assert_eq!(results.len(), 6);
    for r in &results {
        assert_eq!(r["data"]["is_error"], true, "must be refused: {r}");
        assert!(
            r["data"]["result"]
                .as_str()
                .unwrap()
                .contains("outside the session's directory"),
            "{r}"
        );
        assert!(
            !r["data"]["result"]
                .as_str()
                .unwrap()
                .contains("SECRET OUTSIDE CONTENT"),
            "{r}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "SECRET OUTSIDE CONTENT\n"
    );
    assert!(!outside_dir.join("new.txt").exists());
    assert!(!env.dir.path().join("escaped.txt").exists());
    assert!(!not_there.exists(), "written through a dangling symlink");
    assert!(!run.stdout.contains("SECRET OUTSIDE CONTENT"));
}

#[test]
fn prompt_max_steps_ends_the_turn() {
    let env = env_with(None, "");
    let model = script(
        &env,
        "loop.toml",
        &"[[step]]\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*\" } }]\n"
            .repeat(5),
    );
    let run = env
        .run("ag-prompt", &["-m", &model, "--max-steps", "2", "go round"])
        .ok();
    let chunks = env.chunks(&session_id(&run));
    assert_eq!(of_type(&chunks, Some("assistant"), "tool_call").len(), 2);
    assert_eq!(of_type(&chunks, Some("tool"), "tool_result").len(), 2);
    let end = last_turn_end(&chunks);
    assert_eq!(end["data"]["stop_reason"], "max_steps");
    assert_eq!(end["step"], 2);
}

// ---------------------------------------------------------------------------------------------
// Keys

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn contains_bytes(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn prompt_key_reaches_only_the_request_header() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    // One attempt per step, with time to spare: under heavy load a 1 s idle timeout could
    // break the tool call's stream, and its retry would answer without running the tool.
    std::fs::write(
        env.dir.path().join("config/ag/config.toml"),
        "[network]\nconnect_timeout_s = 30\nidle_timeout_s = 60\nmax_attempts = 1\n",
    )
    .unwrap();
    fake.push(Reply::Sse(sse::anthropic(
        &[tool(
            "toolu_env",
            "bash",
            // The environment goes to the room too: the room file is checked for the key.
            json!({"command": "env | ag-room tell -; env; echo MARKER=done"}),
        )],
        "tool_use",
        (10, 5, 0, 0),
    )));
    fake.push(Reply::Sse(sse::anthropic_text("environment listed")));
    // Unsandboxed: a sandboxed command cannot write the store, so `ag-room tell` would fail.
    let run = prompt(
        &env,
        &["--tools", "bash", "--sandbox", "off"],
        "show the env",
    )
    .ok();
    let id = session_id(&run);
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.headers.get("x-api-key").map(String::as_str), Some(KEY));
        assert!(!r.raw_body.contains(KEY));
    }
    let chunks = env.chunks(&id);
    let result = &of_type(&chunks, Some("tool"), "tool_result")[0]["data"];
    let out = result["result"].as_str().unwrap();
    assert!(out.contains("MARKER=done"), "bash ran: {out}");
    assert!(out.contains(&format!("AG_SESSION={id}")), "{out}");
    assert!(!out.contains(KEY), "the key reached the bash tool: {out}");
    assert!(
        !out.contains(OPENAI_KEY),
        "the key reached the bash tool: {out}"
    );
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
    let mut files = Vec::new();
    files_under(&env.home, &mut files);
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n == "ag.db"), "{names:?}");
    assert!(
        names.iter().any(|n| n.ends_with(".jsonl")),
        "no room file: {names:?}"
    );
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert!(
            !contains_bytes(&bytes, KEY.as_bytes()),
            "the key is in {}",
            f.display()
        );
        assert!(!contains_bytes(&bytes, OPENAI_KEY.as_bytes()));
    }
}

/// `--tools +edit` keeps the defaults (the room tools too) and adds edit; `-peer_message` on a
/// follow-up takes one away; `+bash` on a follow-up cannot widen; the result object names the
/// tools when they are not the defaults.
#[test]
fn prompt_tools_with_signs_change_the_defaults_and_the_result_names_them() {
    let env = env_with(None, "");
    let model = script(
        &env,
        "edit.toml",
        r#"
[[step]]
tool_calls = [{ name = "write", arguments = { path = "made.txt", content = "hello" } }]
[[step]]
text = "done"
"#,
    );
    let first = env
        .run(
            "ag-prompt",
            &["-m", &model, "--tools", "+write", "--output", "json", "go"],
        )
        .ok()
        .json();
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for t in [
        "read",
        "glob",
        "grep",
        "write",
        "peer_message",
        "peer_inbox",
        "recall",
    ] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }
    assert!(!tools.contains(&"bash"), "{tools:?}");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("made.txt")).unwrap(),
        "hello"
    );
    let id = first["session"].as_str().unwrap().to_string();
    // A follow-up: the minus sign narrows, the plus sign cannot widen.
    let run = env
        .run(
            "ag-prompt",
            &[
                "-s",
                &id,
                "-m",
                "echo",
                "--tools=-peer_message,+bash",
                "--output",
                "json",
                "again",
            ],
        )
        .ok();
    let second = run.json();
    let tools = second["tools"].to_string();
    assert!(
        !tools.contains("\"peer_message\"") && !tools.contains("\"bash\""),
        "{tools}"
    );
    assert!(
        tools.contains("\"write\"") && tools.contains("\"peer_inbox\""),
        "{tools}"
    );
    assert!(run.stderr.contains("may not use bash"), "{}", run.stderr);
    // With the defaults, the result has no tools field.
    let plain = env
        .run("ag-prompt", &["-m", "echo", "--output", "json", "hi"])
        .ok()
        .json();
    assert!(plain.get("tools").is_none(), "{plain}");
    let bad = env
        .run("ag-prompt", &["-m", "echo", "--tools", "+", "hi"])
        .code(2);
    assert!(bad.stderr.contains("a sign needs a tool"), "{}", bad.stderr);
}
