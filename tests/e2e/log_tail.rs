//! `ag-log tail` end to end: the newest chunks, `-f` following what another process writes, and
//! a reader that goes away (a closed pipe ends the command quietly).

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::log_read::*;
use crate::support::{chunk, TestEnv};

// ---------------------------------------------------------------------------------------------
// tail

#[test]
fn tail_prints_the_newest_n() {
    let env = TestEnv::new();
    let c = conversation(&env);
    assert_eq!(
        seqs(
            &env.log(&["tail", "-n", "2", "--json", &c.s])
                .ok()
                .json_lines()
        ),
        [8, 9]
    );
    // The default is 10: the whole 9-chunk session.
    assert_eq!(
        seqs(&env.log(&["tail", "--json", &c.s]).ok().json_lines()),
        (1..=9).collect::<Vec<_>>()
    );
    let text = env.log(&["tail", "-n", "2", &c.s]).ok().stdout;
    assert!(
        text.contains("None yet.") && !text.contains("list the files"),
        "{text}"
    );
}

#[test]
fn tail_follow_prints_chunk_seal_and_turn_done_events_as_chunks_arrive() {
    let env = TestEnv::new();
    let s = env.new_session("live", "hello");
    let turn = env.chunks(&s)[0]["turn"].as_str().unwrap().to_string();
    let mut child = env
        .command("ag-log")
        .args(["tail", "-f", "--json", "-n", "1", &s])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _guard = KillOnDrop(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let next = || -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .expect("tail -f printed nothing before the deadline");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
    };

    // The newest existing chunk first: once it is out, the follower knows where it stands.
    let ev = next();
    assert_eq!(ev["type"], "chunk-seal", "{ev}");
    assert_eq!(ev["chunk"]["seq"], 1);
    assert_eq!(ev["chunk"]["data"]["text"], "hello");

    // Another process appends: each chunk arrives as a seal event.
    env.append(
        &s,
        &[chunk::step(chunk::assistant("streamed reply"), &turn, 1)],
    );
    let ev = next();
    assert_eq!(ev["type"], "chunk-seal", "{ev}");
    assert_eq!(ev["chunk"]["seq"], 2);
    assert_eq!(ev["chunk"]["session"], s.as_str());
    // The same fields as `ag-prompt --json`'s: the event names its session.
    assert_eq!(ev["session"], s.as_str());
    assert_eq!(ev["chunk"]["data"]["text"], "streamed reply");

    env.append(&s, &[chunk::step(chunk::turn_end(3, 4), &turn, 1)]);
    let ev = next();
    assert_eq!(ev["type"], "chunk-seal", "{ev}");
    assert_eq!(ev["chunk"]["seq"], 3);
    assert_eq!(ev["chunk"]["data"]["kind"], "turn_end");
    let ev = next();
    assert_eq!(ev["type"], "turn-done", "{ev}");
    assert_eq!(ev["session"], s.as_str());
    assert_eq!(ev["turn"], turn.as_str());
    assert_eq!(ev["stop_reason"], "end_turn");
    assert_eq!(ev["usage"]["input"], 3);
    assert_eq!(ev["usage"]["output"], 4);

    // Nothing else (no repeats) while nothing is written.
    assert!(
        rx.recv_timeout(Duration::from_millis(700)).is_err(),
        "unexpected extra event"
    );
}

// ---------------------------------------------------------------------------------------------
// pipes

#[test]
fn a_closed_pipe_ends_quietly() {
    let env = TestEnv::new();
    let s = env.new_session("long", "start");
    let filler = "lorem ipsum dolor sit amet ".repeat(4);
    let lines: Vec<Value> = (2..=5000)
        .map(|i| chunk::assistant(&format!("{i} {filler}")))
        .collect();
    let input = ndjson(&lines);
    env.log_stdin(&["append", "-q", "-s", &s], input).ok();
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM chunks"), 5000);

    // Several MB of output into a reader that leaves after one line.
    let script = format!(
        "ag-log cat {s} --json | head -n 1 >/dev/null; echo \"json=${{PIPESTATUS[0]}}\"\n\
         ag-log cat {s} | head -n 1 >/dev/null; echo \"text=${{PIPESTATUS[0]}}\"\n\
         ag-log cat {s} --format md | head -n 1 >/dev/null; echo \"md=${{PIPESTATUS[0]}}\"\n\
         ag-log tail -n 5000 --json {s} | head -n 1 >/dev/null; echo \"tail=${{PIPESTATUS[0]}}\"\n"
    );
    let run = bash(&env, &script);
    assert_eq!(
        run.stdout, "json=0\ntext=0\nmd=0\ntail=0\n",
        "stderr: {}",
        run.stderr
    );
    assert_eq!(run.stderr, "", "a closed pipe is not an error");
}
