//! `ag-prompt` end to end: the real binary against the fake provider server (or the offline
//! `echo` and `script:FILE` models) in a sealed home: multi-step tool runs, the byte-stable
//! request prefix, live JSON events, model selection and the OpenAI dialect, and the helpers
//! the other prompt tests share. A misbehaving provider is in `prompt_retries.rs`; the guard,
//! path confinement and keys in `prompt_guard.rs`; queued input and Ctrl-C in
//! `prompt_queue.rs`.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fake_provider::sse::{self, Block};
use crate::fake_provider::{FakeProvider, Reply};
use crate::support::{Run, TestEnv};

/// Distinctive, so a leak anywhere would be found by a plain byte search.
pub const KEY: &str = "sk-test-agprompt-e2e-LEAKCHECK-5d1f9b27c3";
pub const OPENAI_KEY: &str = "sk-test-openai-e2e-LEAKCHECK-a8e4c0d6f1";
pub const MODEL: &str = "anthropic/claude-test";

// ---------------------------------------------------------------------------------------------
// Helpers shared with prompt_queue.rs

/// A test environment with fast network settings in `$XDG_CONFIG_HOME/ag/config.toml`
/// (plus `extra` config lines), pointed at `fake` when given.
/// The idle timeout the tests' config sets: long enough that a busy machine never breaks a
/// healthy stream (the tests of the idle timeout itself set their own).
pub const IDLE_S: u64 = 10;

pub fn env_with(fake: Option<&FakeProvider>, extra: &str) -> TestEnv {
    let mut env = TestEnv::new();
    let dir = env.dir.path().join("config").join("ag");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "{extra}\n[network]\nconnect_timeout_s = 10\nidle_timeout_s = {IDLE_S}\nmax_attempts = 3\n\
             retry_base_ms = 10\nretry_max_ms = 2000\n"
        ),
    )
    .unwrap();
    if let Some(fake) = fake {
        env.set("ANTHROPIC_BASE_URL", fake.url());
        env.set("ANTHROPIC_API_KEY", KEY);
        env.set("OPENAI_BASE_URL", format!("{}/v1", fake.url()));
        env.set("OPENAI_API_KEY", OPENAI_KEY);
    }
    env
}

pub fn env_for(fake: &FakeProvider) -> TestEnv {
    env_with(Some(fake), "")
}

/// Writes a `script:` model file outside the session's cwd; returns the model reference.
pub fn script(env: &TestEnv, name: &str, toml: &str) -> String {
    let dir = env.dir.path().join("scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, toml).unwrap();
    format!("script:{}", path.display())
}

/// The session id `ag-prompt` printed on stderr (`session HANDLE ID` on a line of its own).
pub fn session_of(stderr: &str) -> Option<String> {
    stderr.lines().find_map(|l| {
        let rest = l.strip_prefix("session ")?;
        let id = rest.split_whitespace().last()?;
        (id.len() == 36 && !id.contains(' ')).then(|| id.to_string())
    })
}

#[track_caller]
pub fn session_id(run: &Run) -> String {
    session_of(&run.stderr).unwrap_or_else(|| panic!("no session id on stderr:\n{}", run.stderr))
}

/// Chunks of type `ty` (and role `role`, when given).
pub fn of_type<'a>(chunks: &'a [Value], role: Option<&str>, ty: &str) -> Vec<&'a Value> {
    chunks
        .iter()
        .filter(|c| c["type"] == ty && role.is_none_or(|r| c["role"] == r))
        .collect()
}

pub fn system_kind<'a>(chunks: &'a [Value], kind: &str) -> Vec<&'a Value> {
    chunks
        .iter()
        .filter(|c| c["type"] == "system" && c["data"]["kind"] == kind)
        .collect()
}

/// User text chunks whose text is exactly `text`.
pub fn user_texts<'a>(chunks: &'a [Value], text: &str) -> Vec<&'a Value> {
    chunks
        .iter()
        .filter(|c| c["role"] == "user" && c["type"] == "text" && c["data"]["text"] == text)
        .collect()
}

#[track_caller]
pub fn last_turn_end(chunks: &[Value]) -> &Value {
    let last = chunks.last().expect("an empty log");
    assert_eq!(
        last["data"]["kind"], "turn_end",
        "the log does not end with turn_end: {last}"
    );
    last
}

