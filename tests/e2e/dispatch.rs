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

/// `ag` holds every command: started as `ag-log` (as the installed `ag-log` starts it) it is
/// `ag-log`; the launchers run it under their own name; a launcher without `ag` beside it says
/// so and how to fix it.
#[test]
fn ag_is_every_command_under_its_name_and_the_launchers_need_it() {
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new();
    let id = env.new_session("multi-call", "hello");
    let mut as_log = env.command("ag");
    as_log.arg0("ag-log").args(["ls", "-q"]);
    let run = Run::from_output(as_log.output().unwrap()).ok();
    assert_eq!(run.stdout, format!("{id}\n"));
    let mut as_prompt = env.command("ag");
    as_prompt.arg0("/somewhere/ag-prompt").arg("--version");
    let run = Run::from_output(as_prompt.output().unwrap()).ok();
    assert!(run.stdout.starts_with("ag-prompt "), "{}", run.stdout);
    // Each launcher is its command, errors named after it.
    let missing = env.run("ag-fork", &["no-such-session"]);
    assert_eq!(missing.code, 4, "{}", missing.stderr);
    assert!(
        missing.stderr.starts_with("ag-fork: error:"),
        "{}",
        missing.stderr
    );
    // Alone, a launcher cannot run.
    let alone = env.dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    std::fs::copy(crate::support::bin("ag-summon"), alone.join("ag-summon")).unwrap();
    let out = std::process::Command::new(alone.join("ag-summon"))
        .arg("--version")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{stderr}");
    assert!(
        stderr.starts_with("ag-summon: error: there is no `ag` beside"),
        "{stderr}"
    );
    assert!(stderr.contains("install both"), "{stderr}");
}

/// The installed `ag-room` is whole for rooms in files: alone, it posts and reads them. For
/// rooms on a server and for `ag-room mcp` it runs `ag` as `ag-room`, before it reads or
/// writes anything; alone, it says so and how to fix it, and the room is untouched.
#[test]
fn ag_room_runs_file_rooms_alone_and_hands_server_rooms_and_mcp_to_ag() {
    let env = TestEnv::new();
    let alone = env.dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    std::fs::copy(crate::support::bin("ag-room"), alone.join("ag-room")).unwrap();
    let room = |extra: &[(&str, &str)], args: &[&str]| {
        let mut cmd = std::process::Command::new(alone.join("ag-room"));
        cmd.env_clear()
            .envs(env.env.iter().map(|(k, v)| (k, v)))
            .envs(extra.iter().copied())
            .current_dir(&env.cwd)
            .stdin(std::process::Stdio::null())
            .args(args);
        Run::from_output(cmd.output().unwrap())
    };
    let id = room(&[], &["tell", "--from", "hook", "built"]).ok();
    let id = id.stdout.trim().to_string();
    assert!(!id.is_empty(), "tell printed no id");
    let tail = room(&[], &["tail", "-n", "1", "--json"]).ok();
    let line: serde_json::Value = serde_json::from_str(tail.stdout.trim()).unwrap();
    assert_eq!(line["id"], id.as_str(), "{}", tail.stdout);
    assert_eq!(line["text"], "built");
    let rooms = env.home.join("rooms");
    let files = || {
        let mut all = std::fs::read_dir(&rooms)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (std::fs::read(&p).unwrap(), p)
            })
            .collect::<Vec<_>>();
        all.sort();
        all
    };
    let before = files();
    // Nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    for (extra, args) in [
        (
            vec![("AG_ROOM_URL", url.as_str())],
            vec!["tell", "-q", "to the server"],
        ),
        (
            vec![("AG_ROOM_URL", url.as_str())],
            vec!["--from", "x", "claims"],
        ),
        (vec![], vec!["mcp"]),
    ] {
        let run = room(&extra, &args);
        assert_eq!(run.code, 127, "ag-room {args:?}: {}", run.stderr);
        assert!(
            run.stderr
                .starts_with("ag-room: error: there is no `ag` beside"),
            "ag-room {args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(
        before,
        files(),
        "a command handed to `ag` wrote to the rooms"
    );
    // Beside `ag`, the same command line reaches the server through it: `ag` says where it
    // could not connect, as `ag room` does.
    let mut env = env;
    env.set("AG_ROOM_URL", &url);
    let via_ag = env.run("ag-room", &["tell", "-q", "to the server"]);
    let direct = env.run("ag", &["room", "tell", "-q", "to the server"]);
    assert_eq!(via_ag.code, 75, "{}", via_ag.stderr);
    assert_eq!(via_ag.code, direct.code);
    assert!(via_ag.stderr.contains(&url[7..]), "{}", via_ag.stderr);
    assert_eq!(via_ag.stderr, direct.stderr);
}
