//! The three front ends of a room — `ag-room tell`, the agent's `peer_message` and `ag-room
//! mcp`'s `peer_message` — post through one value (`Rooms::post`), so they agree: an empty
//! reply id is none, empty text and a message to oneself are refused with nothing written.
//! Each rule is tested once against the value (its unit test) and here through each front end.

use serde_json::json;

use crate::prompt::{script, session_id};
use crate::room::{env, room, room_lines};
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
