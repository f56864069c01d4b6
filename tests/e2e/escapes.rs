//! Untrusted text never drives the terminal (issue #11), written as the attack: every field a
//! model, a tool, a room writer, a project file, an imported transcript or a directory name
//! controls carries escape sequences (OSC 52, OSC 8, CSI, C1), a carriage return, a bell and
//! bidi controls, and every human-readable printer is run over it. Nothing of it may reach
//! stdout or stderr unescaped.

use serde_json::{json, Value};

use crate::prompt::{env_with, script};
use crate::support::{Run, TestEnv};

/// Everything a terminal acts on: OSC 52 (write the clipboard), OSC 8 (a disguised link), a
/// CSI that clears the screen, a C1 CSI, a bell, a carriage return that lets a line overwrite
/// itself, and a right-to-left override.
const ATTACK: &str =
    "A\x1b]52;c;cm0gLXJmIH4=\x07\x1b]8;;https://evil\x1b\\L\x1b[2J\u{9b}31m\r\u{202E}Z";

/// What must never be printed raw.
fn raw_controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

/// The run printed nothing that drives a terminal, on either stream.
#[track_caller]
fn clean(what: &str, run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        let bad = raw_controls(text);
        assert!(
            bad.is_empty(),
            "{what}: {stream} carries {bad:?}:\n{}",
            text.escape_debug()
        );
    }
}

/// A run that printed the attack (escaped): proves the field reached the printer at all.
#[track_caller]
fn shown(what: &str, run: &Run) {
    clean(what, run);
    assert!(
        run.stdout.contains("52;c;cm0gLXJmIH4="),
        "{what}: the field was not printed at all:\n{}\n{}",
        run.stdout,
        run.stderr
    );
}

/// `ag-log ARGS` with stdout on a terminal (a pty from `script`); the pty's own `\r\n` line
/// ends are read as `\n`.
fn on_a_terminal(env: &TestEnv, args: &[&str]) -> Run {
    let quoted: Vec<String> = std::iter::once(crate::support::bin("ag-log"))
        .map(|p| p.to_string_lossy().into_owned())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let mut cmd = std::process::Command::new("script");
    cmd.env_clear()
        .envs(env.env.iter().cloned())
        .current_dir(&env.cwd)
        .args(["-q", "-e", "-c", &quoted.join(" "), "/dev/null"])
        .stdin(std::process::Stdio::null());
    let mut run = Run::from_output(cmd.output().expect("script(1) from util-linux"));
    run.stdout = run.stdout.replace("\r\n", "\n");
    run
}

