//! At the terminal and in a pipe: `ag-log ls` prints a table that fits the terminal on a
//! terminal and tab-separated rows in a pipe, `-q` prints ids only, and `--here`, `--kind`,
//! `--since` choose the sessions; a directory column says where each one lives.

use crate::support::{Run, TestEnv};

/// `ag-log ARGS` on a pseudo-terminal `columns` wide (util-linux `script`).
fn on_terminal(env: &TestEnv, args: &str, columns: u16) -> Run {
    let cmd = format!("{} {args}", crate::support::bin("ag-log").display());
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .env("COLUMNS", columns.to_string())
        .env("TERM", "xterm")
        .current_dir(&env.cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1) from util-linux");
    Run::from_output(out)
}

fn append_in(env: &TestEnv, dir: &std::path::Path, title: &str) -> String {
    let out = env
        .command("ag-log")
        .current_dir(dir)
        .args(["append", "--new", "-q", "--title", title, "hello"])
        .output()
        .unwrap();
    let run = Run::from_output(out).ok();
    run.stdout.trim().to_string()
}

#[test]
fn ls_in_a_pipe_prints_tab_separated_rows_and_q_prints_ids() {
    let env = TestEnv::new();
    let sub = env.cwd.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let here = append_in(&env, &env.cwd, "here\tone");
    let below = append_in(&env, &sub, "below");
    let run = env.log(&["ls"]).ok();
    let rows: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(rows.len(), 2, "no header: {}", run.stdout);
    assert!(rows.iter().all(|r| r.len() == 7), "{rows:?}");
    // Newest first; a tab in a title cannot shift the columns.
    assert_eq!(rows[0][1], "below");
    assert_eq!(rows[0][6], "./sub");
    assert_eq!(rows[1][1], "here one");
    assert_eq!(rows[1][6], ".");
    let handle = env.log(&["show", &here, "--json"]).ok().json()["handle"].clone();
    assert_eq!(rows[1][0], handle);

    let ids = env.log(&["ls", "-q"]).ok();
    assert_eq!(ids.stdout, format!("{below}\n{here}\n"));
    let ids = env.log(&["ls", "-q", "--here"]).ok();
    assert_eq!(ids.stdout, format!("{here}\n"));
}

#[test]
fn ls_chooses_by_kind_and_age() {
    let mut env = TestEnv::new();
    let day_ago = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64)
        - 86_400_000;
    env.set("AG_FAKE_NOW_MS", day_ago.to_string());
    let old = append_in(&env, &env.cwd, "old");
    env.env.retain(|(k, _)| k != "AG_FAKE_NOW_MS");
    let new = append_in(&env, &env.cwd, "new");
    assert_eq!(
        env.log(&["ls", "-q", "--since", "2h"]).ok().stdout,
        format!("{new}\n")
    );
    assert_eq!(
        env.log(&["ls", "-q", "--since", "2 days"]).ok().stdout,
        format!("{new}\n{old}\n")
    );
    assert_eq!(
        env.log(&["ls", "-q", "--since", "2000-01-01"])
            .ok()
            .stdout
            .lines()
            .count(),
        2
    );
    let bad = env.log(&["ls", "--since", "yesterdayish"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("neither a duration"), "{}", bad.stderr);

    env.log(&["ls", "--kind", "chat", "-q"]).ok();
    let none = env.log(&["ls", "--kind", "subagent"]).ok();
    assert_eq!(none.stdout, "");
    assert!(none.stderr.contains("no sessions match"), "{}", none.stderr);
    assert_eq!(env.log(&["ls", "--kind", "robot"]).code, 2);
}

#[test]
fn ls_on_a_terminal_fits_its_width_with_a_header() {
    let env = TestEnv::new();
    append_in(
        &env,
        &env.cwd,
        "a rather long title that cannot possibly fit in a narrow terminal window at all",
    );
    let run = on_terminal(&env, "ls", 60);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(
        lines[0].contains("TITLE") && lines[0].contains("DIR"),
        "{}",
        run.stdout
    );
    for l in &lines {
        assert!(
            l.chars().count() <= 60,
            "{} chars: {l:?}",
            l.chars().count()
        );
    }
    assert!(run.stdout.contains('…'), "the title is cut: {}", run.stdout);
    let wide = on_terminal(&env, "ls", 200);
    assert!(wide.stdout.contains("at all"), "{}", wide.stdout);
}

/// `ag-log ARGS` on a pseudo-terminal with these variables changed (`None` removes one).
fn on_terminal_with(env: &TestEnv, args: &str, vars: &[(&str, Option<&str>)]) -> Run {
    let cmd = format!("{} {args}", crate::support::bin("ag-log").display());
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &cmd, "/dev/null"])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&env.cwd)
        .stdin(std::process::Stdio::null());
    for (k, v) in vars {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    Run::from_output(c.output().expect("script(1) from util-linux"))
}

