//! A real terminal for the tests: a tmux server of the test's own (its own socket), one pane
//! running a program in the test environment, keys typed into it and its screen read back.
//! Outside CI a machine without tmux skips these tests; under `CI=true` `.ci/run` installs
//! tmux and its absence fails them.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::TestEnv;

/// How long a test waits for the screen to show something.
const WAIT: Duration = Duration::from_secs(30);

pub struct Tmux {
    socket: String,
    /// Where tmux keeps its socket: inside the test's directory, removed with it.
    tmpdir: PathBuf,
}

/// Whether tmux can be used here; `false` skips the test (never under CI).
pub fn available() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tmux is not installed, and CI=true: `.ci/run` installs it (apt-get install tmux)"
        );
        eprintln!("skipped: tmux is not installed");
    }
    ok
}

impl Tmux {
    /// A new server with one 200×50 pane running `program` in `env`'s directory, with exactly
    /// `env`'s environment (and `TERM`).
    pub fn start(env: &TestEnv, program: &[&str]) -> Tmux {
        // One server per terminal, even for two terminals of one test in turn: a server that
        // is still going away must not be the next one's.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = format!("ag-test-{}-{n}", std::process::id());
        let socket = format!(
            "{socket}-{}",
            env.dir.path().file_name().unwrap().to_string_lossy()
        );
        let tmpdir = env.dir.path().join("tmux");
        std::fs::create_dir_all(&tmpdir).unwrap();
        let t = Tmux { socket, tmpdir };
        // The pane's program starts under `env -i`: tmux gives new panes the server's
        // environment, which is the test runner's, not the test's.
        let mut cmd: Vec<String> = vec!["env".into(), "-i".into(), "TERM=xterm-256color".into()];
        cmd.extend(env.env.iter().map(|(k, v)| format!("{k}={v}")));
        cmd.extend(program.iter().map(|s| s.to_string()));
        let cwd = env.cwd.to_string_lossy().into_owned();
        let mut args = vec!["new-session", "-d", "-x", "200", "-y", "50", "-c", &cwd];
        let cmd_refs: Vec<&str> = cmd.iter().map(String::as_str).collect();
        args.extend(cmd_refs);
        t.tmux(&args);
        t
    }

    /// A shell in `env`, once it shows its prompt: what is typed before the shell reads its
    /// terminal can be lost on a loaded machine.
    pub fn shell(env: &TestEnv) -> Tmux {
        let t = Tmux::start(env, &["sh"]);
        t.wait_for("the shell's prompt", |s| {
            s.lines().any(|l| {
                matches!(l.trim_end(), "#" | "$") || l.ends_with("# ") || l.ends_with("$ ")
            })
        });
        t
    }

    fn tmux(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux")
            .env("TMUX_TMPDIR", &self.tmpdir)
            .env_remove("TMUX")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Type `text` as it is (no key names), then Enter.
    pub fn line(&self, text: &str) {
        self.keys_literal(text);
        self.keys(&["Enter"]);
    }

    /// Type `text` as it is.
    pub fn keys_literal(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "0", "-l", text]);
    }

    /// Press named keys (`Enter`, `C-c`, `C-d`, …).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// The pane's screen and scrollback, as text.
    pub fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "0"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane's screen and scrollback with its colours and attributes, as escape sequences.
    pub fn screen_escaped(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-e", "-J", "-S", "-", "-t", "0"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A tmux format of the pane (`#{pane_title}`, `#{pane_dead}`, …).
    pub fn format(&self, format: &str) -> String {
        let out = self.tmux(&["display-message", "-p", "-t", "0", format]);
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// Wait until the screen satisfies `pred`; the screen then, or a panic naming `what`.
    #[track_caller]
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {what}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait for a line that is exactly `line` (a command's output, not its echo).
    #[track_caller]
    pub fn wait_for_line(&self, line: &str) -> String {
        self.wait_for(&format!("a line {line:?}"), |s| {
            s.lines().any(|l| l.trim_end() == line)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .env("TMUX_TMPDIR", &self.tmpdir)
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}
