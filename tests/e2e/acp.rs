//! `ag-prompt acp` driven by the official ACP Python SDK's client (`tests/peers/acp_client.py`):
//! the handshake, a new session whose prompt streams message chunks and tool calls, permission
//! requests allowed and rejected, a cancel mid-turn, the load of a stored session, an MCP
//! server the editor passes, and another process reading the session while the editor runs it.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::peers::program;
use crate::prompt::{env_with, of_type, script, system_kind, wait_until};
use crate::support::{bin, TestEnv};

/// The Python client running a plan against `ag-prompt acp ARGS`; its lines as they come.
struct Client {
    child: Child,
    lines: mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl Client {
    /// `None` when the peers are not installed outside CI.
    fn start(env: &TestEnv, args: &[&str], plan: Value) -> Option<Client> {
        let python = program("python")?;
        let mut command = vec![json!(bin("ag-prompt")), json!("acp")];
        command.extend(args.iter().map(|a| json!(a)));
        let mut plan = plan;
        plan["command"] = json!(command);
        plan["cwd"] = json!(env.cwd);
        let file = env.dir.path().join("plan.json");
        std::fs::write(&file, plan.to_string()).unwrap();
        let client = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/acp_client.py");
        let mut child = Command::new(python)
            .arg(client)
            .arg(&file)
            .env_clear()
            .envs(env.env.iter().cloned())
            .current_dir(&env.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the ACP client");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let v = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the client printed {line:?}: {e}"));
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Some(Client {
            child,
            lines,
            seen: Vec::new(),
        })
    }

    /// The first line (from now on) that `f` accepts.
    fn until(&mut self, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if f(&v) {
                        return v;
                    }
                }
                Err(_) => panic!("no {what} from the client; it printed:\n{:#?}", self.seen),
            }
        }
    }

    /// Everything the client printed, once it has exited.
    fn finish(mut self) -> Vec<Value> {
        self.until("exit", |v| v["event"] == "exit");
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the client failed: {:#?}", self.seen);
        assert_eq!(
            self.seen.last().unwrap()["status"],
            0,
            "ag-prompt acp's exit"
        );
        self.seen
    }
}

/// The updates of one kind the client received.
fn updates<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter()
        .filter(|v| v["event"] == "update" && v["update"]["sessionUpdate"] == kind)
        .map(|v| &v["update"])
        .collect()
}

fn event<'a>(seen: &'a [Value], name: &str) -> Vec<&'a Value> {
    seen.iter().filter(|v| v["event"] == name).collect()
}

