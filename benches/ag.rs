//! `cargo bench --bench ag [-- --quick] [-- --reps N] [-- --only LIST]`: performance figures
//! of `ag-log` and `ag-prompt`, each printed next to a baseline measured in the same run, with
//! the ratio and the target.
//!
//! Not a timed test: nothing fails. Whole-process figures spawn the real release binaries
//! (`target/release/ag-log`, `target/release/ag-prompt`, built by `benches/run.sh`), each in a
//! fresh temporary `AG_HOME`. Every figure is the median of several runs. See
//! benches/README.md.

mod context;
#[path = "../tests/e2e/fake_provider.rs"]
mod fake_provider;
mod fork;
mod mcp;
mod memory;
mod prompt;
mod recall;
mod scale;
mod uncompacted;

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};

// ---------------------------------------------------------------------------------------------
// Configuration

struct Config {
    /// Chunks appended by the append scenario (and inserted by its baseline).
    append_n: u64,
    /// Chunks of the big session (cat --limit and the max-RSS scenario).
    big_n: u64,
    /// Batches the big session is fed in.
    big_batches: u64,
    /// Chunks of the small session (cat --limit baseline).
    small_n: u64,
    /// Chunks of the folded session.
    fold_n: u64,
    /// Repetitions of the slow figures (appends, fold, full cat); the fast ones run more.
    reps: usize,
    quick: bool,
    /// The scenarios to run (`--only`), all when empty.
    only: Vec<String>,
}

/// The scenarios that read the big session.
const BIG: &[&str] = &["cat", "rss", "fork", "recall", "foldrss", "turnrss"];

/// The scenario names `--only` takes.
const SCENARIOS: &[&str] = &[
    "append",
    "cat",
    "rss",
    "fold",
    "prompt",
    "fork",
    "context",
    "uncompacted",
    "mcp",
    "recall",
    "foldrss",
    "turnrss",
    "scale",
];

impl Config {
    fn from_args() -> Config {
        let mut quick = false;
        let mut reps = None;
        let mut only: Vec<String> = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--quick" => quick = true,
                "--reps" => {
                    reps = args.next().and_then(|v| v.parse().ok());
                    if reps.is_none() {
                        die("--reps needs a positive number");
                    }
                }
                "--only" => {
                    let Some(list) = args.next() else {
                        die("--only needs a list, e.g. --only prompt or --only append,fold")
                    };
                    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                        if !SCENARIOS.contains(&name) {
                            die(&format!(
                                "--only: unknown scenario {name:?} (one of {})",
                                SCENARIOS.join(", ")
                            ));
                        }
                        only.push(name.to_string());
                    }
                }
                // cargo bench passes --bench to harness-less benches.
                "--bench" => {}
                "-h" | "--help" => {
                    println!(
                        "usage: cargo bench --bench ag -- [--quick] [--reps N] [--only LIST]\n\
                         LIST: comma-separated scenarios among {}",
                        SCENARIOS.join(", ")
                    );
                    std::process::exit(0);
                }
                other => die(&format!("unknown argument {other:?} (try --help)")),
            }
        }
        let scale = if quick { 10 } else { 1 };
        Config {
            append_n: 100_000 / scale,
            big_n: 1_000_000 / scale,
            big_batches: 10,
            small_n: 1_000 / scale,
            fold_n: 100_000 / scale,
            reps: reps.unwrap_or(5).max(1),
            quick,
            only,
        }
    }

    fn wants(&self, scenario: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == scenario)
    }
}

fn die(msg: &str) -> ! {
    eprintln!("ag bench: {msg}");
    std::process::exit(2);
}

// ---------------------------------------------------------------------------------------------
// A realistic chunk mix: turns of 10 chunks with explicit turn and step.
//
//   0 user text                       step 0
//   1 assistant text                  step 1
//   2 assistant tool_call (read)      step 1
//   3 tool tool_result (~200 bytes)   step 1
//   4 assistant tool_call (grep)      step 2
//   5 tool tool_result                step 2
//   6 assistant tool_call (bash)      step 3
//   7 tool tool_result                step 3
//   8 assistant text                  step 4
//   9 system turn_end                 step 4
//
// Every call has its result, so any prefix of whole turns folds into a valid request.

struct GenChunk {
    turn: String,
    step: i64,
    role: &'static str,
    ty: &'static str,
    data_json: String,
    /// The text of a text chunk (what the full-text index gets).
    text: Option<String>,
}

const WORDS: &[&str] = &[
    "the", "session", "log", "chunk", "agent", "fold", "cache", "request", "tool", "result",
    "append", "store", "turn", "model", "stream", "fork", "room", "peer", "index", "query",
];

fn words(seed: u64, n: usize) -> String {
    let mut s = String::with_capacity(n * 7);
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        x ^= x >> 29;
        x = x.wrapping_mul(0xbf58476d1ce4e5b9);
        s.push_str(WORDS[(x >> 40) as usize % WORDS.len()]);
    }
    s
}

