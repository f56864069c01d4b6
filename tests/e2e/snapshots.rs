//! What people read: snapshots (`insta`) of human output, stderr and exit codes for the
//! messages a user meets first — unknown references, bad input, usage errors — and of the
//! human renderings of a session. Ids, handles, timestamps and temporary paths are redacted,
//! so a snapshot changes only when the words do. Review a change with `cargo insta review`
//! (or `INSTA_UPDATE=always cargo test --test e2e snapshots` and read the diff).

use serde_json::json;

use crate::support::{chunk, Run, TestEnv};

/// Exit code, stdout and stderr in one reviewable text, with what varies between runs
/// replaced by placeholders.
fn shown(env: &TestEnv, run: &Run) -> String {
    let mut text = format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        run.code, run.stdout, run.stderr
    );
    for (from, to) in [
        (env.dir.path().to_string_lossy().into_owned(), "[TMP]"),
        (env.cwd.to_string_lossy().into_owned(), "[CWD]"),
    ] {
        text = text.replace(&from, to);
    }
    text
}

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_snapshot_path("snapshots");
    s.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[ID]",
    );
    s.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "[TS]");
    s.add_filter(r"\b(turn|session) [a-z]{6}\b", "$1 [HANDLE]");
    s.add_filter(r", \d+[smhd] ago\)", ", [AGE] ago)");
    s
}

/// Replace the session handles the store gave out (random by design) with `[HANDLE]`.
fn without_handles(env: &TestEnv, text: String) -> String {
    let listed = env.log(&["ls", "--json", "--any"]).ok().json_lines();
    listed.iter().fold(text, |t, s| match s["handle"].as_str() {
        Some(h) if !h.is_empty() => t.replace(h, "[HANDLE]"),
        _ => t,
    })
}

macro_rules! snap {
    ($name:literal, $env:expr, $run:expr) => {{
        let text = without_handles(&$env, shown(&$env, &$run));
        settings().bind(|| insta::assert_snapshot!($name, text));
    }};
}

#[test]
fn an_unknown_session_says_what_a_reference_can_be() {
    let env = TestEnv::new();
    env.new_session("demo", "hello");
    snap!("log_cat_unknown_session", env, env.log(&["cat", "nosuch"]));
    snap!("fork_unknown_session", env, env.run("ag-fork", &["nosuch"]));
}

#[test]
fn malformed_input_names_the_line_and_loses_nothing() {
    let env = TestEnv::new();
    let s = env.new_session("demo", "hello");
    let bad = env.log_stdin(
        &["append", "-s", &s],
        "{\"role\":\"user\",\"type\":\"text\",\"data\":{\"text\":\"ok\"}}\n{\"bad\n",
    );
    snap!("log_append_malformed_line", env, bad);
    let wrong_role = env.log_stdin(
        &["append", "-s", &s],
        format!(
            "{}\n",
            json!({"role": "wizard", "type": "text", "data": {"text": "x"}})
        ),
    );
    snap!("log_append_unknown_role", env, wrong_role);
    assert_eq!(env.chunks(&s).len(), 1, "a refused batch appends nothing");
}

#[test]
fn a_usage_error_exits_2_with_a_pointer_to_help() {
    let env = TestEnv::new();
    snap!("log_unknown_flag", env, env.log(&["cat", "--frobnicate"]));
    snap!(
        "prompt_unknown_flag",
        env,
        env.run("ag-prompt", &["--frobnicate"])
    );
}

#[test]
fn a_session_reads_as_a_conversation() {
    let env = TestEnv::new();
    let s = env.new_session("fold demo", "list the files");
    let t = env.chunks(&s)[0]["turn"].as_str().unwrap().to_string();
    env.append(
        &s,
        &[
            chunk::step(chunk::assistant("Let me look."), &t, 1),
            chunk::step(chunk::call("c1", "glob", json!({"pattern": "*.rs"})), &t, 1),
            chunk::step(chunk::result("c1", "glob", "main.rs\nlib.rs"), &t, 1),
            chunk::step(chunk::assistant("There are two Rust files."), &t, 2),
            chunk::step(chunk::turn_end(10, 5), &t, 2),
        ],
    );
    snap!("log_cat_text", env, env.log(&["cat", &s]));
    snap!(
        "log_cat_markdown",
        env,
        env.log(&["cat", &s, "--format", "md"])
    );
}

