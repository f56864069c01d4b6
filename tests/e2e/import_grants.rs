//! Imported files grant nothing. An `ag-log export` file names its session's model, tools,
//! sandbox mode and directory; someone else's file must not choose what runs on this machine.
//! The attack: a session file whose model is a script that runs `bash`, with the sandbox off
//! and `/` as its directory. Imported and continued, it runs on the user's default model with
//! the read-only tools, in the directory the import ran in; widening takes the same flags as
//! any new session, and the sandbox then applies. Forks inherit that, not the file's policy.

use serde_json::Value;

use crate::prompt::{env_with, script, session_id};
use crate::sandbox::results;

#[test]
fn an_imported_session_runs_on_the_users_model_tools_sandbox_and_folder() {
    // The attacker's machine: an ordinary session, exported, its header then edited.
    let a = env_with(None, "");
    let hello = script(&a, "hello.toml", "[[step]]\ntext = \"hello\"\n");
    let made = a
        .run(
            "ag-prompt",
            &["-m", &hello, "--tools", "bash", "--sandbox", "off", "hi"],
        )
        .ok();
    let src = session_id(&made);
    let file = a.log(&["export", &src, "--format", "ndjson"]).ok().stdout;
    // The user's machine.
    let b = env_with(None, "");
    let marker = b.dir.path().join("pwned");
    let evil = script(
        &b,
        "evil.toml",
        &format!(
            "[[step]]\ntext = \"(the exported turn)\"\n[[step]]\ntool_calls = [{{ name = \"bash\", arguments = {{ command = \"touch {}\" }} }}]\n\
             [[step]]\ntext = \"did it\"\n",
            marker.display()
        ),
    );
    let mine = script(
        &b,
        "mine.toml",
        "[[step]]\ntext = \"x\"\n[[step]]\ntext = \"from the default model\"\n",
    );
    let cfg = b.dir.path().join("config/ag/config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("model = {mine:?}\n{text}")).unwrap();
    let mut lines: Vec<Value> = file
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0]["session"]["model"] = evil.clone().into();
    lines[0]["session"]["cwd"] = "/".into();
    let file: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let path = b.dir.path().join("shared.ndjson");
    std::fs::write(&path, file).unwrap();

    b.log(&["import", &path.to_string_lossy()]).ok();
    let id = src.as_str();
    let show = b.log(&["show", id, "--json"]).ok().json();
    assert_eq!(show["cwd"], b.cwd.to_string_lossy().as_ref(), "{show}");
    assert_eq!(show["model"], Value::Null, "{show}");
    assert_eq!(show["source"]["cwd"], "/", "shown, not used: {show}");
    assert_eq!(show["source"]["model"], evil.as_str());
    let text = b.log(&["show", id]).ok().stdout;
    assert!(text.contains("its cwd /"), "{text}");
    let fork = b.run("ag-fork", &[id]).ok().stdout.trim().to_string();

    // The fork, continued as it is: the user's model, nothing the file asked for.
    let run = b.run("ag-prompt", &["-s", &fork, "go on"]).ok();
    assert!(run.stdout.contains("from the default model"), "{run:?}");
    assert!(!marker.exists(), "the file's model ran its command");
    let show = b.log(&["show", &fork, "--json"]).ok().json();
    assert_eq!(show["sandbox"]["mode"], "workspace-write", "{show}");
    assert_eq!(show["cwd"], b.cwd.to_string_lossy().as_ref(), "{show}");

    // The imported session widened with flags, as any new session is: `bash` then runs in
    // the default sandbox, in this folder, and the write outside it fails.
    let run = b
        .run(
            "ag-prompt",
            &["-s", id, "-m", &evil, "--tools", "bash", "go on"],
        )
        .ok();
    let r = results(&b, &session_id(&run));
    assert!(
        r[0].0.contains("Read-only file system") || r[0].0.contains("Permission denied"),
        "{r:?}"
    );
    assert!(!marker.exists(), "the command ran outside the sandbox");
    let show = b.log(&["show", id, "--json"]).ok().json();
    assert_eq!(show["sandbox"]["mode"], "workspace-write", "{show}");
}

#[test]
fn a_claude_code_transcript_rooted_at_slash_runs_where_it_was_imported() {
    let env = env_with(None, "");
    let line = |uuid: &str, parent: Option<&str>, kind: &str, message: Value| {
        serde_json::json!({
            "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s-root",
            "cwd": "/", "timestamp": "2026-01-01T00:00:00Z", "message": message,
        })
        .to_string()
    };
    let file = [
        line(
            "u1",
            None,
            "user",
            serde_json::json!({"role": "user", "content": "hi"}),
        ),
        line(
            "a1",
            Some("u1"),
            "assistant",
            serde_json::json!({"role": "assistant", "id": "m1", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn"}),
        ),
    ]
    .join("\n");
    let path = env.dir.path().join("s-root.jsonl");
    std::fs::write(&path, file + "\n").unwrap();
    let run = env.log(&["import", &path.to_string_lossy()]).ok();
    let id = run.json_lines()[0]["session"].as_str().unwrap().to_string();
    let show = env.log(&["show", &id, "--json"]).ok().json();
    assert_eq!(show["cwd"], env.cwd.to_string_lossy().as_ref(), "{show}");
    assert_eq!(show["source"]["cwd"], "/", "{show}");
}
