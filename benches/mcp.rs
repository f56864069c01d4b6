//! What an MCP tool call costs through `ag-prompt`, beyond the call itself: the test suite's
//! rmcp server (`tests/mcp_fixture`, built as `target/release/examples/mcp_fixture`) called
//! through `ag-prompt`, against the same server called directly by a minimal rmcp client.
//!
//! Per repetition, interleaved:
//!
//! - **ag**: the release `ag-prompt -m script:… --tools mcp__fx__echo -q go`, whole process, in
//!   a fresh `AG_HOME` with `[mcp.fx]` in its user config, on a script whose first step calls
//!   `mcp__fx__echo` `CALLS` times (then a final text); and the same with one call.
//! - **baseline**: an rmcp client in the bench process that has started the same server and
//!   finished its handshake, timing `CALLS` sequential `echo` calls, and one call.
//!
//! Overhead per call = ((ag_N − ag_1) − (direct_N − direct_1)) / (N − 1): both `ag-prompt` runs
//! start the server and take the same two model steps, so their difference is the calls alone
//! (the guard, the call, capping, storing each result as a chunk, and folding it into the next
//! request); the direct difference is what the server and the transport take for the same calls.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;

use super::prompt::ag_prompt_path;
use super::{die, median_f, ms, progress, secs, spawn, verdict, Config, Out, Row};

/// MCP calls in the long run.
pub const CALLS: usize = 50;
/// The per-call overhead target.
const TARGET_S: f64 = 0.002;

pub fn fixture_path() -> PathBuf {
    let p = super::release_dir().join("examples/mcp_fixture");
    if !p.exists() {
        die(&format!(
            "{} is missing: build it first (benches/run.sh runs cargo build --release --example mcp_fixture)",
            p.display()
        ));
    }
    p
}

/// One `ag-prompt` run making `calls` MCP calls in its first step; its wall time.
fn run_ag(bin: &Path, fixture: &Path, calls: usize) -> Duration {
    let home = tempfile::tempdir().unwrap();
    let xdg = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(xdg.path().join("ag")).unwrap();
    std::fs::write(
        xdg.path().join("ag/config.toml"),
        format!("[mcp.fx]\ncommand = {fixture:?}\nargs = [\"stdio\"]\n"),
    )
    .unwrap();
    let call =
        |i: usize| format!("{{ name = \"mcp__fx__echo\", arguments = {{ text = \"ping {i}\" }} }}");
    let script = cwd.path().join("calls.toml");
    std::fs::write(
        &script,
        format!(
            "[[step]]\ntool_calls = [{}]\n[[step]]\ntext = \"done\"\n",
            (0..calls).map(call).collect::<Vec<_>>().join(", ")
        ),
    )
    .unwrap();
    let mut c = Command::new(bin);
    c.current_dir(cwd.path())
        .env("AG_HOME", home.path())
        .env("XDG_CONFIG_HOME", xdg.path())
        .env("NO_COLOR", "1")
        .env_remove("AG_MODEL")
        .arg("-m")
        .arg(format!("script:{}", script.display()))
        .args(["--tools", "mcp__fx__echo", "-q", "go"]);
    let run = spawn(c, None, Out::Null);
    // The run is the scripted one only if every call came back as a result from the server.
    let db = rusqlite::Connection::open(home.path().join("ag.db"))
        .unwrap_or_else(|e| die(&format!("the ag-prompt run left no store: {e}")));
    let echoed: usize = db
        .query_row(
            "SELECT COUNT(*) FROM chunks WHERE type = 'tool_result' AND data_json LIKE '%echo: ping%'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap_or_else(|e| die(&format!("cannot count the run's results: {e}")))
        as usize;
    if echoed != calls {
        die(&format!(
            "the ag-prompt run stored {echoed} echoed results, not {calls}"
        ));
    }
    run.wall
}

/// `calls` sequential `echo` calls from a minimal rmcp client whose server is already up.
fn run_direct(fixture: &Path, calls: usize) -> Duration {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(&format!("direct client runtime: {e}")));
    rt.block_on(async {
        let mut cmd = tokio::process::Command::new(fixture);
        cmd.arg("stdio").stderr(std::process::Stdio::null());
        let transport = TokioChildProcess::new(cmd)
            .unwrap_or_else(|e| die(&format!("cannot start {}: {e}", fixture.display())));
        let client = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("ag-bench", "1.0"),
        )
        .serve(transport)
        .await
        .unwrap_or_else(|e| die(&format!("the MCP handshake with the fixture: {e}")));
        let start = Instant::now();
        for i in 0..calls {
            let mut args = serde_json::Map::new();
            args.insert("text".into(), format!("ping {i}").into());
            let params = CallToolRequestParams::new("echo").with_arguments(args);
            let r = client
                .call_tool(params)
                .await
                .unwrap_or_else(|e| die(&format!("direct echo call failed: {e}")));
            if r.is_error == Some(true) {
                die("the direct echo call returned an error");
            }
        }
        let took = start.elapsed();
        let _ = client.cancel().await;
        took
    })
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let bin = ag_prompt_path();
    let fixture = fixture_path();
    let reps = super::prompt::reps(cfg);
    // Warm the page cache, the loader and the server binary.
    run_ag(&bin, &fixture, CALLS);
    run_direct(&fixture, CALLS);
    let (mut ag_n, mut ag_1, mut d_n, mut d_1) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in 0..reps {
        ag_n.push(secs(run_ag(&bin, &fixture, CALLS)));
        d_n.push(secs(run_direct(&fixture, CALLS)));
        ag_1.push(secs(run_ag(&bin, &fixture, 1)));
        d_1.push(secs(run_direct(&fixture, 1)));
        progress(&format!(
            "run {}: ag-prompt {CALLS} calls {}, 1 call {}; direct {CALLS} calls {}, 1 call {}",
            r + 1,
            ms(ag_n[r]),
            ms(ag_1[r]),
            ms(d_n[r]),
            ms(d_1[r]),
        ));
    }
    let n = (CALLS - 1) as f64;
    let paired: Vec<f64> = (0..reps)
        .map(|r| ((ag_n[r] - ag_1[r]) - (d_n[r] - d_1[r])) / n)
        .collect();
    let (an, a1, dn, d1) = (median_f(ag_n), median_f(ag_1), median_f(d_n), median_f(d_1));
    let ag_per = (an - a1) / n;
    let direct_per = (dn - d1) / n;
    let overhead = ag_per - direct_per;
    rows.push(Row {
        figure: "MCP call through ag-prompt, per call = (ag50 − ag1) / 49 (baseline: direct rmcp client)"
            .into(),
        measured: ms(ag_per),
        baseline: ms(direct_per),
        ratio: format!("{:.2}", ag_per / direct_per),
        target: "-".into(),
        verdict: "-",
    });
    rows.push(Row {
        figure: "MCP call overhead per call = ag per call − direct per call".into(),
        measured: ms(overhead),
        baseline: ms(direct_per),
        ratio: format!("{:.2}", overhead / direct_per),
        target: "≤ 2 ms".into(),
        verdict: verdict(overhead <= TARGET_S),
    });
    notes.push(format!(
        "mcp: {reps} runs; ag-prompt whole process {} with {CALLS} calls, {} with 1; overhead per \
         call paired by run: median {}",
        ms(an),
        ms(a1),
        ms(median_f(paired)),
    ));
}