/// A process running in the background, its output going to files.
pub struct Bg {
    pub child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Bg {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stderr_now(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Waits for the session id to show on stderr.
    #[track_caller]
    pub fn session(&mut self) -> String {
        let mut id = None;
        let ok = wait_until(Duration::from_secs(30), || {
            id = session_of(&self.stderr_now());
            id.is_some() || self.child.try_wait().unwrap().is_some()
        });
        assert!(ok, "no session id within 30 s");
        id.unwrap_or_else(|| panic!("exited before printing a session:\n{}", self.stderr_now()))
    }

    /// Waits for the process to exit (killing it after `timeout`).
    #[track_caller]
    pub fn wait(mut self, timeout: Duration) -> Run {
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > timeout {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "still running after {timeout:?}\nstderr:\n{}",
                    self.stderr_now()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Run {
            code: status.code().unwrap_or(-1),
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
        }
    }
}

/// Starts `ag-prompt ARGS` in the background.
pub fn spawn(env: &TestEnv, args: &[&str]) -> Bg {
    spawn_in(env, &env.cwd, args)
}

/// Starts `ag-prompt ARGS` in the background, in the directory `dir`.
pub fn spawn_in(env: &TestEnv, dir: &std::path::Path, args: &[&str]) -> Bg {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let out = env.dir.path().join(format!("bg-{n}.out"));
    let err = env.dir.path().join(format!("bg-{n}.err"));
    let child = env
        .command("ag-prompt")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err).unwrap()))
        .spawn()
        .expect("spawn ag-prompt");
    Bg { child, out, err }
}

/// Polls `f` every 20 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if f() {
            return true;
        }
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the session's log holds a chunk for which `pred` holds.
#[track_caller]
pub fn wait_for_chunk(env: &TestEnv, session: &str, pred: impl Fn(&Value) -> bool) {
    let ok = wait_until(Duration::from_secs(30), || {
        let r = env.log(&["cat", session, "--json"]);
        r.code == 0 && r.json_lines().iter().any(&pred)
    });
    assert!(ok, "no such chunk in {session} within 30 s");
}

