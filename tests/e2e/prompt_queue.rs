//! `ag-prompt` on a busy session (DESIGN §2 "Queued input") and Ctrl-C: queued prompts join
//! the running turn at step boundaries exactly once and in order, the turn takes what arrives
//! as it ends, `--no-queue` refuses, a killed owner is detected, and SIGINT ends the turn
//! with `interrupted`, keeping what was sealed.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::fake_provider::{sse, FakeProvider, Reply};
use crate::prompt::{
    env_with, last_turn_end, script, session_id, spawn, system_kind, user_texts, wait_for_chunk,
    wait_until,
};
use crate::support::TestEnv;

/// A script of `tool_steps` steps that each say something and call `glob` (the first one
/// ends only once `gate` exists), then a final answer, then one more answer for input that
/// arrives as the turn ends.
pub(crate) fn slow_script(env: &TestEnv, name: &str, tool_steps: usize, gate: &Path) -> String {
    let mut s = String::new();
    for i in 1..=tool_steps {
        let wait = if i == 1 {
            format!("wait_for = {gate:?}\n")
        } else {
            String::new()
        };
        s.push_str(&format!(
            "[[step]]\ntext = \"working {i}\"\n{wait}\
             tool_calls = [{{ name = \"glob\", arguments = {{ pattern = \"*.none\" }} }}]\n"
        ));
    }
    s.push_str("[[step]]\ntext = \"all steps done\"\n");
    s.push_str("[[step]]\ntext = \"answering the late input\"\n");
    script(env, name, &s)
}

pub(crate) fn queued_count(env: &TestEnv) -> i64 {
    env.sqlite_count("SELECT COUNT(*) FROM queued_input")
}

#[track_caller]
pub(crate) fn assert_queued(run: &crate::support::Run) {
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    assert!(run.stderr.contains("queued"), "{}", run.stderr);
    assert!(
        run.stdout.is_empty(),
        "a queued prompt runs nothing: {}",
        run.stdout
    );
}

#[test]
fn prompt_queued_input_joins_the_running_turn_in_order() {
    let env = env_with(None, "");
    let gate = env.cwd.join("gate-queued");
    let model = slow_script(&env, "slow.toml", 5, &gate);
    let mut bg = spawn(&env, &["-m", &model, "start the long job"]);
    let id = bg.session();
    wait_for_chunk(&env, &id, |c| c["role"] == "assistant");
    let texts = ["queued one", "queued two", "queued three"];
    for t in texts {
        assert_queued(&env.run("ag-prompt", &["-s", &id, "-m", "echo", t]));
    }
    std::fs::write(&gate, "").unwrap();
    let run = bg.wait(Duration::from_secs(20));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("all steps done"), "{}", run.stdout);

    let chunks = env.chunks(&id);
    let mut seqs = Vec::new();
    for t in texts {
        let found = user_texts(&chunks, t);
        assert_eq!(found.len(), 1, "{t:?} exactly once");
        let c = found[0];
        seqs.push(c["seq"].as_i64().unwrap());
        assert_eq!(c["turn"], chunks[0]["turn"], "it joined the running turn");
        let step = c["step"].as_i64().unwrap();
        assert!(
            step >= 1,
            "queued input joins at a step boundary, not the start"
        );
        // It follows a finished step (its tool results, or other queued input) and precedes
        // the next step's answer.
        let at = chunks.iter().position(|x| x["id"] == c["id"]).unwrap();
        let before = &chunks[at - 1];
        assert!(
            before["type"] == "tool_result"
                || (before["role"] == "user" && before["type"] == "text")
                || before["role"] == "assistant",
            "queued input after {before}"
        );
        assert_eq!(before["step"].as_i64().unwrap(), step);
        let after = chunks[at + 1..]
            .iter()
            .find(|x| x["role"] != "user")
            .unwrap();
        assert!(
            after["step"].as_i64().unwrap() == step + 1,
            "the next step sees it: {after}"
        );
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
    assert_eq!(system_kind(&chunks, "turn_end").len(), 1);
    assert_eq!(last_turn_end(&chunks)["data"]["stop_reason"], "end_turn");
    assert_eq!(queued_count(&env), 0);
}

