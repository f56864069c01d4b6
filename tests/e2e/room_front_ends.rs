//! The three front ends of a room — `ag-room`, the agent's `peer_*` tools and `ag-room mcp` —
//! call one value (`Rooms`, `Room` and the room layer's functions: `Rooms::post`,
//! `inbox::take`, `inbox::may_consume`, `claims::claim`/`release`, `Room::wait_delivered`,
//! `Room::last`/`follow`), so they agree. Each behaviour is tested once against the value (a
//! unit test) and once through each front end that offers it:
//!
//! | behaviour | value (unit) | `ag-room` | `peer_*` (ag-prompt) | `ag-room mcp` |
//! | --- | --- | --- | --- | --- |
//! | a line to the room, heard by everyone in the worktree | `room::post::tests::every_front_end_posts_by_the_same_rules` | `room::room_direct_message_is_heard_only_by_its_addressee` | `room::room_two_agents_talk_and_see_each_others_receipts` | `room_mcp::a_message_over_mcp_reaches_a_session_and_its_reply_comes_back_through_peer_inbox` |
//! | a direct message, heard only by its addressee | `room::behaviours::the_inbox_gives_held_lines_then_new_ones_once_with_receipts` | `room::room_direct_message_is_heard_only_by_its_addressee` | `peer_talk::peer_direct_message_reply_lands_first_try_and_receipts_reach_the_sender` | `ag_room_mcps_direct_message_reaches_only_its_addressee` |
//! | empty text refused, nothing written | `every_front_end_posts_by_the_same_rules` | `ag_room_tell_follows_the_posting_rules` | `the_agents_peer_message_follows_the_posting_rules` | `ag_room_mcps_peer_message_follows_the_posting_rules` |
//! | an empty reply id is none | `every_front_end_posts_by_the_same_rules` | `ag_room_tell_follows_the_posting_rules` | `the_agents_peer_message_follows_the_posting_rules` | `ag_room_mcps_peer_message_follows_the_posting_rules` |
//! | a message to oneself refused | `every_front_end_posts_by_the_same_rules` | `ag_room_tell_follows_the_posting_rules` | `the_agents_peer_message_follows_the_posting_rules` | — (an MCP client is a name, never a session) |
//! | a device-wide broadcast refused | `every_front_end_posts_by_the_same_rules` | `room::room_direct_message_is_heard_only_by_its_addressee` | — (no device option) | — (no device option) |
//! | the inbox: held lines, then new ones, taken once, with receipts | `the_inbox_gives_held_lines_then_new_ones_once_with_receipts` | `ag_room_inbox_takes_a_sessions_held_lines_once_and_keeps_a_running_ones`, `room::room_tell_wait_too_long_and_inbox` | `room::room_peer_chunk_respects_every_cap` (`peer_inbox`: the held lines) | `room_mcp::a_message_over_mcp_reaches_a_session_and_its_reply_comes_back_through_peer_inbox` (new lines) |
//! | a running session's inbox is its own | `room::behaviours::a_running_sessions_inbox_is_its_own` | `ag_room_inbox_takes_a_sessions_held_lines_once_and_keeps_a_running_ones` | — (an agent reads only its own) | — (reads as its client's name) |
//! | a claim, refused over another's | `room::behaviours::a_claim_refuses_an_overlapping_one_until_released` | `room_claims::room_claim_blocks_the_other_sessions_write`, `room_claims::room_claim_exit_codes_and_release` | `the_agents_peer_claim_is_refused_over_another_claim_and_peer_release_ends_its_own` | `ag_room_mcps_peer_claim_is_refused_over_another_claim_and_peer_release_ends_its_own` |
//! | release | `a_claim_refuses_an_overlapping_one_until_released` | `room_claims::room_claim_exit_codes_and_release` | `the_agents_peer_claim_is_refused_over_another_claim_and_peer_release_ends_its_own` | `ag_room_mcps_peer_claim_is_refused_over_another_claim_and_peer_release_ends_its_own`, `room_mcp::a_claim_taken_over_mcp_blocks_an_agents_write_until_released` |
//! | waiting for a line's receipt | `room::behaviours::waiting_for_a_receipt_ends_when_the_line_is_taken_or_the_time_is_up` | `room::room_tell_wait_too_long_and_inbox` (`tell --wait`) | — (receipts arrive as peer lines) | — (receipts arrive through `peer_inbox`) |
//! | following a room | `room::behaviours::a_follower_is_told_each_new_line_it_is_shown_once_and_stops_when_asked` | `room_files::room_torn_and_corrupt_lines_do_not_stop_readers`, `room_nats::nats_server_restart_mid_run_loses_and_repeats_nothing` (`tail -f`) | — | — |
//!
//! Unqualified names are tests of this module.

use std::time::Duration;

