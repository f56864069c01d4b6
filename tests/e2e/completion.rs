//! Dynamic completion in a real bash and a real zsh: session handles, agent names and model
//! names come from `ag-log __complete`, which never creates a store and offers only plain
//! words.

use std::path::Path;

use crate::support::TestEnv;

/// What a real bash offers for `WORDS…<TAB>`, with the command's generated completion
/// loaded and the test's environment (its store, its PATH with the binaries).
fn complete(env: &TestEnv, command: &str, words: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = root.join(format!("completions/{command}.bash"));
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let n = words.len();
    let script = format!(
        "source '{}'\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE='{}'\nCOMP_POINT=${{#COMP_LINE}}\n\
         f=$(complete -p {command} | sed -E 's/.*-F ([^ ]+).*/\\1/')\n\
         \"$f\" {command} '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        file.display(),
        quoted.join(" "),
        n - 1,
        words.join(" "),
        words[n - 1],
        if n >= 2 { words[n - 2] } else { "" },
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&env.cwd)
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn handle(env: &TestEnv, id: &str) -> String {
    env.log(&["show", id, "--json"]).ok().json()["handle"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn bash_completes_session_handles_after_a_session_flag_or_as_the_session_argument() {
    let env = TestEnv::new();
    let a = handle(&env, &env.new_session("alpha", "one"));
    let b = handle(&env, &env.new_session("beta", "two"));
    let got = complete(&env, "ag-log", &["ag-log", "cat", ""]);
    assert!(got.contains(&a) && got.contains(&b), "{got:?}");
    let got = complete(&env, "ag-log", &["ag-log", "cat", &a[..3]]);
    assert_eq!(got, std::slice::from_ref(&a));
    let got = complete(&env, "ag-log", &["ag-log", "search", "x", "-s", ""]);
    assert!(got.contains(&a) && got.contains(&b), "{got:?}");
    let got = complete(&env, "ag-prompt", &["ag-prompt", "--session", ""]);
    assert!(got.contains(&a), "{got:?}");
    // Flags still complete as before.
    let got = complete(&env, "ag-log", &["ag-log", "cat", "--tu"]);
    assert_eq!(got, ["--turn"]);
}

#[test]
fn bash_completes_agent_and_model_names() {
    let env = TestEnv::new();
    env.write_file(
        ".ag/agents/finder.toml",
        "description = \"Finds\"\nis_subagent = true\nmodels = [\"echo\"]\n",
    );
    // A name a shell would act on is never offered.
    env.write_file(
        ".ag/agents/$(touch pwned).toml",
        "description = \"x\"\nis_subagent = true\n",
    );
    let got = complete(&env, "ag-summon", &["ag-summon", ""]);
    assert!(got.iter().any(|w| w == "finder"), "{got:?}");
    assert!(got.iter().any(|w| w == "ps"), "subcommands too: {got:?}");
    assert!(!got.iter().any(|w| w.contains('$')), "{got:?}");
    assert!(!env.cwd.join("pwned").exists());
    let got = complete(&env, "ag-summon", &["ag-summon", "--agent", "fi"]);
    assert_eq!(got, ["finder"]);
    let got = complete(&env, "ag-prompt", &["ag-prompt", "-m", ""]);
    for m in ["echo", "sonnet"] {
        assert!(got.iter().any(|w| w == m), "{m}: {got:?}");
    }
}

#[test]
fn the_completion_helper_needs_no_store_and_makes_none() {
    let env = TestEnv::new();
    let run = env.log(&["__complete", "sessions"]).ok();
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "");
    assert!(!env.home.exists(), "a store was created");
    let got = complete(&env, "ag-log", &["ag-log", "cat", ""]);
    assert!(got.is_empty(), "{got:?}");
    assert!(!env.home.exists());
    // It is not part of the help people read.
    assert!(!env.log(&["--help"]).ok().stdout.contains("__complete"));
}

/// What a real interactive zsh (driven through a pseudo-terminal by `zsh_complete.zsh`)
/// offers for `LINE<TAB>`, with `completions/` on its `fpath` and the test's environment.
/// `None` when zsh is not installed (CI installs it, and fails without it).
fn zsh_complete(env: &TestEnv, line: &str) -> Option<Vec<String>> {
    let Some(zsh) = ["/usr/bin/zsh", "/bin/zsh"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
    else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "zsh is not installed, and CI=true: `.ci/run` installs it (apt-get install zsh)"
        );
        eprintln!("skipped: zsh is not installed (apt-get install zsh)");
        return None;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = env.dir.path().join("zsh-offers.txt");
    let run = std::process::Command::new(zsh)
        .arg("-f")
        .arg(root.join("tests/e2e/zsh_complete.zsh"))
        .args([
            line.as_ref(),
            root.join("completions").as_os_str(),
            out.as_os_str(),
        ])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&env.cwd)
        .output()
        .expect("run zsh");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let offers = std::fs::read_to_string(&out).unwrap();
    Some(
        offers
            .lines()
            .filter(|l| !l.is_empty() && *l != "--done--")
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn zsh_completes_sessions_agents_and_models() {
    let env = TestEnv::new();
    let a = handle(&env, &env.new_session("alpha", "one"));
    let b = handle(&env, &env.new_session("beta: a title with a colon", "two"));
    let Some(got) = zsh_complete(&env, "ag-log cat ") else {
        return;
    };
    assert!(got.contains(&a) && got.contains(&b), "{got:?}");
    let got = zsh_complete(&env, &format!("ag-log cat {}", &a[..3])).unwrap();
    assert_eq!(got, std::slice::from_ref(&a));
    let got = zsh_complete(&env, "ag-log search -s ").unwrap();
    assert!(got.contains(&a) && got.contains(&b), "{got:?}");
    let got = zsh_complete(&env, "ag-prompt --session ").unwrap();
    assert!(got.contains(&a), "{got:?}");
    let got = zsh_complete(&env, "ag-prompt -m ").unwrap();
    for m in ["echo", "sonnet"] {
        assert!(got.iter().any(|w| w == m), "{m}: {got:?}");
    }
    env.write_file(
        ".ag/agents/finder.toml",
        "description = \"Finds\"\nis_subagent = true\nmodels = [\"echo\"]\n",
    );
    let got = zsh_complete(&env, "ag-summon --agent fi").unwrap();
    assert_eq!(got, ["finder"]);
    // Flags still complete as before.
    let got = zsh_complete(&env, "ag-log cat --tu").unwrap();
    assert_eq!(got, ["--turn"]);
}

#[test]
fn bash_completes_tool_words_after_tools_not_file_names() {
    let env = TestEnv::new();
    env.write_file("readme-notes.txt", "a file that must not be offered\n");
    let got = complete(&env, "ag-prompt", &["ag-prompt", "--tools", "re"]);
    assert!(
        got.contains(&"read".to_string()) && got.contains(&"read-only".to_string()),
        "{got:?}"
    );
    assert!(!got.iter().any(|w| w.contains("readme")), "{got:?}");
    let got = complete(&env, "ag-prompt", &["ag-prompt", "--tools", "+ed"]);
    assert_eq!(got, ["+edit"]);
    let got = complete(&env, "ag-fork", &["ag-fork", "x", "--tools", "-ba"]);
    assert_eq!(got, ["-bash"]);
}

#[test]
fn bash_completes_ag_cmd_as_the_command_itself() {
    let env = TestEnv::new();
    let a = handle(&env, &env.new_session("alpha", "one"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = format!(
        "source '{}'\nsource '{}'\nCOMP_WORDS=(ag log cat '')\nCOMP_CWORD=3\nCOMP_LINE='ag log cat '\n\
         COMP_POINT=${{#COMP_LINE}}\nf=$(complete -p ag | sed -E 's/.*-F ([^ ]+).*/\\1/')\n\
         \"$f\" ag '' cat\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        root.join("completions/ag.bash").display(),
        root.join("completions/ag-log.bash").display(),
    );
    env.write_file("notes.txt", "a file that must not be offered\n");
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&env.cwd)
        .output()
        .unwrap();
    let got = String::from_utf8_lossy(&out.stdout);
    assert!(got.lines().any(|l| l == a), "{got}");
    assert!(!got.contains("notes.txt"), "{got}");
}

#[test]
fn bash_completes_models_with_a_known_window_after_m() {
    let env = TestEnv::new();
    let got = complete(
        &env,
        "ag-prompt",
        &["ag-prompt", "-m", "anthropic/claude-son"],
    );
    assert!(
        got.contains(&"anthropic/claude-sonnet-4-5".to_string()),
        "{got:?}"
    );
    let got = complete(&env, "ag-prompt", &["ag-prompt", "-m", "openai/gpt-4o"]);
    assert!(got.contains(&"openai/gpt-4o".to_string()), "{got:?}");
}
