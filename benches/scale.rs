//! Reads that a session's size must not slow down, whole process, on sessions of 1k, 100k
//! and 1M chunks (÷10 with `--quick`, the 1k one excepted): `ag-log search` with and without
//! `-s` (a word in nearly every chunk, a word in about one chunk in a thousand, a word that is
//! nowhere), `ag-log cat ID --turn T` of a turn in the middle of the session, and a one-step
//! `ag-prompt -s ID -m echo` turn on the session after `ag-log compact` (a turn's end reads the
//! turn's chunks). Each figure on the larger sessions is compared with the same command on the
//! 1k session, in its own store, in the same run: the target is a ratio of at most 1.2. The
//! three sessions are timed in turn on every repetition (see [`measure`]), and the CPU time of
//! the same runs is printed beside, as information.
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

fn prompt_turn(home: &Path, xdg: &Path, id: &str) -> Command {
    let mut c = Command::new(super::prompt::ag_prompt_path());
    c.env("AG_HOME", home)
        .env("XDG_CONFIG_HOME", xdg)
        .env("NO_COLOR", "1")
        .args(["-s", id, "-m", "echo", "-q", "go on"]);
    c
}

/// One command, as it is run on each session.
struct Probe<'a> {
    what: String,
    /// Information only: no target.
    info: bool,
    /// At most this many timed runs per session.
    cap: usize,
    cmd: Box<dyn Fn(&Sized) -> Command + 'a>,
}

/// Medians of one probe on each session: wall time and CPU time (user plus system), seconds.
struct Figure {
    wall: f64,
    cpu: f64,
}

/// Time every probe on every session, interleaved: each repetition runs each probe once per
/// session, the sessions in turn (smallest first, then largest first on the next repetition),
/// so a slow stretch of the machine lands on every size alike instead of on whichever size was
/// being timed then. One untimed run of each first. Returns `[probe][session]`.
fn measure(reps: usize, probes: &[Probe], sizes: &[&Sized]) -> Vec<Vec<Figure>> {
    let mut wall = vec![vec![Vec::new(); sizes.len()]; probes.len()];
    let mut cpu = wall.clone();
    for p in probes {
        for s in sizes {
            spawn((p.cmd)(s), None, Out::Null);
        }
    }
    for r in 0..reps {
        for (i, p) in probes.iter().enumerate() {
            if r >= p.cap {
                continue;
            }
            let order: Vec<usize> = if r % 2 == 0 {
                (0..sizes.len()).collect()
            } else {
                (0..sizes.len()).rev().collect()
            };
            for j in order {
                let run = spawn((p.cmd)(sizes[j]), None, Out::Null);
                wall[i][j].push(secs(run.wall));
                cpu[i][j].push(secs(run.cpu));
            }
        }
    }
    wall.into_iter()
        .zip(cpu)
        .map(|(w, c)| {
            w.into_iter()
                .zip(c)
                .map(|(w, c)| Figure {
                    wall: median_f(w),
                    cpu: median_f(c),
                })
                .collect()
        })
        .collect()
}

/// The reads: searches with and without `-s`, a turn's chunks.
fn reads<'a>(reps: usize) -> Vec<Probe<'a>> {
    let mut out = Vec::new();
    for (what, word) in [
        ("a word in nearly every chunk", "session"),
        ("a word in ~1 chunk in 1,000", "mod42"),
        ("a word that is nowhere", "zebrafish"),
    ] {
        let exit = if word == "zebrafish" { "1" } else { "0" };
        out.push(Probe {
            what: format!("search {word} ({what})"),
            info: false,
            cap: reps,
            cmd: Box::new(move |s: &Sized| {
                let mut c = ag(&s.home, &["search", word, "--limit", "10", "--json"]);
                c.env("AG_BENCH_EXIT", exit);
                c
            }),
        });
        out.push(Probe {
            what: format!("search -s ID {word} ({what})"),
            info: false,
            cap: reps,
            cmd: Box::new(move |s: &Sized| {
                let mut c = ag(
                    &s.home,
                    &["search", "-s", &s.id, word, "--limit", "10", "--json"],
                );
                c.env("AG_BENCH_EXIT", exit);
                c
            }),
        });
    }
    out.push(Probe {
        what: "cat ID --turn T --json (a turn in the middle)".into(),
        info: false,
        cap: reps,
        cmd: Box::new(|s: &Sized| ag(&s.home, &["cat", &s.id, "--turn", &s.turn, "--json"])),
    });
    out.push(Probe {
        what: "search session --sort rank (info: ranks every match)".into(),
        info: true,
        cap: 3,
        cmd: Box::new(|s: &Sized| {
            ag(
                &s.home,
                &["search", "session", "--sort", "rank", "--limit", "10"],
            )
        }),
    });
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
    let sizes = [&small, &mid, &large];
    let mut probes = reads(reps);
    let mut figures = measure(reps, &probes, &sizes);
    // A one-step turn on each session compacted near its end.
    for s in sizes {
        let compact = spawn(
            ag(
                &s.home,
                &["compact", &s.id, "--summary", "the bench session so far"],
            ),
            None,
            Out::Null,
        );
        if compact.wall.is_zero() {
            die("ag-log compact did not run");
        }
    }
    let xdg_path = xdg.path();
    let turn = [Probe {
        what: "ag-prompt -s ID -m echo, one step after a compaction (turn end)".into(),
        info: false,
        cap: reps,
        cmd: Box::new(move |s: &Sized| prompt_turn(&s.home, xdg_path, &s.id)),
    }];
    figures.extend(measure(reps, &turn, &sizes));
    probes.extend(turn);
    // CPU time of the same runs, as information: unlike the wall time it leaves out waiting
    // for a core or for the disk, so it shows whether the work grows where the wall time moves.
    let mut cpu_spread = Vec::new();
    for (j, sized) in sizes.iter().enumerate().skip(1) {
        let mut lo = f64::INFINITY;
        let mut hi = 0f64;
        for (p, f) in probes.iter().zip(&figures) {
            let ratio = f[j].wall / f[0].wall;
            let cpu_ratio = f[j].cpu / f[0].cpu;
            if !p.info {
                lo = lo.min(cpu_ratio);
                hi = hi.max(cpu_ratio);
            }
            rows.push(Row {
                figure: format!(
                    "{}, {} session (baseline: {} session)",
                    p.what,
                    count(sized.n),
                    count(small.n)
                ),
                measured: ms(f[j].wall),
                baseline: ms(f[0].wall),
                ratio: format!("{ratio:.2}"),
                target: if p.info {
                    "-".into()
                } else {
                    "ratio ≤ 1.2".into()
                },
                verdict: if p.info {
                    "-"
                } else {
                    verdict(ratio <= TARGET_RATIO)
                },
            });
        }
        cpu_spread.push(format!("{}: {lo:.2}–{hi:.2}", count(sized.n)));
    }
    progress(&format!(
        "search -s on {}: {}, on {}: {}",
        count(cfg.big_n),
        ms(figures[1][2].wall),
        count(cfg.small_n),
        ms(figures[1][0].wall)
    ));
    notes.push(format!(
        "scale: whole-process times, median of {reps}, the three sessions timed in turn on \
         each repetition; sessions of {}, {} and {} chunks, each alone in its store; searches \
         with --limit 10; the turn is `ag-prompt -s ID -m echo` after `ag-log compact ID \
         --summary …`. CPU time (user + system) of the same runs against the {} session, \
         lowest–highest over the rows with a target: {}",
        count(cfg.small_n),
        count(mid_n),
        count(cfg.big_n),
        count(cfg.small_n),
        cpu_spread.join(", ")
    ));
}
