//! Out-of-range numbers and durations, on the command line and in the configuration, are
//! usage errors (exit 2) with a message naming the flag or key: never a panic, never a value
//! that wraps into something else (issue #11).

use crate::support::TestEnv;

/// `args` of `prog` exits 2 and says `needle` on stderr.
#[track_caller]
fn refused(env: &TestEnv, prog: &str, args: &[&str], needle: &str) {
    let run = env.run(prog, args);
    assert_eq!(
        run.code, 2,
        "{prog} {args:?}: exit {} (stdout {:?}):\n{}",
        run.code, run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains(needle),
        "{prog} {args:?}: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn out_of_range_flags_are_usage_errors() {
    let env = TestEnv::new();
    let id = env.new_session("numbers", "hello");
    refused(&env, "ag-room", &["tell", "--wait=1e300", "hi"], "--wait");
    refused(&env, "ag-room", &["tell", "--wait=-1", "hi"], "--wait");
    refused(&env, "ag-room", &["tell", "--wait=NaN", "hi"], "--wait");
    refused(
        &env,
        "ag-summon",
        &["retrieve", &id, "--timeout", "99999999999999999999"],
        "too long",
    );
    refused(
        &env,
        "ag-summon",
        &["cancel", &id, "--grace", "1e300"],
        "--grace",
    );
    refused(
        &env,
        "ag-room",
        &[
            "claim",
            "--intent",
            "x",
            "--ttl",
            "9223372036854775807",
            "a/*",
        ],
        "too long",
    );
    refused(
        &env,
        "ag-log",
        &["cat", &id, "--limit=18446744073709551615"],
        "--limit",
    );
    refused(
        &env,
        "ag-log",
        &["cat", &id, "--before=-9223372036854775808"],
        "--before",
    );
    refused(&env, "ag-log", &["cat", &id, "--after=-1"], "--after");
    refused(
        &env,
        "ag-log",
        &["tail", &id, "-n", "18446744073709551615"],
        "--lines",
    );
    refused(
        &env,
        "ag-log",
        &["ls", "--limit", "18446744073709551615"],
        "--limit",
    );
    refused(
        &env,
        "ag-log",
        &["search", "hello", "--limit", "18446744073709551615"],
        "--limit",
    );
    refused(&env, "ag-fork", &[&id, "--at=-5"], "--at");
    refused(
        &env,
        "ag-prompt",
        &["-m", "echo", "--thinking", "18446744073709551615", "hi"],
        "--thinking",
    );
    // Nothing was posted or claimed on the way.
    let tail = env.run("ag-room", &["tail", "--all"]).ok();
    assert_eq!(tail.stdout, "", "{}", tail.stdout);
}

#[test]
fn out_of_range_config_values_are_usage_errors_naming_the_key() {
    for (setting, key) in [
        (
            "[network]\nconnect_timeout_s = 1e300",
            "network.connect_timeout_s",
        ),
        ("[network]\nidle_timeout_s = -1", "network.idle_timeout_s"),
        (
            "[network]\nattempt_timeout_s = nan",
            "network.attempt_timeout_s",
        ),
        (
            "[network]\nretry_max_ms = 9223372036854775807",
            "network.retry_max_ms",
        ),
        (
            "[agent]\nbash_timeout_s = 9223372036854775807",
            "agent.bash_timeout_s",
        ),
        (
            "[agent]\nthinking_budget = 9223372036854775807",
            "agent.thinking_budget",
        ),
        ("[context]\ncompact_at = inf", "context.compact_at"),
    ] {
        let env = TestEnv::new();
        let dir = env.dir.path().join("config/ag");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), format!("{setting}\n")).unwrap();
        let run = env.run("ag-prompt", &["-m", "echo", "hi"]);
        assert_eq!(run.code, 2, "{setting}: {}", run.stderr);
        assert!(run.stderr.contains(key), "{setting}: {}", run.stderr);
        assert!(run.stderr.contains("config.toml"), "{}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}

#[test]
fn a_room_line_with_a_huge_ttl_does_not_break_readers() {
    let env = TestEnv::new();
    env.run(
        "ag-room",
        &["claim", "--from", "a", "--intent", "x", "src/*"],
    )
    .ok();
    let room = std::fs::read_dir(env.home.join("rooms"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.ends_with("device.jsonl"))
        .unwrap();
    // Another writer puts the largest TTL there is in its claim.
    let text = std::fs::read_to_string(&room).unwrap();
    let mut line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    line["id"] = "01a20000-0000-7000-8000-000000000001".into();
    line["from"]["name"] = "b".into();
    line["paths"] = serde_json::json!(["docs/*"]);
    line["ttl_s"] = u64::MAX.into();
    std::fs::write(&room, format!("{text}{line}\n")).unwrap();
    let claims = env.run("ag-room", &["claims"]).ok();
    assert!(claims.stdout.contains("docs/*"), "{}", claims.stdout);
    assert!(claims.stdout.contains("src/*"), "{}", claims.stdout);
}
