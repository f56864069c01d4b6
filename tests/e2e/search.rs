//! `ag-log search` as people and scripts use it: each hit with its session's handle, title
//! and date; tool arguments and results found too; phrases and prefixes; colour, not
//! brackets, on a terminal; exit 1 when nothing matched. And `ag-log cat` keeps tabs.

use crate::support::{chunk, Run, TestEnv};

fn on_terminal(env: &TestEnv, args: &str) -> Run {
    let cmd = format!("{} {args}", crate::support::bin("ag-log").display());
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .env_remove("NO_COLOR")
        .env("TERM", "xterm")
        .current_dir(&env.cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1) from util-linux");
    Run::from_output(out)
}

fn session_with_tools(env: &TestEnv) -> String {
    let id = env.new_session("zoo inventory", "count the animals");
    env.append(
        &id,
        &[
            chunk::call(
                "c1",
                "read",
                serde_json::json!({"path": "zebra-stripes.txt"}),
            ),
            chunk::result("c1", "read", "twelve okapis\tand a giraffe"),
            chunk::assistant("the quick brown fox jumps"),
            chunk::assistant("a fox that is brown"),
        ],
    );
    id
}

#[test]
fn hits_name_their_session_title_and_date_and_include_tool_calls_and_results() {
    let env = TestEnv::new();
    let id = session_with_tools(&env);
    let handle = crate::room::handle(&env, &id);
    let hit = env.log(&["search", "zebra", "--json"]).ok().json_lines();
    let today = hit[0]["ts"].as_str().unwrap()[..10].to_string();
    let call = env.log(&["search", "zebra"]).ok().stdout;
    assert_eq!(call.lines().count(), 1, "{call}");
    assert!(
        call.contains(&handle) && call.contains("zoo inventory") && call.contains(today.as_str()),
        "{call}"
    );
    assert!(call.contains("→ read") && call.contains("zebra"), "{call}");
    let result = env.log(&["search", "okapis"]).ok().stdout;
    assert!(
        result.contains("← read") && result.contains("okapis"),
        "{result}"
    );
    // No brackets in a pipe, and --json carries the title and a plain snippet.
    assert!(
        !result.contains('[') && !result.contains('\u{1b}'),
        "{result}"
    );
    let hit = env.log(&["search", "okapis", "--json"]).ok().json_lines();
    assert_eq!(hit[0]["title"], "zoo inventory");
    assert_eq!(hit[0]["handle"], handle.as_str());
    assert_eq!(hit[0]["type"], "tool_result");
    assert!(!hit[0]["snippet"].as_str().unwrap().contains('\u{e000}'));
}

#[test]
fn phrases_and_prefixes_narrow_a_search() {
    let env = TestEnv::new();
    session_with_tools(&env);
    assert_eq!(
        env.log(&["search", "brown", "fox"])
            .ok()
            .stdout
            .lines()
            .count(),
        2
    );
    let phrase = env.log(&["search", "\"brown fox\""]).ok().stdout;
    assert_eq!(phrase.lines().count(), 1, "{phrase}");
    assert!(phrase.contains("quick"), "{phrase}");
    assert_eq!(env.log(&["search", "gira*"]).ok().stdout.lines().count(), 1);
    env.log(&["search", "gira"]).code(1);
    // FTS syntax is just words.
    env.log(&["search", "brown", "OR", "zebra"]).code(1);
}

#[test]
fn on_a_terminal_matches_are_coloured_not_bracketed() {
    let env = TestEnv::new();
    session_with_tools(&env);
    let run = on_terminal(&env, "search okapis");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("\u{1b}[1;31mokapis"),
        "{:?}",
        run.stdout
    );
    assert!(!run.stdout.contains("[okapis]"), "{:?}", run.stdout);
}

#[test]
fn cat_shows_tabs_as_tabs() {
    let env = TestEnv::new();
    let id = env.new_session("tabs", "col1\tcol2");
    env.append(
        &id,
        &[chunk::call(
            "c1",
            "bash",
            serde_json::json!({"command": "ls"}),
        )],
    );
    env.append(&id, &[chunk::result("c1", "bash", "a\tb")]);
    let cat = env.log(&["cat", &id]).ok().stdout;
    assert!(cat.contains("col1\tcol2"), "{cat:?}");
    assert!(cat.contains("a\tb"), "{cat:?}");
    assert!(!cat.contains("\\t"), "{cat:?}");
}
