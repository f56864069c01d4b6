//! The lifetime of what `bash` starts, end to end: background jobs, double forks and `setsid`
//! escapees end with the command, in every mode; so they do when `ag-prompt` is killed
//! (`kill -9`, SIGTERM, SIGHUP, Ctrl-C); and a killed run's process group is recorded and
//! cleared by the next run on the session.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::prompt::env_with;
use crate::sandbox::{bash_model, run_bash};
use crate::support::{Run, TestEnv};

/// Running (not zombie) processes whose command line holds `marker`, waited for with a
/// deadline until there are none.
fn left_running(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let pid = e.file_name().to_string_lossy().into_owned();
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z');
            if !zombie && String::from_utf8_lossy(&cmd).contains(marker) {
                found.push(pid);
            }
        }
        if found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sandbox_a_background_child_cannot_outlive_the_turn() {
    let env = env_with(None, "");
    let id = std::process::id() % 100_000;
    for mode in ["workspace-write", "off"] {
        let m: Vec<String> = (1..=4).map(|i| format!("31.{id}{i}")).collect();
        let first = format!(
            "sleep {} & setsid sleep {} & (sleep 0.2; echo from-a-job) & wait %3; echo ended",
            m[0], m[1]
        );
        let second = format!(
            "(setsid sh -c 'sleep {} &' &) ; nohup sleep {} >/dev/null 2>&1 & sleep 0.1",
            m[2], m[3]
        );
        let (_, r) = run_bash(&env, &[&first, &second], &["--sandbox", mode]);
        assert_eq!(r[0], ("from-a-job\nended\nexit 0".into(), false), "{mode}");
        assert!(!r[1].1, "{mode}: {}", r[1].0);
        for marker in &m {
            assert_eq!(
                left_running(marker),
                Vec::<String>::new(),
                "{mode}: sleep {marker} survived"
            );
        }
    }
}

#[test]
fn sandbox_kill_9_of_ag_prompt_leaves_no_tool_process() {
    let mut env = env_with(None, "");
    // A temp dir of its own, to see what the killed runs leave there.
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    env.set("TMPDIR", tmp.to_string_lossy());
    // Markers unique to this test process, so a run never sees another's processes.
    let id = std::process::id() % 100_000;
    for (mode, marker) in [
        ("workspace-write", format!("32.{id}1")),
        ("off", format!("32.{id}2")),
    ] {
        let marker = marker.as_str();
        let command = format!("sleep {marker} & setsid sleep {marker} & wait");
        let model = bash_model(&env, "hang.toml", &[&command]);
        let mut child = env
            .command("ag-prompt")
            .args(["-m", &model, "--tools", "bash", "--sandbox", mode, "go"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Running, and its process group recorded in the store.
        let recorded = || recorded_groups(&env);
        let before = recorded();
        let deadline = Instant::now() + Duration::from_secs(30);
        while running_count(marker) < 2 || recorded() == before {
            assert!(
                Instant::now() < deadline,
                "{mode}: the command never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(left_running(marker), Vec::<String>::new(), "{mode}");
    }
    // The groups the killed runs recorded are cleared by the next run on each session.
    assert_eq!(recorded_groups(&env), 2);
    // The killed runs' inits die a moment after the commands do; until then they hold their
    // temp dirs (a lock), and a temp dir in use is never removed.
    let deadline = Instant::now() + Duration::from_secs(30);
    for e in std::fs::read_dir(&tmp).unwrap() {
        let dir = std::fs::File::open(e.unwrap().path()).unwrap();
        while dir.try_lock().is_err() {
            assert!(Instant::now() < deadline, "a killed run's init never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let ids: Vec<Value> = env.log(&["ls", "--json"]).ok().json_lines();
    let model = bash_model(&env, "quick.toml", &["true"]);
    for s in ids {
        let id = s["id"].as_str().unwrap();
        env.run("ag-prompt", &["-m", &model, "-s", id, "again"])
            .ok();
    }
    assert_eq!(recorded_groups(&env), 0);
    // And the private temp dirs the killed calls could not remove are gone too.
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        Vec::<std::ffi::OsString>::new(),
        "temp dirs left behind"
    );
}

/// Sessions with a recorded tool process group; 0 while the store is not there yet.
fn recorded_groups(env: &TestEnv) -> i64 {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    rusqlite::Connection::open_with_flags(env.db(), flags)
        .and_then(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM sessions WHERE tool_pgid IS NOT NULL",
                [],
                |r| r.get(0),
            )
        })
        .unwrap_or(0)
}

fn running_count(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).contains(marker)
        })
        .count()
}

#[test]
fn sandbox_sigterm_sighup_and_ctrl_c_end_the_command_and_everything_it_started() {
    let env = env_with(None, "");
    let id = std::process::id() % 100_000;
    for (sig, n) in [("TERM", 1), ("HUP", 2), ("INT", 3)] {
        let marker = format!("33.{id}{n}");
        let command = format!("sleep {marker} & setsid sleep {marker} & wait");
        let model = bash_model(&env, "signal.toml", &[&command]);
        let mut child = env
            .command("ag-prompt")
            .args(["-m", &model, "--tools", "bash", "go"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while running_count(&marker) < 2 {
            assert!(
                Instant::now() < deadline,
                "{sig}: the command never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let sent = Command::new("kill")
            .args([format!("-{sig}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "SIG{sig}");
        assert_eq!(left_running(&marker), Vec::<String>::new(), "SIG{sig}");
    }
}

#[test]
fn sandbox_a_command_gets_no_descriptor_of_ag_prompt_or_of_the_shell_that_ran_it() {
    // The attack: `ag-prompt` holds the store (the database, its WAL and shared memory) open,
    // and the shell that started it may pass more, here a file outside the workspace on
    // descriptor 7. A command that finds either can write where the sandbox forbids.
    let env = env_with(None, "");
    let outside = env.dir.path().join("outside.txt");
    std::fs::write(&outside, "").unwrap();
    let model = bash_model(
        &env,
        "fds.toml",
        &["ls -l /proc/$$/fd; echo escaped >&7; echo escaped >&5"],
    );
    for mode in ["workspace-write", "read-only", "off"] {
        let ag = env.command("ag-prompt");
        let run = Run::from_output(
            Command::new("sh")
                .arg("-c")
                .arg("exec \"$0\" \"$@\" 7>>\"$OUTSIDE\" 5>>\"$OUTSIDE\"")
                .arg(ag.get_program())
                .args(["-m", &model, "--tools", "bash", "--sandbox", mode, "go"])
                .env_clear()
                .envs(ag.get_envs().filter_map(|(k, v)| Some((k, v?))))
                .env("OUTSIDE", &outside)
                .current_dir(&env.cwd)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap(),
        )
        .ok();
        let r = crate::sandbox::results(&env, &crate::prompt::session_id(&run));
        let listing = &r[0].0;
        // `ls` itself holds the directory it lists open, as one more descriptor into /proc.
        let held: Vec<&str> = listing
            .lines()
            .filter_map(|l| l.split_once(" -> "))
            .map(|(left, target)| (left.rsplit(' ').next().unwrap_or(""), target))
            .filter(|(fd, target)| !["0", "1", "2"].contains(fd) && !target.starts_with("/proc/"))
            .map(|(_, target)| target)
            .collect();
        assert_eq!(held, Vec::<&str>::new(), "{mode}: {listing}");
        assert!(
            listing.contains("7: Bad file descriptor"),
            "{mode}: {listing}"
        );
        assert!(!listing.contains("ag.db"), "{mode}: {listing}");
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "");
}
