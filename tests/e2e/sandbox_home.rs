//! The store and the user's configuration stay out of a sandboxed command's reach wherever
//! they are. Run in the home folder (which holds `$AG_HOME` and `$XDG_CONFIG_HOME/ag` here),
//! a command may write the workspace but not turn the sandbox off in the user config, trust
//! `/`, write the database, or move the configuration aside and put its own in its place.

use crate::nats_server::NatsServer;
use crate::prompt::env_with;
use crate::sandbox::run_bash;

#[test]
fn sandbox_in_the_home_folder_cannot_touch_the_store_or_the_user_config() {
    let mut env = env_with(None, "");
    // The session runs in HOME, which holds the store (home/) and the config (config/ag/).
    env.cwd = env.dir.path().canonicalize().unwrap();
    let config = env.cwd.join("config/ag/config.toml");
    let config_before = std::fs::read_to_string(&config).unwrap();
    let (_, r) = run_bash(
        &env,
        &[
            "printf '\\n[sandbox]\\nmode = \"off\"\\n' >> config/ag/config.toml && echo wrote",
            "echo / >> config/ag/trusted-folders && echo wrote",
            "python3 -c \"import sqlite3; c = sqlite3.connect('home/ag.db'); c.execute('CREATE TABLE pwned (x)'); c.commit()\" && echo wrote",
            "mv config config-aside && mkdir -p config/ag && echo 'model = \"evil/x\"' > config/ag/config.toml && echo wrote",
            "mv home home-aside && echo wrote",
            "echo fine > note.txt && cat note.txt",
        ],
        &["--sandbox", "workspace-write"],
    );
    for (i, res) in r.iter().enumerate().take(5) {
        assert!(!res.0.contains("wrote"), "attack {i} wrote: {res:?}");
    }
    assert!(
        r[5].0.contains("fine"),
        "the workspace stays writable: {:?}",
        r[5]
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), config_before);
    assert!(!env.cwd.join("config/ag/trusted-folders").exists());
    assert!(!env.cwd.join("config-aside").exists() && !env.cwd.join("home-aside").exists());
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'pwned'"),
        0
    );
    // The store still works for the next command.
    env.log(&["ls"]).ok();
}

#[test]
fn sandbox_command_cannot_read_the_room_servers_password() {
    let pass = "hunter2-room-password";
    // A real room server that takes the password (claims are read from it on every call).
    let Some(nats) = NatsServer::start_with(&["--user", "agent", "--pass", pass]) else {
        return;
    };
    let env = env_with(None, "");
    let file = env.dir.path().join("nats.pass");
    std::fs::write(&file, pass).unwrap();
    let config = env.dir.path().join("config/ag/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\n[rooms]\nurl = {:?}\nuser = \"agent\"\npassword_file = {:?}\n",
            nats.url(),
            file
        ),
    )
    .unwrap();
    let read = format!("cat {} && echo", file.display());
    for mode in ["read-only", "workspace-write"] {
        let (_, r) = run_bash(&env, &[&read], &["--sandbox", mode]);
        assert!(!r[0].1 && !r[0].0.contains(pass), "{mode}: {r:?}");
    }
}
