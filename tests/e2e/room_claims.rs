//! `ag-room` claims end to end: a claim blocks another session's write, exit codes and release,
//! a refused write when the claims cannot be read, and the pre-commit guard.

use std::process::Command;
use std::time::Duration;

use crate::prompt::{script, session_id, spawn, wait_for_chunk};
use crate::room::*;
use crate::room_files::make_executable;
use crate::support::bin;

#[test]
fn room_claim_blocks_the_other_sessions_write() {
    let env = env();
    env.write_file("shared.txt", "original\n");
    let holder = script(
        &env,
        "holder.toml",
        "[[step]]\ntool_calls = [{ name = \"peer_claim\", arguments = { paths = [\"shared.txt\"], intent = \"rewriting the shared notes\" } }]\n\
         [[step]]\ntext = \"holding\"\nwait_for = \"gate-written\"\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let writer = script(
        &env,
        "writer.toml",
        "[[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"shared.txt\", content = \"overwritten\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let mut a = spawn(&env, &["-m", &holder, "--tools", "all", "holder of notes"]);
    let ida = a.session();
    wait_for_chunk(&env, &ida, |c| c["type"] == "tool_result");
    // A person is refused too, with the holder, intent and overlap named (exit 3).
    let r = room(
        &env,
        &[
            "claim",
            "./shared.txt",
            "--intent",
            "typo fix",
            "--from",
            "erin",
        ],
    )
    .code(3);
    assert!(
        r.stderr.contains("holder of notes") && r.stderr.contains("rewriting the shared notes"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("shared.txt"));
    let rb = env.run("ag-prompt", &["-m", &writer, "--tools", "all", "writer"]);
    assert_eq!(rb.code, 0, "{}", rb.stderr);
    let idb = session_id(&rb);
    let res = &tool_results(&env, &idb, "write")[0];
    assert_eq!(res["data"]["is_error"], true, "{res}");
    let text = res["data"]["result"].as_str().unwrap();
    assert!(
        text.contains("holder of notes")
            && text.contains("rewriting the shared notes")
            && text.contains("peer_message"),
        "{text}"
    );
    assert!(text.contains(&handle(&env, &ida)));
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("shared.txt")).unwrap(),
        "original\n"
    );
    let claims = room(&env, &["claims", "--json"]).ok().json_lines();
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0]["holder"]["session"], ida.as_str());
    env.write_file("gate-written", "");
    assert_eq!(a.wait(Duration::from_secs(30)).code, 0);
    // Its turn is over, not its claim: the holder shows as idle and still blocks.
    let claims = room(&env, &["claims", "--json"]).ok().json_lines();
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0]["holder_state"], "idle");
    assert!(room(&env, &["claims"]).ok().stdout.contains("(idle)"));
    room(
        &env,
        &[
            "claim",
            "shared.txt",
            "--intent",
            "typo fix",
            "--from",
            "erin",
        ],
    )
    .code(3);
    // Its session is removed: the claim ended with it.
    env.log(&["rm", &ida]).ok();
    assert!(room(&env, &["claims", "--json"])
        .ok()
        .stdout
        .trim()
        .is_empty());
    room(
        &env,
        &[
            "claim",
            "shared.txt",
            "--intent",
            "typo fix",
            "--from",
            "erin",
        ],
    )
    .ok();
}

