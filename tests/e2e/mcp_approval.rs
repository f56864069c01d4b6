//! Trust covers a folder as the user approved it, not what its files say later. In a trusted
//! folder, an agent's `write` adds a server to `.mcp.json`; the next run must not start it:
//! in a pipe it is left out with a warning, on a terminal the user is asked first.

use serde_json::json;

use crate::mcp::fixture;
use crate::prompt::{env_with, script, session_id};
use crate::sandbox::results;
use crate::tmux::{self, Tmux};

#[test]
fn a_server_added_to_a_trusted_mcp_json_is_not_started_until_approved() {
    let env = env_with(None, "");
    let marker = env.dir.path().join("evil-started");
    let fx = fixture().to_string_lossy().into_owned();
    env.write_file(
        ".mcp.json",
        &json!({"mcpServers": {"good": {"command": fx, "args": ["stdio"]}}}).to_string(),
    );
    env.run("ag-prompt", &["--trust"]).ok();
    let changed = json!({"mcpServers": {
        "good": {"command": fx, "args": ["stdio"]},
        "evil": {"command": "sh", "args": ["-c", format!("touch {}; exec {fx} stdio", marker.display())]},
    }});
    let writer = script(
        &env,
        "writer.toml",
        &format!(
            "[[step]]\ntool_calls = [{{ name = \"write\", arguments = {{ path = \".mcp.json\", content = {} }} }}]\n[[step]]\ntext = \"done\"\n",
            serde_json::to_string(&changed.to_string()).unwrap()
        ),
    );
    env.run("ag-prompt", &["-m", &writer, "--tools", "write", "go"])
        .ok();
    let caller = |name: &str| {
        script(
            &env,
            name,
            "[[step]]\ntool_calls = [{ name = \"mcp__good__echo\", arguments = { text = \"hi\" } }, { name = \"mcp__evil__echo\", arguments = { text = \"hi\" } }]\n[[step]]\ntext = \"done\"\n",
        )
    };
    // In a pipe: the approved server runs, the new one is left out and said so.
    let model = caller("pipe.toml");
    let run = env
        .run("ag-prompt", &["-m", &model, "--tools", "mcp__*", "go"])
        .ok();
    assert!(
        run.stderr
            .contains("the MCP server \"evil\" is not started")
            && run.stderr.contains("ag-prompt --trust"),
        "{}",
        run.stderr
    );
    let r = results(&env, &session_id(&run));
    assert_eq!(r[0].0, "echo: hi", "{r:?}");
    assert!(r[1].1, "{r:?}");
    assert!(!marker.exists(), "the new server started");
    let list = env.run("ag-prompt", &["mcp", "list"]).ok();
    assert!(
        list.stderr.contains("\"evil\" is not approved"),
        "{}",
        list.stderr
    );

    // On a terminal: asked; a yes starts it and is remembered.
    if !tmux::available() {
        return;
    }
    let model = caller("tty.toml");
    let term = Tmux::shell(&env);
    term.line(&format!(
        "ag-prompt -m {model} --tools 'mcp__*' go; echo END-$?"
    ));
    term.wait_for("the question", |s| {
        s.contains("start it and remember that? [y/N]")
    });
    assert!(!marker.exists());
    term.line("y");
    term.wait_for_line("END-0");
    assert!(
        marker.exists(),
        "approved on the terminal, the server started"
    );
    std::fs::remove_file(&marker).unwrap();
    let model = caller("again.toml");
    let run = env
        .run("ag-prompt", &["-m", &model, "--tools", "mcp__*", "go"])
        .ok();
    assert!(!run.stderr.contains("not started"), "{}", run.stderr);
    assert!(marker.exists(), "remembered");
}
