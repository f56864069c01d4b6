//! The store under faults and load, end to end: a file that is not SQLite, a store from a newer
//! version, a read-only or missing home, private file modes, migrations, and concurrent
//! writers that all land whole.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::log_append::*;
use crate::support::{bin, chunk, Run, TestEnv};

// ---------------------------------------------------------------------------------------------
// the store's own failure modes

#[test]
fn a_database_file_that_is_not_sqlite_is_refused_and_left_alone() {
    let env = TestEnv::new();
    std::fs::create_dir_all(&env.home).unwrap();
    let garbage = b"this is not an SQLite file, just some text\n".repeat(200);
    std::fs::write(env.db(), &garbage).unwrap();
    for args in [&["append", "--new", "hello"][..], &["ls"], &["cat", "last"]] {
        let run = env.log(args).code(1);
        assert_eq!(run.stdout, "");
        assert!(
            run.stderr.contains(&env.db().display().to_string()),
            "names the file: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("not an SQLite database"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("not an ag store"), "{}", run.stderr);
    }
    assert_eq!(
        std::fs::read(env.db()).unwrap(),
        garbage,
        "the file is unchanged"
    );
    let mut names: Vec<String> = std::fs::read_dir(&env.home)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["ag.db"], "no -wal, -shm or journal left next to it");
}

