//! ag-summon: agent definitions, subagents and user agents, with scripted models and the real
//! binaries (children run as detached `ag-prompt` processes).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fake_provider::{sse, FakeProvider, Reply};
use crate::prompt::{env_for, env_with, session_id};
use crate::support::{rusqlite_open, TestEnv};

/// Definitions in `.ag/agents/` with their scripts in `.ag/scripts/`: `finder` (a subagent
/// answering "The answer is 42."), `slow` (a subagent that takes a minute) and `helper` (a
/// user-agent definition).
pub(crate) fn with_agents(env: &TestEnv) {
    env.write_file(
        ".ag/scripts/finder.toml",
        "[[step]]\ntext = \"The answer is 42.\"\n",
    );
    env.write_file(
        ".ag/scripts/slow.toml",
        "[[step]]\ndelay_ms = 60000\ntext = \"too late\"\n",
    );
    env.write_file(".ag/scripts/quick.toml", "[[step]]\ntext = \"helped\"\n");
    env.write_file(
        ".ag/agents/finder.toml",
        "name = \"Finder\"\ndescription = \"Finds answers\"\nis_subagent = true\n\
         tools = [\"read\", \"glob\", \"grep\"]\nmodels = [\"script:../scripts/finder.toml\"]\n\
         system_prompt = \"You find answers.\"\n",
    );
    env.write_file(
        ".ag/agents/slow.toml",
        "description = \"Takes its time\"\nis_subagent = true\nmodels = [\"script:../scripts/slow.toml\"]\n",
    );
    env.write_file(
        ".ag/agents/helper.toml",
        "name = \"Helper\"\ndescription = \"An independent helper\"\nis_subagent = false\n\
         tools = [\"read\", \"write\"]\nmodels = [\"script:../scripts/quick.toml\"]\n",
    );
}

/// In the user's configuration: a project file may not grant permissions.
pub(crate) fn permit_user_agents(env: &TestEnv) {
    let cfg = env.dir.path().join("config/ag/config.toml");
    let mut text = std::fs::read_to_string(&cfg).unwrap_or_default();
    text.push_str("\n[permissions]\nuser_agents = \"allow\"\n");
    std::fs::write(&cfg, text).unwrap();
}

pub(crate) fn write_script(env: &TestEnv, name: &str, toml: &str) -> String {
    let p = env.dir.path().join("scripts").join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, toml).unwrap();
    format!("script:{}", p.display())
}

pub(crate) fn row(env: &TestEnv, id: &str) -> Value {
    let conn = rusqlite_open(&env.db());
    conn.query_row(
        "SELECT kind, parent_id, agent, status, pid, policy_json, cwd FROM sessions WHERE id = ?1",
        [id],
        |r| {
            Ok(serde_json::json!({
                "kind": r.get::<_, String>(0)?, "parent": r.get::<_, Option<String>>(1)?,
                "agent": r.get::<_, Option<String>>(2)?, "status": r.get::<_, String>(3)?,
                "pid": r.get::<_, Option<i64>>(4)?,
                "policy": serde_json::from_str::<Value>(&r.get::<_, String>(5)?).unwrap(),
                "cwd": r.get::<_, Option<String>>(6)?,
            }))
        },
    )
    .unwrap()
}

pub(crate) fn tool_results(env: &TestEnv, session: &str, name: &str) -> Vec<Value> {
    env.chunks(session)
        .into_iter()
        .filter(|c| c["type"] == "tool_result" && c["data"]["name"] == name)
        .collect()
}

pub(crate) fn ps(env: &TestEnv, args: &[&str]) -> Vec<Value> {
    let mut a = vec!["ps", "--json"];
    a.extend_from_slice(args);
    env.run("ag-summon", &a).ok().json_lines()
}

pub(crate) fn wait_dead(pid: i64) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next().map(str::to_string));
        if stat.is_empty() || matches!(state.as_deref(), Some("Z" | "X")) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("process {pid} did not die");
}