/// Removes every `cache_control` key, at any depth.
pub fn strip_cache_control(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.shift_remove("cache_control");
            for (_, x) in m.iter_mut() {
                strip_cache_control(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

pub fn tool(id: &str, name: &str, input: Value) -> Block {
    Block::Tool {
        id: id.into(),
        name: name.into(),
        input,
    }
}

pub fn text(t: &str) -> Block {
    Block::Text(t.into())
}

pub fn prompt(env: &TestEnv, extra: &[&str], text: &str) -> Run {
    let mut args = vec!["-m", MODEL];
    args.extend_from_slice(extra);
    args.push(text);
    env.run("ag-prompt", &args)
}

// ---------------------------------------------------------------------------------------------
// A multi-step tool run

/// Three steps: text + read, glob, final text. Returns the run and its session id.
fn three_step_run(fake: &FakeProvider, env: &TestEnv, extra: &[&str]) -> (Run, String) {
    env.write_file("notes.txt", "hello from the notes file\nsecond line\n");
    fake.push(Reply::Sse(sse::anthropic(
        &[
            text("Let me read the notes."),
            tool("toolu_01", "read", json!({"path": "notes.txt"})),
        ],
        "tool_use",
        (100, 20, 0, 0),
    )));
    fake.push(Reply::Sse(sse::anthropic(
        &[tool("toolu_02", "glob", json!({"pattern": "*.txt"}))],
        "tool_use",
        (150, 10, 80, 5),
    )));
    fake.push(Reply::Sse(sse::anthropic(
        &[text("All done: the notes say hello.")],
        "end_turn",
        (200, 7, 1, 2),
    )));
    let run = prompt(env, extra, "what do the notes say?").ok();
    let id = session_id(&run);
    (run, id)
}

#[test]
fn prompt_multi_step_tool_run_streams_text_runs_tools_and_logs_every_step() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    let (run, id) = three_step_run(&fake, &env, &[]);

    assert!(
        run.stdout.contains("Let me read the notes."),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("All done: the notes say hello."),
        "{}",
        run.stdout
    );
    let calls: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("→ ")).collect();
    assert_eq!(
        calls.len(),
        2,
        "one stderr line per tool call:\n{}",
        run.stderr
    );
    assert!(calls[0].starts_with("→ read") && calls[0].contains("notes.txt"));
    assert!(calls[1].starts_with("→ glob"));
    assert_eq!(fake.requests().len(), 3);

    let chunks = env.chunks(&id);
    let shape: Vec<(i64, &str, &str)> = chunks
        .iter()
        .map(|c| {
            (
                c["step"].as_i64().unwrap(),
                c["role"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (0, "user", "text"),
            (1, "assistant", "text"),
            (1, "assistant", "tool_call"),
            (1, "tool", "tool_result"),
            (2, "assistant", "tool_call"),
            (2, "tool", "tool_result"),
            (3, "assistant", "text"),
            (3, "system", "system"),
        ]
    );
    for c in &chunks {
        assert_eq!(c["session"], id.as_str());
        assert_eq!(c["turn"], chunks[0]["turn"], "one turn");
    }
    assert_eq!(chunks[0]["data"]["text"], "what do the notes say?");
    assert_eq!(chunks[2]["data"]["name"], "read");
    assert_eq!(chunks[2]["data"]["call_id"], "toolu_01");
    assert_eq!(chunks[2]["data"]["arguments"], json!({"path": "notes.txt"}));
    let read = &chunks[3]["data"];
    assert_eq!(read["call_id"], "toolu_01");
    assert_eq!(read["is_error"], false);
    assert!(
        read["result"]
            .as_str()
            .unwrap()
            .contains("hello from the notes file"),
        "{read}"
    );
    let glob = &chunks[5]["data"];
    assert_eq!(glob["call_id"], "toolu_02");
    assert_eq!(glob["is_error"], false);
    assert!(
        glob["result"].as_str().unwrap().contains("notes.txt"),
        "{glob}"
    );
    let end = &last_turn_end(&chunks)["data"];
    assert_eq!(end["stop_reason"], "end_turn");
    assert_eq!(
        end["usage"],
        json!({"input": 450, "output": 37, "cache_read": 81, "cache_write": 7}),
        "usage summed over the 3 steps"
    );
    // The session row is released.
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM sessions WHERE status = 'running'"),
        0
    );
}

#[test]
fn prompt_request_prefix_is_byte_stable_across_steps() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    three_step_run(&fake, &env, &["--system", "You are terse."]);
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let bodies: Vec<Value> = reqs
        .iter()
        .map(|r| {
            let mut b = r.body.clone();
            assert!(b.is_object(), "not JSON: {}", r.raw_body);
            strip_cache_control(&mut b);
            b
        })
        .collect();
    let msgs = |b: &Value| -> Vec<String> {
        b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect()
    };
    for pair in bodies.windows(2) {
        let (a, b) = (msgs(&pair[0]), msgs(&pair[1]));
        assert!(a.len() < b.len());
        assert_eq!(
            a[..],
            b[..a.len()],
            "earlier messages must be a byte prefix"
        );
    }
    // The system prompt and the tools never change between steps (cache_control included).
    let system = &reqs[0].body["system"];
    assert!(
        system.to_string().contains("You are terse."),
        "system: {system}"
    );
    let tools = &reqs[0].body["tools"];
    assert!(tools.as_array().is_some_and(|t| !t.is_empty()));
    for r in &reqs[1..] {
        assert_eq!(
            serde_json::to_string(&r.body["system"]).unwrap(),
            serde_json::to_string(system).unwrap()
        );
        assert_eq!(
            serde_json::to_string(&r.body["tools"]).unwrap(),
            serde_json::to_string(tools).unwrap()
        );
    }
}

#[test]
fn prompt_json_prints_live_events() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    fake.push(Reply::Sse(sse::anthropic(
        &[
            text("Looking around."),
            tool("toolu_j1", "glob", json!({"pattern": "*"})),
        ],
        "tool_use",
        (30, 4, 0, 0),
    )));
    fake.push(Reply::Sse(sse::anthropic(
        &[text("Nothing here.")],
        "end_turn",
        (40, 3, 0, 0),
    )));
    let run = prompt(&env, &["--json"], "look").ok();
    let events = run.json_lines();
    assert_eq!(events[0]["type"], "session");
    let id = events[0]["session"].as_str().unwrap().to_string();
    assert_eq!(
        session_id(&run),
        id,
        "stderr and the event name the same session"
    );
    for ty in ["chunk-open", "chunk-delta", "chunk-seal"] {
        assert!(
            events.iter().any(|e| e["type"] == ty),
            "no {ty} event:\n{}",
            run.stdout
        );
    }
    for e in &events {
        assert_eq!(
            e["session"],
            id.as_str(),
            "every event names the session: {e}"
        );
    }
    // Deltas of the first text join to its sealed text.
    let open = events
        .iter()
        .find(|e| e["type"] == "chunk-open" && e["chunk_type"] == "text")
        .unwrap();
    let joined: String = events
        .iter()
        .filter(|e| e["type"] == "chunk-delta" && e["id"] == open["id"])
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(joined, "Looking around.");
    let seal = events
        .iter()
        .find(|e| e["type"] == "chunk-seal" && e["chunk"]["id"] == open["id"])
        .expect("the opened chunk is sealed");
    assert_eq!(seal["chunk"]["data"]["text"], "Looking around.");
    // Every sealed chunk is what the log holds, in order.
    let sealed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "chunk-seal")
        .map(|e| &e["chunk"])
        .collect();
    let chunks = env.chunks(&id);
    assert_eq!(sealed.len(), chunks.len());
    for (s, c) in sealed.iter().zip(&chunks) {
        assert_eq!(s["id"], c["id"]);
        assert_eq!(s["data"], c["data"]);
    }
    // The turn-done event, then the result object that ends every --json run.
    assert_eq!(events.last().unwrap()["type"], "result");
    let done = &events[events.len() - 2];
    assert_eq!(done["type"], "turn-done");
    assert_eq!(done["stop_reason"], "end_turn");
    assert_eq!(done["turn"], chunks[0]["turn"]);
    assert_eq!(
        done["usage"],
        json!({"input": 70, "output": 7, "cache_read": 0, "cache_write": 0})
    );
    // Text goes into events only, not raw onto stdout.
    assert!(run.stdout.lines().all(|l| l.starts_with('{')));
}
