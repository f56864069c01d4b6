//! Rooms on NATS across two homes ("machines"), continued: `ag-room mcp` on a shared room,
//! the claims of a session that died or was removed, `peek` of a session of the other
//! machine, presence that says what a running session is doing now, and the collision gate
//! for a claim made on the other machine. Each test runs its own `nats-server`.

use serde_json::{json, Value};

use crate::nats_server::NatsServer;
use crate::prompt::{script, spawn, wait_for_chunk, wait_until};
use crate::room::handle;
use crate::room_mcp::Client;
use crate::room_nats::{peer_texts, two_homes, who_ids, LONG};
use crate::support::TestEnv;

/// One step that runs a tool, then a step that waits for the file `gate` in the work
/// directory: the turn is held open, its session present, until the test opens the gate.
fn held_turn(gate: &str, tool_call: &str) -> String {
    format!(
        "[[step]]\ntool_calls = [{tool_call}]\n[[step]]\nwait_for = \"{gate}\"\ntext = \"done\"\n"
    )
}

const GLOB: &str = "{ name = \"glob\", arguments = { pattern = \"*.none\" } }";

fn open_gate(env: &TestEnv, gate: &str) {
    std::fs::write(env.cwd.join(gate), "").unwrap();
}

fn said(env: &TestEnv) -> Vec<String> {
    let r = env.run("ag-room", &["--json", "tail", "--all"]);
    if r.code != 0 {
        return Vec::new();
    }
    r.json_lines()
        .iter()
        .filter(|l| l["type"] == "say")
        .filter_map(|l| l["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn nats_mcp_room_server_posts_reads_and_sends_a_direct_message_to_the_other_home() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let (a, b) = two_homes(&server);
    // Held before a tool call, so the step after it hears what came meanwhile.
    let wait =
        format!("[[step]]\nwait_for = \"go\"\ntool_calls = [{GLOB}]\n[[step]]\ntext = \"done\"\n");
    let mut agent_a = spawn(&a, &["-m", &script(&a, "a.toml", &wait), "alpha: parser"]);
    let mut agent_b = spawn(&b, &["-m", &script(&b, "b.toml", &wait), "beta: docs"]);
    let (ida, idb) = (agent_a.session(), agent_b.session());
    assert!(wait_until(LONG, || who_ids(&a).contains(&idb)));
    let codex = Client::start(&a, "codex-test", &[]);
    // peer_who over MCP lists the session of the other home.
    let (who, err) = codex.call("peer_who", json!({}));
    assert!(!err && who.contains(&handle(&b, &idb)), "{who}");
    // A line posted over MCP in home A is in home B's room …
    let (posted, err) = codex.call("peer_message", json!({"text": "hello from codex"}));
    assert!(!err && posted.starts_with("posted "), "{posted}");
    assert!(
        wait_until(LONG, || said(&b).contains(&"hello from codex".into())),
        "{:?}",
        said(&b)
    );
    // … and a line from B is read through it.
    b.run("ag-room", &["tell", "--from", "bob", "hello from b"])
        .ok();
    let mut inbox = String::new();
    let heard = wait_until(LONG, || {
        let (t, err) = codex.call("peer_inbox", json!({}));
        assert!(!err, "{t}");
        inbox.push_str(&t);
        inbox.contains("hello from b")
    });
    assert!(heard, "{inbox}");
    // A direct message to B's session (found through presence) is heard by B only.
    let hb = handle(&b, &idb);
    let (direct, err) = codex.call(
        "peer_message",
        json!({"session": hb, "text": "direct to b over mcp"}),
    );
    assert!(!err && direct.contains("direct message"), "{direct}");
    assert!(wait_until(LONG, || said(&b).contains(&"direct to b over mcp".into())));
    open_gate(&b, "go");
    open_gate(&a, "go");
    assert_eq!(agent_b.wait(LONG).code, 0);
    assert_eq!(agent_a.wait(LONG).code, 0);
    let heard_b = peer_texts(&b, &idb);
    assert!(
        heard_b.contains(&("direct to b over mcp".into(), true)),
        "{heard_b:?}"
    );
    assert!(
        heard_b.contains(&("hello from codex".into(), false)),
        "{heard_b:?}"
    );
    let heard_a = peer_texts(&a, &ida);
    assert!(
        heard_a.iter().any(|(t, _)| t == "hello from codex"),
        "{heard_a:?}"
    );
    assert!(
        !heard_a.iter().any(|(t, _)| t == "direct to b over mcp"),
        "{heard_a:?}"
    );
    let (rest, _) = codex.call("peer_inbox", json!({}));
    assert!(!rest.contains("direct to b over mcp"), "{rest}");
}

/// Whether `bob` in `env` can claim `path` now (exit 0), or is refused (exit 3).
fn bob_claims(env: &TestEnv, path: &str) -> i32 {
    env.run(
        "ag-room",
        &[
            "claim", path, "--intent", "mine now", "--ttl", "600s", "--from", "bob",
        ],
    )
    .code
}

#[test]
fn nats_claims_of_a_session_that_died_or_was_removed_end_on_the_other_home() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let (a, b) = two_homes(&server);
    let claim = |p: &str| {
        format!("{{ name = \"peer_claim\", arguments = {{ paths = [\"{p}\"], intent = \"holding\" }} }}")
    };
    // A session of home A claims a file and is killed mid-turn.
    let mut killed = spawn(
        &a,
        &[
            "-m",
            &script(&a, "k.toml", &held_turn("never", &claim("src/a.rs"))),
            "killed holder",
        ],
    );
    let idk = killed.session();
    wait_for_chunk(&a, &idk, |c| c["type"] == "tool_result");
    assert_eq!(bob_claims(&b, "src/a.rs"), 3, "the claim holds in home B");
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    // Dead, but nobody in home A has looked yet: home B cannot know.
    assert_eq!(bob_claims(&b, "src/a.rs"), 3);
    // Home A finds it dead (any listing reaps it): its claim ends for home B too.
    a.log(&["ls"]).ok();
    assert_eq!(
        bob_claims(&b, "src/a.rs"),
        0,
        "the dead holder's claim ended"
    );
    // A chat session of home A keeps its claim between turns, until it is removed.
    let chat = a
        .run(
            "ag-prompt",
            &[
                "-m",
                &script(
                    &a,
                    "c.toml",
                    &format!(
                        "[[step]]\ntool_calls = [{}]\n[[step]]\ntext = \"ok\"\n",
                        claim("src/b.rs")
                    ),
                ),
                "chat holder",
            ],
        )
        .ok();
    let idc = crate::prompt::session_id(&chat);
    assert_eq!(bob_claims(&b, "src/b.rs"), 3, "an idle chat still holds");
    a.log(&["rm", &idc]).ok();
    assert_eq!(
        bob_claims(&b, "src/b.rs"),
        0,
        "the removed holder's claim ended"
    );
    let claims = b.run("ag-room", &["--json", "claims"]).ok().json_lines();
    let holders: Vec<&Value> = claims.iter().map(|c| &c["holder"]["name"]).collect();
    assert_eq!(holders, [&json!("bob"), &json!("bob")], "{claims:?}");
}

#[test]
fn nats_peek_of_a_session_of_the_other_home_shows_what_it_said_and_where_it_heard() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let (a, b) = two_homes(&server);
    let say = "{ name = \"peer_message\", arguments = { text = \"parser half done\" } }";
    let mut agent = spawn(
        &a,
        &[
            "-m",
            &script(&a, "a.toml", &held_turn("go", say)),
            "alpha: parser",
        ],
    );
    let id = agent.session();
    wait_for_chunk(&a, &id, |c| c["type"] == "tool_result");
    assert!(wait_until(LONG, || who_ids(&b).contains(&id)));
    let ha = handle(&a, &id);
    let peek = b.run("ag-room", &["peek", &ha]).ok();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let text = &peek.stdout;
    assert!(text.contains(&id), "{text}");
    assert!(text.contains(&format!("on {}", host.trim())), "{text}");
    assert!(
        text.contains("peer said: <peer from=") && text.contains("parser half done"),
        "{text}"
    );
    assert!(
        text.contains(&format!("kept on its own machine ({})", host.trim())),
        "{text}"
    );
    let json = b.run("ag-room", &["--json", "peek", &ha]).ok().json();
    assert_eq!(json["remote"], true, "{json}");
    assert_eq!(json["heard_on"], host.trim(), "{json}");
    let said = json["peer_said"].as_array().unwrap();
    assert!(
        said.len() == 1 && said[0].as_str().unwrap().contains("parser half done"),
        "{json}"
    );
    open_gate(&a, "go");
    assert_eq!(agent.wait(LONG).code, 0);
}