use serde_json::json;

use crate::prompt::{script, session_id, spawn, wait_until};
use crate::room::{env, peer_texts, room, room_lines};
use crate::room_mcp::Client;
use crate::sandbox::results;

#[test]
fn ag_room_tell_follows_the_posting_rules() {
    let mut env = env();
    let me = env.new_session("me", "hello");
    // An empty reply id is none.
    room(&env, &["tell", "--reply-to", "", "first"]).ok();
    let lines = room_lines(&env);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].get("in_reply_to").is_none_or(|r| r.is_null()),
        "{}",
        lines[0]
    );
    // Empty text is refused.
    let run = room(&env, &["tell", "  "]).code(2);
    assert!(run.stderr.contains("the text is empty"), "{}", run.stderr);
    // A session does not message itself.
    env.set("AG_SESSION", &me);
    let run = room(&env, &["tell", "--to", &me, "to me"]).code(2);
    assert!(
        run.stderr.contains("that is this session"),
        "{}",
        run.stderr
    );
    assert_eq!(room_lines(&env).len(), 1, "nothing else was written");
}

#[test]
fn the_agents_peer_message_follows_the_posting_rules() {
    let env = env();
    let model = script(
        &env,
        "post.toml",
        "[[step]]\ntool_calls = [\
           { name = \"peer_message\", arguments = { text = \"first\", in_reply_to = \"\" } },\
           { name = \"peer_message\", arguments = { text = \" \" } },\
         ]\n[[step]]\ntext = \"posted\"\n",
    );
    let run = env.run("ag-prompt", &["-m", &model, "go"]).ok();
    let id = session_id(&run);
    let r = results(&env, &id);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(!r[0].1, "{r:?}");
    assert!(r[1].1 && r[1].0.contains("text is required"), "{r:?}");
    let lines = room_lines(&env);
    let said: Vec<_> = lines.iter().filter(|l| l["type"] == "say").collect();
    assert_eq!(said.len(), 1, "{lines:?}");
    assert!(
        said[0].get("in_reply_to").is_none_or(|r| r.is_null()),
        "{}",
        said[0]
    );
    // To itself: refused, nothing written. (A script plays its steps by the assistant
    // messages the request holds: the first two are the first turn's.)
    let selfish = script(
        &env,
        "self.toml",
        &format!(
            "[[step]]\ntext = \"-\"\n[[step]]\ntext = \"-\"\n\
             [[step]]\ntool_calls = [{{ name = \"peer_message\", arguments = {{ text = \"me\", session = \"{id}\" }} }}]\n\
             [[step]]\ntext = \"done\"\n"
        ),
    );
    env.run("ag-prompt", &["-s", &id, "-m", &selfish, "again"])
        .ok();
    let r = results(&env, &id);
    assert!(r[2].1 && r[2].0.contains("that is this session"), "{r:?}");
    assert_eq!(
        room_lines(&env)
            .iter()
            .filter(|l| l["type"] == "say")
            .count(),
        1
    );
}

#[test]
fn ag_room_mcps_peer_message_follows_the_posting_rules() {
    let env = env();
    let client = Client::start(&env, "claude-code", &[]);
    let (text, err) = client.call("peer_message", json!({"text": "first", "in_reply_to": ""}));
    assert!(!err, "{text}");
    let (text, err) = client.call("peer_message", json!({"text": "   "}));
    assert!(err && text.contains("text"), "{text}");
    let lines = room_lines(&env);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].get("in_reply_to").is_none_or(|r| r.is_null()),
        "{}",
        lines[0]
    );
}

#[test]
fn ag_room_mcps_direct_message_reaches_only_its_addressee() {
    let env = env();
    let a = session_id(&env.run("ag-prompt", &["-m", "echo", "alpha"]).ok());
    let b = session_id(&env.run("ag-prompt", &["-m", "echo", "beta"]).ok());
    let client = Client::start(&env, "codex", &[]);
    let (text, err) = client.call(
        "peer_message",
        json!({"text": "for alpha only", "session": &a}),
    );
    assert!(!err && text.contains("direct message"), "{text}");
    let (text, err) = client.call("peer_message", json!({"text": "to everyone"}));
    assert!(!err, "{text}");
    for id in [&a, &b] {
        env.run("ag-prompt", &["-s", id, "-m", "echo", "next"]).ok();
    }
    let (heard_a, heard_b) = (peer_texts(&env, &a), peer_texts(&env, &b));
    assert!(
        heard_a.contains(&"for alpha only".to_string())
            && heard_a.contains(&"to everyone".to_string()),
        "{heard_a:?}"
    );
    assert_eq!(heard_b, ["to everyone"], "{heard_b:?}");
}

