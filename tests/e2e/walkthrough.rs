//! The README's main job: `examples/walkthrough.sh` runs offline from start to end.

use crate::support::{bin, TestEnv};

#[test]
fn the_readme_walkthrough_runs_offline_and_leaves_the_agents_file() {
    let env = TestEnv::new();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/walkthrough.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("AG_BIN_DIR", bin("ag-log").parent().unwrap())
        .current_dir(&env.cwd)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    // The agent wrote the summary with its write tool, and the log shows every tool call.
    assert!(
        stdout.contains("The project has one notes file listing two open tasks"),
        "{stdout}"
    );
    // Tool calls are reported live on stderr, then read back from the log on stdout.
    for tool in ["→ glob", "→ read", "→ write"] {
        assert!(stderr.contains(tool), "missing {tool:?} in:\n{stderr}");
        assert!(stdout.contains(tool), "missing {tool:?} in:\n{stdout}");
    }
    assert!(
        stdout.contains("← write wrote 91 bytes to SUMMARY.md"),
        "{stdout}"
    );
    assert!(stdout.contains("turn end: end_turn"), "{stdout}");
    assert!(stdout.contains("\"model\":\"script:"), "{stdout}");
    // The side question was answered read-only from the session's history, and both the side
    // chat and the plain fork show their lineage.
    assert!(
        stdout.contains("Two tasks are open: the parser"),
        "{stdout}"
    );
    assert!(stderr.contains("→ grep"), "{stderr}");
    assert!(
        stdout.contains("BTW · Which tasks are still open?"),
        "{stdout}"
    );
    assert!(stdout.contains("tools     read, glob, grep"), "{stdout}");
    assert_eq!(
        stdout.matches("\"walkthrough\" through seq 13").count(),
        2,
        "{stdout}"
    );
    // A parent agent summoned a subagent and retrieved its answer.
    assert!(stderr.contains("→ summon"), "{stderr}");
    assert!(stderr.contains("→ retrieve"), "{stderr}");
    assert!(
        stdout.contains("The subagent found two open tasks"),
        "{stdout}"
    );
    // Two agents in one folder: bob's write was refused by alice's claim, he asked her
    // directly, she heard him (a delivered receipt), and only her notes landed.
    assert!(
        stderr.contains("NOTES.md is claimed exclusively by alice"),
        "{stderr}"
    );
    assert!(
        stdout.contains("I will review NOTES.md once you are done"),
        "{stdout}"
    );
    assert!(stdout.contains(" delivered "), "{stdout}");
    assert!(stdout.contains("-- NOTES.md:\n# Release notes"), "{stdout}");
    assert!(!stdout.contains("bob was here"), "{stdout}");
    // Eight sessions in this home: by hand, the agent's, the summoning parent and its
    // subagent, alice and bob, the side chat and the fork.
    let ls = env.log(&["ls", "--json"]).ok();
    let kinds: Vec<String> = ls
        .json_lines()
        .iter()
        .map(|s| s["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds.len(), 8, "{kinds:?}");
    for kind in ["side", "subagent"] {
        let n = kinds.iter().filter(|k| *k == kind).count();
        assert_eq!(n, 1, "{kinds:?}");
    }
}