#[test]
fn nats_presence_refreshes_say_the_last_tool_of_a_running_turn() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let (mut a, b) = two_homes(&server);
    a.set("AG_HEARTBEAT_MS", "200");
    let mut agent = spawn(
        &a,
        &[
            "-m",
            &script(&a, "a.toml", &held_turn("go", GLOB)),
            "alpha: parser",
        ],
    );
    let id = agent.session();
    let entry = || {
        let r = b.run("ag-room", &["--json", "who"]);
        r.json_lines().into_iter().find(|w| w["id"] == id.as_str())
    };
    let seen = wait_until(LONG, || entry().is_some_and(|w| w["last_tool"] == "glob"));
    assert!(seen, "home B sees A's last tool: {:?}", entry());
    let w = entry().unwrap();
    assert_eq!(w["status"], "running", "{w}");
    assert!(w["goal"].as_str().unwrap().contains("alpha: parser"), "{w}");
    open_gate(&a, "go");
    assert_eq!(agent.wait(LONG).code, 0);
    assert!(wait_until(LONG, || !who_ids(&b).contains(&id)));
}

#[test]
fn nats_a_claim_made_on_the_other_home_refuses_an_agents_write_here() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let (a, b) = two_homes(&server);
    b.write_file("src/x.rs", "original\n");
    let claimed = a.run(
        "ag-room",
        &[
            "claim",
            "src/x.rs",
            "--intent",
            "rewriting x",
            "--ttl",
            "600s",
            "--from",
            "alice",
        ],
    );
    assert_eq!(claimed.code, 0, "{}", claimed.stderr);
    let writer = script(
        &b,
        "w.toml",
        "[[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"src/x.rs\", content = \"theirs\" } }]\n[[step]]\ntext = \"done\"\n",
    );
    let write = |title: &str| {
        let run = b
            .run("ag-prompt", &["-m", &writer, "--tools", "all", title])
            .ok();
        crate::peer_talk::results(&b, &crate::prompt::session_id(&run), "write").remove(0)
    };
    // The gate in home B sees home A's claim: refused, naming the holder and its intent.
    let refused = write("writer");
    let text = refused["result"].as_str().unwrap();
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(
        text.contains("alice") && text.contains("rewriting x"),
        "{text}"
    );
    let file = b.cwd.join("src/x.rs");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original\n");
    // Released in home A, the same write goes through in home B.
    a.run("ag-room", &["release", "--all", "--from", "alice"])
        .ok();
    let written = write("writer again");
    assert_ne!(written["is_error"], true, "{written}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "theirs");
}
