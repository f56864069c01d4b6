//! `ag-room mcp` driven by rmcp's client, as Claude Code or Codex would drive it: a message
//! from the MCP side reaches an `ag-prompt` session as a peer chunk and the reply comes back
//! through `peer_inbox`; `peer_who` lists a running session; a claim taken over MCP blocks an
//! agent's write until it is released.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use crate::prompt::{env_with, of_type, script, session_id, spawn, wait_until};
use crate::support::TestEnv;

/// An MCP session with `ag-room mcp ARGS` in `env`'s worktree, as client `client_name`.
pub(crate) struct Client {
    rt: tokio::runtime::Runtime,
    service: Option<RunningService<RoleClient, ClientConfig>>,
}

impl Client {
    pub(crate) fn start(env: &TestEnv, client_name: &str, args: &[&str]) -> Client {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut cmd = env.command("ag-room");
        cmd.arg("mcp").args(args);
        let service = rt.block_on(async {
            let transport = TokioChildProcess::new(tokio::process::Command::from(cmd)).unwrap();
            ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new(client_name, "1.0"),
            )
            .serve(transport)
            .await
            .expect("the MCP handshake with ag-room mcp")
        });
        Client {
            rt,
            service: Some(service),
        }
    }

    fn tools(&self) -> Vec<String> {
        let s = self.service.as_ref().unwrap();
        let tools = self.rt.block_on(s.list_all_tools()).unwrap();
        tools.iter().map(|t| t.name.to_string()).collect()
    }

    /// The call's text and whether it was an error.
    pub(crate) fn call(&self, tool: &str, args: Value) -> (String, bool) {
        let s = self.service.as_ref().unwrap();
        let Value::Object(args) = args else {
            panic!("arguments are an object")
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let result = self.rt.block_on(s.call_tool(params)).unwrap();
        let v = serde_json::to_value(&result).unwrap();
        let text = v["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (text, v["isError"].as_bool().unwrap_or(false))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(s) = self.service.take() {
            let _ = self.rt.block_on(s.cancel());
        }
    }
}