#[test]
fn an_unknown_agent_or_model_is_named() {
    let env = TestEnv::new();
    snap!(
        "summon_unknown_agent",
        env,
        env.run("ag-summon", &["-a", "no-such-agent", "do it"])
    );
    snap!(
        "prompt_unknown_model",
        env,
        env.run("ag-prompt", &["--new", "-m", "no-such-model", "hi"])
    );
}

#[test]
fn a_duration_that_is_not_one_is_a_usage_error() {
    let env = TestEnv::new();
    snap!(
        "room_claim_bad_ttl",
        env,
        env.run(
            "ag-room",
            &[
                "claim",
                "src",
                "--intent",
                "t",
                "--ttl",
                "5 fortnights",
                "--from",
                "amy"
            ]
        )
    );
    snap!(
        "summon_retrieve_negative_timeout",
        env,
        env.run("ag-summon", &["retrieve", "x", "--timeout", "5m ago"])
    );
}

#[test]
fn near_misses_get_a_did_you_mean() {
    let env = TestEnv::new();
    env.new_session("parser rewrite", "hello");
    snap!("log_cat_near_title", env, env.log(&["cat", "parsr"]));
    snap!(
        "prompt_bare_openai_model",
        env,
        env.run("ag-prompt", &["-m", "gpt-4o", "hi"])
    );
    snap!(
        "prompt_misspelled_provider",
        env,
        env.run("ag-prompt", &["-m", "antropic/claude-sonnet-4-5", "hi"])
    );
    snap!(
        "prompt_misspelled_alias",
        env,
        env.run("ag-prompt", &["-m", "sonet", "hi"])
    );
    snap!(
        "ag_misspelled_command",
        env,
        env.run("ag", &["promt", "hi"])
    );
    env.write_file("schema.json", r#"{"type":"object"}"#);
    snap!(
        "prompt_schema_path_without_at",
        env,
        env.run(
            "ag-prompt",
            &["-m", "echo", "--schema", "schema.json", "hi"]
        )
    );
}

#[test]
fn look_alike_flags_and_unreadable_input_say_what_to_do() {
    let env = TestEnv::new();
    snap!(
        "prompt_o_json_look_alike",
        env,
        env.run("ag-prompt", &["-m", "echo", "-o", "json", "hi"])
    );
    assert!(
        !env.cwd.join("json").exists(),
        "no file named json was written"
    );
    snap!(
        "prompt_stdin_not_utf8",
        env,
        env.run_stdin("ag-prompt", &["-m", "echo", "-"], b"abc\xff\xfe")
    );
    snap!(
        "prompt_missing_script",
        env,
        env.run("ag-prompt", &["-m", "script:nope.toml", "hi"])
    );
}

#[test]
fn cost_and_job_messages_say_what_to_do() {
    let env = TestEnv::new();
    snap!(
        "prompt_max_cost_without_a_price",
        env,
        env.run("ag-prompt", &["-m", "echo", "--max-cost", "1", "hi"])
    );
    snap!(
        "prompt_max_cost_not_an_amount",
        env,
        env.run("ag-prompt", &["-m", "echo", "--max-cost", "ten", "hi"])
    );
    snap!(
        "prompt_name_with_continue",
        env,
        env.run(
            "ag-prompt",
            &["-m", "echo", "--name", "nightly", "-c", "hi"]
        )
    );
    snap!("log_usage_nothing_yet", env, env.log(&["usage"]));
    env.run("ag-prompt", &["-m", "echo", "a person's chat"])
        .ok();
    // `-c` from a job without a terminal (setsid: no controlling terminal).
    let mut c = std::process::Command::new("setsid");
    c.env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&env.cwd)
        .args(["-w", "sh", "-c", "ag-prompt -c -m echo nightly"])
        .stdin(std::process::Stdio::null());
    let run = Run::from_output(c.output().unwrap());
    snap!("prompt_continue_in_a_job", env, run);
}