#[test]
fn a_parent_summons_a_subagent_and_retrieves_its_answer() {
    let env = env_with(None, "");
    with_agents(&env);
    let parent = write_script(
        &env,
        "parent.toml",
        r#"
[[step]]
tool_calls = [{name = "summon", arguments = {agent = "finder", task = "what is the answer?", background = true}}]
[[step]]
tool_calls = [{name = "retrieve", arguments = {id = "last", timeout_s = 30}}]
[[step]]
tool_calls = [{name = "summon", arguments = {agent = "finder", task = "again, please"}}]
[[step]]
text = "The subagent says 42."
"#,
    );
    let run = env
        .run(
            "ag-prompt",
            &["-m", &parent, "--tools", "read,glob,summon,retrieve", "go"],
        )
        .ok();
    assert!(
        run.stdout.contains("The subagent says 42."),
        "{}",
        run.stdout
    );
    let pid = session_id(&run);

    let summons = tool_results(&env, &pid, "summon");
    assert_eq!(summons.len(), 2);
    let bg = summons[0]["data"]["result"].as_str().unwrap();
    assert!(bg.contains("status: running in the background"), "{bg}");
    // grep is the definition's but not the parent's: dropped, and said so.
    assert!(
        bg.contains("tools not granted") && bg.contains("grep"),
        "{bg}"
    );
    let fg = summons[1]["data"]["result"].as_str().unwrap();
    assert!(
        fg.contains("status: done") && fg.contains("The answer is 42."),
        "{fg}"
    );
    let got = tool_results(&env, &pid, "retrieve");
    let text = got[0]["data"]["result"].as_str().unwrap();
    assert!(
        text.contains("status: done") && text.contains("The answer is 42."),
        "{text}"
    );
    assert_eq!(got[0]["data"]["is_error"], false);

    let kids = ps(&env, &["--parent", &pid]);
    assert_eq!(kids.len(), 2, "{kids:?}");
    for k in &kids {
        assert_eq!(k["kind"], "subagent");
        assert_eq!(k["status"], "done");
        assert_eq!(k["agent"], "finder");
        let r = row(&env, k["id"].as_str().unwrap());
        assert_eq!(r["parent"], pid.as_str());
        assert_eq!(r["policy"]["tools"], serde_json::json!(["read", "glob"]));
        assert_eq!(r["policy"]["system"], "You find answers.");
    }
}

#[test]
fn escalation_attempts_fail() {
    let env = env_with(None, "");
    with_agents(&env);
    std::fs::create_dir_all(env.cwd.join("sub")).unwrap();
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, env.cwd.join("escape")).unwrap();
    // A parent that may only read and summon.
    let parent = session_id(
        &env.run("ag-prompt", &["-m", "echo", "--tools", "read,summon", "hi"])
            .ok(),
    );

    let run = env
        .run(
            "ag-summon",
            &[
                "--parent",
                &parent,
                "--agent",
                "finder",
                "--tools",
                "read,bash,write",
                "--json",
                "q",
            ],
        )
        .ok();
    assert!(
        run.stderr.contains("tools not granted") && run.stderr.contains("bash, write"),
        "{}",
        run.stderr
    );
    let out = run.json();
    assert_eq!(out["status"], "done");
    assert_eq!(out["answer"], "The answer is 42.");
    let child = out["id"].as_str().unwrap();
    assert_eq!(
        row(&env, child)["policy"]["tools"],
        serde_json::json!(["read"])
    );

    // A cwd inside is fine; `..` and a symlink out are refused, and nothing is created.
    let run = env
        .run(
            "ag-summon",
            &[
                "--parent", &parent, "--agent", "finder", "--cwd", "sub", "q",
            ],
        )
        .ok();
    assert!(run.stdout.contains("The answer is 42."));
    let before = env.sqlite_count("SELECT COUNT(*) FROM sessions");
    for bad in ["..", "escape", "sub/../../work/../.."] {
        let run = env
            .run(
                "ag-summon",
                &["--parent", &parent, "--agent", "finder", "--cwd", bad, "q"],
            )
            .code(1);
        assert!(
            run.stderr.contains("outside the parent's directory"),
            "{bad}: {}",
            run.stderr
        );
    }
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM sessions"), before);

    // A subagent cannot summon (nesting is off by default).
    let run = env
        .run("ag-summon", &["--parent", child, "--agent", "finder", "q"])
        .code(1);
    assert!(run.stderr.contains("cannot summon"), "{}", run.stderr);
    assert!(run.stderr.contains("max_summon_depth"), "{}", run.stderr);
    // From an agent's bash tool, AG_SESSION names the spawner.
    let mut env2 = env_with(None, "");
    with_agents(&env2);
    env2.set("AG_SESSION", child);
    env2.home = env.home.clone();
    env2.set("AG_HOME", env.home.to_string_lossy());
    env2.cwd = env.cwd.clone();
    let run = env2.run("ag-summon", &["--agent", "finder", "q"]).code(1);
    assert!(run.stderr.contains("cannot summon"), "{}", run.stderr);
}

