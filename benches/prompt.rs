//! The `ag-prompt` loop overhead: a 50-step scripted tool run against the fake provider vs.
//! the same 50 request/response round trips made by a minimal client (the baseline).
//!
//! Per repetition, one of each, interleaved:
//!
//! - **ag**: the release `ag-prompt -m anthropic/bench --tools read --max-steps 60 -q go`,
//!   whole process, in a fresh `AG_HOME`, an empty `XDG_CONFIG_HOME` and a cwd holding a small
//!   `a.txt`, against a fresh fake provider loaded with 49 replies that each call
//!   `read {"path":"a.txt"}` (after a short text block) and a 50th that ends the turn.
//! - **baseline**: a `reqwest` client in the bench process POSTing, one after the other, exactly
//!   the 50 bodies ag sent in that repetition (with ag's headers) to another fresh fake loaded
//!   with the same 50 replies, reading each response body to the end.
//!
//! Overhead per step = (ag − baseline − process floor of `ag-prompt --version`) / 50.
//!
//! Each repetition also runs the turn cut to its last reply (1 step) and its 1-round-trip
//! baseline, which separates the per-process setup from the per-step cost (info rows).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::fake_provider::sse::{self, Block};
use super::fake_provider::{FakeProvider, Reply};
use super::{die, median_f, ms, progress, secs, spawn, verdict, Config, Out, Row};

/// Model round trips in the scripted turn.
pub const STEPS: usize = 50;
/// The per-step overhead target.
const TARGET_S: f64 = 0.002;
pub const A_TXT: &str = "alpha: the first line of a small file\n\
beta: a second line, a little longer than the first\n\
gamma: the third\n\
delta: fourth line of a.txt\n\
epsilon: the last line\n";

pub fn ag_prompt_path() -> PathBuf {
    let p = super::release_dir().join("ag-prompt");
    if !p.exists() {
        die(&format!(
            "{} is missing: build it first (benches/run.sh runs cargo build --release --bins)",
            p.display()
        ));
    }
    p
}

/// The 50 scripted replies: 49 × (text + `read a.txt`), then a final text.
pub fn replies() -> Vec<String> {
    let mut v: Vec<String> = (1..STEPS)
        .map(|i| {
            sse::anthropic(
                &[
                    Block::Text(format!("Step {i}: let me look at a.txt once more.")),
                    Block::Tool {
                        id: format!("toolu_bench{i:04}"),
                        name: "read".into(),
                        input: json!({"path": "a.txt"}),
                    },
                ],
                "tool_use",
                (100 + 40 * i as u64, 25, 0, 0),
            )
        })
        .collect();
    v.push(sse::anthropic_text("Done: a.txt has five lines."));
    v
}

pub fn loaded_fake(replies: &[String]) -> FakeProvider {
    let fake = FakeProvider::start();
    for r in replies {
        fake.push(Reply::Sse(r.clone()));
    }
    fake
}

/// What one ag run sent: the bodies, and the headers of the first request.
pub struct Sent {
    pub bodies: Vec<Vec<u8>>,
    pub path: String,
    pub headers: Vec<(String, String)>,
}