#[test]
fn colour_follows_the_terminal_no_color_term_dumb_and_the_flag() {
    let env = TestEnv::new();
    let id = env.new_session("colours", "hello");
    let cat = format!("cat {id}");
    let esc = |r: &Run| r.stdout.contains('\u{1b}');
    let xterm = [("NO_COLOR", None), ("TERM", Some("xterm"))];
    assert!(
        esc(&on_terminal_with(&env, &cat, &xterm)),
        "a terminal gets colour"
    );
    let no_color = [("NO_COLOR", Some("1")), ("TERM", Some("xterm"))];
    assert!(!esc(&on_terminal_with(&env, &cat, &no_color)), "NO_COLOR");
    let dumb = [("NO_COLOR", None), ("TERM", Some("dumb"))];
    assert!(!esc(&on_terminal_with(&env, &cat, &dumb)), "TERM=dumb");
    let never = format!("{cat} --color never");
    assert!(
        !esc(&on_terminal_with(&env, &never, &xterm)),
        "--color never"
    );
    // In a pipe: none, unless asked for.
    assert!(!env.log(&["cat", &id]).ok().stdout.contains('\u{1b}'));
    assert!(env
        .log(&["cat", &id, "--color", "always"])
        .ok()
        .stdout
        .contains('\u{1b}'));
}

/// Long work says so on a terminal, and never in a pipe: the first search after a large
/// append brings the index up to date under a spinner; an import of several files shows a
/// bar; with -q, or once the index is current, nothing.
#[test]
fn long_work_shows_progress_on_a_terminal_only() {
    let env = TestEnv::new();
    let s = env.new_session("big", "hello");
    let lines: String = (0..21_000)
        .map(|i| {
            format!(
                "{{\"role\":\"assistant\",\"type\":\"text\",\"data\":{{\"text\":\"word {i}\"}}}}\n"
            )
        })
        .collect();
    env.log_stdin(&["append", "-s", &s, "-q"], lines).ok();
    let piped = env.log(&["search", "zebra", "-s", &s]);
    assert!(!piped.stderr.contains("index"), "{}", piped.stderr);
    // The same backlog again, on a terminal.
    env.log_stdin(
        &["append", "-s", &s, "-q"],
        (0..21_000)
            .map(|i| format!("{{\"role\":\"assistant\",\"type\":\"text\",\"data\":{{\"text\":\"more {i}\"}}}}\n"))
            .collect::<String>(),
    )
    .ok();
    let tty = on_terminal(&env, "search zebra", 100);
    assert!(
        tty.stdout
            .contains("bringing the search index up to date (21000 chunks, once)"),
        "{}",
        tty.stdout
    );
    let again = on_terminal(&env, "search zebra", 100);
    assert!(!again.stdout.contains("bringing"), "{}", again.stdout);
    // Import of several files: a bar; with -q none.
    let dir = env.dir.path().join("exports");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..3 {
        let out = env.log(&["export", &s, "--format", "ndjson"]).ok().stdout;
        let _ = i;
        std::fs::write(dir.join(format!("s{i}.ndjson")), out).unwrap();
    }
    let tty = on_terminal(&env, &format!("import {}", dir.display()), 100);
    assert!(tty.stdout.contains("importing"), "{}", tty.stdout);
    let quiet = on_terminal(&env, &format!("import -q {}", dir.display()), 100);
    assert!(!quiet.stdout.contains("importing ["), "{}", quiet.stdout);
}

/// At 60 columns: `ag-prompt models` fits each line (cut with …) instead of wrapping, and
/// `ag-room claims` tells claims apart by the random end of their ids (time-ordered ids share
/// their start); a pipe still gets the whole ids.
#[test]
fn narrow_terminals_get_lines_that_fit_and_claim_ids_that_differ() {
    let env = TestEnv::new();
    let run = |prog: &str, args: &str| {
        let cmd = format!("{} {args}", crate::support::bin(prog).display());
        let out = std::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .env_clear()
            .envs(env.env.iter().map(|(k, v)| (k, v)))
            .env("COLUMNS", "60")
            .current_dir(&env.cwd)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("script(1) from util-linux");
        Run::from_output(out).ok().stdout.replace('\r', "")
    };
    let models = run("ag-prompt", "models");
    assert!(models.contains("CONTEXT WINDOW"), "{models}");
    for l in models.lines() {
        assert!(l.chars().count() <= 60, "{} chars: {l}", l.chars().count());
    }
    env.run(
        "ag-room",
        &["claim", "src/**", "--from", "alice", "--intent", "parser"],
    )
    .ok();
    env.run(
        "ag-room",
        &["claim", "docs/**", "--from", "bob", "--intent", "docs"],
    )
    .ok();
    let table = run("ag-room", "claims");
    let ids: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids.len(), 2, "{table}");
    assert_ne!(ids[0], ids[1], "{table}");
    let piped = env.run("ag-room", &["claims"]).ok().stdout;
    for l in piped.lines() {
        assert_eq!(l.split('\t').next().unwrap().len(), 36, "{l}");
    }
}