/// The summon schema the model is sent, from a recorded request.
pub(crate) fn offered_summon(env: &TestEnv, fake: &FakeProvider) -> Value {
    fake.push(Reply::Sse(sse::anthropic_text("ok")));
    env.run(
        "ag-prompt",
        &[
            "-m",
            crate::prompt::MODEL,
            "--tools",
            "read,summon,retrieve",
            "hi",
        ],
    )
    .ok();
    let req = fake.requests().pop().unwrap();
    let tools = req.body["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["read", "summon", "retrieve"]);
    tools.into_iter().find(|t| t["name"] == "summon").unwrap()
}

#[test]
fn the_user_agent_permission_gates_the_flag_the_schema_and_the_catalog() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    with_agents(&env);

    // Denied (the default).
    let spec = offered_summon(&env, &fake);
    assert!(
        spec["input_schema"]["properties"]
            .get("top_level")
            .is_none(),
        "{spec}"
    );
    let desc = spec["description"].as_str().unwrap();
    assert!(desc.contains("- finder: Finder — Finds answers"), "{desc}");
    assert!(
        !desc.contains("helper") && !desc.contains("User agents"),
        "{desc}"
    );
    let run = env
        .run("ag-summon", &["--agent", "helper", "--top-level", "x"])
        .code(1);
    assert!(
        run.stderr.contains("[permissions] user_agents = \"allow\""),
        "{}",
        run.stderr
    );
    let agents = env
        .run("ag-summon", &["agents", "--json"])
        .ok()
        .json_lines();
    assert!(agents.iter().all(|a| a["kind"] == "subagent"), "{agents:?}");
    let human = env.run("ag-summon", &["agents"]).ok();
    assert!(!human.stdout.contains("helper"), "{}", human.stdout);

    // Allowed.
    permit_user_agents(&env);
    let spec = offered_summon(&env, &fake);
    assert!(
        spec["input_schema"]["properties"]["top_level"].is_object(),
        "{spec}"
    );
    let desc = spec["description"].as_str().unwrap();
    assert!(
        desc.contains("User agents") && desc.contains("- helper: Helper"),
        "{desc}"
    );
    let human = env.run("ag-summon", &["agents"]).ok();
    assert!(human.stdout.contains("User agents") && human.stdout.contains("helper"));

    // A subagent definition is no user agent; a user agent has no parent.
    let run = env
        .run("ag-summon", &["--agent", "finder", "--top-level", "x"])
        .code(2);
    assert!(run.stderr.contains("subagent definition"), "{}", run.stderr);
    let run = env
        .run("ag-summon", &["--agent", "helper", "--top-level", "x"])
        .ok();
    let id = run.stdout.trim().to_string();
    let r = row(&env, &id);
    assert_eq!(r["kind"], "user_agent");
    assert!(r["parent"].is_null());
    assert_eq!(r["agent"], "helper");
    // Fire-and-forget: retrieve says so.
    let run = env.run("ag-summon", &["retrieve", &id]).code(1);
    assert!(run.stderr.contains("fire-and-forget"), "{}", run.stderr);
    let t = Instant::now();
    while row(&env, &id)["status"] == "running" && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(row(&env, &id)["status"], "done");
}

#[test]
fn a_killed_background_child_is_reported_interrupted() {
    let env = env_with(None, "");
    with_agents(&env);
    let run = env
        .run(
            "ag-summon",
            &["--agent", "slow", "--background", "take your time"],
        )
        .ok();
    let id = run.stdout.trim().to_string();
    let pid = row(&env, &id)["pid"].as_i64().expect("the pid is recorded");
    assert_eq!(ps(&env, &[])[0]["status"], "running");
    // Still running: a short timeout is a temporary failure.
    env.run("ag-summon", &["retrieve", &id, "--timeout", "200ms"])
        .code(75);
    // SAFETY: kill(2) takes two integers.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    wait_dead(pid);
    let run = env
        .run("ag-summon", &["retrieve", &id, "--timeout", "10s"])
        .code(1);
    assert!(run.stderr.contains("status: interrupted"), "{}", run.stderr);
    let all = ps(&env, &[]);
    assert_eq!(all[0]["status"], "interrupted");
    assert_eq!(row(&env, &id)["status"], "interrupted");
}