/// One whole `ag-prompt` run against a fresh fake; returns its wall time and what it sent.
fn run_ag(bin: &Path, replies: &[String]) -> (Duration, Duration, Sent) {
    let fake = loaded_fake(replies);
    let home = tempfile::tempdir().unwrap();
    let xdg = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("a.txt"), A_TXT).unwrap();
    // AG_BENCH_WRAP="perf record -g -o /tmp/p.data --" profiles (or straces) the ag runs.
    let wrap: Vec<String> = std::env::var("AG_BENCH_WRAP")
        .map(|w| w.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let mut c = match wrap.split_first() {
        Some((prog, rest)) => {
            let mut c = Command::new(prog);
            c.args(rest).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    c.current_dir(cwd.path())
        .env("AG_HOME", home.path())
        .env("XDG_CONFIG_HOME", xdg.path())
        .env("ANTHROPIC_BASE_URL", fake.url())
        .env("ANTHROPIC_API_KEY", "dummy")
        .env("NO_COLOR", "1")
        .env_remove("AG_MODEL")
        .args([
            "-m",
            "anthropic/bench",
            "--tools",
            "read",
            "--max-steps",
            "60",
            "-q",
            "go",
        ]);
    let run = spawn(c, None, Out::Null);
    let reqs = fake.requests();
    if let Err(e) = check_run(&reqs, replies.len()) {
        die(&format!("the ag-prompt run is not the scripted one: {e}"));
    }
    (run.wall, run.cpu, sent_of(&reqs))
}

/// What a run sent: its bodies, and the headers of its first request.
pub fn sent_of(reqs: &[super::fake_provider::Recorded]) -> Sent {
    let first = &reqs[0];
    // Hop-by-hop and length headers are the client's own business.
    let headers = first
        .headers
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "host" | "content-length" | "transfer-encoding" | "connection" | "user-agent"
            )
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Sent {
        bodies: reqs
            .iter()
            .map(|r| r.raw_body.clone().into_bytes())
            .collect(),
        path: first.path.clone(),
        headers,
    }
}

/// The run made exactly the 50 scripted steps, each answering the previous tool call with
/// the contents of a.txt.
fn check_run(reqs: &[super::fake_provider::Recorded], steps: usize) -> Result<(), String> {
    if reqs.len() != steps {
        return Err(format!("{} requests, expected {steps}", reqs.len()));
    }
    for (i, r) in reqs.iter().enumerate() {
        if r.method != "POST" || r.path != "/v1/messages" {
            return Err(format!("request {i}: {} {}", r.method, r.path));
        }
        let msgs = r.body["messages"]
            .as_array()
            .ok_or_else(|| format!("request {i} has no messages"))?;
        // The prompt, then per finished step an assistant message and the tool results.
        if msgs.len() != 1 + 2 * i {
            return Err(format!(
                "request {i} has {} messages, expected {}",
                msgs.len(),
                1 + 2 * i
            ));
        }
        if i > 0 {
            let last = &msgs[msgs.len() - 1]["content"][0];
            let content = last["content"].to_string();
            if last["type"] != "tool_result"
                || last["tool_use_id"] != format!("toolu_bench{i:04}").as_str()
                || !content.contains("epsilon: the last line")
                || last["is_error"] == true
            {
                return Err(format!(
                    "request {i}: the last block is not read's result: {last}"
                ));
            }
        }
    }
    Ok(())
}

/// The baseline: the same bodies POSTed in sequence by a minimal reqwest client on a
/// current-thread tokio runtime, each response read to the end.
/// The baseline's wall time, the bytes it read, and the CPU time its (one) thread used.
pub fn run_baseline(sent: &Sent, replies: &[String]) -> (Duration, usize, Duration) {
    let fake = loaded_fake(replies);
    let url = format!("{}{}", fake.url(), sent.path);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(&format!("baseline runtime: {e}")));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .build()
        .unwrap_or_else(|e| die(&format!("baseline client: {e}")));
    let start = Instant::now();
    let cpu_start = super::thread_cpu();
    let got = rt.block_on(async {
        let mut got = 0usize;
        for body in &sent.bodies {
            let mut req = client.post(&url).body(body.clone());
            for (k, v) in &sent.headers {
                req = req.header(k.as_str(), v.as_str());
            }
            let resp = req
                .send()
                .await
                .unwrap_or_else(|e| die(&format!("baseline POST failed: {e}")));
            let bytes = resp
                .bytes()
                .await
                .unwrap_or_else(|e| die(&format!("baseline read failed: {e}")));
            got += bytes.len();
        }
        got
    });
    let wall = start.elapsed();
    let cpu = super::thread_cpu().saturating_sub(cpu_start);
    if fake.requests().len() != sent.bodies.len() {
        die("the baseline fake did not see every request");
    }
    (wall, got, cpu)
}

