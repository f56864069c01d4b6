//! A sealed test environment: cleared environment, temporary home and working directory,
//! a pinned clock where asked, and helpers to run the real binaries.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
}

/// What a command did: status, stdout and stderr together.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from_output(out: Output) -> Run {
        Run::from(out)
    }

    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    #[track_caller]
    pub fn code(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// stdout as NDJSON values.
    #[track_caller]
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
            .collect()
    }

    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("not JSON: {:?}: {e}", self.stdout))
    }
}

pub fn bin(name: &str) -> PathBuf {
    let exe = match name {
        "ag-log" => env!("CARGO_BIN_EXE_ag-log"),
        "ag" => env!("CARGO_BIN_EXE_ag"),
        "ag-prompt" => env!("CARGO_BIN_EXE_ag-prompt"),
        "ag-fork" => env!("CARGO_BIN_EXE_ag-fork"),
        "ag-room" => env!("CARGO_BIN_EXE_ag-room"),
        "ag-summon" => env!("CARGO_BIN_EXE_ag-summon"),
        other => panic!("unknown binary {other}"),
    };
    PathBuf::from(exe)
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        let cwd = cwd.canonicalize().unwrap();
        let env = vec![
            ("AG_HOME".to_string(), home.to_string_lossy().into_owned()),
            (
                "HOME".to_string(),
                dir.path().to_string_lossy().into_owned(),
            ),
            ("PATH".to_string(), path_with_bins()),
            ("NO_COLOR".to_string(), "1".to_string()),
            (
                "XDG_CONFIG_HOME".to_string(),
                dir.path().join("config").to_string_lossy().into_owned(),
            ),
        ];
        TestEnv {
            dir,
            home,
            cwd,
            env,
        }
    }

    pub fn set(&mut self, key: &str, value: impl AsRef<str>) -> &mut TestEnv {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.as_ref().to_string()));
        self
    }

    pub fn db(&self) -> PathBuf {
        self.home.join("ag.db")
    }

    pub fn command(&self, name: &str) -> Command {
        let mut cmd = Command::new(bin(name));
        cmd.env_clear();
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.current_dir(&self.cwd);
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Run a command with no stdin.
    pub fn run(&self, name: &str, args: &[&str]) -> Run {
        let out = self.command(name).args(args).output().expect("spawn");
        Run::from(out)
    }

    /// Run a command with bytes on stdin.
    pub fn run_stdin(&self, name: &str, args: &[&str], stdin: impl AsRef<[u8]>) -> Run {
        let mut child = self
            .command(name)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let bytes = stdin.as_ref().to_vec();
        let mut pipe = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
        let out = child.wait_with_output().expect("wait");
        writer.join().unwrap();
        Run::from(out)
    }

    pub fn log(&self, args: &[&str]) -> Run {
        self.run("ag-log", args)
    }

    pub fn log_stdin(&self, args: &[&str], stdin: impl AsRef<[u8]>) -> Run {
        self.run_stdin("ag-log", args, stdin)
    }

    /// A new session with one user message; returns its id.
    pub fn new_session(&self, title: &str, text: &str) -> String {
        let run = self.log(&["append", "--new", "--title", title, text]).ok();
        run.json_lines()[0]["session"].as_str().unwrap().to_string()
    }

    /// Append NDJSON lines to a session.
    pub fn append(&self, session: &str, lines: &[Value]) -> Vec<Value> {
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        self.log_stdin(&["append", "-s", session], input)
            .ok()
            .json_lines()
    }

    /// The whole view of a session as NDJSON values.
    pub fn chunks(&self, session: &str) -> Vec<Value> {
        self.log(&["cat", session, "--json"]).ok().json_lines()
    }

    pub fn write_file(&self, rel: &str, contents: &str) -> PathBuf {
        let p = self.cwd.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn sqlite_count(&self, sql: &str) -> i64 {
        let conn = rusqlite_open(&self.db());
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }
}

/// A read-only connection for looking behind the binaries' back. It waits (up to 30 s) when
/// a running `ag` holds the store: under load a read can land while a writer checkpoints.
pub fn rusqlite_open(path: &Path) -> rusqlite::Connection {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    conn
}

fn path_with_bins() -> String {
    let dir = bin("ag-log").parent().unwrap().to_path_buf();
    format!("{}:/usr/local/bin:/usr/bin:/bin", dir.display())
}

/// Chunk literals for NDJSON input.
pub mod chunk {
    use serde_json::{json, Value};

    pub fn user(text: &str) -> Value {
        json!({"role": "user", "type": "text", "data": {"text": text}})
    }
    pub fn assistant(text: &str) -> Value {
        json!({"role": "assistant", "type": "text", "data": {"text": text}})
    }
    pub fn call(id: &str, name: &str, args: Value) -> Value {
        json!({"role": "assistant", "type": "tool_call", "data": {"call_id": id, "name": name, "arguments": args}})
    }
    pub fn result(id: &str, name: &str, text: &str) -> Value {
        json!({"role": "tool", "type": "tool_result", "data": {"call_id": id, "name": name, "result": text, "is_error": false}})
    }
    pub fn turn_end(input: u64, output: u64) -> Value {
        json!({"role": "system", "type": "system", "data": {"kind": "turn_end", "stop_reason": "end_turn",
            "usage": {"input": input, "output": output, "cache_read": 0, "cache_write": 0}, "model": "echo", "duration_ms": 1}})
    }
    pub fn step(mut v: Value, turn: &str, step: i64) -> Value {
        v["turn"] = turn.into();
        v["step"] = step.into();
        v
    }
}