#[test]
fn retrieve_works_after_the_parent_exited_and_cancel_stops_a_child() {
    let env = env_with(None, "");
    with_agents(&env);
    env.write_file(
        ".ag/scripts/finder.toml",
        "[[step]]\ndelay_ms = 800\ntext = \"The answer is 42.\"\n",
    );
    let parent = write_script(
        &env,
        "parent.toml",
        r#"
[[step]]
tool_calls = [{name = "summon", arguments = {agent = "finder", task = "q", background = true}}, {name = "summon", arguments = {agent = "slow", task = "q", background = true}}]
[[step]]
text = "Started them."
"#,
    );
    let run = env
        .run(
            "ag-prompt",
            &["-m", &parent, "--tools", "read,glob,summon", "go"],
        )
        .ok();
    let parent_id = session_id(&run);
    let kids = ps(&env, &["--parent", &parent_id]);
    assert_eq!(kids.len(), 2);
    let finder = kids.iter().find(|k| k["agent"] == "finder").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let slow = kids.iter().find(|k| k["agent"] == "slow").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The parent has exited; another shell retrieves.
    let run = env.run("ag-summon", &["retrieve", &finder]).ok();
    assert_eq!(run.stdout.trim(), "The answer is 42.");
    assert!(run.stderr.contains("status: done"));

    let pid = row(&env, &slow)["pid"].as_i64().unwrap();
    let run = env
        .run("ag-summon", &["cancel", &slow, "--grace", "2"])
        .ok();
    assert!(run.stderr.contains("cancelled"), "{}", run.stderr);
    wait_dead(pid);
    assert_eq!(row(&env, &slow)["status"], "cancelled");
    let run = env.run("ag-summon", &["retrieve", &slow]).code(1);
    assert!(run.stderr.contains("cancelled"), "{}", run.stderr);
    // Cancelling a finished one says so and changes nothing.
    let run = env.run("ag-summon", &["cancel", &finder]).ok();
    assert!(
        run.stderr.contains("already ended (done)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_session_without_summon_cannot_spawn() {
    let env = env_with(None, "");
    with_agents(&env);
    // A session that may read but not summon: its bash tool (here: AG_SESSION or --parent)
    // must not be a way round that.
    let parent = session_id(
        &env.run("ag-prompt", &["-m", "echo", "--tools", "read", "hi"])
            .ok(),
    );
    let before = env.sqlite_count("SELECT COUNT(*) FROM sessions");
    let run = env
        .run(
            "ag-summon",
            &["--parent", &parent, "--agent", "finder", "q"],
        )
        .code(1);
    let short = &crate::room::handle(&env, &parent);
    assert!(
        run.stderr.contains(short) && run.stderr.contains("lack `summon`"),
        "{}",
        run.stderr
    );
    let mut env2 = env_with(None, "");
    with_agents(&env2);
    env2.set("AG_SESSION", &parent);
    env2.home = env.home.clone();
    env2.set("AG_HOME", env.home.to_string_lossy());
    env2.cwd = env.cwd.clone();
    let run = env2.run("ag-summon", &["--agent", "finder", "q"]).code(1);
    assert!(run.stderr.contains("lack `summon`"), "{}", run.stderr);
    // A session with no stored tools runs read-only, which lacks summon too.
    rusqlite::Connection::open(env.db())
        .unwrap()
        .execute(
            "UPDATE sessions SET policy_json = '{}' WHERE id = ?1",
            [&parent],
        )
        .unwrap();
    let run = env
        .run(
            "ag-summon",
            &["--parent", &parent, "--agent", "finder", "q"],
        )
        .code(1);
    assert!(run.stderr.contains("lack `summon`"), "{}", run.stderr);
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM sessions"), before);
    // A person at a shell is not restricted.
    let run = env.run("ag-summon", &["--agent", "finder", "q"]).ok();
    assert!(run.stdout.contains("The answer is 42."), "{}", run.stdout);
}

#[test]
fn a_summoned_agent_still_gets_the_key_it_needs() {
    // ag-summon takes the key out of its own environment; the ag-prompt it starts talks to
    // the provider, so it is given the key explicitly.
    let fake = FakeProvider::start();
    let mut env = env_for(&fake);
    env.set("AG_MODEL", crate::prompt::MODEL);
    fake.push(Reply::Sse(sse::anthropic_text("found it")));
    let run = env
        .run("ag-summon", &["--agent", "explorer", "where is it?"])
        .ok();
    assert!(run.stdout.contains("found it"), "{}", run.stderr);
    let req = fake.requests().pop().unwrap();
    assert_eq!(
        req.headers.get("x-api-key").map(String::as_str),
        Some(crate::prompt::KEY)
    );
}