#[test]
fn a_read_only_store_refuses_appends_and_changes_nothing() {
    let env = TestEnv::new();
    let s = env.new_session("ro", "before");
    let bytes = std::fs::read(env.db()).unwrap();
    let enforced = permission_bits_are_enforced(&env);
    // Root ignores permission bits. Drop to `nobody` with setpriv (util-linux) and give it the
    // store, so the bits mean something again. Without setpriv there is no libc-free way to
    // drop root, and the read-only case cannot be made: the uncreatable-home test below still
    // covers the "home is not writable" error path.
    if !enforced && !setpriv_available() {
        eprintln!("skipped: running as root without setpriv; permission bits cannot be enforced");
        return;
    }
    let run_as = |args: &[&str]| -> Run {
        let mut cmd = if enforced {
            env.command("ag-log")
        } else {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(bin("ag-log"));
            c.env_clear();
            for (k, v) in &env.env {
                c.env(k, v);
            }
            c.current_dir(&env.cwd);
            c
        };
        let out = cmd.args(args).stdin(Stdio::null()).output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    if !enforced {
        // nobody must reach the home through the temporary directory and own the store.
        chmod(env.dir.path(), 0o755);
        chmod(&env.cwd, 0o755);
        std::os::unix::fs::chown(&env.home, Some(65534), Some(65534)).unwrap();
        std::os::unix::fs::chown(env.db(), Some(65534), Some(65534)).unwrap();
        // Sanity: nobody can read it while it is writable.
        let run = run_as(&["append", "-s", &s, "as nobody"]);
        assert_eq!(run.code, 0, "setpriv run failed: {}", run.stderr);
    }
    let bytes_writable = std::fs::read(env.db()).unwrap();
    assert!(enforced || bytes_writable != bytes);
    // counts() reads through a read-only connection, which cannot remove SQLite's -wal and -shm
    // when it closes: the store is read-only *with* those files present, as it is whenever
    // some reader (a `tail -f`) has it open. The write then fails inside the transaction
    // rather than at BEGIN, and must still be reported as a read-only store.
    let before = counts(&env);
    assert!(
        env.home.join("ag.db-wal").exists(),
        "the scenario needs a leftover -wal"
    );
    chmod(&env.db(), 0o400);
    chmod(&env.home, 0o500);

    let append = run_as(&["append", "-s", &s, "after"]);
    let create = run_as(&["append", "--new", "another"]);
    chmod(&env.home, 0o700);
    chmod(&env.db(), 0o600);
    for run in [&append, &create] {
        assert_eq!(
            run.code, 1,
            "stdout: {}\nstderr: {}",
            run.stdout, run.stderr
        );
        assert_eq!(run.stdout, "");
        assert!(run.stderr.contains("read-only"), "{}", run.stderr);
        assert!(
            run.stderr.contains(&env.db().display().to_string()),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("hint:"), "{}", run.stderr);
    }
    assert_eq!(
        std::fs::read(env.db()).unwrap(),
        bytes_writable,
        "the store file is unchanged"
    );
    assert_eq!(counts(&env), before);
}

#[test]
fn a_home_that_cannot_be_created_is_a_clear_error() {
    let mut env = TestEnv::new();
    // A regular file where the home should be: no one, root included, can make it a directory.
    let file = env.dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    env.set("AG_HOME", file.join("home").to_string_lossy());
    let run = env.log(&["append", "--new", "hello"]).code(1);
    assert!(
        run.stderr.contains("cannot create the home directory"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&file.join("home").display().to_string()),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint:"), "{}", run.stderr);
    assert_eq!(std::fs::read(&file).unwrap(), b"x");

    // /proc refuses new directories even to root.
    if Path::new("/proc/self").is_dir() {
        env.set("AG_HOME", "/proc/self/ag-home-test");
        let run = env.log(&["append", "--new", "hello"]).code(1);
        assert!(
            run.stderr
                .contains("cannot create the home directory /proc/self/ag-home-test"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_store_written_by_a_newer_version_is_refused() {
    let env = TestEnv::new();
    let s = env.new_session("old", "hello");
    let known = user_version(&env);
    assert!(known >= 1);
    {
        let conn = rusqlite::Connection::open(env.db()).unwrap();
        conn.pragma_update(None, "user_version", 999).unwrap();
    }
    for args in [&["ls"][..], &["append", "-s", &s, "more"], &["cat", &s]] {
        let run = env.log(args).code(1);
        assert_eq!(run.stdout, "");
        assert!(run.stderr.contains("newer"), "{}", run.stderr);
        assert!(run.stderr.contains("schema version 999"), "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("knows up to {known}")),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains(&env.db().display().to_string()),
            "{}",
            run.stderr
        );
    }
    assert_eq!(user_version(&env), 999, "not downgraded");
    assert_eq!(env.sqlite_count("SELECT COUNT(*) FROM chunks"), 1);
}

#[test]
fn reopening_a_current_store_changes_nothing() {
    let env = TestEnv::new();
    let s = env.new_session("again", "hello");
    let (version, schema) = (user_version(&env), schema_sql(&env));
    for _ in 0..2 {
        let ls = env.log(&["ls", "--json"]).ok().json_lines();
        assert_eq!(ls.len(), 1);
        assert_eq!(ls[0]["id"], s.as_str());
        assert_eq!(user_version(&env), version);
        assert_eq!(schema_sql(&env), schema);
    }
    assert_eq!(env.chunks(&s).len(), 1);
}

#[test]
fn the_home_and_its_files_are_private_whatever_the_umask() {
    let env = TestEnv::new();
    assert!(bash(&env, "umask 000; exec ag-log append -q --new private")
        .status()
        .unwrap()
        .success());
    assert_eq!(mode(&env.home), 0o700, "home");
    assert_eq!(mode(&env.db()), 0o600, "ag.db");

    // Keep a reader on the store (tail -f) so SQLite's -wal and -shm outlive the next writer.
    let mut tail = bash(&env, "umask 000; exec ag-log tail -f --json -n 1 last")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(tail.stdout.take().unwrap()).lines();
    let first = lines.next();
    let ok = bash(&env, "umask 000; exec ag-log append -q -s last more")
        .status()
        .unwrap()
        .success();
    let mut checked = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let p = env.home.join(format!("ag.db{suffix}"));
        if p.exists() {
            checked.push((suffix, mode(&p)));
        }
    }
    let _ = tail.kill();
    let _ = tail.wait();
    assert!(first.is_some_and(|l| l.is_ok()), "tail -f printed nothing");
    assert!(ok);
    assert!(checked.iter().all(|(_, m)| *m == 0o600), "{checked:?}");
    assert!(
        checked.iter().any(|(s, _)| *s == "-wal"),
        "expected a -wal file while a reader is open: {checked:?}"
    );
    assert_eq!(mode(&env.home), 0o700);
}

// ---------------------------------------------------------------------------------------------
// concurrency

#[test]
fn concurrent_appenders_get_gapless_seqs_and_keep_their_own_order() {
    const PROCS: usize = 8;
    const BATCHES: usize = 10;
    const PER_BATCH: usize = 100;
    let env = TestEnv::new();
    let s = env.new_session("busy", "start");
    let barrier = std::sync::Barrier::new(PROCS);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for p in 0..PROCS {
            let (env, s, barrier) = (&env, &s, &barrier);
            scope.spawn(move || {
                let batches: Vec<String> = (0..BATCHES)
                    .map(|b| {
                        let lines: Vec<Value> = (b * PER_BATCH..(b + 1) * PER_BATCH)
                            .map(|i| chunk::assistant(&format!("p{p}-{i}")))
                            .collect();
                        ndjson(&lines)
                    })
                    .collect();
                barrier.wait();
                for batch in batches {
                    env.log_stdin(&["append", "-q", "-s", s], batch).ok();
                }
            });
        }
    });
    assert!(started.elapsed() < Duration::from_secs(60));

    let view = env.chunks(&s);
    let total = PROCS * BATCHES * PER_BATCH + 1;
    let seqs: Vec<i64> = view.iter().map(|c| c["seq"].as_i64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=total as i64).collect::<Vec<_>>(),
        "seqs are 1..={total}, no gap, no duplicate"
    );
    assert_eq!(
        env.sqlite_count("SELECT COUNT(DISTINCT id) FROM chunks"),
        total as i64
    );

    // Each process's chunks in its own order; each batch one contiguous run with its own turn.
    let mut next: HashMap<usize, usize> = HashMap::new();
    let mut batch_seqs: HashMap<(usize, usize), Vec<i64>> = HashMap::new();
    let mut batch_turns: HashMap<(usize, usize), BTreeSet<String>> = HashMap::new();
    for c in &view[1..] {
        let text = c["data"]["text"].as_str().unwrap();
        let (p, i) = text
            .strip_prefix('p')
            .and_then(|t| t.split_once('-'))
            .unwrap();
        let (p, i): (usize, usize) = (p.parse().unwrap(), i.parse().unwrap());
        let want = next.entry(p).or_insert(0);
        assert_eq!(i, *want, "process {p} out of order at seq {}", c["seq"]);
        *want += 1;
        batch_seqs
            .entry((p, i / PER_BATCH))
            .or_default()
            .push(c["seq"].as_i64().unwrap());
        batch_turns
            .entry((p, i / PER_BATCH))
            .or_default()
            .insert(c["turn"].as_str().unwrap().to_string());
    }
    assert!(next.values().all(|n| *n == BATCHES * PER_BATCH), "{next:?}");
    for (key, seqs) in &batch_seqs {
        assert_eq!(
            seqs.last().unwrap() - seqs[0],
            PER_BATCH as i64 - 1,
            "batch {key:?} was split: {seqs:?}"
        );
    }
    let turns: BTreeSet<&String> = batch_turns
        .values()
        .map(|t| {
            assert_eq!(t.len(), 1);
            t.iter().next().unwrap()
        })
        .collect();
    assert_eq!(turns.len(), PROCS * BATCHES, "one turn per invocation");
}

/// Reading commands on a home with no store yet answer as for an empty one and create
/// nothing: no directory, no database.
#[test]
fn reading_commands_create_no_store() {
    let env = TestEnv::new();
    let home = env.home.clone();
    let _ = std::fs::remove_dir_all(&home);
    env.log(&["ls"]).ok();
    env.log(&["ls", "--json"]).ok();
    assert_eq!(env.log(&["cat", "last"]).code, 4);
    assert_eq!(env.log(&["show", "parser"]).code, 4);
    assert_eq!(env.log(&["search", "anything"]).code, 1);
    env.run("ag-room", &["who"]).ok();
    assert!(
        !home.exists(),
        "a reading command created {}",
        home.display()
    );
    // The first write makes it.
    env.log(&["append", "--new", "hello"]).ok();
    assert!(home.join("ag.db").exists());
}
