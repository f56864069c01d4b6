//! `ag-fork`: forks are O(1). A fork of a 1,000-chunk and of a 1,000,000-chunk session should
//! take about the same whole-process time (less than 2× apart) and grow the database by less
//! than 16 KiB each, where copying the session (the copy-on-fork baseline of other tools:
//! `ag-log cat ID --json`, minus `id`/`session`/`seq`/`ts`, into `ag-log append --new -q`)
//! costs time and space in proportion to its length.
//!
//! Per session: one untimed fork, then [`FORKS`] timed `ag-fork ID -q` runs; the database size
//! (`page_count × page_size` after `PRAGMA wal_checkpoint(TRUNCATE)`) is read before and
//! after them. The copy baseline runs `reps` times on the small session and once on the big
//! one, in the same stores, with its growth measured the same way.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use rusqlite::Connection;

use super::{
    ag, ag_log_path, count, die, median_f, ms, progress, secs, spawn, verdict, Config, Out, Row,
};

/// Forks timed per session (and over which the growth per fork is averaged).
const FORKS: usize = 20;
/// The growth target per fork.
const GROWTH_KIB: f64 = 16.0;

pub fn ag_fork_path() -> PathBuf {
    let p = super::release_dir().join("ag-fork");
    if !p.exists() {
        die(&format!(
            "{} is missing: build it first (benches/run.sh runs cargo build --release --bins)",
            p.display()
        ));
    }
    p
}

fn fork_cmd(home: &Path, cfg_home: &Path, id: &str) -> Command {
    let mut c = Command::new(ag_fork_path());
    c.env("AG_HOME", home)
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", cfg_home)
        .args([id, "-q"]);
    c
}

/// The store's size in bytes once the WAL is folded back into it.
fn db_bytes(home: &Path) -> u64 {
    let conn = Connection::open(home.join("ag.db")).expect("open ag.db");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    let pages: i64 = conn
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    let size: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    (pages * size) as u64
}

