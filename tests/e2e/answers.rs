//! Answers a script can use: the `result` event and object, `-o FILE`, piped stdin with a
//! prompt argument, and `-a FILE` attachments.

use crate::support::TestEnv;

fn user_text(env: &TestEnv) -> String {
    env.chunks("last")
        .iter()
        .find(|c| c["role"] == "user" && c["type"] == "text")
        .and_then(|c| c["data"]["text"].as_str().map(str::to_string))
        .expect("a user text chunk")
}

#[test]
fn json_ends_with_one_result_event_and_output_json_prints_only_it() {
    let env = TestEnv::new();
    let run = env
        .run("ag-prompt", &["--json", "-m", "echo", "hello there"])
        .ok();
    let events = run.json_lines();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result", "{}", run.stdout);
    assert_eq!(events.iter().filter(|e| e["type"] == "result").count(), 1);
    assert_eq!(last["answer"], "hello there");
    assert_eq!(last["stop_reason"], "end_turn");
    assert!(last["usage"]["output"].is_number(), "{last}");
    let shown = env.log(&["show", "--json"]).ok().json();
    assert_eq!(last["session"], shown["id"]);
    assert_eq!(last["handle"], shown["handle"]);
    let turn = last["turn"].as_str().unwrap();
    assert!(env.chunks("last").iter().all(|c| c["turn"] == turn));

    let run = env
        .run(
            "ag-prompt",
            &["-c", "--output", "json", "-m", "echo", "again"],
        )
        .ok();
    let v = run.json();
    assert_eq!(v["type"], "result");
    assert_eq!(v["answer"], "again");
    assert_eq!(
        run.stdout.lines().count(),
        1,
        "only the object: {}",
        run.stdout
    );
}

#[test]
fn o_writes_the_final_answer_of_a_multi_step_turn_to_a_file() {
    let env = TestEnv::new();
    let script = env.write_file(
        "steps.toml",
        "[[step]]\ntext = \"Looking first.\"\n[[step.tool_calls]]\nname = \"glob\"\narguments = { pattern = \"*.toml\" }\n\n[[step]]\ntext = \"The final answer.\"\n",
    );
    let out = env.cwd.join("answer.txt");
    let model = format!("script:{}", script.display());
    let run = env
        .run(
            "ag-prompt",
            &["-m", &model, "-o", out.to_str().unwrap(), "go"],
        )
        .ok();
    assert!(run.stdout.contains("Looking first."), "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "The final answer.\n"
    );
    let bad = env.run(
        "ag-prompt",
        &["-c", "-m", "echo", "-o", "/nonexistent/dir/a.txt", "x"],
    );
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("-o /nonexistent/dir/a.txt"),
        "{}",
        bad.stderr
    );
}

#[test]
fn piped_stdin_and_a_prompt_argument_are_both_sent() {
    let env = TestEnv::new();
    env.run_stdin(
        "ag-prompt",
        &["-m", "echo", "review this"],
        "diff --git a/x b/x\n+new line\n",
    )
    .ok();
    assert_eq!(
        user_text(&env),
        "<stdin>\ndiff --git a/x b/x\n+new line\n</stdin>\n\nreview this"
    );
}

#[test]
fn a_new_session_is_titled_after_what_was_asked_not_after_the_stdin_wrapper() {
    let env = TestEnv::new();
    let title = |env: &TestEnv| {
        env.log(&["show", "last", "--json"]).ok().json()["title"]
            .as_str()
            .unwrap()
            .to_string()
    };
    env.run_stdin(
        "ag-prompt",
        &["-m", "echo", "review this"],
        "diff --git a/x b/x\n",
    )
    .ok();
    assert_eq!(title(&env), "review this");
    // Only stdin: its first line that is not blank.
    env.run_stdin(
        "ag-prompt",
        &["-m", "echo", "-"],
        "\n\nsummarize the release notes\nmore\n",
    )
    .ok();
    assert_eq!(title(&env), "summarize the release notes");
    // Only an attached file: its path.
    env.write_file("notes.md", "remember the milk\n");
    env.run("ag-prompt", &["-m", "echo", "-a", "notes.md"]).ok();
    assert_eq!(title(&env), "notes.md");
    // --title still wins.
    env.run_stdin(
        "ag-prompt",
        &["-m", "echo", "--title", "nightly", "check"],
        "log lines\n",
    )
    .ok();
    assert_eq!(title(&env), "nightly");
}

#[test]
fn a_attaches_text_files_and_refuses_binary_ones() {
    let env = TestEnv::new();
    env.write_file("notes.md", "remember the milk\n");
    env.run(
        "ag-prompt",
        &["-m", "echo", "-a", "notes.md", "what is in it?"],
    )
    .ok();
    assert_eq!(
        user_text(&env),
        "<file path=\"notes.md\">\nremember the milk\n</file>\n\nwhat is in it?"
    );
    std::fs::write(env.cwd.join("blob.bin"), [0u8, 159, 146, 150]).unwrap();
    let run = env
        .run("ag-prompt", &["-m", "echo", "-a", "blob.bin", "x"])
        .code(2);
    assert!(
        run.stderr.contains("-a blob.bin: not UTF-8 text"),
        "{}",
        run.stderr
    );
    env.run("ag-prompt", &["-m", "echo", "-a", "missing.txt", "x"])
        .code(1);
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM sessions"),
        1,
        "refusals create nothing"
    );
}

#[test]
fn help_is_the_same_in_every_command_and_never_a_prompt() {
    let env = TestEnv::new();
    for (cmd, args) in [
        ("ag-prompt", vec!["help"]),
        ("ag-log", vec!["help"]),
        ("ag-log", vec!["help", "cat"]),
        ("ag-fork", vec!["help"]),
        ("ag-room", vec!["help"]),
        ("ag-summon", vec!["help"]),
    ] {
        let run = env.run(cmd, &args).ok();
        assert!(
            run.stdout.contains("Usage:"),
            "{cmd} {args:?}: {}",
            run.stdout
        );
    }
    assert!(env.log(&["help", "cat"]).ok().stdout.contains("--turn"));
    assert!(
        !env.db().exists() || env.sqlite_count("SELECT COUNT(*) FROM sessions") == 0,
        "no prompt was sent"
    );
}

#[test]
fn search_that_matches_nothing_exits_1_like_grep() {
    let env = TestEnv::new();
    env.new_session("s", "the quick brown fox");
    env.log(&["search", "fox"]).ok();
    let run = env.log(&["search", "zebra"]).code(1);
    assert_eq!(run.stdout, "");
    assert!(!run.stderr.contains("error"), "{}", run.stderr);
}
