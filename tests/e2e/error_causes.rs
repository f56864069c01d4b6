//! I/O errors keep their cause: a room file or a config file that cannot be read is named,
//! with what the system said about it (`caused by: …`), not just its path.

use crate::support::TestEnv;

#[test]
fn a_room_file_that_cannot_be_opened_is_named_with_its_cause() {
    let env = TestEnv::new();
    env.run("ag-room", &["tell", "--from", "me", "hello"]).ok();
    let room = std::fs::read_dir(env.home.join("rooms"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.ends_with("device.jsonl"))
        .expect("the worktree's room");
    // Something else where the room's file should be: a directory cannot be appended to.
    std::fs::remove_file(&room).unwrap();
    std::fs::create_dir(&room).unwrap();
    for args in [&["tell", "--from", "me", "again"][..], &["tail"][..]] {
        let run = env.run("ag-room", args);
        assert_ne!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(&room.display().to_string()),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("caused by: Is a directory"),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_config_file_that_cannot_be_read_is_named_with_its_cause() {
    let env = TestEnv::new();
    let config = env.dir.path().join("config/ag/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, b"model = \"\xff\xfe\"\n").unwrap();
    let run = env.run("ag-prompt", &["-m", "echo", "hi"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("cannot read {}", config.display())),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("caused by: stream did not contain valid UTF-8"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "", "no turn ran");
}