#[test]
fn ag_room_inbox_takes_a_sessions_held_lines_once_and_keeps_a_running_ones() {
    let env = env();
    let id = session_id(&env.run("ag-prompt", &["-m", "echo", "listener"]).ok());
    // More than a peer chunk carries: the session holds the rest back.
    for i in 1..=10 {
        let text = format!("line {i} {}", "x".repeat(300));
        room(&env, &["tell", "--from", "tester", &text]).ok();
    }
    env.run("ag-prompt", &["-s", &id, "-m", "echo", "again"])
        .ok();
    let carried: Vec<String> = peer_texts(&env, &id);
    assert!(carried.len() < 10, "{carried:?}");
    let inbox = room(&env, &["inbox", "--as", &id]).ok();
    let taken = inbox.stdout.lines().count();
    assert_eq!(taken, 10 - carried.len(), "{}", inbox.stdout);
    assert!(inbox.stdout.contains("line 1 "), "{}", inbox.stdout);
    let delivered = room_lines(&env)
        .iter()
        .filter(|l| l["type"] == "delivered")
        .count();
    assert_eq!(delivered, 10, "every line delivered once");
    assert!(room(&env, &["inbox", "--as", &id]).ok().stdout.is_empty());
    // A running session's inbox is its own: another reader is refused, a peek is not.
    let gate = env.cwd.join("gate-inbox");
    let slow = script(
        &env,
        "slow.toml",
        &format!("[[step]]\nwait_for = {gate:?}\ntext = \"slow\"\n"),
    );
    let mut bg = spawn(&env, &["-m", &slow, "busy"]);
    let busy = bg.session();
    assert!(wait_until(Duration::from_secs(30), || {
        room(&env, &["who", "--json"]).stdout.contains(&busy)
    }));
    let refused = room(&env, &["inbox", "--as", &busy]).code(3);
    assert!(
        refused.stderr.contains("is running") && refused.stderr.contains("--peek"),
        "{}",
        refused.stderr
    );
    // A peek consumes nothing, so it is allowed. (What it shows races with the session's
    // own hearing.)
    room(&env, &["inbox", "--as", &busy, "--peek"]).ok();
    std::fs::write(&gate, "").unwrap();
    assert_eq!(bg.wait(Duration::from_secs(30)).code, 0);
}

#[test]
fn the_agents_peer_claim_is_refused_over_another_claim_and_peer_release_ends_its_own() {
    let env = env();
    room(
        &env,
        &["claim", "held.txt", "--intent", "mine", "--from", "erin"],
    )
    .ok();
    let model = script(
        &env,
        "claims.toml",
        "[[step]]\ntool_calls = [\
           { name = \"peer_claim\", arguments = { paths = [\"held.txt\"], intent = \"edit\" } },\
           { name = \"peer_claim\", arguments = { paths = [\"free.txt\"], intent = \"edit\" } },\
           { name = \"peer_release\", arguments = { paths = [\"free.txt\"] } },\
         ]\n[[step]]\ntext = \"done\"\n",
    );
    let run = env.run("ag-prompt", &["-m", &model, "claims"]).ok();
    let r = results(&env, &session_id(&run));
    assert_eq!(r.len(), 3, "{r:?}");
    assert!(r[0].1 && r[0].0.contains("erin"), "{r:?}");
    assert!(!r[1].1 && r[1].0.starts_with("claimed "), "{r:?}");
    assert!(!r[2].1 && r[2].0.starts_with("released "), "{r:?}");
    // What the agent released is free again; what erin holds is still hers.
    room(
        &env,
        &["claim", "free.txt", "--intent", "now", "--from", "fay"],
    )
    .ok();
    room(
        &env,
        &["claim", "held.txt", "--intent", "now", "--from", "fay"],
    )
    .code(3);
}

#[test]
fn ag_room_mcps_peer_claim_is_refused_over_another_claim_and_peer_release_ends_its_own() {
    let env = env();
    room(
        &env,
        &["claim", "held.txt", "--intent", "mine", "--from", "erin"],
    )
    .ok();
    let client = Client::start(&env, "cursor", &[]);
    let (text, err) = client.call("peer_claim", json!({"paths": ["held.txt"], "intent": "x"}));
    assert!(err && text.contains("erin"), "{text}");
    let (text, err) = client.call("peer_claim", json!({"paths": ["free.txt"], "intent": "x"}));
    assert!(!err && text.starts_with("claimed "), "{text}");
    let (text, err) = client.call("peer_release", json!({"paths": ["free.txt"]}));
    assert!(!err && text.starts_with("released "), "{text}");
    room(
        &env,
        &["claim", "free.txt", "--intent", "now", "--from", "fay"],
    )
    .ok();
    room(
        &env,
        &["claim", "held.txt", "--intent", "now", "--from", "fay"],
    )
    .code(3);
}
