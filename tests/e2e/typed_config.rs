//! Closed words in the configuration: a provider's `kind` and a `[permissions]` value are
//! checked when the configuration loads, so a typo is an error naming the file and the word,
//! never a provider that fails later or a permission quietly read as "deny".

use crate::prompt::env_with;

#[test]
fn a_typo_in_a_provider_kind_or_a_permission_fails_when_the_config_loads() {
    for (extra, word, expected) in [
        (
            "[providers.local]\nkind = \"opneai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
            "opneai",
            "expected `openai` or `anthropic`",
        ),
        (
            "[permissions]\nuser_agents = \"alow\"\n",
            "alow",
            "expected `allow` or `deny`",
        ),
    ] {
        let env = env_with(None, extra);
        let run = env.run("ag-prompt", &["-m", "echo", "hi"]).code(1);
        let config = env.dir.path().join("config/ag/config.toml");
        assert!(
            run.stderr.starts_with("ag-prompt: error: ")
                && run
                    .stderr
                    .contains(&format!("{}: line 2: ", config.display()))
                && run.stderr.contains(&format!("unknown variant `{word}`"))
                && run.stderr.contains(expected),
            "{}",
            run.stderr
        );
        assert_eq!(run.stdout, "");
        assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM sessions"), 0);
    }
    // The right words load.
    let env = env_with(
        None,
        "[permissions]\nuser_agents = \"allow\"\nprotected_writes = \"deny\"\n\
         [providers.local]\nkind = \"anthropic\"\nbase_url = \"http://127.0.0.1:9\"\n",
    );
    env.run("ag-prompt", &["-m", "echo", "hi"]).ok();
}
