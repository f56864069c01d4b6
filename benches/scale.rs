//! Reads that a session's size must not slow down, whole process, on sessions of 1k, 100k
//! and 1M chunks (÷10 with `--quick`, the 1k one excepted): `ag-log search` with and without
//! `-s` (a word in nearly every chunk, a word in about one chunk in a thousand, a word that is
//! nowhere), `ag-log cat ID --turn T` of a turn in the middle of the session, and a one-step
//! `ag-prompt -s ID -m echo` turn on the session after `ag-log compact` (a turn's end reads the
//! turn's chunks). Each figure on the larger sessions is compared with the same command on the
//! 1k session, in its own store, in the same run: the target is a ratio of at most 1.2.
//!
//! Each store holds one generated session (benches/ag.rs), so a search without `-s` searches
//! that store. The full-text index is brought up to date before the clock starts (the first
//! search after an import pays for it, once; that time is printed). `--sort rank` ranks every
//! match and so grows with them: its row is information.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{
    ag, build_session, count, die, median_f, ms, progress, secs, spawn, verdict, Config, Out, Row,
};

const TARGET_RATIO: f64 = 1.2;

/// One store with one session, and what the figures need of it.
struct Sized {
    n: u64,
    home: PathBuf,
    id: String,
    /// The turn id of a turn in the middle of the session.
    turn: String,
    /// The store's directory.
    _dir: tempfile::TempDir,
}

impl Sized {
    fn build(n: u64, scratch: &Path, salt: u64) -> Sized {
        let dir = tempfile::tempdir().unwrap();
        let (id, took) = build_session(dir.path(), scratch, n, n.div_ceil(100_000), salt);
        progress(&format!(
            "{}-chunk session built in {}",
            count(n),
            ms(secs(took))
        ));
        let home = dir.path();
        let t = std::time::Instant::now();
        // The index catches up on the first search: untimed here.
        let mut warm = ag(home, &["search", "zebrafish"]);
        warm.env("AG_BENCH_EXIT", "1");
        spawn(warm, None, Out::Null);
        progress(&format!(
            "{}-chunk session indexed in {}",
            count(n),
            ms(secs(t.elapsed()))
        ));
        Sized {
            n,
            home: home.to_path_buf(),
            turn: turn_at(home, &id, (n / 2) as i64),
            id,
            _dir: dir,
        }
    }
}

fn turn_at(home: &Path, id: &str, seq: i64) -> String {
    rusqlite::Connection::open(home.join("ag.db"))
        .and_then(|c| {
            c.query_row(
                "SELECT turn_id FROM chunks WHERE session_id = ?1 AND seq = ?2",
                rusqlite::params![id, seq],
                |r| r.get(0),
            )
        })
        .unwrap_or_else(|e| die(&format!("no chunk {seq} in session {id}: {e}")))
}

/// The median whole-process time of `cmd()`, after one untimed run.
fn time(reps: usize, cmd: impl Fn() -> Command) -> f64 {
    spawn(cmd(), None, Out::Null);
    median_f(
        (0..reps)
            .map(|_| secs(spawn(cmd(), None, Out::Null).wall))
            .collect(),
    )
}

fn prompt_turn(home: &Path, xdg: &Path, id: &str) -> Command {
    let mut c = Command::new(super::prompt::ag_prompt_path());
    c.env("AG_HOME", home)
        .env("XDG_CONFIG_HOME", xdg)
        .env("NO_COLOR", "1")
        .args(["-s", id, "-m", "echo", "-q", "go on"]);
    c
}

/// The figures of one session; `home` is where its store is.
fn figures(reps: usize, s: &Sized, xdg: &Path) -> Vec<(String, f64)> {
    let (home, id) = (s.home.as_path(), s.id.as_str());
    let mut out = Vec::new();
    for (what, word) in [
        ("a word in nearly every chunk", "session"),
        ("a word in ~1 chunk in 1,000", "mod42"),
        ("a word that is nowhere", "zebrafish"),
    ] {
        let exit = if word == "zebrafish" { "1" } else { "0" };
        out.push((
            format!("search {word} ({what})"),
            time(reps, || {
                let mut c = ag(home, &["search", word, "--limit", "10", "--json"]);
                c.env("AG_BENCH_EXIT", exit);
                c
            }),
        ));
        out.push((
            format!("search -s ID {word} ({what})"),
            time(reps, || {
                let mut c = ag(home, &["search", "-s", id, word, "--limit", "10", "--json"]);
                c.env("AG_BENCH_EXIT", exit);
                c
            }),
        ));
    }
    out.push((
        "cat ID --turn T --json (a turn in the middle)".into(),
        time(reps, || ag(home, &["cat", id, "--turn", &s.turn, "--json"])),
    ));
    out.push((
        "search session --sort rank (info: ranks every match)".into(),
        time(reps.min(3), || {
            ag(
                home,
                &["search", "session", "--sort", "rank", "--limit", "10"],
            )
        }),
    ));
    // A one-step turn on the session compacted near its end.
    let compact = spawn(
        ag(
            home,
            &["compact", id, "--summary", "the bench session so far"],
        ),
        None,
        Out::Null,
    );
    if compact.wall.is_zero() {
        die("ag-log compact did not run");
    }
    out.push((
        "ag-prompt -s ID -m echo, one step after a compaction (turn end)".into(),
        time(reps, || prompt_turn(home, xdg, id)),
    ));
    out
}

pub fn run(cfg: &Config, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let scratch = tempfile::tempdir().unwrap();
    let xdg = tempfile::tempdir().unwrap();
    let reps = cfg.reps * 2 + 1;
    let mid_n = if cfg.quick { 10_000 } else { 100_000 };
    let small = Sized::build(cfg.small_n, scratch.path(), 21);
    let mid = Sized::build(mid_n, scratch.path(), 22);
    // Its own store, built as the others are: the store the other scenarios share holds more
    // by now (a second copy of its session, forks, turns).
    let large = Sized::build(cfg.big_n, scratch.path(), 23);
    let base = figures(reps, &small, xdg.path());
    let at_mid = figures(reps, &mid, xdg.path());
    let at_big = figures(reps, &large, xdg.path());
    for (sized, got) in [(&mid, &at_mid), (&large, &at_big)] {
        for ((what, a), (_, b)) in got.iter().zip(&base) {
            let info = what.contains("(info");
            let ratio = a / b;
            rows.push(Row {
                figure: format!(
                    "{what}, {} session (baseline: {} session)",
                    count(sized.n),
                    count(small.n)
                ),
                measured: ms(*a),
                baseline: ms(*b),
                ratio: format!("{ratio:.2}"),
                target: if info {
                    "-".into()
                } else {
                    "ratio ≤ 1.2".into()
                },
                verdict: if info {
                    "-"
                } else {
                    verdict(ratio <= TARGET_RATIO)
                },
            });
        }
    }
    progress(&format!(
        "search -s on {}: {}, on {}: {}",
        count(cfg.big_n),
        ms(at_big[1].1),
        count(cfg.small_n),
        ms(base[1].1)
    ));
    notes.push(format!(
        "scale: whole-process times, median of {reps}; sessions of {}, {} and {} chunks, each \
         alone in its store; searches with --limit 10; the turn is `ag-prompt -s ID -m echo` \
         after `ag-log compact ID --summary …`",
        count(cfg.small_n),
        count(mid_n),
        count(cfg.big_n)
    ));
}