fn peer_texts(env: &TestEnv, session: &str) -> Vec<(String, String)> {
    of_type(&env.chunks(session), None, "peer")
        .iter()
        .flat_map(|c| c["data"]["messages"].as_array().unwrap().clone())
        .map(|m| {
            (
                m["from"].as_str().unwrap_or_default().to_owned(),
                m["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_message_over_mcp_reaches_a_session_and_its_reply_comes_back_through_peer_inbox() {
    let env = env_with(None, "");
    // One script for both turns: the first plays step 1, the second steps 2 and 3.
    let model = script(
        &env,
        "reply.toml",
        "[[step]]\ntext = \"ready\"\n[[step]]\ntool_calls = [{ name = \"peer_message\", arguments = { text = \"hi codex, heard you\" } }]\n[[step]]\ntext = \"replied\"\n",
    );
    let first = env
        .run("ag-prompt", &["-m", &model, "getting started"])
        .ok();
    let id = session_id(&first);

    let codex = Client::start(&env, "codex-test", &[]);
    assert_eq!(
        codex.tools(),
        [
            "peer_message",
            "peer_inbox",
            "peer_who",
            "peer_peek",
            "peer_claim",
            "peer_release"
        ]
    );
    let (posted, err) = codex.call("peer_message", json!({"text": "hello from codex"}));
    assert!(!err && posted.starts_with("posted "), "{posted}");

    env.run("ag-prompt", &["-s", &id, "-m", &model, "go on"])
        .ok();
    let heard = peer_texts(&env, &id);
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert!(heard[0].0.contains("codex-test"), "{heard:?}");
    assert_eq!(heard[0].1, "hello from codex");

    let (inbox, err) = codex.call("peer_inbox", json!({}));
    assert!(!err, "{inbox}");
    assert!(
        inbox.contains("hi codex, heard you"),
        "{inbox}\n{:?}",
        of_type(&env.chunks(&id), Some("tool"), "tool_result")
    );
    assert!(
        !inbox.contains("hello from codex"),
        "its own line is not news: {inbox}"
    );
    assert_eq!(codex.call("peer_inbox", json!({})).0, "no new messages");

    let (peeked, _) = codex.call("peer_peek", json!({"session": &id[..8]}));
    assert!(peeked.contains("go on"), "{peeked}");
    let (missing, err) = codex.call("peer_message", json!({"text": " "}));
    assert!(err && missing.contains("`text` is required"), "{missing}");
}

#[test]
fn a_claim_taken_over_mcp_blocks_an_agents_write_until_released() {
    let env = env_with(None, "");
    env.write_file("NOTES.md", "original\n");
    let cursor = Client::start(&env, "cursor", &["--name", "cursor-bot"]);
    // The TTL `ag-room claim --ttl` would refuse is refused here too.
    let (refused, err) = cursor.call(
        "peer_claim",
        json!({"paths": ["NOTES.md"], "intent": "x", "ttl_s": 1_000_000_000_000u64}),
    );
    assert!(err && refused.contains("ttl_s must be"), "{refused}");
    // The schema's minimum, and properties it does not declare, are enforced.
    let (refused, err) = cursor.call(
        "peer_claim",
        json!({"paths": ["NOTES.md"], "intent": "x", "ttl_s": 0}),
    );
    assert!(err && refused.contains("at /ttl_s"), "{refused}");
    let (refused, err) = cursor.call(
        "peer_claim",
        json!({"paths": ["NOTES.md"], "intent": "x", "bogus": 1}),
    );
    assert!(err && refused.contains("arguments refused"), "{refused}");
    let (claimed, err) = cursor.call(
        "peer_claim",
        json!({"paths": ["NOTES.md"], "intent": "rewriting the notes"}),
    );
    assert!(!err && claimed.starts_with("claimed "), "{claimed}");

    let writer = script(
        &env,
        "writer.toml",
        "[[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"NOTES.md\", content = \"agent\\n\" } }]\n[[step]]\ntext = \"tried\"\n",
    );
    let run = env
        .run("ag-prompt", &["-m", &writer, "--tools", "all", "write it"])
        .ok();
    let chunks = env.chunks(&session_id(&run));
    let result = of_type(&chunks, Some("tool"), "tool_result")[0].clone();
    assert_eq!(result["data"]["is_error"], true, "{result}");
    let text = result["data"]["result"].as_str().unwrap();
    assert!(
        text.contains("cursor-bot") && text.contains("rewriting the notes"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("NOTES.md")).unwrap(),
        "original\n"
    );

    // While an agent runs, peer_who lists it.
    let gate = env.cwd.join("gate-pondered");
    let slow = script(
        &env,
        "slow.toml",
        &format!("[[step]]\nwait_for = {gate:?}\ntext = \"thinking slowly\"\n"),
    );
    let mut bg = spawn(&env, &["-m", &slow, "--title", "slow thinker", "ponder"]);
    let bg_id = bg.session();
    let mut who = String::new();
    assert!(
        wait_until(Duration::from_secs(30), || {
            who = cursor.call("peer_who", json!({})).0;
            who.contains("slow thinker")
        }),
        "peer_who never listed the running agent"
    );
    let row: Value = serde_json::from_str(who.lines().next().unwrap()).unwrap();
    assert_eq!(row["name"], "slow thinker", "{who}");
    assert_eq!(row["session"], crate::room::handle(&env, &bg_id), "{who}");
    std::fs::write(&gate, "").unwrap();
    assert_eq!(bg.wait(Duration::from_secs(30)).code, 0);

    let (released, err) = cursor.call("peer_release", json!({}));
    assert!(!err && released.starts_with("released "), "{released}");
    env.run("ag-prompt", &["-m", &writer, "--tools", "all", "write it"])
        .ok();
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("NOTES.md")).unwrap(),
        "agent\n"
    );
}

#[test]
fn a_line_that_is_not_json_gets_a_parse_error_and_the_session_goes_on() {
    let env = env_with(None, "");
    let input = "not json\n\
        {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}\n\
        {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    let run = env.run_stdin("ag-room", &["mcp"], input).ok();
    let lines = run.json_lines();
    assert_eq!(lines[0]["error"]["code"], -32700, "{}", run.stdout);
    assert_eq!(lines[0]["id"], Value::Null);
    assert_eq!(lines[1]["id"], 1, "{}", run.stdout);
    assert_eq!(lines[1]["result"]["serverInfo"]["name"], "ag-room");
}