/// A session made in a directory whose name is the attack, titled with it, whose log holds
/// it in every chunk type.
fn poisoned_session(env: &TestEnv) -> String {
    let dir = env.cwd.join(format!("d{}", ATTACK.replace('/', "_")));
    std::fs::create_dir(&dir).unwrap();
    let first = json!({"role": "user", "type": "text", "data": {"text": ATTACK}});
    let out = env
        .command("ag-log")
        .args(["append", "--new", "--title", ATTACK, "--json"])
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(format!("{first}\n").as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let run = Run::from_output(out).ok();
    let id = run.json_lines()[0]["session"].as_str().unwrap().to_string();
    let lines: Vec<Value> = vec![
        json!({"role": "assistant", "type": "thinking", "data": {"text": ATTACK}}),
        json!({"role": "assistant", "type": "text", "data": {"text": ATTACK}}),
        json!({"role": "assistant", "type": "tool_call",
               "data": {"call_id": "c1", "name": ATTACK, "arguments": {"path": ATTACK}}}),
        json!({"role": "tool", "type": "tool_result",
               "data": {"call_id": "c1", "name": ATTACK, "result": ATTACK, "is_error": false}}),
        json!({"role": "assistant", "type": "error", "data": {"message": ATTACK}}),
        json!({"role": "system", "type": "system", "data": {"kind": ATTACK, "note": ATTACK}}),
        json!({"role": "peer", "type": "peer",
               "data": {"messages": [{"id": "m1", "from": ATTACK, "text": ATTACK}],
                        "omitted": 0, "room": ATTACK}}),
    ];
    env.append(&id, &lines);
    id
}

#[test]
fn ag_log_printers_escape_every_field_of_a_poisoned_session() {
    let env = TestEnv::new();
    let id = poisoned_session(&env);
    shown("ls", &env.log(&["ls"]).ok());
    shown("show", &env.log(&["show", &id]).ok());
    shown("cat", &env.log(&["cat", &id]).ok());
    shown(
        "cat --format md",
        &on_a_terminal(&env, &["cat", &id, "--format", "md"]),
    );
    // In a pipe Markdown is data, kept as the log has it.
    let piped = env.log(&["cat", &id, "--format", "md"]).ok();
    assert!(piped.stdout.contains(ATTACK), "{}", piped.stdout);
    shown("tail", &env.log(&["tail", &id]).ok());
    let search = env.log(&["search", "cm0gLXJmIH4"]).ok();
    clean("search", &search);
    assert!(search.stdout.contains("cm0gLXJmIH4"), "{}", search.stdout);
    shown(
        "export md",
        &on_a_terminal(&env, &["export", &id, "--format", "md"]),
    );
}

#[test]
fn ag_room_printers_escape_names_texts_intents_and_paths() {
    let env = TestEnv::new();
    env.run("ag-room", &["tell", "--from", ATTACK, ATTACK]).ok();
    let claim = format!("src/{ATTACK}/*");
    env.run(
        "ag-room",
        &["claim", "--from", ATTACK, "--intent", ATTACK, &claim],
    )
    .ok();
    shown("tail", &env.run("ag-room", &["tail"]).ok());
    shown("tail --all", &env.run("ag-room", &["tail", "--all"]).ok());
    shown(
        "inbox --peek",
        &env.run("ag-room", &["inbox", "--peek", "--from", "bob"])
            .ok(),
    );
    shown("claims", &env.run("ag-room", &["claims"]).ok());
    let id = env.run("ag-room", &["tail", "--json"]).ok().json_lines()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    clean("status", &env.run("ag-room", &["status", &id]));
    clean("who", &env.run("ag-room", &["who"]));
}

#[test]
fn an_oversized_from_name_is_clipped_where_it_is_shown() {
    let env = TestEnv::new();
    let huge = "n".repeat(5000);
    env.run("ag-room", &["tell", "--from", &huge, "hello"]).ok();
    let tail = env.run("ag-room", &["tail"]).ok();
    assert!(tail.stdout.contains("hello"), "{}", tail.stdout);
    assert!(
        !tail.stdout.contains(&"n".repeat(200)),
        "the name was printed whole: {} bytes",
        tail.stdout.len()
    );
}

#[test]
fn ag_prompt_escapes_model_text_and_tool_output_in_pretty_mode() {
    let env = env_with(None, "");
    env.write_file("poison.txt", ATTACK);
    let text = serde_json::to_string(ATTACK).unwrap();
    let model = script(
        &env,
        "poison.toml",
        &format!(
            "[[step]]\ntext = {text}\ntool_calls = [{{ name = \"read\", arguments = {{ path = \"poison.txt\" }} }}]\n\
             [[step]]\ntext = {text}\n"
        ),
    );
    let run = env.run("ag-prompt", &["-m", &model, "-v", "go"]).ok();
    shown("ag-prompt", &run);
}

#[test]
fn ag_summon_printers_escape_a_project_definition_and_a_child_title() {
    let env = env_with(None, "");
    let field = serde_json::to_string(ATTACK).unwrap();
    env.write_file(
        ".ag/agents/evil.toml",
        &format!(
            "name = {field}\ndescription = {field}\nis_subagent = true\nmodels = [\"echo\"]\n"
        ),
    );
    shown("agents", &env.run("ag-summon", &["agents"]).ok());
    env.run("ag-summon", &["--agent", "evil", ATTACK]).ok();
    shown("ps", &env.run("ag-summon", &["ps", "--all"]).ok());
}

#[test]
fn ag_room_who_escapes_a_live_sessions_goal_and_last_tool() {
    let env = env_with(None, "");
    let gate = env.dir.path().join("gate");
    let name = serde_json::to_string(ATTACK).unwrap();
    let model = script(
        &env,
        "live.toml",
        &format!(
            "[[step]]\ntool_calls = [{{ name = {name}, arguments = {{}} }}]\n\
             [[step]]\ntext = \"waiting\"\nwait_for = \"{}\"\n",
            gate.display()
        ),
    );
    let mut bg = crate::prompt::spawn(&env, &["-m", &model, ATTACK]);
    let listed = crate::prompt::wait_until(std::time::Duration::from_secs(30), || {
        env.run("ag-room", &["who", "--json"])
            .json_lines()
            .iter()
            .any(|s| s["last_tool"].as_str().is_some_and(|t| t.contains("cm0g")))
    });
    let who = env.run("ag-room", &["who"]);
    std::fs::write(&gate, "").unwrap();
    bg.child.wait().unwrap();
    assert!(listed, "the session never showed its last tool");
    shown("who", &who);
}

#[test]
fn an_oversized_from_name_does_not_hold_back_a_peer_batch() {
    let env = env_with(None, "");
    env.write_file("a.txt", "a\n");
    let gate = env.dir.path().join("gate");
    let model = script(
        &env,
        "hear.toml",
        &format!(
            "[[step]]\nwait_for = \"{}\"\ntool_calls = [{{ name = \"read\", arguments = {{ path = \"a.txt\" }} }}]\n\
             [[step]]\ntext = \"heard\"\n",
            gate.display()
        ),
    );
    let mut bg = crate::prompt::spawn(&env, &["-m", &model, "listen"]);
    let id = bg.session();
    assert!(crate::prompt::wait_until(
        std::time::Duration::from_secs(30),
        || env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'") == 1
    ));
    env.run("ag-room", &["tell", "--from", "bob", "first"]).ok();
    let huge = "n".repeat(5000);
    env.run("ag-room", &["tell", "--from", &huge, "second"])
        .ok();
    std::fs::write(&gate, "").unwrap();
    assert!(bg.child.wait().unwrap().success());
    // One peer chunk, or two when the loop heard between the tells: either way both lines.
    let messages: Vec<Value> = env
        .chunks(&id)
        .into_iter()
        .filter(|c| c["type"] == "peer")
        .flat_map(|c| c["data"]["messages"].as_array().unwrap().clone())
        .collect();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first", "second"]);
    let from = messages[1]["from"].as_str().unwrap();
    assert!(from.len() <= 64, "{} bytes", from.len());
}
