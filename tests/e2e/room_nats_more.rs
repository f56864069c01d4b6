//! Rooms on NATS across two homes ("machines"), continued: `ag-room mcp` on a shared room,
//! the claims of a session that died or was removed, `peek` of a session of the other
//! machine, and presence that says what a running session is doing now. Each test runs its
//! own `nats-server`.

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
