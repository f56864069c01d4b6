//! A step's cost on a session that never compacts: `ag-prompt -s ID -m script:FILE --tools
//! read` on a 100,000-chunk session against the same on a 1,000-chunk one (10,000 against
//! 1,000 with `--quick`), each alone in its store. The offline `script:` model has no context
//! window, so neither session is ever compacted and every step's request carries the whole log
//! folded. Target: per step on the big session ≤ 1.5× per step on the small one.
//!
//! Per step = (t_N − t_1) / (N − 1), whole process, paired by run: t_N is a turn of N steps
//! (N − 1 `read` calls, then a final text), t_1 a turn of one step (the final text alone), so
//! what both runs share (start-up, opening the store, the turn's end) cancels out. The script's
//! replies are keyed (`reply_to`): the prompt names the first, and each file a step reads names
//! the next, so the script answers the same steps whatever the session already holds. Every
//! run starts from a copy of its store as built, and is checked: the new turn holds the N − 1
//! results in order, ends with the final text, and the session has no compaction.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{
    build_session, count, die, median_f, ms, progress, restore_store, secs, spawn, verdict, Config,
    Out, Row,
};

/// Steps of the long turn: enough that the steps outweigh the run-to-run noise of what both
/// turns share (on the big session, the first request folds the whole log: about a second).
const N: usize = 200;
/// The most a step on the big session may cost over one on the small session.
const RATIO: f64 = 1.5;
const FINAL: &str = "Read every file; done.";

/// A store holding one generated session, never compacted, and a pristine copy of it.
struct Uncompacted {
    n: u64,
    id: String,
    home: tempfile::TempDir,
    /// Holds `pristine.db`, the store as built.
    pristine: tempfile::TempDir,
    /// The session's directory: the files the steps read.
    cwd: tempfile::TempDir,
    /// The session's last seq as built: a run's turn is what comes after it.
    last_seq: i64,
}

fn key(j: usize) -> String {
    format!("[bench-k{j:03}]")
}

/// The script: the prompt `[bench-k000]` asks for `f001.txt`, file j holds key j, key j asks for
/// file j + 1, and key N − 1 gets the final text; a one-step turn is the prompt `key(N − 1)`.
fn script(dir: &Path) -> PathBuf {
    let mut toml = String::new();
    for j in 0..N - 1 {
        toml.push_str(&format!(
            "[[step]]\nreply_to = {:?}\ntext = \"Reading f{:03}.txt.\"\n\
             [[step.tool_calls]]\nname = \"read\"\nid = \"bench-call-{:03}\"\n\
             arguments = {{ path = \"f{:03}.txt\" }}\n\n",
            key(j),
            j + 1,
            j + 1,
            j + 1
        ));
    }
    toml.push_str(&format!(
        "[[step]]\nreply_to = {:?}\ntext = {FINAL:?}\n",
        key(N - 1)
    ));
    let path = dir.join("steps.toml");
    std::fs::write(&path, toml).expect("write the script");
    path
}

fn uncompacted(n: u64, salt: u64) -> Uncompacted {
    let home = tempfile::tempdir().unwrap();
    let pristine = tempfile::tempdir().unwrap();
    let (id, took) = build_session(home.path(), pristine.path(), n, 1, salt);
    progress(&format!(
        "{}-chunk session built in {}",
        count(n),
        ms(secs(took))
    ));
    let cwd = tempfile::tempdir().unwrap();
    for j in 1..N {
        std::fs::write(cwd.path().join(format!("f{j:03}.txt")), key(j) + "\n").unwrap();
    }
    let db = home.path().join("ag.db");
    let conn = rusqlite::Connection::open(&db).expect("open ag.db");
    // The session works in the directory holding the files (`append --new` recorded the bench's).
    conn.execute(
        "UPDATE sessions SET cwd = ?1 WHERE id = ?2",
        rusqlite::params![cwd.path().canonicalize().unwrap().to_string_lossy(), id],
    )
    .expect("set the session's cwd");
    let last_seq: i64 = conn
        .query_row(
            "SELECT MAX(seq) FROM chunks WHERE session_id = ?1",
            [&id],
            |r| r.get(0),
        )
        .expect("the session's last seq");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint the store");
    drop(conn);
    std::fs::copy(&db, pristine.path().join("pristine.db")).expect("keep the store");
    Uncompacted {
        n,
        id,
        home,
        pristine,
        cwd,
        last_seq,
    }
}

/// One whole `ag-prompt` turn of `steps` steps (N or 1) on the session as built; wall time.
fn run_turn(bin: &Path, s: &Uncompacted, script: &Path, xdg: &Path, steps: usize) -> f64 {
    restore_store(&s.pristine.path().join("pristine.db"), s.home.path());
    let prompt = key(if steps == 1 { N - 1 } else { 0 });
    let mut c = Command::new(bin);
    c.current_dir(s.cwd.path())
        .env("AG_HOME", s.home.path())
        .env("XDG_CONFIG_HOME", xdg)
        .env("NO_COLOR", "1")
        .env_remove("AG_MODEL")
        .args(["-s", &s.id, "-m"])
        .arg(format!("script:{}", script.display()))
        .args(["--tools", "read", "--max-steps"])
        .arg((N + 10).to_string())
        .args(["-q", &prompt]);
    let run = spawn(c, None, Out::Null);
    if let Err(e) = check(s, steps) {
        die(&format!(
            "the {steps}-step turn on the {}-chunk session: {e}",
            s.n
        ));
    }
    secs(run.wall)
}