#[test]
fn room_write_is_refused_when_the_claims_cannot_be_read() {
    let env = env();
    env.write_file("shared.txt", "original\n");
    room(&env, &["tell", "--from", "erin", "hello"]).ok();
    // The room is there but cannot be read (a directory where its file should be).
    let path = the_room(&env);
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let writer = script(
        &env,
        "writer.toml",
        "[[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"shared.txt\", content = \"overwritten\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let r = env.run("ag-prompt", &["-m", &writer, "--tools", "all", "writer"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let id = session_id(&r);
    let res = &tool_results(&env, &id, "write")[0];
    assert_eq!(res["data"]["is_error"], true, "{res}");
    let text = res["data"]["result"].as_str().unwrap();
    assert!(
        text.contains("cannot check the claims on shared.txt")
            && text.contains("nothing was written"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("shared.txt")).unwrap(),
        "original\n"
    );
}

#[test]
fn room_claim_exit_codes_and_release() {
    let env = env();
    let id = room(
        &env,
        &[
            "claim",
            "src/**",
            "--intent",
            "big refactor",
            "--from",
            "alice",
            "--ttl",
            "10m",
        ],
    )
    .ok();
    let claim_id = id.stdout.trim().to_string();
    let r = room(
        &env,
        &[
            "claim",
            "src/lib.rs",
            "docs",
            "--intent",
            "fix",
            "--from",
            "bob",
        ],
    )
    .code(3);
    assert!(
        r.stderr.contains("alice")
            && r.stderr.contains("big refactor")
            && r.stderr.contains("src/lib.rs"),
        "{}",
        r.stderr
    );
    room(
        &env,
        &[
            "claim", "docs", "--intent", "notes", "--shared", "--from", "bob",
        ],
    )
    .ok();
    room(
        &env,
        &[
            "claim",
            "docs/a.md",
            "--intent",
            "notes",
            "--shared",
            "--from",
            "carol",
        ],
    )
    .ok();
    room(
        &env,
        &["claim", "docs", "--intent", "mine", "--from", "dave"],
    )
    .code(3);
    room(&env, &["claim", "x", "--intent", "t", "--ttl", "soon"]).code(2);
    // Bob cannot release Alice's claim.
    let r = room(&env, &["release", "--all", "--from", "bob"]).ok();
    assert!(!r.stdout.contains(&claim_id));
    room(
        &env,
        &["claim", "src/lib.rs", "--intent", "fix", "--from", "bob"],
    )
    .code(3);
    let r = room(&env, &["release", "src", "--from", "alice"]).ok();
    assert_eq!(r.stdout.trim(), claim_id);
    room(
        &env,
        &["claim", "src/lib.rs", "--intent", "fix", "--from", "bob"],
    )
    .ok();
    let all = room(&env, &["claims", "--json"]).ok().json_lines();
    assert_eq!(
        all.len(),
        2,
        "bob released his shared claim with --all: {all:?}"
    );
    // An expired claim is no claim: zed claims for one second, and amy comes two seconds
    // later on the pinned clock.
    let at = |ms: i64, args: &[&str]| {
        let out = env
            .command("ag-room")
            .env("AG_FAKE_NOW_MS", ms.to_string())
            .args(args)
            .output()
            .expect("spawn");
        crate::support::Run::from_output(out)
    };
    let t0: i64 = 1_790_000_000_000;
    at(
        t0,
        &[
            "claim", "old", "--intent", "t", "--ttl", "1s", "--from", "zed",
        ],
    )
    .ok();
    let early = at(
        t0 + 500,
        &["claim", "old", "--intent", "t", "--from", "amy"],
    );
    assert_ne!(early.code, 0, "zed's claim still holds: {}", early.stdout);
    at(
        t0 + 2_000,
        &["claim", "old", "--intent", "t", "--from", "amy"],
    )
    .ok();
}

#[test]
fn room_guard_blocks_a_commit_under_someone_elses_claim() {
    let env = env();
    env.write_file("src/a.rs", "fn a() {}\n");
    git(&env.cwd, &["add", "src/a.rs"]);
    room(
        &env,
        &["claim", "src", "--intent", "reworking a", "--from", "alice"],
    )
    .ok();
    let r = room(
        &env,
        &["guard", "--staged", "--mode", "block", "--from", "bob"],
    )
    .code(1);
    assert!(
        r.stderr.contains("src/a.rs")
            && r.stderr.contains("alice")
            && r.stderr.contains("reworking a"),
        "{}",
        r.stderr
    );
    room(
        &env,
        &["guard", "--staged", "--mode", "warn", "--from", "bob"],
    )
    .ok();
    room(&env, &["guard", "--staged", "--from", "alice"]).ok();
    // As a real pre-commit hook.
    let hook = env.cwd.join(".git/hooks/pre-commit");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nexec env -i HOME=\"{}\" AG_HOME=\"{}\" AG_NAME=bob {} guard --staged\n",
            env.dir.path().display(),
            env.home.display(),
            bin("ag-room").display()
        ),
    )
    .unwrap();
    make_executable(&hook);
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "x",
        ])
        .current_dir(&env.cwd)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("reworking a"));
}

/// The claim index beside a room: a claim made long ago still blocks after thousands of other
/// lines; a release after the index's offset is read; a claim line another writer appended
/// without the index is read; an index that is corrupt, or for a room that was replaced, is
/// ignored; the index is private.
#[test]
fn room_claims_hold_through_the_claim_index_and_without_it() {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt;
    let env = env();
    let claim =
        |from: &str, path: &str| room(&env, &["claim", path, "--intent", "work", "--from", from]);
    claim("alice", "src/**").ok();
    let index_dir = env.home.join("room-claims");
    let index = std::fs::read_dir(&index_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .expect("an index beside the room");
    assert_eq!(
        std::fs::metadata(&index).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(&index_dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // 3,000 lines from others after it: the claim is still there for the next claimer.
    let path = the_room(&env);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for i in 0..3000 {
        let l = serde_json::json!({"v":1,"id":format!("01a00000-0000-7000-8000-{i:012}"),
            "ts":"2026-11-30T00:00:00.000Z","type":"say","from":{"name":"b","kind":"tool"},"text":"hi"});
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    let r = claim("bob", "src/lib.rs").code(3);
    assert!(r.stderr.contains("alice"), "{}", r.stderr);
    // A claim line written by a writer that keeps no index is read after the offset.
    let foreign = serde_json::json!({"v":1,"id":"01a00000-0000-7000-8000-0000000f0001",
        "ts": chrono_now(), "type":"claim","from":{"name":"dora","kind":"tool"},
        "paths":["docs/**"],"mode":"exclusive","ttl_s":600,"intent":"notes"});
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{foreign}").unwrap();
    drop(f);
    let r = claim("bob", "docs/a.md").code(3);
    assert!(r.stderr.contains("dora"), "{}", r.stderr);
    // A release after the offset frees the path.
    let r = room(&env, &["release", "--all", "--from", "alice"]).ok();
    assert!(!r.stderr.contains("nothing released"), "{}", r.stderr);
    claim("bob", "src/lib.rs").ok();
    // A corrupt index is ignored: the room says who holds what.
    std::fs::write(&index, "{not json").unwrap();
    let r = claim("erin", "src/lib.rs").code(3);
    assert!(r.stderr.contains("bob"), "{}", r.stderr);
    // An index for another file (the room was replaced by a copy without its claims) is
    // ignored, so claims it lists that the new room does not hold do not block.
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.contains("\"type\":\"claim\"") && !l.contains("\"type\":\"release\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let replaced = path.with_extension("new");
    std::fs::write(&replaced, kept).unwrap();
    std::fs::rename(&replaced, &path).unwrap();
    claim("erin", "src/lib.rs").ok();
    let listed = room(&env, &["claims"]).ok().stdout;
    assert!(
        listed.contains("erin") && !listed.contains("bob"),
        "{listed}"
    );
}

/// Now as a room line's `ts`.
fn chrono_now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%3fZ")
        .to_string()
}
