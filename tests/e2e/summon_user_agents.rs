//! User agents a session starts (issue #11): they work inside the spawning session's
//! directory unless the user config lists another, and they count toward the nesting limit.

use crate::prompt::env_with;
use crate::summon::{permit_user_agents, row, with_agents};
use crate::support::TestEnv;

/// A session that may summon, made by a run in the test's directory.
fn summoning_session(env: &TestEnv) -> String {
    let run = env
        .run("ag-prompt", &["-m", "echo", "--tools", "read,summon", "hi"])
        .ok();
    crate::prompt::session_id(&run)
}

#[test]
fn a_user_agent_a_session_starts_stays_in_its_directory_unless_the_user_lists_another() {
    let mut env = env_with(None, "");
    with_agents(&env);
    permit_user_agents(&env);
    let spawner = summoning_session(&env);
    env.set("AG_SESSION", &spawner);
    let outside = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(env.cwd.join("sub")).unwrap();
    let elsewhere = outside.to_string_lossy().into_owned();

    let run = env
        .run(
            "ag-summon",
            &["--agent", "helper", "--top-level", "--cwd", &elsewhere, "x"],
        )
        .code(1);
    assert!(
        run.stderr
            .contains("outside the spawning session's directory"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("user_agent_dirs"), "{}", run.stderr);

    // Inside the spawner's directory it starts; by default it works there.
    let id = env
        .run(
            "ag-summon",
            &["--agent", "helper", "--top-level", "--cwd", "sub", "x"],
        )
        .ok()
        .stdout
        .trim()
        .to_string();
    let cwd = row(&env, &id)["cwd"].as_str().unwrap().to_string();
    assert!(cwd.ends_with("/work/sub"), "{cwd}");
    let id = env
        .run("ag-summon", &["--agent", "helper", "--top-level", "x"])
        .ok()
        .stdout
        .trim()
        .to_string();
    assert_eq!(
        row(&env, &id)["cwd"].as_str().unwrap(),
        env.cwd.to_string_lossy()
    );

    // A directory the user lists in the user config is allowed too.
    let cfg = env.dir.path().join("config/ag/config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "[permissions]\n",
        &format!("[permissions]\nuser_agent_dirs = [{:?}]\n", elsewhere),
    );
    std::fs::write(&cfg, text).unwrap();
    env.run(
        "ag-summon",
        &["--agent", "helper", "--top-level", "--cwd", &elsewhere, "x"],
    )
    .ok();
}

#[test]
fn a_user_agent_a_session_starts_counts_toward_the_nesting_limit() {
    let mut env = env_with(None, "");
    with_agents(&env);
    permit_user_agents(&env);
    env.write_file(
        ".ag/agents/spawner.toml",
        "description = \"Starts others\"\nis_subagent = false\n\
         tools = [\"read\", \"summon\"]\nmodels = [\"script:../scripts/quick.toml\"]\n",
    );
    let spawner = summoning_session(&env);
    env.set("AG_SESSION", &spawner);
    let id = env
        .run("ag-summon", &["--agent", "spawner", "--top-level", "x"])
        .ok()
        .stdout
        .trim()
        .to_string();
    // Nesting is off (the default): the user agent is one summon deep, so it gets no summon
    // tool, and a summon in its name is refused.
    let tools = row(&env, &id)["policy"]["tools"].to_string();
    assert!(!tools.contains("summon"), "{tools}");
    env.set("AG_SESSION", &id);
    let run = env.run("ag-summon", &["--agent", "finder", "x"]).code(1);
    assert!(run.stderr.contains("nesting is off"), "{}", run.stderr);
    let run = env
        .run("ag-summon", &["--agent", "spawner", "--top-level", "x"])
        .code(1);
    assert!(run.stderr.contains("nesting is off"), "{}", run.stderr);
}