/// A hyphenated, uuid-shaped id from a counter (a `kind` nibble keeps families apart).
fn uuidish(kind: u8, n: u64) -> String {
    let v: u128 = ((kind as u128) << 124) | n as u128;
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// Chunk `i` (0-based) of a generated session; `salt` keeps call ids unique per session.
fn gen_chunk(i: u64, salt: u64) -> GenChunk {
    let t = i / 10;
    let pos = i % 10;
    let turn = uuidish(1, (salt << 40) | t);
    let call = |k: u64| format!("toolu_{:016x}{:08x}", (salt << 40) | t, k);
    let result = |k: u64| {
        // ~200 bytes of tool output.
        json_str(&format!(
            "{}\n{}",
            words(i * 3 + k, 14),
            words(i * 7 + k, 14)
        ))
    };
    let (step, role, ty, data_json) = match pos {
        0 => (
            0,
            "user",
            "text",
            format!(r#"{{"text":{}}}"#, json_str(&words(i, 12))),
        ),
        1 => (
            1,
            "assistant",
            "text",
            format!(r#"{{"text":{}}}"#, json_str(&words(i, 24))),
        ),
        2 => (
            1,
            "assistant",
            "tool_call",
            format!(
                r#"{{"call_id":"{}","name":"read","arguments":{{"path":"src/mod{}.rs","limit":200}}}}"#,
                call(0),
                i % 97
            ),
        ),
        3 => (
            1,
            "tool",
            "tool_result",
            format!(
                r#"{{"call_id":"{}","name":"read","result":{},"is_error":false}}"#,
                call(0),
                result(0)
            ),
        ),
        4 => (
            2,
            "assistant",
            "tool_call",
            format!(
                r#"{{"call_id":"{}","name":"grep","arguments":{{"pattern":"fn {}","path":"lib"}}}}"#,
                call(1),
                WORDS[(i % 20) as usize]
            ),
        ),
        5 => (
            2,
            "tool",
            "tool_result",
            format!(
                r#"{{"call_id":"{}","name":"grep","result":{},"is_error":false}}"#,
                call(1),
                result(1)
            ),
        ),
        6 => (
            3,
            "assistant",
            "tool_call",
            format!(
                r#"{{"call_id":"{}","name":"bash","arguments":{{"command":"cargo test -q {}"}}}}"#,
                call(2),
                WORDS[(i % 20) as usize]
            ),
        ),
        7 => (
            3,
            "tool",
            "tool_result",
            format!(
                r#"{{"call_id":"{}","name":"bash","result":{},"is_error":false}}"#,
                call(2),
                result(2)
            ),
        ),
        8 => (
            4,
            "assistant",
            "text",
            format!(r#"{{"text":{}}}"#, json_str(&words(i, 30))),
        ),
        _ => (
            4,
            "system",
            "system",
            format!(
                r#"{{"kind":"turn_end","stop_reason":"end_turn","usage":{{"input":{},"output":{},"cache_read":{},"cache_write":0}},"model":"claude-sonnet-4-5","duration_ms":{}}}"#,
                1200 + i % 1000,
                300 + i % 300,
                i % 5000,
                900 + i % 700
            ),
        ),
    };
    let text = (ty == "text").then(|| {
        let v: serde_json::Value = serde_json::from_str(&data_json).unwrap();
        v["text"].as_str().unwrap().to_string()
    });
    GenChunk {
        turn,
        step,
        role,
        ty,
        data_json,
        text,
    }
}

fn ndjson_line(c: &GenChunk, out: &mut String) {
    let _ = writeln!(
        out,
        r#"{{"turn":"{}","step":{},"role":"{}","type":"{}","data":{}}}"#,
        c.turn, c.step, c.role, c.ty, c.data_json
    );
}

/// NDJSON for chunks `from..to` of a generated session, written to `path`.
fn write_ndjson(path: &Path, from: u64, to: u64, salt: u64) {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path).expect("create ndjson"));
    let mut line = String::new();
    for i in from..to {
        line.clear();
        ndjson_line(&gen_chunk(i, salt), &mut line);
        w.write_all(line.as_bytes()).unwrap();
    }
    w.flush().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Running processes

struct Run {
    wall: Duration,
    max_rss_kib: i64,
    /// User plus system CPU time of the command (and the children it waited for): unlike the
    /// wall time, it does not count time spent waiting for a core on a busy machine.
    cpu: Duration,
    stdout: Vec<u8>,
}

enum Out {
    Null,
    Capture,
    File(PathBuf),
}

/// Where the release binaries are: this bench is `<target>/release/deps/ag-…`, whatever
/// `CARGO_TARGET_DIR` says.
fn release_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release"))
}

fn ag_log_path() -> PathBuf {
    let p = release_dir().join("ag-log");
    if !p.exists() {
        die(&format!(
            "{} is missing: build it first (benches/run.sh runs cargo build --release --bins)",
            p.display()
        ));
    }
    p
}

/// Run `cmd` to completion and measure it. The bench re-executes itself as a small helper
/// (`--measure OUT PROG ARGS…`) that spawns the command, times it and reaps it with `wait4`:
/// a child's `ru_maxrss` includes the memory of whatever it was before `execve` (with Rust's
/// vfork-style spawn, the parent's peak), so measuring from the bench itself would floor every
/// figure at the bench's own peak RSS. The helper is a few MiB, like a shell or GNU time.
fn spawn(cmd: Command, stdin: Option<&Path>, out: Out) -> Run {
    let report = std::env::temp_dir().join(format!("ag-bench-rusage-{}", std::process::id()));
    let mut h = Command::new(std::env::current_exe().expect("current_exe"));
    h.arg("--measure")
        .arg(&report)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    // The helper runs in the command's directory, and the command inherits it.
    if let Some(dir) = cmd.get_current_dir() {
        h.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => h.env(k, v),
            None => h.env_remove(k),
        };
    }
    h.stdin(match stdin {
        Some(p) => Stdio::from(File::open(p).expect("open stdin file")),
        None => Stdio::null(),
    });
    let capture_path = match &out {
        Out::Capture => {
            Some(std::env::temp_dir().join(format!("ag-bench-out-{}", std::process::id())))
        }
        _ => None,
    };
    h.stdout(match (&out, &capture_path) {
        (Out::Null, _) => Stdio::null(),
        (Out::File(p), _) => Stdio::from(File::create(p).expect("create stdout file")),
        (Out::Capture, Some(p)) => Stdio::from(File::create(p).expect("create capture file")),
        _ => unreachable!(),
    });
    h.stderr(Stdio::piped());
    let desc = format!("{cmd:?}");
    // A command whose expected status is not 0 says so in AG_BENCH_EXIT (a search that finds
    // nothing exits 1, like grep).
    let expected = cmd
        .get_envs()
        .find(|(k, _)| *k == "AG_BENCH_EXIT")
        .and_then(|(_, v)| v?.to_str()?.parse::<i32>().ok())
        .unwrap_or(0);
    let output = h
        .output()
        .unwrap_or_else(|e| die(&format!("cannot run {desc}: {e}")));
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() != Some(expected) {
        die(&format!("{desc} failed ({}): {stderr}", output.status));
    }
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    let mut f = text
        .split_whitespace()
        .map(|x| x.parse::<i64>().unwrap_or(-1));
    let (Some(rss), Some(nanos), Some(cpu)) = (f.next(), f.next(), f.next()) else {
        die(&format!("no measurement for {desc}: {stderr}"))
    };
    let stdout = match capture_path {
        Some(p) => {
            let b = std::fs::read(&p).unwrap();
            let _ = std::fs::remove_file(&p);
            b
        }
        None => Vec::new(),
    };
    Run {
        wall: Duration::from_nanos(nanos as u64),
        max_rss_kib: rss,
        cpu: Duration::from_nanos(cpu as u64),
        stdout,
    }
}

/// The helper side of [`spawn`]: run PROG with our stdio, write "MAXRSS_KIB WALL_NS CPU_NS" to OUT,
/// exit with its status.
fn measure_main(args: &[String]) -> ! {
    let [report, prog, rest @ ..] = args else {
        die("usage: --measure OUT PROG [ARGS…]")
    };
    let start = Instant::now();
    let child = Command::new(prog)
        .args(rest)
        .spawn()
        .unwrap_or_else(|e| die(&format!("cannot run {prog}: {e}")));
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: all zeroes is a valid `rusage`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: our own child's pid and two structs of the right types to fill.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = start.elapsed();
    if r != pid {
        die(&format!(
            "wait4 failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    drop(child); // reaped by wait4
    let cpu = timeval(ru.ru_utime) + timeval(ru.ru_stime);
    std::fs::write(
        report,
        format!("{} {} {}\n", ru.ru_maxrss, wall.as_nanos(), cpu.as_nanos()),
    )
    .expect("write report");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    std::process::exit(code)
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// The CPU time (user plus system) this thread has used so far.
fn thread_cpu() -> Duration {
    // SAFETY: all zeroes is a valid `rusage`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a struct of the right type to fill.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    timeval(ru.ru_utime) + timeval(ru.ru_stime)
}

fn ag(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(ag_log_path());
    c.env("AG_HOME", home).env("NO_COLOR", "1").args(args);
    c
}

/// Put a store back as it was kept (`pristine`), its WAL gone, and written out to disk before
/// any clock starts: otherwise a timed run's first sync of the store pays, by chance, for
/// writing back the whole copy (tens of megabytes at 100k chunks).
fn restore_store(pristine: &Path, home: &Path) {
    for f in ["ag.db-wal", "ag.db-shm"] {
        let _ = std::fs::remove_file(home.join(f));
    }
    let db = home.join("ag.db");
    std::fs::copy(pristine, &db).expect("restore the store");
    std::fs::File::open(&db)
        .and_then(|f| f.sync_all())
        .expect("sync the restored store");
}

fn median_f(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

// ---------------------------------------------------------------------------------------------
// Building sessions

/// A new session holding chunks `0..n` of a generated log, fed in `batches` appends; returns
/// its id and how long the whole setup took.
fn build_session(
    home: &Path,
    scratch: &Path,
    n: u64,
    batches: u64,
    salt: u64,
) -> (String, Duration) {
    let start = Instant::now();
    // The session starts with chunk 0 (a user text) via `append --new`.
    let first = gen_chunk(0, salt);
    let first_text: serde_json::Value = serde_json::from_str(&first.data_json).unwrap();
    let run = spawn(
        ag(
            home,
            &[
                "append",
                "--new",
                "--title",
                "bench",
                first_text["text"].as_str().unwrap(),
            ],
        ),
        None,
        Out::Capture,
    );
    let line: serde_json::Value =
        serde_json::from_slice(run.stdout.split(|b| *b == b'\n').next().unwrap())
            .unwrap_or_else(|e| die(&format!("append --new printed no chunk: {e}")));
    let id = line["session"].as_str().unwrap().to_string();
    let per = n.div_ceil(batches).max(1);
    let file = scratch.join("batch.ndjson");
    let mut from = 1;
    while from < n {
        let to = (from + per).min(n);
        write_ndjson(&file, from, to, salt);
        spawn(
            ag(home, &["append", "-q", "-s", &id]),
            Some(&file),
            Out::Null,
        );
        from = to;
    }
    let _ = std::fs::remove_file(&file);
    (id, start.elapsed())
}

// ---------------------------------------------------------------------------------------------
// The baseline for append: a minimal rusqlite program.

/// `full_schema: false` is the baseline proper: a table with exactly the chunks columns. With
/// `true` it also has what ag's schema adds to every append (a sessions table the chunks
/// reference with foreign keys on, the `(session_id, turn_id)` index, the FTS5 row of each
/// text chunk), so the gap between the two shows what the schema costs and what is left for
/// the process and its JSON work.
fn baseline_insert(db: &Path, rows: &[GenChunk], salt: u64, full_schema: bool) -> Duration {
    let start = Instant::now();
    let mut conn = Connection::open(db).unwrap();
    conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
        .unwrap();
    conn.execute_batch("PRAGMA synchronous = NORMAL;").unwrap();
    let session = uuidish(2, salt);
    if full_schema {
        conn.execute_batch(
            "PRAGMA foreign_keys = ON;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL);
             CREATE TABLE chunks (
               id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
               seq INTEGER NOT NULL, turn_id TEXT NOT NULL, step INTEGER NOT NULL,
               role TEXT NOT NULL, type TEXT NOT NULL, data_json TEXT NOT NULL,
               created_at INTEGER NOT NULL, UNIQUE (session_id, seq));
             CREATE INDEX chunks_turn ON chunks(session_id, turn_id);
             CREATE VIRTUAL TABLE chunks_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO sessions (id, created_at) VALUES (?1, 0)",
            [&session],
        )
        .unwrap();
    } else {
        conn.execute_batch(
            "CREATE TABLE chunks (
               id TEXT PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
               turn_id TEXT NOT NULL, step INTEGER NOT NULL, role TEXT NOT NULL, type TEXT NOT NULL,
               data_json TEXT NOT NULL, created_at INTEGER NOT NULL, UNIQUE (session_id, seq));",
        )
        .unwrap();
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let tx = conn.transaction().unwrap();
    {
        let mut stmt = tx
            .prepare(
                "INSERT INTO chunks (id, session_id, seq, turn_id, step, role, type, data_json, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .unwrap();
        let mut fts = full_schema.then(|| {
            tx.prepare("INSERT INTO chunks_fts (rowid, text) VALUES (?1, ?2)")
                .unwrap()
        });
        for (i, c) in rows.iter().enumerate() {
            stmt.execute(params![
                format!("{:032x}", (salt as u128) << 64 | i as u128),
                session,
                (i + 1) as i64,
                c.turn,
                c.step,
                c.role,
                c.ty,
                c.data_json,
                now
            ])
            .unwrap();
            if let (Some(fts), Some(text)) = (fts.as_mut(), &c.text) {
                fts.execute(params![tx.last_insert_rowid(), text]).unwrap();
            }
        }
    }
    tx.commit().unwrap();
    start.elapsed()
}

// ---------------------------------------------------------------------------------------------
// The fold must be a valid Anthropic request.

fn check_fold(body: &[u8], chunks: u64) -> Result<usize, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let msgs = v["messages"].as_array().ok_or("no messages array")?;
    let turns = chunks.div_ceil(10) as usize;
    // Per turn: user text, then 4 assistant steps each followed (for the 3 with calls) by a
    // user message of tool_results. Consecutive same-role messages would be invalid.
    if msgs.first().and_then(|m| m["role"].as_str()) != Some("user") {
        return Err("the first message is not from the user".into());
    }
    let mut open: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().ok_or("a message without role")?;
        if i > 0 && msgs[i - 1]["role"].as_str() == Some(role) {
            return Err(format!("messages {} and {} are both {role}", i - 1, i));
        }
        let blocks: Vec<serde_json::Value> = match &m["content"] {
            serde_json::Value::Array(a) => a.clone(),
            serde_json::Value::String(_) => Vec::new(),
            _ => return Err(format!("message {i} has no content")),
        };
        if role == "user" {
            let results: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .filter_map(|b| b["tool_use_id"].as_str())
                .collect();
            if results != open.iter().map(String::as_str).collect::<Vec<_>>() {
                return Err(format!(
                    "message {i}: tool_results {results:?} do not answer {open:?}"
                ));
            }
            if blocks
                .iter()
                .any(|b| b["content"].as_str() == Some(ag::fold::SYNTHETIC_RESULT))
            {
                return Err(format!("message {i}: a synthetic result"));
            }
            open.clear();
        } else {
            if !open.is_empty() {
                return Err(format!("message {i}: calls {open:?} were never answered"));
            }
            open = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .filter_map(|b| b["id"].as_str().map(str::to_string))
                .collect();
        }
    }
    // Whole turns: 1 + 2×3 + 1 = 8 messages each (user, asst, results, asst, results, asst,
    // results, asst); the user text of the next turn follows the final assistant text.
    let full = (chunks / 10) as usize;
    if full as u64 * 10 == chunks && msgs.len() != full * 8 {
        return Err(format!(
            "{} messages for {turns} turns (expected {})",
            msgs.len(),
            full * 8
        ));
    }
    Ok(msgs.len())
}

// ---------------------------------------------------------------------------------------------
// The report

struct Row {
    figure: String,
    measured: String,
    baseline: String,
    ratio: String,
    target: String,
    verdict: &'static str,
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "MISS"
    }
}

fn ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1e3)
    }
}

fn rate(n: u64, s: f64) -> String {
    format!("{:.0} chunks/s", n as f64 / s)
}

fn mib(kib: f64) -> String {
    format!("{:.1} MiB", kib / 1024.0)
}

fn count(n: u64) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

fn print_table(rows: &[Row]) {
    let head = [
        "figure", "measured", "baseline", "ratio", "target", "verdict",
    ];
    let cells: Vec<[&str; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.figure.as_str(),
                r.measured.as_str(),
                r.baseline.as_str(),
                r.ratio.as_str(),
                r.target.as_str(),
                r.verdict,
            ]
        })
        .collect();
    let mut w = [0usize; 6];
    for row in std::iter::once(&head).chain(cells.iter()) {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |row: &[&str; 6]| {
        let mut s = String::new();
        for (i, c) in row.iter().enumerate() {
            let pad = w[i] - c.chars().count();
            if i > 0 {
                s.push_str(" | ");
            }
            s.push_str(c);
            s.push_str(&" ".repeat(pad));
        }
        println!("{}", s.trim_end());
    };
    line(&head);
    println!(
        "{}",
        w.iter()
            .map(|n| "-".repeat(*n))
            .collect::<Vec<_>>()
            .join("-|-")
    );
    for c in &cells {
        line(c);
    }
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|k| k.parse::<f64>().ok())
                })
        })
        .map(|k| format!(", {:.1} GiB RAM", k / 1024.0 / 1024.0))
        .unwrap_or_default();
    format!("nproc {cpus}, {model}{mem}")
}

