//! Claims hold inside the `bash` sandbox (issue #17): the files another session claims are
//! read-only to a command, the session's own claims and unclaimed files stay writable.

use std::time::Duration;

use serde_json::Value;

use crate::prompt::{script, session_id, spawn, wait_for_chunk};
use crate::support::TestEnv;

fn env() -> TestEnv {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.cwd.join(".git")).unwrap();
    env
}

fn bash_results(env: &TestEnv, id: &str) -> Vec<Value> {
    env.chunks(id)
        .into_iter()
        .filter(|c| c["type"] == "tool_result" && c["data"]["name"] == "bash")
        .map(|c| c["data"].clone())
        .collect()
}

#[test]
fn a_file_another_session_claims_is_read_only_to_bash_and_its_holder_still_writes_it() {
    let env = env();
    env.write_file("src/x.rs", "one\n");
    env.write_file("src/notes/a.md", "a\n");
    // A claims src/x.rs and the notes by a glob, then waits (live, holding them) for the gate.
    let a_script = script(
        &env,
        "a.toml",
        "[[step]]\ntool_calls = [{ name = \"peer_claim\", arguments = { paths = [\"src/x.rs\", \"src/notes/*.md\"], intent = \"refactor\" } }]\n\
         [[step]]\nwait_for = \"a-go\"\ntool_calls = [{ name = \"bash\", arguments = { command = \"echo mine >> src/x.rs && echo wrote\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let mut a = spawn(&env, &["-m", &a_script, "--tools", "all", "alpha"]);
    let ida = a.session();
    wait_for_chunk(&env, &ida, |c| {
        c["type"] == "tool_result" && c["data"]["name"] == "peer_claim"
    });
    // B: its first bash is held back (it is told the claims), then the writes.
    let write = "echo hi >> src/x.rs; echo \"x:$?\"; echo b >> src/notes/a.md; echo \"md:$?\"; \
                 rm -f src/x.rs; echo \"rm:$?\"; echo ok > src/y.rs && echo \"y:$?\"";
    let b_script = script(
        &env,
        "b.toml",
        &format!(
            "[[step]]\ntool_calls = [{{ name = \"bash\", arguments = {{ command = \"true\" }} }}]\n\
             [[step]]\ntool_calls = [{{ name = \"bash\", arguments = {{ command = {write:?} }} }}]\n\
             [[step]]\ntext = \"done\"\n"
        ),
    );
    let b = env
        .run("ag-prompt", &["-m", &b_script, "--tools", "all", "beta"])
        .ok();
    let r = bash_results(&env, &session_id(&b));
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(
        r[0]["result"]
            .as_str()
            .unwrap()
            .contains("bash did not run"),
        "{}",
        r[0]
    );
    let out = r[1]["result"].as_str().unwrap();
    assert!(out.contains("Read-only file system"), "{out}");
    for refused in ["x:1", "md:1", "rm:1"] {
        assert!(out.contains(refused), "{refused}: {out}");
    }
    assert!(out.contains("y:0"), "an unclaimed file is writable: {out}");
    assert!(!out.contains("changed claimed files"), "{out}");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("src/x.rs")).unwrap(),
        "one\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("src/notes/a.md")).unwrap(),
        "a\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("src/y.rs")).unwrap(),
        "ok\n"
    );
    // A writes its own claim from its sandbox.
    std::fs::write(env.cwd.join("a-go"), "").unwrap();
    let done = a.wait(Duration::from_secs(60));
    assert_eq!(done.code, 0, "{}", done.stderr);
    let r = bash_results(&env, &ida);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["is_error"], false, "{}", r[0]);
    assert!(
        r[0]["result"].as_str().unwrap().contains("wrote"),
        "{}",
        r[0]
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("src/x.rs")).unwrap(),
        "one\nmine\n"
    );
}