#[test]
fn prompt_input_queued_on_the_final_step_is_answered_by_the_turn() {
    let env = env_with(None, "");
    let gate = env.cwd.join("gate-late");
    let model = script(
        &env,
        "final.toml",
        &format!(
            "[[step]]\ntext = \"first answer\"\nwait_for = {gate:?}\n\
             [[step]]\ntext = \"answering the late input\"\n"
        ),
    );
    let mut bg = spawn(&env, &["-m", &model, "a one-step question"]);
    let id = bg.session();
    wait_for_chunk(&env, &id, |c| c["data"]["text"] == "first answer");
    assert_queued(&env.run("ag-prompt", &["-s", &id, "-m", "echo", "one more thing"]));
    std::fs::write(&gate, "").unwrap();
    let run = bg.wait(Duration::from_secs(20));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("answering the late input"),
        "the model answered the late input: {}",
        run.stdout
    );
    let chunks = env.chunks(&id);
    let shape: Vec<(i64, &str, &str)> = chunks
        .iter()
        .map(|c| {
            (
                c["step"].as_i64().unwrap(),
                c["role"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (0, "user", "text"),
            (1, "assistant", "text"),
            (1, "user", "text"),
            (2, "assistant", "text"),
            (2, "system", "system"),
        ]
    );
    assert_eq!(chunks[2]["data"]["text"], "one more thing");
    assert_eq!(chunks[3]["data"]["text"], "answering the late input");
    assert_eq!(last_turn_end(&chunks)["data"]["stop_reason"], "end_turn");
    assert_eq!(queued_count(&env), 0);
}

#[test]
fn prompt_no_queue_on_a_busy_session_exits_3() {
    let env = env_with(None, "");
    let gate = env.cwd.join("gate-busy");
    let model = script(
        &env,
        "busy.toml",
        &format!("[[step]]\ntext = \"busy working\"\nwait_for = {gate:?}\n"),
    );
    let mut bg = spawn(&env, &["-m", &model, "keep busy"]);
    let id = bg.session();
    wait_for_chunk(&env, &id, |c| c["role"] == "assistant");
    let run = env
        .run(
            "ag-prompt",
            &["-s", &id, "--no-queue", "-m", "echo", "should not queue"],
        )
        .code(3);
    assert!(run.stderr.contains("busy"), "{}", run.stderr);
    assert_eq!(queued_count(&env), 0);
    std::fs::write(&gate, "").unwrap();
    let done = bg.wait(Duration::from_secs(20));
    assert_eq!(done.code, 0, "{}", done.stderr);
    let chunks = env.chunks(&id);
    assert!(user_texts(&chunks, "should not queue").is_empty());
    assert_eq!(system_kind(&chunks, "turn_end").len(), 1);
}

#[test]
fn prompt_queued_input_survives_a_killed_owner() {
    let env = env_with(None, "");
    let model = script(
        &env,
        "killed.toml",
        "[[step]]\ntext = \"working hard\"\nwait_for = \"never-opened\"\n\
         tool_calls = [{ name = \"glob\", arguments = { pattern = \"*\" } }]\n",
    );
    let mut bg = spawn(&env, &["-m", &model, "a long job"]);
    let id = bg.session();
    wait_for_chunk(&env, &id, |c| c["role"] == "assistant");
    let queued = env
        .run(
            "ag-prompt",
            &["-s", &id, "--json", "-m", "echo", "queued before the kill"],
        )
        .ok();
    assert!(queued.stderr.contains("queued"), "{}", queued.stderr);
    let ev = queued.json();
    assert_eq!(ev["type"], "queued");
    assert_eq!(ev["session"], id.as_str());
    assert_eq!(
        ev["owner_pid"],
        bg.pid(),
        "the running process owns the session"
    );
    bg.child.kill().unwrap();
    bg.child.wait().unwrap();
    assert_eq!(queued_count(&env), 1, "the item waits in the queue");

    let run = env
        .run("ag-prompt", &["-s", &id, "-m", "echo", "after the kill"])
        .ok();
    assert!(
        run.stdout.contains("queued before the kill"),
        "the new turn took the queued item: {}",
        run.stdout
    );
    let chunks = env.chunks(&id);
    let before = user_texts(&chunks, "queued before the kill");
    let after = user_texts(&chunks, "after the kill");
    assert_eq!((before.len(), after.len()), (1, 1));
    assert!(
        before[0]["seq"].as_i64() < after[0]["seq"].as_i64(),
        "send order: the item queued before the kill comes first"
    );
    assert_eq!(last_turn_end(&chunks)["data"]["stop_reason"], "end_turn");
    assert_eq!(queued_count(&env), 0);
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'"),
        0
    );
}

