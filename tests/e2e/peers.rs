//! Third-party peers: programs nobody on this project wrote, that the tests run `ag` against.
//! `.ci/run` installs them from `tests/peers/requirements.txt` into a Python venv at
//! `target/peers` (or wherever `AG_TEST_PEERS` points). Missing outside CI, the tests that need
//! them skip with a message; under `CI=true` a missing venv fails them.
//!
//! [`Llmock`] runs LLMock, a provider mock that speaks both dialects, rejects prompts over a
//! `--context-window` with the providers' own error bodies, injects faults and records every
//! request it was sent.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The venv's directory, or `None` (with a note) when it is not installed and this is not CI.
pub fn venv() -> Option<PathBuf> {
    let dir = std::env::var_os("AG_TEST_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target/peers")));
    if dir.join("bin/python").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the test peers are not installed at {}, and CI=true: `.ci/run` installs them \
         (python3 -m venv target/peers && target/peers/bin/pip install -r tests/peers/requirements.txt)",
        dir.display()
    );
    eprintln!(
        "skipping: the test peers are not installed at {} (see tests/peers/requirements.txt); CI runs this test",
        dir.display()
    );
    None
}

/// A program of the venv (`llmock`, `python`, …), or `None` when the venv is missing.
pub fn program(name: &str) -> Option<PathBuf> {
    venv().map(|d| d.join("bin").join(name))
}

/// A running `llmock serve` on a free loopback port, stopped when dropped.
pub struct Llmock {
    child: Child,
    pub port: u16,
}

impl Llmock {
    /// Starts LLMock with extra `serve` arguments (`--context-window 4096`, `--tool-mode off`,
    /// …); `None` when the peers are not installed outside CI.
    pub fn start(args: &[&str]) -> Option<Llmock> {
        let exe = program("llmock")?;
        let port = free_port();
        let child = Command::new(exe)
            .arg("serve")
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start llmock");
        let mut mock = Llmock { child, port };
        mock.wait_ready();
        Some(mock)
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("llmock exited before it was ready: {status}");
            }
            if http(self.port, "GET", "/health", None).is_ok_and(|(code, _)| code == 200) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "llmock did not answer /health within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The base URL for `OPENAI_BASE_URL` (Chat Completions under `/v1`).
    pub fn openai_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The base URL for `ANTHROPIC_BASE_URL` (Messages under `/anthropic/v1/messages`).
    /// Point `env`'s Anthropic and OpenAI providers (URLs and keys) at this mock.
    pub fn point(&self, env: &mut crate::support::TestEnv) {
        env.set("OPENAI_BASE_URL", self.openai_url())
            .set("OPENAI_API_KEY", "sk-llmock")
            .set("ANTHROPIC_BASE_URL", self.anthropic_url())
            .set("ANTHROPIC_API_KEY", "sk-ant-llmock");
    }

    pub fn anthropic_url(&self) -> String {
        format!("{}/anthropic", self.url())
    }

    /// Queues behaviours (`{"type": "fail", "status": 429, "retry_after": 1}`, …).
    pub fn scenario(&self, behaviors: Value) {
        let body = serde_json::json!({ "behaviors": behaviors }).to_string();
        let (code, text) = http(self.port, "POST", "/_llmock/scenario", Some(&body))
            .expect("post an llmock scenario");
        assert!(
            (200..300).contains(&code),
            "llmock refused the scenario: {code} {text}"
        );
    }

    /// Every request LLMock was sent, as it recorded them.
    pub fn requests(&self) -> Value {
        let (code, text) =
            http(self.port, "GET", "/_llmock/requests", None).expect("read llmock's requests");
        assert_eq!(code, 200, "llmock's request log: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("llmock's request log: {e}: {text}"))
    }

    /// LLMock's verdict on how the client behaved (retries, Retry-After, truncated streams).
    pub fn verdict(&self) -> Value {
        let (code, text) =
            http(self.port, "GET", "/_llmock/verdict", None).expect("read llmock's verdict");
        assert_eq!(code, 200, "llmock's verdict: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("llmock's verdict: {e}: {text}"))
    }
}

impl Drop for Llmock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// One HTTP/1.0 exchange on loopback (no chunked bodies to decode): status and body.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let raw = String::from_utf8_lossy(&raw);
    let (head, text) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((code, text.to_string()))
}
