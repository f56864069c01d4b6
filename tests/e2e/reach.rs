//! What a model reaches (issue #11), written as the attack: `grep` never reads through a link
//! swapped in while it runs, and `peer_message` resolves only sessions within the model's
//! reach.

use crate::prompt::{env_with, script, session_id};
use crate::trust::{git_init, results, Swapper};

#[test]
fn a_symlink_swapped_in_while_grep_runs_never_lets_it_read_outside() {
    let env = env_with(None, "");
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("s.txt"), "needle the secret\n").unwrap();
    env.write_file("d/s.txt", "needle inside\n");
    // Many searches of `d` in one step, while `d` flips between a directory and a symlink to
    // `outside` holding a file of the same name.
    let mut calls = String::new();
    for _ in 0..200 {
        calls.push_str(
            "  { name = \"grep\", arguments = { pattern = \"needle\", path = \"d\" } },\n",
        );
    }
    let model = script(
        &env,
        "grep-race.toml",
        &format!("[[step]]\ntool_calls = [\n{calls}]\n[[step]]\ntext = \"done\"\n"),
    );
    let swapper = Swapper::start(&env.cwd, &outside);
    let run = env
        .run("ag-prompt", &["-m", &model, "--tools", "grep", "race"])
        .ok();
    swapper.stop();
    let out = results(&env, &session_id(&run));
    assert_eq!(out.len(), 200, "every call answered");
    assert!(
        !out.iter().any(|r| r.contains("the secret")),
        "grep read outside: {:?}",
        out.iter().find(|r| r.contains("the secret"))
    );
}

/// A session made by `ag-prompt` in a folder beside the test's project: its id.
pub(crate) fn session_in_another_project(env: &crate::support::TestEnv, prompt: &str) -> String {
    let other = env.dir.path().join("other-project");
    std::fs::create_dir_all(&other).unwrap();
    let run = env
        .command("ag-prompt")
        .args(["-m", "echo", prompt])
        .current_dir(&other)
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    crate::prompt::session_of(&String::from_utf8_lossy(&run.stderr)).unwrap()
}

#[test]
fn a_model_messages_only_sessions_within_its_reach() {
    let env = env_with(None, "");
    git_init(&env);
    // A session of another project on this device, which never wrote to us.
    let theirs = session_in_another_project(&env, "the other project's plan");
    // By full id, by handle fragment and by title fragment: refused, and nothing posted.
    let model = script(
        &env,
        "dm.toml",
        &format!(
            "[[step]]\ntool_calls = [\
               {{ name = \"peer_message\", arguments = {{ session = \"{theirs}\", text = \"hi\" }} }},\
               {{ name = \"peer_message\", arguments = {{ session = \"{}\", text = \"hi\" }} }},\
               {{ name = \"peer_message\", arguments = {{ session = \"other project\", text = \"hi\" }} }}]\n\
             [[step]]\ntext = \"done\"\n",
            &theirs[..13]
        ),
    );
    let run = env.run("ag-prompt", &["-m", &model, "message them"]).ok();
    let out = results(&env, &session_id(&run));
    assert_eq!(out.len(), 3, "{out:?}");
    for r in &out {
        assert!(r.contains("not a live session of this worktree"), "{r}");
        assert!(!r.contains("plan"), "{r}");
    }
    let device = std::fs::read_to_string(env.home.join("rooms/device.jsonl")).unwrap_or_default();
    assert!(!device.contains("\"hi\""), "{device}");
}