/// `[i/n] what`, on stderr, for each scenario as it starts.
struct Stages {
    n: usize,
    i: usize,
}

impl Stages {
    fn next(&mut self, msg: &str) {
        self.i += 1;
        eprintln!("[{}/{}] {msg}", self.i, self.n);
    }
}

fn progress(msg: &str) {
    eprintln!("  · {msg}");
}

// ---------------------------------------------------------------------------------------------

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--measure") {
        measure_main(&args[2..]);
    }
    let cfg = Config::from_args();
    let log_figures = [
        "append",
        "cat",
        "rss",
        "fold",
        "fork",
        "recall",
        "foldrss",
        "turnrss",
        "scale",
        "uncompacted",
    ]
    .iter()
    .any(|s| cfg.wants(s));
    // Fail early on a missing binary rather than after minutes of other figures.
    let bin = log_figures.then(ag_log_path);
    let prompt_bin = (cfg.wants("prompt")
        || cfg.wants("context")
        || cfg.wants("uncompacted")
        || cfg.wants("mcp")
        || cfg.wants("turnrss")
        || cfg.wants("scale"))
    .then(prompt::ag_prompt_path);
    if cfg.wants("mcp") {
        mcp::fixture_path();
    }
    let fork_bin = cfg.wants("fork").then(fork::ag_fork_path);
    let total = Instant::now();
    println!(
        "ag benchmarks (ag-log, ag-prompt, ag-fork){}{}",
        if cfg.quick {
            " (--quick: sizes ÷10, fewer ag-prompt runs)"
        } else {
            ""
        },
        if cfg.only.is_empty() {
            String::new()
        } else {
            format!(" (--only {})", cfg.only.join(","))
        }
    );
    println!("machine: {}", machine());
    for b in bin.iter().chain(prompt_bin.iter()).chain(fork_bin.iter()) {
        println!("binary:  {}", b.display());
    }
    println!(
        "runs:    median of {} (fast figures: {}; ag-prompt: {})",
        cfg.reps,
        cfg.reps * 2 + 1,
        prompt::reps(&cfg)
    );
    println!();
    let _ = std::io::stdout().flush();
    let mut rows: Vec<Row> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let fast_reps = cfg.reps * 2 + 1;
    let mut stage = Stages {
        // The big session is built once for cat and rss, as a stage of its own; cat is
        // measured in it.
        n: SCENARIOS
            .iter()
            .filter(|s| **s != "cat" && cfg.wants(s))
            .count()
            + usize::from(BIG.iter().any(|s| cfg.wants(s))),
        i: 0,
    };

    // 1. append: NDJSON stdin into a fresh session vs. a minimal rusqlite program. ------------
    if cfg.wants("append") {
        let n = cfg.append_n;
        stage.next(&format!("append {} chunks", count(n)));
        let scratch = tempfile::tempdir().unwrap();
        let input = scratch.path().join("append.ndjson");
        write_ndjson(&input, 0, n, 7);
        // The baseline inserts the same rows, generated before its clock starts.
        let generated: Vec<GenChunk> = (0..n).map(|i| gen_chunk(i, 7)).collect();
        let bytes = std::fs::metadata(&input).unwrap().len();
        let mut ag_q = Vec::new();
        let mut ag_echo = Vec::new();
        let mut base = Vec::new();
        let mut base_full = Vec::new();
        for r in 0..cfg.reps {
            let home = tempfile::tempdir().unwrap();
            let run = spawn(
                ag(home.path(), &["append", "--new", "-q"]),
                Some(&input),
                Out::Null,
            );
            ag_q.push(secs(run.wall));
            let home = tempfile::tempdir().unwrap();
            let run = spawn(
                ag(home.path(), &["append", "--new"]),
                Some(&input),
                Out::Null,
            );
            ag_echo.push(secs(run.wall));
            let dir = tempfile::tempdir().unwrap();
            let salt = 7 + r as u64;
            base.push(secs(baseline_insert(
                &dir.path().join("base.db"),
                &generated,
                salt,
                false,
            )));
            let dir = tempfile::tempdir().unwrap();
            base_full.push(secs(baseline_insert(
                &dir.path().join("full.db"),
                &generated,
                salt,
                true,
            )));
            progress(&format!(
                "run {}: ag -q {}, ag echo {}, rusqlite {}, rusqlite + ag's indexes {}",
                r + 1,
                ms(ag_q[r]),
                ms(ag_echo[r]),
                ms(base[r]),
                ms(base_full[r])
            ));
        }
        let (a, e, b) = (median_f(ag_q), median_f(ag_echo), median_f(base));
        let bf = median_f(base_full);
        let ratio = (n as f64 / a) / (n as f64 / b);
        rows.push(Row {
            figure: format!("append {} chunks, NDJSON stdin, -q (rate)", count(n)),
            measured: rate(n, a),
            baseline: rate(n, b),
            ratio: format!("{ratio:.2}"),
            target: "≥ 0.50".into(),
            verdict: verdict(ratio >= 0.5),
        });
        let ratio_e = (n as f64 / e) / (n as f64 / b);
        rows.push(Row {
            figure: format!("append {} chunks, echoing stored NDJSON (info)", count(n)),
            measured: rate(n, e),
            baseline: rate(n, b),
            ratio: format!("{ratio_e:.2}"),
            target: "-".into(),
            verdict: "-",
        });
        rows.push(Row {
            figure: format!(
                "append {} chunks, -q, vs. rusqlite with ag's FK + indexes + FTS5 (info)",
                count(n)
            ),
            measured: rate(n, a),
            baseline: rate(n, bf),
            ratio: format!("{:.2}", bf / a),
            target: "-".into(),
            verdict: "-",
        });
        notes.push(format!(
            "append: input {:.1} MiB NDJSON from a file on stdin; whole process ({} -q {}); \
             baseline = rusqlite in-process, bare chunks table, 1 tx, prepared stmt, WAL ({})",
            bytes as f64 / 1048576.0,
            count(n),
            ms(a),
            ms(b)
        ));
    }

    // 2. cat --limit 50 on a big and a small session; 4. peak RSS of a full cat. ------------
    let scratch = tempfile::tempdir().unwrap();
    let big_home = tempfile::tempdir().unwrap();
    let mut big_id = String::new();
    if BIG.iter().any(|s| cfg.wants(s)) {
        stage.next(&format!(
            "build a {}-chunk session ({} batches)",
            count(cfg.big_n),
            cfg.big_batches
        ));
        let big_setup;
        (big_id, big_setup) = build_session(
            big_home.path(),
            scratch.path(),
            cfg.big_n,
            cfg.big_batches,
            11,
        );
        let db_size = ["ag.db", "ag.db-wal"]
            .iter()
            .filter_map(|f| std::fs::metadata(big_home.path().join(f)).ok())
            .map(|m| m.len())
            .sum::<u64>();
        progress(&format!(
            "setup {} ({}), store {:.0} MiB",
            ms(secs(big_setup)),
            rate(cfg.big_n, secs(big_setup)),
            db_size as f64 / 1048576.0
        ));
        notes.push(format!(
        "setup: {}-chunk session built in {} ({} via `append --new` + {} × `append -s ID -q`), store {:.0} MiB",
        count(cfg.big_n),
        ms(secs(big_setup)),
        rate(cfg.big_n, secs(big_setup)),
        cfg.big_batches,
        db_size as f64 / 1048576.0
    ));
    }
    if cfg.wants("cat") {
        let small_home = tempfile::tempdir().unwrap();
        let (small_id, _) = build_session(small_home.path(), scratch.path(), cfg.small_n, 1, 12);
        let cat_limit = |home: &Path, id: &str| -> f64 {
            let cmd = || ag(home, &["cat", id, "--limit", "50", "--json"]);
            let warm = spawn(cmd(), None, Out::Capture);
            let lines = warm
                .stdout
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .count();
            if lines != 50 {
                die(&format!("cat --limit 50 printed {lines} lines"));
            }
            median_f(
                (0..fast_reps)
                    .map(|_| secs(spawn(cmd(), None, Out::Null).wall))
                    .collect(),
            )
        };
        let big = cat_limit(big_home.path(), &big_id);
        let small = cat_limit(small_home.path(), &small_id);
        let show = |home: &Path, id: &str| -> f64 {
            median_f(
                (0..fast_reps)
                    .map(|_| secs(spawn(ag(home, &["show", id, "--json"]), None, Out::Null).wall))
                    .collect(),
            )
        };
        let (show_big, show_small) = (
            show(big_home.path(), &big_id),
            show(small_home.path(), &small_id),
        );
        // For scale: the floor of any ag-log process (start, parse args, exit).
        let floor = median_f(
            (0..fast_reps)
                .map(|_| secs(spawn(ag(small_home.path(), &["--version"]), None, Out::Null).wall))
                .collect(),
        );
        progress(&format!(
            "cat --limit 50: {} session {}, {} session {}, ag-log --version {}",
            count(cfg.big_n),
            ms(big),
            count(cfg.small_n),
            ms(small),
            ms(floor)
        ));
        rows.push(Row {
            figure: format!(
                "cat --limit 50 --json, {} session (baseline: {} session)",
                count(cfg.big_n),
                count(cfg.small_n)
            ),
            measured: ms(big),
            baseline: ms(small),
            ratio: format!("{:.2}", big / small),
            target: "≤ 20 ms".into(),
            verdict: verdict(big <= 0.020),
        });
        rows.push(Row {
            figure: format!(
                "show --json, {} session (baseline: {} session)",
                count(cfg.big_n),
                count(cfg.small_n)
            ),
            measured: ms(show_big),
            baseline: ms(show_small),
            ratio: format!("{:.2}", show_big / show_small),
            target: "≤ 20 ms".into(),
            verdict: verdict(show_big <= 0.020),
        });
        notes.push(format!(
            "process floor: `ag-log --version` takes {}",
            ms(floor)
        ));
    }

    // 4. max RSS of `cat --json` over the big session vs. /bin/cat of the same NDJSON. -------
    if cfg.wants("rss") {
        stage.next(&format!(
            "peak memory of cat --json over {} chunks",
            count(cfg.big_n)
        ));
        let export = scratch.path().join("export.ndjson");
        let first = spawn(
            ag(big_home.path(), &["cat", &big_id, "--json"]),
            None,
            Out::File(export.clone()),
        );
        let exported = std::fs::metadata(&export).unwrap().len();
        let reps = cfg.reps.min(3);
        let mut rss = vec![first.max_rss_kib as f64];
        let mut wall = vec![secs(first.wall)];
        for _ in 1..reps {
            let r = spawn(
                ag(big_home.path(), &["cat", &big_id, "--json"]),
                None,
                Out::Null,
            );
            rss.push(r.max_rss_kib as f64);
            wall.push(secs(r.wall));
        }
        let cat_rss = median_f(
            (0..reps)
                .map(|_| {
                    let mut c = Command::new("/bin/cat");
                    c.arg(&export);
                    spawn(c, None, Out::Null).max_rss_kib as f64
                })
                .collect(),
        );
        let (rss, wall) = (median_f(rss), median_f(wall));
        progress(&format!(
            "ag-log cat --json: {} in {}, /bin/cat {}",
            mib(rss),
            ms(wall),
            mib(cat_rss)
        ));
        rows.push(Row {
            figure: format!(
                "max RSS, cat --json of {} chunks (baseline: /bin/cat of its NDJSON)",
                count(cfg.big_n)
            ),
            measured: mib(rss),
            baseline: mib(cat_rss),
            ratio: format!("{:.1}", rss / cat_rss),
            target: "≤ 64 MiB".into(),
            verdict: verdict(rss <= 64.0 * 1024.0),
        });
        notes.push(format!(
            "full cat --json of {} chunks: {} ({}), {:.0} MiB of NDJSON",
            count(cfg.big_n),
            ms(wall),
            rate(cfg.big_n, wall),
            exported as f64 / 1048576.0
        ));
        let _ = std::fs::remove_file(&export);
    }

    // 6. ag-fork of a small and the big session vs. copying them. ------------------------------
    if cfg.wants("fork") {
        stage.next(&format!(
            "ag-fork a {}- and a {}-chunk session vs. copying them",
            count(cfg.small_n),
            count(cfg.big_n)
        ));
        let small_home = tempfile::tempdir().unwrap();
        let (small_id, _) = build_session(small_home.path(), scratch.path(), cfg.small_n, 1, 14);
        fork::run(
            &cfg,
            (small_home.path(), &small_id, cfg.small_n),
            (big_home.path(), &big_id, cfg.big_n),
            &mut rows,
            &mut notes,
        );
    }
    // 9. recall on the big session once its index is current. ---------------------------------
    if cfg.wants("recall") {
        stage.next(&format!("recall on a {}-chunk session", count(cfg.big_n)));
        recall::run(
            &cfg,
            big_home.path(),
            &big_id,
            cfg.big_n,
            &mut rows,
            &mut notes,
        );
    }
    // Peak memory of fold and of a turn over the big session. -----------------------------------
    if cfg.wants("foldrss") {
        stage.next(&format!(
            "peak memory of fold over {} chunks",
            count(cfg.big_n)
        ));
        memory::fold(&cfg, big_home.path(), &big_id, &mut rows, &mut notes);
    }
    if cfg.wants("turnrss") {
        stage.next(&format!(
            "peak memory of an ag-prompt turn on {} chunks",
            count(cfg.big_n)
        ));
        memory::turn(&cfg, big_home.path(), &big_id, &mut rows, &mut notes);
    }
    drop(big_home);

    // Searches and turn reads on 1k, 100k and 1M chunks, each in a store of its own.
    if cfg.wants("scale") {
        stage.next("search, cat --turn and a turn's end on 1k, 100k and 1M chunks");
        scale::run(&cfg, &mut rows, &mut notes);
    }

    // 3. fold (anthropic) of a session vs. streaming it with cat --json. ----------------------
    if cfg.wants("fold") {
        let n = cfg.fold_n;
        stage.next(&format!("fold a {}-chunk session", count(n)));
        let home = tempfile::tempdir().unwrap();
        let (id, _) = build_session(home.path(), scratch.path(), n, 1, 13);
        let first = spawn(
            ag(home.path(), &["fold", &id, "--dialect", "anthropic"]),
            None,
            Out::Capture,
        );
        let messages = check_fold(&first.stdout, n)
            .unwrap_or_else(|e| die(&format!("the fold is not a valid request: {e}")));
        let body_len = first.stdout.len();
        let fold = median_f(
            (0..cfg.reps)
                .map(|_| secs(spawn(ag(home.path(), &["fold", &id]), None, Out::Null).wall))
                .collect(),
        );
        let cat = median_f(
            (0..cfg.reps)
                .map(|_| {
                    secs(spawn(ag(home.path(), &["cat", &id, "--json"]), None, Out::Null).wall)
                })
                .collect(),
        );
        progress(&format!("fold {}, cat --json {}", ms(fold), ms(cat)));
        rows.push(Row {
            figure: format!(
                "fold (anthropic), {} session (baseline: cat --json of it)",
                count(n)
            ),
            measured: ms(fold),
            baseline: ms(cat),
            ratio: format!("{:.2}", fold / cat),
            target: "≤ 500 ms".into(),
            verdict: verdict(fold <= 0.5),
        });
        notes.push(format!(
            "fold: a valid request of {messages} messages, {:.1} MiB, peak RSS {}",
            body_len as f64 / 1048576.0,
            mib(first.max_rss_kib as f64)
        ));
    }

    // 5. ag-prompt: a 50-step tool run vs. the same round trips from a minimal client. ------
    if cfg.wants("prompt") {
        stage.next(&format!(
            "ag-prompt: a {}-step tool run vs. {} raw round trips",
            prompt::STEPS,
            prompt::STEPS
        ));
        prompt::run(&cfg, &mut rows, &mut notes);
    }

    // 7. The per-step cost after a compaction does not grow with the session. ---------------
    if cfg.wants("context") {
        stage.next("ag-prompt per step on a compacted 100k-chunk session vs. a 1k one");
        context::run(&cfg, &mut rows, &mut notes);
    }

    // 7′. Per step on a session that never compacts: 100k chunks vs. 1k. --------------------
    if cfg.wants("uncompacted") {
        stage.next("ag-prompt per step on an uncompacted 100k-chunk session vs. a 1k one");
        uncompacted::run(&cfg, &mut rows, &mut notes);
    }

    // 8. An MCP tool call through ag-prompt vs. the same call from a minimal rmcp client. ----
    if cfg.wants("mcp") {
        stage.next(&format!(
            "MCP: {} calls through ag-prompt vs. from a minimal rmcp client",
            mcp::CALLS
        ));
        mcp::run(&cfg, &mut rows, &mut notes);
    }

    println!();
    print_table(&rows);
    println!();
    for n in &notes {
        println!("  {n}");
    }
    println!();
    println!("total bench time {}", ms(secs(total.elapsed())));
}