/// The turn just run answered every call in order and ended with the final text, and the
/// session was not compacted.
fn check(s: &Uncompacted, steps: usize) -> Result<(), String> {
    let conn =
        rusqlite::Connection::open(s.home.path().join("ag.db")).map_err(|e| e.to_string())?;
    let mut stmt = conn
        .prepare(
            "SELECT type, data_json FROM chunks WHERE session_id = ?1 AND seq > ?2 \
             AND type IN ('text', 'tool_result', 'error') ORDER BY seq",
        )
        .map_err(|e| e.to_string())?;
    let rows: Vec<(String, serde_json::Value)> = stmt
        .query_map(rusqlite::params![s.id, s.last_seq], |r| {
            let data: String = r.get(1)?;
            Ok((r.get(0)?, serde_json::from_str(&data).unwrap_or_default()))
        })
        .and_then(Iterator::collect)
        .map_err(|e| e.to_string())?;
    let results: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|(t, _)| t == "tool_result")
        .map(|(_, d)| d)
        .collect();
    if let Some((_, d)) = rows.iter().find(|(t, _)| t == "error") {
        return Err(format!("the turn ended in an error: {d}"));
    }
    if results.len() != steps - 1 {
        return Err(format!("{} results, expected {}", results.len(), steps - 1));
    }
    for (j, r) in results.iter().enumerate() {
        let text = r["result"].to_string();
        if r["is_error"] == true || !text.contains(&key(j + 1)) {
            return Err(format!(
                "result {} is not f{:03}.txt's contents: {r}",
                j + 1,
                j + 1
            ));
        }
    }
    let last = rows.last().map(|(_, d)| d["text"].as_str().unwrap_or(""));
    if last != Some(FINAL) {
        return Err(format!(
            "the turn does not end with the final text: {last:?}"
        ));
    }
    let compactions: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM chunks WHERE session_id = ?1 AND type = 'system' \
             AND json_extract(data_json, '$.kind') = 'compaction'",
            [&s.id],
            |r| r.get(0),
        )
        .map_err(|e| e.to_string())?;
    if compactions != 0 {
        return Err(format!("the session was compacted ({compactions} records)"));
    }
    Ok(())
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let bin = super::prompt::ag_prompt_path();
    let reps = super::prompt::reps(cfg);
    let big_n = if cfg.quick { 10_000 } else { 100_000 };
    let big = uncompacted(big_n, 51);
    let small = uncompacted(1_000, 53);
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path());
    let xdg = tempfile::tempdir().unwrap();
    // Untimed first runs warm the page cache of both stores.
    for s in [&big, &small] {
        run_turn(&bin, s, &script, xdg.path(), N);
    }
    let mut per = [Vec::new(), Vec::new()];
    let mut whole = [Vec::new(), Vec::new()];
    for r in 0..reps {
        for (k, s) in [&big, &small].into_iter().enumerate() {
            let t_n = run_turn(&bin, s, &script, xdg.path(), N);
            let t_1 = run_turn(&bin, s, &script, xdg.path(), 1);
            per[k].push((t_n - t_1) / (N - 1) as f64);
            whole[k].push((t_n, t_1));
        }
        progress(&format!(
            "run {}: per step {} on {} chunks, {} on {}",
            r + 1,
            ms(*per[0].last().unwrap()),
            count(big.n),
            ms(*per[1].last().unwrap()),
            count(small.n)
        ));
    }
    let (b, s) = (median_f(per[0].clone()), median_f(per[1].clone()));
    // A per-step figure at or below zero means the noise outweighed the steps: not a pass.
    let measurable = b > 0.0 && s > 0.0;
    let ratio = if measurable { b / s } else { f64::NAN };
    rows.push(Row {
        figure: format!(
            "ag-prompt -s ID -m script: per step = (t{N} − t1) / {}, uncompacted {} session (baseline: {} session)",
            N - 1,
            count(big.n),
            count(small.n)
        ),
        measured: ms(b),
        baseline: ms(s),
        ratio: format!("{ratio:.2}"),
        target: format!("ratio ≤ {RATIO}"),
        verdict: verdict(measurable && ratio <= RATIO),
    });
    if !measurable {
        notes.push(
            "uncompacted: a per-step median at or below zero (the noise outweighed the steps); \
             the row is not a pass"
                .into(),
        );
    }
    let med = |k: usize, f: fn(&(f64, f64)) -> f64| median_f(whole[k].iter().map(f).collect());
    notes.push(format!(
        "uncompacted: {reps} runs per session, interleaved, each from the store as built; \
         `ag-prompt -s ID -m script:FILE --tools read`, never compacted (the script has no \
         window); whole turn of {N} steps {} and of 1 step {} on {} chunks, {} and {} on {}",
        ms(med(0, |w| w.0)),
        ms(med(0, |w| w.1)),
        count(big.n),
        ms(med(1, |w| w.0)),
        ms(med(1, |w| w.1)),
        count(small.n)
    ));
}
