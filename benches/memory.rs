//! Peak memory over the 1M-chunk session (scenarios `foldrss` and `turnrss`).
//!
//! `foldrss`: `ag-log fold ID` in each dialect writes the request while it reads the log, so
//! its peak RSS should not grow with the session: target ≤ 64 MiB, against `ag-log cat ID
//! --json` of the same session in the same run (which streams as well). Each fold's output
//! goes to a file and is checked to be one JSON value (parsed as it is read, not held).
//!
//! `turnrss`: an `ag-prompt` turn on the session, offline (`-m echo`, given a 200k-token
//! window in the config so the session is over it), on a copy of the store: the first turn
//! prunes and compacts before its request, the second starts from the compaction. The
//! baseline is the same turn on a 1,000-chunk session (under its window). Information rows:
//! they say what a turn holds.

use std::io::BufReader;

use serde::de::IgnoredAny;
use serde::Deserialize;
use std::path::Path;
use std::process::Command;

use super::{ag, build_session, count, die, median_f, mib, ms, progress, secs, spawn};
use super::{verdict, Config, Out, Row};

const TARGET_KIB: f64 = 64.0 * 1024.0;

/// Peak RSS (KiB) and wall time (s) of `ag-log ARGS` with stdout to `out`, median of `reps`.
fn peak(home: &Path, args: &[&str], out: &Path, reps: usize) -> (f64, f64) {
    let runs: Vec<_> = (0..reps)
        .map(|_| spawn(ag(home, args), None, Out::File(out.to_path_buf())))
        .collect();
    (
        median_f(runs.iter().map(|r| r.max_rss_kib as f64).collect()),
        median_f(runs.iter().map(|r| secs(r.wall)).collect()),
    )
}

/// The output is one JSON value (parsed as it is read); its size in bytes.
fn check_json(path: &Path) -> u64 {
    let f = std::fs::File::open(path).expect("open the fold");
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, f));
    IgnoredAny::deserialize(&mut de)
        .and_then(|_| de.end())
        .unwrap_or_else(|e| die(&format!("the fold is not one JSON value: {e}")));
    std::fs::metadata(path).unwrap().len()
}

pub fn fold(cfg: &Config, home: &Path, id: &str, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("out.json");
    let reps = cfg.reps.min(3);
    let (cat, cat_wall) = peak(home, &["cat", id, "--json"], &out, reps);
    for dialect in ["anthropic", "openai"] {
        let (rss, wall) = peak(home, &["fold", id, "--dialect", dialect], &out, reps);
        let bytes = check_json(&out);
        progress(&format!(
            "fold --dialect {dialect}: {} in {}; cat --json {} in {}",
            mib(rss),
            ms(wall),
            mib(cat),
            ms(cat_wall)
        ));
        rows.push(Row {
            figure: format!(
                "max RSS, fold --dialect {dialect} of {} chunks (baseline: cat --json of it)",
                count(cfg.big_n)
            ),
            measured: mib(rss),
            baseline: mib(cat),
            ratio: format!("{:.2}", rss / cat),
            target: "≤ 64 MiB".into(),
            verdict: verdict(rss <= TARGET_KIB),
        });
        notes.push(format!(
            "fold --dialect {dialect} of {} chunks: {:.0} MiB of JSON in {}",
            count(cfg.big_n),
            bytes as f64 / 1048576.0,
            ms(wall)
        ));
    }
}

/// A home holding a copy of `from`'s store (its WAL folded in first).
fn copy_home(from: &Path) -> tempfile::TempDir {
    rusqlite::Connection::open(from.join("ag.db"))
        .and_then(|c| c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())))
        .expect("checkpoint the store");
    let to = tempfile::tempdir().unwrap();
    std::fs::copy(from.join("ag.db"), to.path().join("ag.db")).expect("copy the store");
    to
}

fn turn_cmd(home: &Path, xdg: &Path, id: &str) -> Command {
    let mut c = Command::new(super::prompt::ag_prompt_path());
    c.env("AG_HOME", home)
        .env("XDG_CONFIG_HOME", xdg)
        .env("NO_COLOR", "1")
        .args(["-s", id, "-m", "echo", "-q", "go on"]);
    c
}

pub fn turn(cfg: &Config, home: &Path, id: &str, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let xdg = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(xdg.path().join("ag")).unwrap();
    std::fs::write(
        xdg.path().join("ag/config.toml"),
        "[models.echo]\ncontext_window = 200000\n",
    )
    .unwrap();
    let big = copy_home(home);
    let first = spawn(turn_cmd(big.path(), xdg.path(), id), None, Out::Null);
    let second = spawn(turn_cmd(big.path(), xdg.path(), id), None, Out::Null);
    let compactions = rusqlite::Connection::open(big.path().join("ag.db"))
        .and_then(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM chunks WHERE session_id = ?1 AND type = 'system' \
                 AND json_extract(data_json, '$.kind') = 'compaction'",
                [id],
                |r| r.get::<_, i64>(0),
            )
        })
        .unwrap();
    if compactions != 1 {
        die(&format!(
            "the first turn on the {}-chunk session left {compactions} compactions, not 1",
            count(cfg.big_n)
        ));
    }
    drop(big);
    let small_home = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let (small_id, _) = build_session(small_home.path(), scratch.path(), cfg.small_n, 1, 15);
    let small = median_f(
        (0..cfg.reps.min(3))
            .map(|_| {
                spawn(
                    turn_cmd(small_home.path(), xdg.path(), &small_id),
                    None,
                    Out::Null,
                )
                .max_rss_kib as f64
            })
            .collect(),
    );
    let (r1, r2) = (first.max_rss_kib as f64, second.max_rss_kib as f64);
    progress(&format!(
        "turn on {}: first (compacts) {} in {}, second {}; on {}: {}",
        count(cfg.big_n),
        mib(r1),
        ms(secs(first.wall)),
        mib(r2),
        count(cfg.small_n),
        mib(small)
    ));
    for (what, rss) in [("first turn, which compacts", r1), ("the next turn", r2)] {
        rows.push(Row {
            figure: format!(
                "max RSS, ag-prompt -m echo on {} chunks over a 200k window: {what} (baseline: a turn on {} chunks) (info)",
                count(cfg.big_n),
                count(cfg.small_n)
            ),
            measured: mib(rss),
            baseline: mib(small),
            ratio: format!("{:.1}", rss / small),
            target: "-".into(),
            verdict: "-",
        });
    }
    notes.push(format!(
        "turn on {} chunks: the first (prune, compaction by echo, request) took {}",
        count(cfg.big_n),
        ms(secs(first.wall))
    ));
}
