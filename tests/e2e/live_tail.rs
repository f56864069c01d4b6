//! `ag-log tail -f` in a second process follows a running turn: the open block's deltas from
//! the running `ag-prompt`'s live file, before the chunk is sealed.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::fake_provider::{sse, FakeProvider, Reply};
use crate::prompt::{env_for, spawn, wait_until, IDLE_S, MODEL};

#[test]
fn tail_follow_prints_a_running_turns_deltas_before_the_seal() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    // The stream pauses at a gate mid-block: give it more idle time than a busy machine needs.
    let cfg = env.dir.path().join("config/ag/config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace(
            &format!("idle_timeout_s = {IDLE_S}"),
            "idle_timeout_s = 120",
        ),
    )
    .unwrap();
    let gate = env.dir.path().join("gate-seal");
    let body = sse::anthropic_text("hello streaming world");
    let cut = body.find("event: content_block_stop").unwrap();
    fake.push(Reply::SseGated {
        before: body[..cut].to_string(),
        gate: gate.clone(),
        after: body[cut..].to_string(),
    });
    let mut p = spawn(&env, &["-m", MODEL, "say hello"]);
    let id = p.session();
    let out = env.dir.path().join("tail.out");
    let mut tail = env
        .command("ag-log")
        .args(["tail", "-f", "--json", &id])
        .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = || -> Vec<Value> {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    // The open block's deltas reach the other process while the block is still open.
    assert!(
        wait_until(Duration::from_secs(30), || lines()
            .iter()
            .any(|e| e["type"] == "chunk-delta")),
        "no delta: {:?}",
        lines()
    );
    let seen = lines();
    let open = seen
        .iter()
        .find(|e| e["type"] == "chunk-open" && e["chunk_type"] == "text")
        .expect("the text block's chunk-open");
    let block = open["id"].as_str().unwrap().to_string();
    let streamed: String = seen
        .iter()
        .filter(|e| e["type"] == "chunk-delta" && e["id"] == block.as_str())
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert!("hello streaming world".starts_with(&streamed) && !streamed.is_empty());
    assert!(
        !env.chunks(&id).iter().any(|c| c["id"] == block.as_str()),
        "not sealed yet"
    );
    std::fs::write(&gate, "").unwrap();
    let r = p.wait(Duration::from_secs(30));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        wait_until(Duration::from_secs(30), || lines()
            .iter()
            .any(
                |e| e["type"] == "chunk-seal" && e["chunk"]["id"] == block.as_str()
            )),
        "{:?}",
        lines()
    );
    let all = lines();
    let first_delta = all.iter().position(|e| e["type"] == "chunk-delta").unwrap();
    let seal = all
        .iter()
        .position(|e| e["type"] == "chunk-seal" && e["chunk"]["id"] == block.as_str())
        .unwrap();
    assert!(first_delta < seal);
    assert_eq!(
        all.iter()
            .filter(|e| e["type"] == "chunk-seal" && e["chunk"]["id"] == block.as_str())
            .count(),
        1
    );
    // The live file is gone with the turn.
    assert!(!env.home.join("live").join(format!("{id}.jsonl")).exists());
    let _ = tail.kill();
    let _ = tail.wait();
}