/// The command lines of live (not zombie) processes that mention `marker`.
pub(crate) fn running_with(marker: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| process_state(pid).is_some_and(|s| s != 'Z'))
        .filter_map(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker))
        .collect()
}

/// Field 3 of /proc/PID/stat: R, S, Z, …; None once the process is gone.
pub(crate) fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// Field 22 of /proc/PID/stat: the start time in clock ticks.
pub(crate) fn start_time(pid: u32) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[test]
fn prompt_busy_owner_is_identified_by_pid_and_start_time() {
    let env = env_with(None, "");
    let id = session_id(&env.run("ag-prompt", &["-m", "echo", "hello"]).ok());
    let mut owner = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let (pid, start) = (owner.id(), start_time(owner.id()));
    let set_owner = |pid_start: i64| {
        let conn = rusqlite::Connection::open(env.db()).unwrap();
        conn.execute(
            "UPDATE sessions SET status = 'running', pid = ?1, pid_start = ?2 WHERE id = ?3",
            rusqlite::params![pid, pid_start, id],
        )
        .unwrap();
    };
    // A live process with the recorded start time owns the session: the prompt queues.
    set_owner(start);
    assert_queued(&env.run(
        "ag-prompt",
        &["-s", &id, "-m", "echo", "waits for the owner"],
    ));
    assert_eq!(queued_count(&env), 1);
    // The same pid with another start time is a recycled pid: the owner is gone, the prompt
    // runs, and takes the waiting item.
    set_owner(start + 1);
    let run = env
        .run("ag-prompt", &["-s", &id, "-m", "echo", "takes over"])
        .ok();
    assert!(!run.stderr.contains("queued"), "{}", run.stderr);
    assert!(run.stdout.contains("waits for the owner"), "{}", run.stdout);
    let _ = owner.kill();
    let _ = owner.wait();
    let chunks = env.chunks(&id);
    assert_eq!(user_texts(&chunks, "waits for the owner").len(), 1);
    assert_eq!(user_texts(&chunks, "takes over").len(), 1);
    assert_eq!(queued_count(&env), 0);
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'"),
        0
    );
}

#[test]
fn prompt_queued_input_survives_a_failed_turn() {
    let fake = FakeProvider::start();
    let env = crate::prompt::env_for(&fake);
    // A text block, a pause (a second block trickling in, which is progress, where pings
    // would not be), then an error the loop must not retry.
    let mut body = sse::anthropic_text("about to fail");
    body.truncate(body.find("event: message_delta").unwrap());
    body.push_str("event: content_block_start\ndata: {\"type\": \"content_block_start\", \"index\": 1, \"content_block\": {\"type\": \"text\", \"text\": \"\"}}\n\n");
    for _ in 0..6 {
        body.push_str("event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 1, \"delta\": {\"type\": \"text_delta\", \"text\": \".\"}}\n\n");
    }
    body.push_str(
        "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"invalid_request_error\", \"message\": \"refused mid-stream\"}}\n\n",
    );
    fake.push(Reply::SseSlow {
        body,
        piece_delay: Duration::from_millis(150),
    });
    let mut bg = spawn(&env, &["-m", crate::prompt::MODEL, "this will fail"]);
    let id = bg.session();
    wait_for_chunk(&env, &id, |c| c["data"]["text"] == "about to fail");
    assert_queued(&env.run(
        "ag-prompt",
        &["-s", &id, "-m", "echo", "queued before the failure"],
    ));
    let run = bg.wait(Duration::from_secs(20));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(fake.requests().len(), 1, "not retried");
    let chunks = env.chunks(&id);
    assert_eq!(last_turn_end(&chunks)["data"]["stop_reason"], "error");
    // The failing turn took the item into its log before it ended; the queue is empty.
    let kept = user_texts(&chunks, "queued before the failure");
    assert_eq!(kept.len(), 1, "kept exactly once");
    assert_eq!(kept[0]["turn"], chunks[0]["turn"]);
    assert_eq!(queued_count(&env), 0);

    let next = env
        .run("ag-prompt", &["-s", &id, "-m", "echo", "after the failure"])
        .ok();
    assert!(
        next.stdout.contains("queued before the failure"),
        "{}",
        next.stdout
    );
    let chunks = env.chunks(&id);
    assert_eq!(user_texts(&chunks, "queued before the failure").len(), 1);
    assert_eq!(queued_count(&env), 0);
}