/// `{"id":…,"session":…,"seq":N,"turn":…,…,"ts":"…"}` → `{"turn":…,…}`: the export line as
/// input for `append` (the copy gets new ids, seqs and times).
fn strip(line: &str) -> Option<String> {
    let at = line.find(r#""turn":"#)?;
    let end = line.rfind(r#","ts":""#)?;
    let mut s = String::with_capacity(end - at + 3);
    s.push('{');
    s.push_str(&line[at..end]);
    s.push('}');
    Some(s)
}

/// The copy-on-fork baseline, whole pipeline timed: `ag-log cat ID --json | strip | ag-log
/// append --new -q`. Returns seconds and the chunks copied.
fn copy_session(home: &Path, id: &str) -> (f64, u64) {
    let start = Instant::now();
    let mut cat = ag(home, &["cat", id, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| die(&format!("cannot run ag-log cat: {e}")));
    let mut append = Command::new(ag_log_path())
        .env("AG_HOME", home)
        .env("NO_COLOR", "1")
        .args(["append", "--new", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| die(&format!("cannot run ag-log append: {e}")));
    let mut n = 0u64;
    {
        let src = BufReader::with_capacity(1 << 20, cat.stdout.take().unwrap());
        let mut dst = BufWriter::with_capacity(1 << 20, append.stdin.take().unwrap());
        for line in src.lines() {
            let line = line.expect("read cat --json");
            let Some(s) = strip(&line) else {
                die(&format!("unexpected export line: {line}"))
            };
            dst.write_all(s.as_bytes()).unwrap();
            dst.write_all(b"\n").unwrap();
            n += 1;
        }
        dst.flush().unwrap();
    }
    let (a, b) = (cat.wait().unwrap(), append.wait().unwrap());
    if !a.success() || !b.success() {
        die(&format!("the copy pipeline failed: cat {a}, append {b}"));
    }
    (secs(start.elapsed()), n)
}

struct Forks {
    median: f64,
    growth_per_fork: f64,
}

fn forks(home: &Path, cfg_home: &Path, id: &str) -> Forks {
    // One untimed fork first (caches, and a store that already holds a fork).
    spawn(fork_cmd(home, cfg_home, id), None, Out::Null);
    let before = db_bytes(home);
    let times: Vec<f64> = (0..FORKS)
        .map(|_| secs(spawn(fork_cmd(home, cfg_home, id), None, Out::Null).wall))
        .collect();
    let after = db_bytes(home);
    Forks {
        median: median_f(times),
        growth_per_fork: after.saturating_sub(before) as f64 / FORKS as f64,
    }
}

fn kib(bytes: f64) -> String {
    if bytes >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", bytes / 1048576.0)
    } else {
        format!("{:.1} KiB", bytes / 1024.0)
    }
}

/// `small` and `big`: (AG_HOME, session id, chunks).
pub fn run(
    cfg: &Config,
    small: (&Path, &str, u64),
    big: (&Path, &str, u64),
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) {
    let cfg_home = tempfile::tempdir().unwrap();
    let (sn, bn) = (count(small.2), count(big.2));
    let s = forks(small.0, cfg_home.path(), small.1);
    progress(&format!(
        "ag-fork, {sn} session: {} per fork, db +{} per fork",
        ms(s.median),
        kib(s.growth_per_fork)
    ));
    let b = forks(big.0, cfg_home.path(), big.1);
    progress(&format!(
        "ag-fork, {bn} session: {} per fork, db +{} per fork",
        ms(b.median),
        kib(b.growth_per_fork)
    ));
    // The copy baseline: reps times on the small session, once on the big one.
    let mut small_copy = Vec::new();
    let mut small_growth = Vec::new();
    for _ in 0..cfg.reps {
        let before = db_bytes(small.0);
        let (t, n) = copy_session(small.0, small.1);
        if n != small.2 {
            die(&format!("the copy moved {n} chunks, not {}", small.2));
        }
        small_copy.push(t);
        small_growth.push(db_bytes(small.0).saturating_sub(before) as f64);
    }
    let (sc, sg) = (median_f(small_copy), median_f(small_growth));
    progress(&format!(
        "copy baseline, {sn} session: {}, db +{}",
        ms(sc),
        kib(sg)
    ));
    let before = db_bytes(big.0);
    let (bc, n) = copy_session(big.0, big.1);
    if n != big.2 {
        die(&format!("the copy moved {n} chunks, not {}", big.2));
    }
    let bg = db_bytes(big.0).saturating_sub(before) as f64;
    progress(&format!(
        "copy baseline, {bn} session: {}, db +{}",
        ms(bc),
        kib(bg)
    ));

    let ratio = b.median / s.median;
    rows.push(Row {
        figure: format!("ag-fork -q, {bn} session (baseline: the same on a {sn} session)"),
        measured: ms(b.median),
        baseline: ms(s.median),
        ratio: format!("{ratio:.2}"),
        target: "< 2×".into(),
        verdict: verdict(ratio < 2.0),
    });
    let worst = b.growth_per_fork.max(s.growth_per_fork);
    rows.push(Row {
        figure: format!(
            "db growth per fork, {bn} session (baseline: copying it via cat --json | append)"
        ),
        measured: kib(b.growth_per_fork),
        baseline: kib(bg),
        ratio: format!("{:.1e}", b.growth_per_fork / bg.max(1.0)),
        target: "< 16 KiB".into(),
        verdict: verdict(worst < GROWTH_KIB * 1024.0),
    });
    rows.push(Row {
        figure: format!("ag-fork -q vs. copying the session, {bn} (info)"),
        measured: ms(b.median),
        baseline: ms(bc),
        ratio: format!("{:.1e}", b.median / bc),
        target: "-".into(),
        verdict: "-",
    });
    rows.push(Row {
        figure: format!("ag-fork -q vs. copying the session, {sn} (info)"),
        measured: ms(s.median),
        baseline: ms(sc),
        ratio: format!("{:.2}", s.median / sc),
        target: "-".into(),
        verdict: "-",
    });
    notes.push(format!(
        "fork: median of {FORKS} forks per session; db growth per fork {} ({sn}), {} ({bn}), \
         from page_count × page_size after wal_checkpoint(TRUNCATE); the copy baseline \
         (cat --json | strip id/session/seq/ts | append --new -q) took {} and grew the db by {} \
         for {sn} (median of {}), {} and {} for {bn} (once)",
        kib(s.growth_per_fork),
        kib(b.growth_per_fork),
        ms(sc),
        kib(sg),
        cfg.reps,
        ms(bc),
        kib(bg)
    ));
}
