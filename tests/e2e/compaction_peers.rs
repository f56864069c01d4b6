//! Compaction around other sessions, end to end: the peer rules (Slice F: the summarizer
//! never sees peer speech, an unanswered line survives, the handoff names live peers and
//! quotes none), a compaction queued on a running session, and forks and side chats on either
//! side of a compaction.

use std::time::Duration;

use serde_json::json;

use crate::compaction::{
    answer, assert_valid, first_user_text, seed, small_window, text_of, ANTHROPIC,
};
use crate::fake_provider::sse::{self, Block};
use crate::fake_provider::{FakeProvider, Reply};
use crate::prompt::{env_with, spawn, system_kind, wait_until};
use crate::support::chunk;

#[test]
fn peers_never_reach_the_summarizer_an_unanswered_one_survives_and_the_handoff_names_live_ones() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), &small_window());
    let id = seed(&env, 5);
    // A live peer in the same worktree: a session whose answer streams for a long while.
    let mut slow = sse::anthropic_text("watching");
    slow.truncate(slow.find("event: message_delta").unwrap());
    for _ in 0..60 {
        slow.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
    }
    fake.push(Reply::SseSlow {
        body: slow,
        piece_delay: Duration::from_millis(250),
    });
    let mut bg = spawn(
        &env,
        &[
            "-m",
            ANTHROPIC,
            "--title",
            "peer-bob-task",
            "watch the build",
        ],
    );
    let peer_id = bg.session();
    assert!(wait_until(Duration::from_secs(30), || fake
        .requests()
        .len()
        == 1));
    assert_eq!(
        env.log(&["show", &peer_id, "--json"]).ok().json()["status"],
        "running"
    );
    // A line in the room, heard at the first step boundary: after the prompt, unanswered.
    // (A session starts hearing a room where it first looks: a short offline turn first.)
    env.run("ag-prompt", &["-s", &id, "-m", "echo", "hello"])
        .ok();
    env.run(
        "ag-room",
        &["tell", "--from", "carol", "PEER-FRESH please look at f2"],
    )
    .ok();
    fake.push(answer("anthropic", "SUMMARY-PEERS"));
    fake.push(answer("anthropic", "On it."));
    // A prompt bigger than the kept suffix, that no step has answered yet: it is kept whole
    // (a summary of it would lose what is asked), and the peer line after it with it.
    let prompt = format!("go on {}", "and on ".repeat(400));
    env.run("ag-prompt", &["-s", &id, "-m", ANTHROPIC, &prompt])
        .ok();
    let reqs = fake.requests()[1..].to_vec();
    assert_eq!(reqs.len(), 2);
    let summary_in = text_of(&reqs[0]);
    assert!(
        !summary_in.contains("PEER-"),
        "the summarizer saw a peer: {summary_in}"
    );
    let handoff = first_user_text(&reqs[1]);
    assert!(
        handoff.contains("Live peers in this worktree: peer-bob-task"),
        "{handoff}"
    );
    assert!(
        !handoff.contains("PEER-"),
        "old peer bodies in the handoff: {handoff}"
    );
    assert!(
        !handoff.contains("go on and on") && !summary_in.contains("go on and on"),
        "the new prompt was summarized: {handoff}"
    );
    let step = text_of(&reqs[1]);
    assert!(
        step.contains(&prompt),
        "the prompt is not kept whole: {step}"
    );
    assert!(
        step.contains("<peer from=\\\"carol"),
        "the unanswered line survives: {step}"
    );
    assert!(
        step.contains("PEER-FRESH") && !step.contains("PEER-SPENT"),
        "{step}"
    );
    assert_valid(&reqs[1], "anthropic");
    let _ = bg.child.kill();
    let _ = bg.wait(Duration::from_secs(10));
}

#[test]
fn compact_on_a_running_session_queues_or_exits_3() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), "[context]\nkeep_tokens = 300\n");
    let id = seed(&env, 3);
    env.write_file("a.txt", "alpha\n");
    // Step 1 streams slowly and calls `read`; step 2 answers.
    fake.push(Reply::SseSlow {
        body: sse::anthropic(
            &[Block::Tool {
                id: "toolu_1".into(),
                name: "read".into(),
                input: json!({"path": "a.txt"}),
            }],
            "tool_use",
            (50, 5, 0, 0),
        ),
        piece_delay: Duration::from_millis(150),
    });
    fake.push(answer("anthropic", "Read it."));
    let bg = spawn(&env, &["-s", &id, "-m", ANTHROPIC, "read a.txt"]);
    assert!(wait_until(Duration::from_secs(30), || fake
        .requests()
        .len()
        == 1));
    let busy = env
        .log(&["compact", &id, "--summary", "x", "--no-queue"])
        .code(3);
    assert!(busy.stderr.contains("busy"), "{}", busy.stderr);
    let queued = env
        .log(&["compact", &id, "--summary", "SUMMARY-QUEUED"])
        .ok();
    assert!(queued.stderr.contains("queued"), "{}", queued.stderr);
    let run = bg.wait(Duration::from_secs(20));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    assert!(first_user_text(&reqs[1]).contains("SUMMARY-QUEUED"));
    assert_valid(&reqs[1], "anthropic");
    let chunks = env.chunks(&id);
    let rec = &system_kind(&chunks, "compaction")[0]["data"];
    assert_eq!(rec["summary"], "SUMMARY-QUEUED");
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM queued_input"), 0);
}

#[test]
fn forks_before_a_compaction_see_the_history_and_after_it_inherit_it() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), "[context]\nkeep_tokens = 300\n");
    let id = seed(&env, 4);
    env.log(&["compact", &id, "--summary", "SUMMARY-FORK"]).ok();
    let rec_seq = system_kind(&env.chunks(&id), "compaction")[0]["seq"]
        .as_i64()
        .unwrap();
    // A turn after the compaction, so a plain fork cuts after it.
    env.append(
        &id,
        &[
            chunk::user("after"),
            chunk::assistant("ok"),
            chunk::turn_end(1, 1),
        ],
    );

    let fold = |sid: &str| env.log(&["fold", sid]).ok().json()["messages"].to_string();
    let before = env
        .run("ag-fork", &[&id, "--at", &(rec_seq - 1).to_string(), "-q"])
        .ok()
        .stdout
        .trim()
        .to_string();
    let text = fold(&before);
    assert!(
        text.contains("answer 0:") && !text.contains("SUMMARY-FORK"),
        "{text}"
    );
    let after = env
        .run("ag-fork", &[&id, "-q"])
        .ok()
        .stdout
        .trim()
        .to_string();
    let text = fold(&after);
    assert!(
        text.contains("SUMMARY-FORK") && !text.contains("answer 0:"),
        "{text}"
    );

    // A side chat on the compacted session folds from the compaction too.
    fake.push(answer("anthropic", "It is about the parser."));
    let btw = env
        .run(
            "ag-fork",
            &[&id, "--btw", "what is this about?", "-m", ANTHROPIC],
        )
        .ok();
    assert!(btw.stdout.contains("about the parser"), "{}", btw.stdout);
    let req = &fake.requests()[0];
    assert!(first_user_text(req).contains("SUMMARY-FORK"));
    assert!(!text_of(req).contains("answer 0:"));
}