#[test]
fn prompt_queue_interleaving_keeps_every_item_once_in_order() {
    let env = env_with(None, "");
    // Whatever step a turn starts at, it runs up to 5 slow tool steps and then ends.
    let mut s = String::new();
    for i in 0..120 {
        if i % 6 == 5 {
            s.push_str("[[step]]\ntext = \"turn ends here\"\n");
        } else {
            s.push_str(
                "[[step]]\ntext = \"working\"\ndelay_ms = 120\n\
                 tool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n",
            );
        }
    }
    let model = script(&env, "stress.toml", &s);
    let mut first = spawn(&env, &["-m", &model, "driver turn one"]);
    let id = first.session();
    let env = std::sync::Arc::new(env);

    let driver = {
        let (env, id, model) = (env.clone(), id.clone(), model.clone());
        std::thread::spawn(move || {
            let one = first.wait(Duration::from_secs(30));
            let two = env.run("ag-prompt", &["-s", &id, "-m", &model, "driver turn two"]);
            (one, two)
        })
    };
    // Spread over both turns and the gap between them.
    let submitters: Vec<_> = [("A", 200), ("B", 260)]
        .into_iter()
        .map(|(who, gap)| {
            let (env, id) = (env.clone(), id.clone());
            std::thread::spawn(move || {
                let mut runs = Vec::new();
                for k in 1..=5 {
                    let text = format!("submitter {who} item {k}");
                    runs.push((
                        text.clone(),
                        env.run("ag-prompt", &["-s", &id, "-m", "echo", &text]),
                    ));
                    std::thread::sleep(Duration::from_millis(gap));
                }
                runs
            })
        })
        .collect();
    let mut by_submitter = Vec::new();
    for s in submitters {
        let runs = s.join().unwrap();
        for (text, run) in &runs {
            assert_eq!(run.code, 0, "{text}: {}", run.stderr);
        }
        by_submitter.push(runs.into_iter().map(|(t, _)| t).collect::<Vec<_>>());
    }
    let (one, two) = driver.join().unwrap();
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert_eq!(two.code, 0, "{}", two.stderr);
    // A queued driver turn two, or one that ended before a late item, leaves nothing running.
    let start = Instant::now();
    while env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'") > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "a turn never ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let chunks = env.chunks(&id);
    for texts in &by_submitter {
        let mut last = 0;
        for t in texts {
            let found = user_texts(&chunks, t);
            assert_eq!(found.len(), 1, "{t:?} exactly once in the log");
            let seq = found[0]["seq"].as_i64().unwrap();
            assert!(seq > last, "{t:?} out of order");
            last = seq;
        }
    }
    for t in ["driver turn one", "driver turn two"] {
        assert_eq!(user_texts(&chunks, t).len(), 1, "{t:?}");
    }
    assert_eq!(queued_count(&env), 0);
    // Every turn in the log ended.
    let turns: std::collections::BTreeSet<&str> =
        chunks.iter().map(|c| c["turn"].as_str().unwrap()).collect();
    let ended = system_kind(&chunks, "turn_end");
    assert_eq!(ended.len(), turns.len(), "every turn has its turn_end");
    assert!(ended.iter().all(|c| c["data"]["stop_reason"] == "end_turn"));
}

/// BUG (reported, not fixed here: lib/proc.rs): `proc::alive` takes a zombie for a live
/// owner, because /proc/PID/stat stays (state `Z`, same start time) until the parent reaps
/// it. A killed `ag-prompt` whose parent has not waited for it yet keeps the session "busy":
/// the next prompt is queued behind a dead turn instead of running.
#[test]
fn prompt_a_zombie_owner_does_not_hold_the_session() {
    let env = env_with(None, "");
    let model = script(
        &env,
        "zombie.toml",
        "[[step]]\ntext = \"working\"\nwait_for = \"never-opened\"\n",
    );
    let mut bg = spawn(&env, &["-m", &model, "a long job"]);
    let id = bg.session();
    wait_for_chunk(&env, &id, |c| c["role"] == "assistant");
    // Killed, not yet reaped.
    let status = std::process::Command::new("kill")
        .args(["-KILL", &bg.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let pid = bg.pid();
    assert!(
        wait_until(Duration::from_secs(20), || process_state(pid) == Some('Z')),
        "the killed owner never became a zombie"
    );
    let run = env.run("ag-prompt", &["-s", &id, "-m", "echo", "next"]);
    bg.child.wait().unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("queued"),
        "queued behind a dead owner: {}",
        run.stderr
    );
    assert_eq!(run.stdout.trim(), "next");
}