/// Runs of the ag-prompt figure: as many as the fast figures, 3 with `--quick`.
pub fn reps(cfg: &Config) -> usize {
    if cfg.quick {
        3
    } else {
        cfg.reps * 2 + 1
    }
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let bin = ag_prompt_path();
    let reps = reps(cfg);
    let replies = replies();
    // The same turn cut to its last step: one round trip that ends it. What a 1-step run costs
    // beyond its round trip is the per-process setup (store, schema, config, provider).
    let one = vec![replies[STEPS - 1].clone()];
    let reply_bytes: usize = replies.iter().map(String::len).sum();
    let version = || {
        let mut c = Command::new(&bin);
        c.arg("--version");
        secs(spawn(c, None, Out::Null).wall)
    };

    // One untimed pair first: the page cache, the loader and the bench's own first
    // connections are warm for every timed run.
    let (_, _, sent) = run_ag(&bin, &replies);
    run_baseline(&sent, &replies);

    let (mut ag, mut base, mut ag1, mut base1, mut floor) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // CPU time (user + system) of each run: ag50, ag1, baseline50, baseline1.
    let mut cpu: Vec<(f64, f64, f64, f64)> = Vec::new();
    let mut sent_bytes = (0usize, 0usize, 0usize);
    let mut resp_bytes = 0usize;
    for r in 0..reps {
        let (a, ac, sent) = run_ag(&bin, &replies);
        let (b, got, bc) = run_baseline(&sent, &replies);
        let (a1, ac1, sent1) = run_ag(&bin, &one);
        let (b1, _, bc1) = run_baseline(&sent1, &one);
        cpu.push((secs(ac), secs(ac1), secs(bc), secs(bc1)));
        ag.push(secs(a));
        base.push(secs(b));
        ag1.push(secs(a1));
        base1.push(secs(b1));
        floor.push(version());
        sent_bytes = (
            sent.bodies.iter().map(Vec::len).sum(),
            sent.bodies.first().map_or(0, Vec::len),
            sent.bodies.last().map_or(0, Vec::len),
        );
        resp_bytes = got;
        progress(&format!(
            "run {}: ag-prompt {} ({}/step), baseline {} ({}/step); 1 step: ag-prompt {}, baseline {}",
            r + 1,
            ms(secs(a)),
            ms(secs(a) / STEPS as f64),
            ms(secs(b)),
            ms(secs(b) / STEPS as f64),
            ms(secs(a1)),
            ms(secs(b1)),
        ));
    }
    let n = STEPS as f64;
    let floor = median_f(floor);
    let paired: Vec<f64> = ag
        .iter()
        .zip(&base)
        .map(|(a, b)| (a - b - floor) / n)
        .collect();
    let (a, b) = (median_f(ag), median_f(base));
    let (a1, b1) = (median_f(ag1), median_f(base1));
    let overhead = (a - b - floor) / n;
    // Per extra step: the 50-step run less the 1-step run, on both sides.
    let marginal = ((a - a1) - (b - b1)) / (n - 1.0);
    let setup = a1 - b1 - floor;
    rows.push(Row {
        figure: format!(
            "ag-prompt {STEPS}-step read run, whole process (baseline: {STEPS} raw round trips, reqwest)"
        ),
        measured: ms(a),
        baseline: ms(b),
        ratio: format!("{:.2}", a / b),
        target: "-".into(),
        verdict: "-",
    });
    rows.push(Row {
        figure: "ag-prompt time per step (baseline: per round trip)".into(),
        measured: ms(a / n),
        baseline: ms(b / n),
        ratio: format!("{:.2}", a / b),
        target: "-".into(),
        verdict: "-",
    });
    rows.push(Row {
        figure: format!(
            "ag-prompt loop overhead per step = (ag − baseline − floor {}) / {STEPS}",
            ms(floor)
        ),
        measured: ms(overhead),
        baseline: ms(b / n),
        ratio: format!("{:.2}", overhead / (b / n)),
        target: "≤ 2 ms".into(),
        verdict: verdict(overhead <= TARGET_S),
    });
    rows.push(Row {
        figure: format!(
            "ag-prompt 1-step run, whole process (info; baseline: 1 round trip) → setup {} beyond floor",
            ms(setup)
        ),
        measured: ms(a1),
        baseline: ms(b1),
        ratio: format!("{:.2}", a1 / b1),
        target: "-".into(),
        verdict: "-",
    });
    rows.push(Row {
        figure: format!(
            "ag-prompt marginal overhead per step = ((ag{STEPS} − ag1) − (base{STEPS} − base1)) / {} (info)",
            STEPS - 1
        ),
        measured: ms(marginal),
        baseline: ms((b - b1) / (n - 1.0)),
        ratio: format!("{:.2}", marginal / ((b - b1) / (n - 1.0))),
        target: "-".into(),
        verdict: "-",
    });
    // The same in CPU time, which a busy machine does not inflate the way it does wall time.
    let col = |f: fn(&(f64, f64, f64, f64)) -> f64| median_f(cpu.iter().map(f).collect());
    let (c50, c1, bc50, bc1) = (col(|c| c.0), col(|c| c.1), col(|c| c.2), col(|c| c.3));
    let cpu_marginal: Vec<f64> = cpu
        .iter()
        .map(|c| ((c.0 - c.1) - (c.2 - c.3)) / (n - 1.0))
        .collect();
    let cpu_overhead = median_f(cpu_marginal);
    rows.push(Row {
        figure: format!(
            "ag-prompt CPU per step = (cpu{STEPS} − cpu1) / {} (baseline: client CPU per round trip)",
            STEPS - 1
        ),
        measured: ms((c50 - c1) / (n - 1.0)),
        baseline: ms((bc50 - bc1) / (n - 1.0)),
        ratio: format!("{:.2}", (c50 - c1) / (bc50 - bc1).max(1e-9)),
        target: "-".into(),
        verdict: "-",
    });
    rows.push(Row {
        figure: "ag-prompt loop overhead per step in CPU time = median by run of ((cpu50 − cpu1) − (base50 − base1)) / 49"
            .into(),
        measured: ms(cpu_overhead),
        baseline: ms((bc50 - bc1) / (n - 1.0)),
        ratio: format!("{:.2}", cpu_overhead / ((bc50 - bc1) / (n - 1.0)).max(1e-9)),
        target: "≤ 2 ms".into(),
        verdict: verdict(cpu_overhead <= TARGET_S),
    });
    rows.push(Row {
        figure:
            "ag-prompt 1-step run, CPU time of the whole process (info; baseline: 1 round trip)"
                .into(),
        measured: ms(c1),
        baseline: ms(bc1),
        ratio: format!("{:.2}", c1 / bc1.max(1e-9)),
        target: "-".into(),
        verdict: "-",
    });
    notes.push(format!(
        "ag-prompt: process floor (`ag-prompt --version`) {}; overhead per step paired by run: median {}, min {}",
        ms(floor),
        ms(median_f(paired.clone())),
        ms(paired.iter().cloned().fold(f64::INFINITY, f64::min)),
    ));
    notes.push(format!(
        "ag-prompt: {reps} runs; the baseline replays ag's exact request bodies ({:.0} KiB in all, \
         {} B first, {:.1} KiB last) and reads {:.0} KiB of SSE ({:.0} KiB scripted)",
        sent_bytes.0 as f64 / 1024.0,
        sent_bytes.1,
        sent_bytes.2 as f64 / 1024.0,
        resp_bytes as f64 / 1024.0,
        reply_bytes as f64 / 1024.0,
    ));
}