fn message_text(seen: &[Value]) -> String {
    updates(seen, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn new_session(env: &TestEnv) -> Value {
    json!({"op": "new", "cwd": env.cwd})
}

/// The handshake advertises what ag takes; a prompt's answer streams as message and thought
/// chunks, its tool call as a `read` call at its file, in progress, then completed with the
/// result; the turn ends with `end_turn`, and the session is an ordinary chat session in the
/// store that records the editor.
#[test]
fn an_editor_runs_a_turn_and_sees_it_stream() {
    let env = env_with(None, "");
    std::fs::write(env.cwd.join("notes.md"), "the plan: ship on friday\n").unwrap();
    let model = script(
        &env,
        "read.toml",
        r#"
[[step]]
thinking = "Look at the notes first."
text = "Reading the notes."
tool_calls = [{ name = "read", arguments = { path = "notes.md" } }]

[[step]]
text = "They say: ship on friday."
"#,
    );
    let plan = json!({"client": "acp-test", "steps": [
        new_session(&env),
        {"op": "prompt", "text": "What do the notes say?"}
    ]});
    let Some(client) = Client::start(&env, &["-m", &model], plan) else {
        return;
    };
    let seen = client.finish();
    let init = &event(&seen, "initialize")[0]["result"];
    assert_eq!(init["protocolVersion"], 1);
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    assert_eq!(init["agentInfo"]["name"], "ag");

    assert_eq!(
        message_text(&seen),
        "Reading the notes.They say: ship on friday."
    );
    let thought: String = updates(&seen, "agent_thought_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(thought, "Look at the notes first.");
    let call = updates(&seen, "tool_call");
    assert_eq!(call.len(), 1, "{seen:#?}");
    assert_eq!(call[0]["kind"], "read");
    assert_eq!(call[0]["title"], "read notes.md");
    assert_eq!(call[0]["rawInput"], json!({"path": "notes.md"}));
    let notes = env.cwd.join("notes.md");
    assert_eq!(
        call[0]["locations"][0]["path"],
        notes.to_string_lossy().as_ref()
    );
    let id = &call[0]["toolCallId"];
    let progress: Vec<&Value> = updates(&seen, "tool_call_update")
        .into_iter()
        .filter(|u| &u["toolCallId"] == id)
        .collect();
    assert_eq!(progress[0]["status"], "in_progress", "{progress:#?}");
    assert_eq!(progress[1]["status"], "completed");
    let result = progress[1]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(result.contains("ship on friday"), "{result}");
    let prompt = &event(&seen, "prompt")[0];
    assert_eq!(prompt["result"]["stopReason"], "end_turn");

    let session = event(&seen, "new")[0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let show = env.log(&["show", &session, "--json"]).ok().json();
    assert_eq!(show["kind"], "chat");
    assert_eq!(show["title"], "What do the notes say?");
    assert_eq!(show["policy"]["client"]["name"], "acp-test");
    assert_eq!(show["policy"]["client"]["protocol"], "acp");
    let chunks = env.chunks(&session);
    assert_eq!(of_type(&chunks, Some("tool"), "tool_result").len(), 1);
}

/// In `ask` mode (the default over ACP) a write waits for the editor: allowed once, it runs;
/// rejected, it does not, and the model reads why. The permission request carries the change
/// as a diff; each decision is an approval record naming the editor.
#[test]
fn writes_wait_for_the_editors_permission() {
    let env = env_with(None, "");
    let model = script(
        &env,
        "writes.toml",
        r#"
[[step]]
tool_calls = [{ name = "write", arguments = { path = "a.txt", content = "first\n" } }]

[[step]]
tool_calls = [{ name = "write", arguments = { path = "b.txt", content = "second\n" } }]

[[step]]
text = "One of two."
"#,
    );
    let plan = json!({"client": "acp-test", "permissions": ["allow_once", "reject_once"],
                      "steps": [new_session(&env), {"op": "prompt", "text": "write both"}]});
    let Some(client) = Client::start(&env, &["-m", &model], plan) else {
        return;
    };
    let seen = client.finish();
    let asked = event(&seen, "permission");
    assert_eq!(asked.len(), 2, "{seen:#?}");
    let kinds: Vec<&Value> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["kind"])
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    let diff = &asked[0]["toolCall"]["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["newText"], "first\n");
    assert_eq!(asked[0]["toolCall"]["kind"], "edit");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("a.txt")).unwrap(),
        "first\n"
    );
    assert!(!env.cwd.join("b.txt").exists(), "a rejected write ran");

    let session = event(&seen, "new")[0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let chunks = env.chunks(&session);
    let decisions: Vec<(&Value, &Value)> = system_kind(&chunks, "approval")
        .iter()
        .map(|c| (&c["data"]["decision"], &c["data"]["by"]))
        .collect();
    assert_eq!(
        decisions,
        [
            (&json!("allow-once"), &json!("acp-test")),
            (&json!("deny"), &json!("acp-test"))
        ]
    );
    let results = of_type(&chunks, Some("tool"), "tool_result");
    assert_eq!(results[1]["data"]["is_error"], true);
    let why = results[1]["data"]["result"].as_str().unwrap();
    assert!(why.contains("rejected in acp-test"), "{why}");
    // Each call waits, shown pending, for the answer; an allowed one then runs, a rejected
    // one fails without running.
    let story = |id: &Value| -> Vec<String> {
        seen.iter()
            .filter_map(|v| match v["event"].as_str() {
                Some("permission") if &v["toolCall"]["toolCallId"] == id => Some("asked".into()),
                Some("update") if &v["update"]["toolCallId"] == id => Some(
                    v["update"]["status"]
                        .as_str()
                        .unwrap_or("announced")
                        .to_string(),
                ),
                _ => None,
            })
            .collect()
    };
    let calls = updates(&seen, "tool_call");
    assert_eq!(
        story(&calls[0]["toolCallId"]),
        ["announced", "asked", "in_progress", "completed"]
    );
    assert_eq!(
        story(&calls[1]["toolCallId"]),
        ["announced", "asked", "failed"]
    );
}

/// `session/cancel` while the model is answering ends the turn at once with `cancelled`; the
/// log records it as interrupted, and the session takes the next prompt.
#[test]
fn cancel_ends_the_turn_mid_answer() {
    let env = env_with(None, "");
    let model = script(
        &env,
        "slow.toml",
        r#"
[[step]]
text = "Starting a long answer"
wait_for = "never-opened"

[[step]]
text = "unreachable"
"#,
    );
    let plan = json!({"steps": [new_session(&env),
        {"op": "prompt", "text": "go", "cancel_after": "agent_message_chunk"}]});
    let Some(client) = Client::start(&env, &["-m", &model], plan) else {
        return;
    };
    let seen = client.finish();
    assert_eq!(event(&seen, "cancel").len(), 1, "{seen:#?}");
    let prompt = &event(&seen, "prompt")[0];
    assert_eq!(prompt["result"]["stopReason"], "cancelled");
    let session = event(&seen, "new")[0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let chunks = env.chunks(&session);
    let end = system_kind(&chunks, "turn_end");
    assert_eq!(end.last().unwrap()["data"]["stop_reason"], "interrupted");
}

/// `session/load` of a session made by `ag-prompt` replays it — the person's words, the tool
/// call and its result, the answer — and a prompt then continues that same session.
#[test]
fn load_replays_a_stored_session_and_continues_it() {
    let env = env_with(None, "");
    std::fs::write(env.cwd.join("x.txt"), "ex\n").unwrap();
    let model = script(
        &env,
        "two.toml",
        r#"
[[step]]
tool_calls = [{ name = "read", arguments = { path = "x.txt" } }]

[[step]]
text = "It says ex."
"#,
    );
    let first = env
        .run("ag-prompt", &["-m", &model, "what is in x.txt?"])
        .ok();
    let session = crate::prompt::session_id(&first);
    // The script answers by position in the conversation: its third request is the new one.
    let again = script(
        &env,
        "again.toml",
        "[[step]]\ntext = \"-\"\n[[step]]\ntext = \"-\"\n[[step]]\ntext = \"Still ex.\"\n",
    );
    let plan = json!({"steps": [
        {"op": "load", "session": session, "cwd": env.cwd},
        {"op": "prompt", "text": "and now?"}
    ]});
    let Some(client) = Client::start(&env, &["-m", &again], plan) else {
        return;
    };
    let seen = client.finish();
    assert_eq!(event(&seen, "error").len(), 0, "{seen:#?}");
    let user = updates(&seen, "user_message_chunk");
    assert_eq!(user[0]["content"]["text"], "what is in x.txt?");
    let call = updates(&seen, "tool_call");
    assert_eq!(call[0]["kind"], "read");
    let done = updates(&seen, "tool_call_update");
    assert_eq!(done[0]["status"], "completed");
    assert_eq!(message_text(&seen), "It says ex.Still ex.");
    assert_eq!(
        event(&seen, "prompt")[0]["result"]["stopReason"],
        "end_turn"
    );
    let chunks = env.chunks(&session);
    assert_eq!(system_kind(&chunks, "turn_end").len(), 2);
    let load = event(&seen, "load");
    assert_eq!(load.len(), 1);
    // An id nobody made is refused with the protocol's "not found"; a directory that is not
    // absolute, with "invalid params" saying which.
    let plan = json!({"steps": [{"op": "load", "session": "0000", "cwd": env.cwd},
                                {"op": "new", "cwd": "relative/dir"}]});
    let seen = Client::start(&env, &["-m", &again], plan).unwrap().finish();
    let err = event(&seen, "error");
    assert_eq!(err[0]["code"], -32002, "{seen:#?}");
    assert_eq!(err[1]["code"], -32602, "{seen:#?}");
    let why = err[1]["message"].as_str().unwrap();
    assert!(why.contains("relative/dir"), "{why}");
}

/// An MCP server the editor passes with `session/new` (the official Python SDK's server,
/// on stdio) gives the session its tools; a call to one asks permission like any change.
#[test]
fn an_mcp_server_from_the_editor_serves_the_session() {
    let env = env_with(None, "");
    let Some(python) = program("python") else {
        return;
    };
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/tasks_server.py");
    let model = script(
        &env,
        "mcp.toml",
        r#"
[[step]]
tool_calls = [{ name = "mcp__tasks__ping" }]

[[step]]
text = "It answered."
"#,
    );
    let plan = json!({"permissions": ["allow_always"], "steps": [
        {"op": "new", "cwd": env.cwd,
         "mcp": [{"name": "tasks", "command": python, "args": [server]}]},
        {"op": "prompt", "text": "ping it"}
    ]});
    let Some(client) = Client::start(&env, &["-m", &model], plan) else {
        return;
    };
    let seen = client.finish();
    assert_eq!(event(&seen, "permission").len(), 1, "{seen:#?}");
    let session = event(&seen, "new")[0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let chunks = env.chunks(&session);
    let results = of_type(&chunks, Some("tool"), "tool_result");
    assert_eq!(results[0]["data"]["is_error"], false, "{results:#?}");
    assert!(
        results[0]["data"]["result"]
            .as_str()
            .unwrap()
            .contains("pong"),
        "{results:#?}"
    );
    // "Allow always" is kept with the session.
    let show = env.log(&["show", &session, "--json"]).ok().json();
    assert_eq!(
        show["policy"]["approval"]["allowed"],
        json!(["mcp__tasks__ping"])
    );
}

/// While the editor's turn runs, `ag-log tail -f` in another process follows the same
/// session and sees the turn through to its end.
#[test]
fn another_process_follows_the_session_while_the_editor_runs_it() {
    let env = env_with(None, "");
    let model = script(
        &env,
        "gated.toml",
        r#"
[[step]]
text = "Half way."
tool_calls = [{ name = "glob", arguments = { pattern = "*.txt" } }]
wait_for = "gate"

[[step]]
text = "All done."
"#,
    );
    let plan = json!({"steps": [new_session(&env), {"op": "prompt", "text": "go on"}]});
    let Some(mut client) = Client::start(&env, &["-m", &model], plan) else {
        return;
    };
    let session = client.until("new session", |v| v["event"] == "new")["session"]
        .as_str()
        .unwrap()
        .to_string();
    // The turn is running (the session is in the store) once its answer starts.
    client.until("the first chunk", |v| {
        v["update"]["sessionUpdate"] == "agent_message_chunk"
    });
    let tail_out = env.dir.path().join("tail.out");
    let mut tail = env
        .command("ag-log")
        .args(["tail", "-f", &session])
        .stdout(std::fs::File::create(&tail_out).unwrap())
        .spawn()
        .unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    assert!(
        wait_until(Duration::from_secs(20), || read(&tail_out)
            .contains("go on")),
        "tail -f showed: {}",
        read(&tail_out)
    );
    std::fs::write(env.cwd.join("gate"), "").unwrap();
    let seen = client.finish();
    assert_eq!(
        event(&seen, "prompt")[0]["result"]["stopReason"],
        "end_turn"
    );
    let followed = wait_until(Duration::from_secs(20), || {
        read(&tail_out).contains("All done.")
    });
    let _ = tail.kill();
    let _ = tail.wait();
    assert!(followed, "tail -f showed: {}", read(&tail_out));
}

/// The editor is told the slash commands, and each is the library's own operation, on a
/// session whose model is a provider on loopback (LLMock): `/btw` answers from a read-only
/// side chat and writes nothing to the session, `/fork` forks it, `/compact` compacts it.
#[test]
fn slash_commands_side_question_fork_and_compact() {
    let Some(mock) = crate::peers::Llmock::start(&["--tool-mode", "off"]) else {
        return;
    };
    let mut env = env_with(None, "");
    mock.point(&mut env);
    let plan = json!({"steps": [new_session(&env),
        {"op": "prompt", "text": "first question"},
        {"op": "prompt", "text": "second question"},
        {"op": "prompt", "text": "/btw what did I ask first?"},
        {"op": "prompt", "text": "/fork the other way"},
        {"op": "prompt", "text": "/compact"}]});
    let Some(client) = Client::start(&env, &["-m", "anthropic/claude-sonnet-4-5"], plan) else {
        return;
    };
    let seen = client.finish();
    assert_eq!(event(&seen, "error").len(), 0, "{seen:#?}");
    let offered = updates(&seen, "available_commands_update");
    let names: Vec<&Value> = offered[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, ["btw", "fork", "compact"]);
    let session = event(&seen, "new")[0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let results = event(&seen, "prompt");
    assert_eq!(results.len(), 5);
    for r in &results {
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    }

    // What the editor was told after each command, in order.
    let said = |after: usize| -> String {
        let start = seen
            .iter()
            .enumerate()
            .filter(|(_, v)| v["event"] == "prompt")
            .nth(after)
            .map(|(i, _)| i)
            .unwrap();
        seen[start + 1..]
            .iter()
            .take_while(|v| v["event"] != "prompt")
            .filter(|v| v["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|v| v["update"]["content"]["text"].as_str())
            .collect()
    };
    assert!(!said(1).trim().is_empty(), "/btw gave no answer");
    let forked = said(2);
    assert!(forked.starts_with("Forked as session "), "{forked}");
    assert!(said(3).starts_with("Compacted"), "{}", said(3));

    let sessions: Vec<Value> = env.log(&["ls", "--json"]).ok().json_lines();
    let side: Vec<&Value> = sessions.iter().filter(|s| s["kind"] == "side").collect();
    assert_eq!(side.len(), 1, "{sessions:#?}");
    assert_eq!(side[0]["fork_of"], session.as_str());
    let fork: Vec<&Value> = sessions
        .iter()
        .filter(|s| s["kind"] == "chat" && s["fork_of"] == session.as_str())
        .collect();
    assert_eq!(fork.len(), 1, "{sessions:#?}");
    assert_eq!(fork[0]["title"], "the other way");
    assert!(forked.contains(fork[0]["id"].as_str().unwrap()), "{forked}");

    // The side question and the commands are not in the session; the compaction is.
    let chunks = env.chunks(&session);
    let said_by_user: Vec<&Value> = of_type(&chunks, Some("user"), "text")
        .iter()
        .map(|c| &c["data"]["text"])
        .collect();
    assert_eq!(said_by_user, ["first question", "second question"]);
    let compaction = system_kind(&chunks, "compaction");
    assert_eq!(compaction.len(), 1);
    assert_eq!(compaction[0]["data"]["trigger"], "manual");
}

/// An editor that offers its files: `read` sees its unsaved buffer, not the disk; `edit`
/// changes the buffer through `fs/write_text_file` (after the permission), and the file on
/// disk stays as it was saved.
#[test]
fn file_tools_go_through_the_editors_buffers() {
    let env = env_with(None, "");
    let notes = env.cwd.join("notes.md");
    std::fs::write(&notes, "saved: ship on friday\n").unwrap();
    std::fs::write(env.cwd.join("../outside.md"), "not yours\n").unwrap();
    let model = script(
        &env,
        "buffers.toml",
        r#"
[[step]]
tool_calls = [{ name = "read", arguments = { path = "notes.md" } }]

[[step]]
tool_calls = [{ name = "edit", arguments = { path = "notes.md", old_string = "monday", new_string = "tuesday" } }]

[[step]]
tool_calls = [{ name = "read", arguments = { path = "../outside.md" } }]

[[step]]
text = "Moved to tuesday."
"#,
    );
    let buffers = json!({ notes.to_string_lossy(): "unsaved: ship on monday\n" });
    let plan = json!({"permissions": ["allow_once"], "fs": {"buffers": buffers},
                      "steps": [new_session(&env), {"op": "prompt", "text": "move it"}]});
    let Some(client) = Client::start(&env, &["-m", &model], plan) else {
        return;
    };
    let seen = client.finish();
    let session = event(&seen, "new")[0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let chunks = env.chunks(&session);
    let results = of_type(&chunks, Some("tool"), "tool_result");
    let read = results[0]["data"]["result"].as_str().unwrap();
    assert!(read.contains("unsaved: ship on monday"), "{read}");
    assert_eq!(results[1]["data"]["is_error"], false, "{results:#?}");
    let writes = event(&seen, "fs_write");
    assert_eq!(writes.len(), 1, "{seen:#?}");
    assert_eq!(writes[0]["path"], notes.to_string_lossy().as_ref());
    assert_eq!(writes[0]["content"], "unsaved: ship on tuesday\n");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "saved: ship on friday\n"
    );
    // A path outside the session's directory is refused before the editor is asked.
    assert_eq!(results[2]["data"]["is_error"], true, "{results:#?}");
    assert_eq!(event(&seen, "fs_read").len(), 2, "{seen:#?}");
    assert!(event(&seen, "fs_read")
        .iter()
        .all(|r| r["path"] == notes.to_string_lossy().as_ref()));
}

/// A project's custom command (`.ag/commands/NAME.md`) is offered to the editor with its
/// description and argument hint, and `/NAME ARGS` runs its prompt as the turn.
#[test]
fn project_commands_are_offered_and_run_as_prompts() {
    let env = env_with(None, "");
    let dir = env.cwd.join(".ag/commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("review.md"),
        "---\ndescription: Review a file for bugs\nargument-hint: FILE\n---\nReview $ARGUMENTS for bugs.\n",
    )
    .unwrap();
    let model = script(&env, "one.toml", "[[step]]\ntext = \"Looks fine.\"\n");
    let plan = json!({"steps": [new_session(&env), {"op": "prompt", "text": "/review src/a.rs"}]});
    let Some(client) = Client::start(&env, &["-m", &model], plan) else {
        return;
    };
    let seen = client.finish();
    let offered = updates(&seen, "available_commands_update");
    let review: Vec<&Value> = offered[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "review")
        .collect();
    assert_eq!(review.len(), 1, "{offered:#?}");
    assert_eq!(review[0]["description"], "Review a file for bugs");
    assert_eq!(review[0]["input"]["hint"], "FILE");
    assert_eq!(
        event(&seen, "prompt")[0]["result"]["stopReason"],
        "end_turn"
    );
    let session = event(&seen, "new")[0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let chunks = env.chunks(&session);
    let asked = of_type(&chunks, Some("user"), "text");
    assert_eq!(asked[0]["data"]["text"], "Review src/a.rs for bugs.");
    assert_eq!(message_text(&seen), "Looks fine.");
}

/// A turn against a provider on loopback (LLMock, which calls the tool it is offered and then
/// answers): the call streams to the editor as an `edit` with its diff, waits for the
/// permission, runs, and its result goes back to the provider.
#[test]
fn a_provider_on_loopback_calls_a_tool_the_editor_allows() {
    let Some(mock) = crate::peers::Llmock::start(&[]) else {
        return;
    };
    let mut env = env_with(None, "");
    mock.point(&mut env);
    let plan = json!({"permissions": ["allow_once"],
                      "steps": [new_session(&env), {"op": "prompt", "text": "write something"}]});
    let args = ["-m", "anthropic/claude-sonnet-4-5", "--tools", "write"];
    let Some(client) = Client::start(&env, &args, plan) else {
        return;
    };
    let seen = client.finish();
    let call = updates(&seen, "tool_call");
    assert_eq!(call.len(), 1, "{seen:#?}");
    assert_eq!(call[0]["kind"], "edit");
    let path = call[0]["rawInput"]["path"].as_str().unwrap();
    let content = call[0]["rawInput"]["content"].as_str().unwrap();
    assert_eq!(call[0]["content"][0]["type"], "diff");
    assert_eq!(call[0]["content"][0]["newText"], content);
    assert_eq!(event(&seen, "permission").len(), 1);
    assert_eq!(
        std::fs::read_to_string(env.cwd.join(path)).unwrap(),
        content
    );
    let done = updates(&seen, "tool_call_update");
    assert_eq!(done.last().unwrap()["status"], "completed", "{done:#?}");
    assert!(!message_text(&seen).is_empty());
    assert_eq!(
        event(&seen, "prompt")[0]["result"]["stopReason"],
        "end_turn"
    );
    let log = mock.requests();
    let requests = log["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2, "{log}");
    assert!(
        requests[1]["body"].to_string().contains("wrote "),
        "the tool's result went back: {}",
        requests[1]["body"]
    );
}
