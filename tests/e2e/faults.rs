//! Reliability under faults: a slow writer, closed or full output streams, dead owners,
//! damaged files. Each test reproduces one fault with the real binaries.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{chunk, TestEnv};

/// Poll `cond` until it holds, failing after a generous deadline.
#[track_caller]
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` has the store open (it has passed the point where an old `append`
/// took the write lock).
fn has_store_open(pid: u32, db: &std::path::Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == db))
}

#[test]
fn a_slow_append_does_not_block_another_sessions_turn() {
    let env = TestEnv::new();
    let a = env.new_session("slow writer", "first");
    let mut writer = env
        .command("ag-log")
        .args(["append", "-s", &a])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = writer.stdin.take().unwrap();
    writeln!(pipe, "{}", chunk::user("typed slowly")).unwrap();
    pipe.flush().unwrap();
    let db = env.db().canonicalize().unwrap();
    wait_until("the writer to open the store", || {
        has_store_open(writer.id(), &db)
    });

    // The gate: stdin stays open until another session's whole turn has run.
    let turn = env.run("ag-prompt", &["-m", "echo", "meanwhile"]).ok();
    assert_eq!(turn.stdout.trim(), "meanwhile");
    let other = env.log(&["ls", "--json"]).ok();
    let running = other
        .json_lines()
        .iter()
        .filter(|s| s["status"] == "running")
        .count();
    assert_eq!(running, 0, "{}", other.stdout);

    writeln!(pipe, "{}", chunk::assistant("and then")).unwrap();
    drop(pipe);
    let out = writer.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let texts: Vec<String> = env
        .chunks(&a)
        .iter()
        .map(|c| c["data"]["text"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(texts, ["first", "typed slowly", "and then"]);
}

/// Wait for `child` to exit, failing after a generous deadline.
#[track_caller]
pub(crate) fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let mut status = None;
    wait_until("the process to exit", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

/// Run a shell command line in the test environment (the binaries are on its PATH).
pub(crate) fn sh(env: &TestEnv, line: &str) -> crate::support::Run {
    let mut cmd = std::process::Command::new("sh");
    cmd.env_clear().envs(env.env.iter().map(|(k, v)| (k, v)));
    let out = cmd
        .args(["-c", line])
        .current_dir(&env.cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    crate::support::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub(crate) fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

#[test]
fn a_turn_whose_output_reader_went_away_still_finishes_and_records_its_end() {
    let env = crate::prompt::env_with(None, "");
    let gate = env.dir.path().join("gate");
    let model = crate::prompt::script(
        &env,
        "gated.toml",
        &format!(
            "[[step]]\ntext = \"looking\"\nwait_for = \"{}\"\n\
             tool_calls = [{{ name = \"glob\", arguments = {{ pattern = \"*.none\" }} }}]\n\
             [[step]]\ntext = \"nothing there\"\n",
            gate.display()
        ),
    );
    // `ag-prompt … 2>&1 | head -1`: one pipe for both streams, its reader gone after a line.
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = env
        .command("ag-prompt")
        .args(["-m", &model, "look around"])
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(reader), &mut first).unwrap();
    assert!(!first.is_empty());
    std::fs::write(&gate, "").unwrap();
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(0), "a closed pipe ends quietly");

    let ls = env.log(&["ls", "--json"]).ok().json_lines();
    assert_eq!(ls[0]["status"], "idle", "{ls:?}");
    let chunks = env.chunks(ls[0]["id"].as_str().unwrap());
    let results = crate::prompt::of_type(&chunks, Some("tool"), "tool_result");
    assert_eq!(results.len(), 1, "{chunks:?}");
    let end = crate::prompt::last_turn_end(&chunks);
    assert_eq!(end["data"]["stop_reason"], "end_turn");
}

#[test]
fn a_full_stderr_does_not_change_the_exit_status() {
    let env = TestEnv::new();
    let out = env
        .command("ag-log")
        .args(["cat", "no-such-session"])
        .stderr(dev_full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
}

#[test]
fn a_write_that_was_stored_but_not_printed_exits_74_and_is_not_repeated() {
    let env = TestEnv::new();
    let id = env.new_session("full", "hello");
    let out = env
        .command("ag-log")
        .args(["append", "-s", &id, "more"])
        .stdout(dev_full())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{stderr}");
    assert!(
        stderr.contains(&format!("1 chunk appended to session {id}"))
            && stderr.contains("cannot write to stdout")
            && stderr.contains("do not run the command again"),
        "{stderr}"
    );
    assert_eq!(env.chunks(&id).len(), 2);

    let out = env
        .command("ag-fork")
        .args([&id, "--at", "1"])
        .stdout(dev_full())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{stderr}");
    assert!(stderr.contains("was forked as"), "{stderr}");
    assert_eq!(env.log(&["ls", "--json"]).ok().json_lines().len(), 2);
}

#[test]
fn a_closed_stdout_is_an_error() {
    let env = TestEnv::new();
    env.new_session("closed", "hello");
    let run = sh(&env, "ag-log ls >&-");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot write to stdout"),
        "{}",
        run.stderr
    );
    // A command that prints nothing on stdout is not affected.
    sh(&env, "ag-log title last renamed -q >&-").ok();
    assert_eq!(
        env.log(&["ls", "--json"]).ok().json_lines()[0]["title"],
        "renamed"
    );
}

#[test]
fn tail_follow_ends_when_its_reader_goes_away_with_nothing_new() {
    let env = TestEnv::new();
    let id = env.new_session("followed", "hello");
    let mut tail = env
        .command("ag-log")
        .args(["tail", "-f", "--json", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut out = std::io::BufReader::new(tail.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    assert!(first.contains("hello"), "{first:?}");
    drop(out);
    let status = wait_exit(&mut tail);
    assert_eq!(status.code(), Some(0));
}

/// An Anthropic stream cut after its first text block sealed, inside a second block.
pub(crate) fn cut_inside_second_block(first: &str) -> String {
    use crate::fake_provider::sse;
    let full = sse::anthropic(
        &[
            sse::Block::Text(first.into()),
            sse::Block::Text("never finished".into()),
        ],
        "end_turn",
        (10, 5, 0, 0),
    );
    let second = full.find("\"index\":1").unwrap();
    let cut = second + full[second..].find("text_delta").unwrap() + 40;
    full[..cut].to_string()
}

#[test]
fn stdout_holds_exactly_the_answer_the_log_holds_after_a_retry() {
    use crate::fake_provider::{sse, FakeProvider, Reply};
    let fake = FakeProvider::start();
    let env = crate::prompt::env_for(&fake);
    fake.push(Reply::Truncate(cut_inside_second_block("half an answer")));
    fake.push(Reply::Sse(sse::anthropic_text("second try ok")));
    let run = env
        .run("ag-prompt", &["-m", crate::prompt::MODEL, "hello"])
        .ok();
    assert_eq!(run.stdout, "second try ok\n", "{}", run.stderr);
    let folded = env.log(&["fold", &crate::prompt::session_id(&run)]).ok();
    assert!(
        !folded.stdout.contains("half an answer"),
        "{}",
        folded.stdout
    );

    // Every attempt broken: nothing of them reaches stdout.
    for _ in 0..3 {
        fake.push(Reply::Truncate(cut_inside_second_block("half again")));
    }
    let run = env
        .run("ag-prompt", &["-m", crate::prompt::MODEL, "hello"])
        .code(75);
    assert_eq!(run.stdout, "", "{}", run.stderr);
}

#[test]
fn a_dead_owner_shows_as_interrupted_and_is_reaped_on_read() {
    let env = crate::prompt::env_with(None, "");
    let gate = env.dir.path().join("never");
    let model = crate::prompt::script(
        &env,
        "held.toml",
        &format!(
            "[[step]]\ntext = \"holding\"\nwait_for = \"{}\"\n",
            gate.display()
        ),
    );
    let mut bg = crate::prompt::spawn(&env, &["-m", &model, "hold on"]);
    let id = bg.session();
    // Running, with its prompt stored (the claim comes a moment before the prompt).
    wait_until("the session to run", || {
        env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'") == 1
            && env.sqlite_count("SELECT COUNT(*) FROM chunks WHERE role = 'user'") == 1
    });
    bg.child.kill().unwrap();
    bg.child.wait().unwrap();
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'"),
        1,
        "nothing has read it yet"
    );

    let ls = env.log(&["ls", "--json"]).ok().json_lines();
    assert_eq!(ls[0]["status"], "interrupted", "{ls:?}");
    assert_eq!(
        env.sqlite_count(
            "SELECT COUNT(*) FROM sessions WHERE status = 'interrupted' AND pid IS NULL"
        ),
        1,
        "reaped in the store"
    );
    let show = env.log(&["show", &id, "--json"]).ok().json();
    assert_eq!(show["status"], "interrupted");
    let table = env.log(&["show", &id]).ok();
    assert!(table.stdout.contains("interrupted"), "{}", table.stdout);
    let table = env.log(&["ls"]).ok();
    assert!(table.stdout.contains("interrupted"), "{}", table.stdout);

    // `-c` continues it (this directory's latest chat) like any other session, and the
    // prompt that was cut off is still in the conversation.
    let run = env.run("ag-prompt", &["-c", "-m", "echo", "again"]).ok();
    assert!(run.stderr.contains(&id[..8]), "{}", run.stderr);
    let ls = env.log(&["ls", "--json"]).ok().json_lines();
    assert_eq!(ls.len(), 1, "{ls:?}");
    assert_eq!(ls[0]["status"], "idle");
    let texts: Vec<String> = env
        .chunks(&id)
        .iter()
        .filter(|c| c["role"] == "user")
        .map(|c| c["data"]["text"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(texts, ["hold on", "again"]);
}

#[test]
fn a_room_line_after_a_fragment_without_newline_is_not_lost() {
    let env = TestEnv::new();
    env.run("ag-room", &["tell", "--from", "a", "before"]).ok();
    let rooms: Vec<_> = std::fs::read_dir(env.home.join("rooms"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("device.jsonl"))
        .collect();
    assert_eq!(rooms.len(), 1, "{rooms:?}");
    // A writer killed mid-line by an older version, or an editor, left a fragment.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&rooms[0])
        .unwrap();
    f.write_all(br#"{"v":1,"id":"01a00000-0000-7000-8000-00000000000f","ts":"2026-1"#)
        .unwrap();
    drop(f);
    env.run("ag-room", &["tell", "--from", "a", "after the fragment"])
        .ok();
    let t = env.run("ag-room", &["tail"]).ok();
    assert!(
        t.stdout.contains("before") && t.stdout.contains("after the fragment"),
        "{}\n{}",
        t.stdout,
        t.stderr
    );
}

#[test]
fn config_values_that_cannot_work_are_refused_before_a_session_exists() {
    let env = crate::prompt::env_with(
        None,
        "[providers.local]\nkind = \"openai\"\nbase_url = \"localhost:11434/v1\"\n",
    );
    let run = env
        .run("ag-prompt", &["-m", "local/model", "hello"])
        .code(1);
    assert!(
        run.stderr.contains("providers.local.base_url") && run.stderr.contains("not a URL"),
        "{}",
        run.stderr
    );
    assert!(!env.db().exists() || env.log(&["ls", "--json"]).ok().stdout.is_empty());

    let env = crate::prompt::env_with(None, "[agent]\nmax_steps = 0\n");
    let run = env.run("ag-prompt", &["-m", "echo", "hello"]).code(1);
    assert!(run.stderr.contains("agent.max_steps"), "{}", run.stderr);
    let env = crate::prompt::env_with(None, "");
    let run = env
        .run("ag-prompt", &["-m", "echo", "--max-steps", "0", "hello"])
        .code(2);
    assert!(run.stderr.contains("--max-steps"), "{}", run.stderr);

    let mut env = crate::prompt::env_with(None, "");
    env.set("OPENAI_BASE_URL", "not a url")
        .set("OPENAI_API_KEY", "k");
    let run = env.run("ag-prompt", &["-m", "openai/gpt", "hello"]).code(2);
    assert!(run.stderr.contains("OPENAI_BASE_URL"), "{}", run.stderr);
}

#[test]
fn one_failed_attempt_reads_in_the_singular() {
    use crate::fake_provider::{FakeProvider, Reply};
    let fake = FakeProvider::start();
    let env = crate::prompt::env_with(Some(&fake), "");
    std::fs::write(
        env.dir.path().join("config/ag/config.toml"),
        "[network]\nconnect_timeout_s = 2\nidle_timeout_s = 1\nmax_attempts = 1\n",
    )
    .unwrap();
    fake.push(Reply::Status {
        code: 503,
        retry_after: None,
        body: "{}".into(),
    });
    let run = env
        .run("ag-prompt", &["-m", crate::prompt::MODEL, "hello"])
        .code(75);
    assert!(run.stderr.contains("after 1 attempt:"), "{}", run.stderr);
}

#[test]
fn a_damaged_store_names_itself_and_how_to_recover() {
    let env = TestEnv::new();
    env.new_session("soon damaged", "hello");
    // Scribble over the schema page, past the file header.
    let db = env.db();
    let mut bytes = std::fs::read(&db).unwrap();
    for b in &mut bytes[100..4096] {
        *b = 0x5a;
    }
    std::fs::write(&db, bytes).unwrap();
    let run = env.log(&["ls"]).code(1);
    assert!(
        run.stderr.contains("is damaged") && run.stderr.contains(".recover"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_posted_room_line_whose_id_cannot_be_printed_exits_74() {
    let env = TestEnv::new();
    let out = env
        .command("ag-room")
        .args(["tell", "--from", "me", "posted once"])
        .stdout(dev_full())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{stderr}");
    assert!(stderr.contains("was posted"), "{stderr}");
    let tail = env.run("ag-room", &["tail"]).ok();
    assert_eq!(
        tail.stdout.matches("posted once").count(),
        1,
        "{}",
        tail.stdout
    );
}
