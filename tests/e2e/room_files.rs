//! Room files end to end: concurrent writers leave every line whole, torn and corrupt lines do
//! not stop readers, and `ag-room tell` works from a git hook with an empty environment.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::prompt::wait_until;
use crate::room::*;
use crate::support::bin;

#[test]
fn room_concurrent_writers_leave_every_line_whole() {
    let env = env();
    let home = ag::paths::Home {
        dir: env.home.clone(),
    };
    let r = ag::room::Rooms::files(&home).worktree(&env.cwd);
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let path = r.path.clone();
            std::thread::spawn(move || {
                for i in 0..2000 {
                    let mut l = ag::room::Line::new(
                        ag::room::LineKind::Say,
                        ag::room::From {
                            handle: None,
                            session: None,
                            name: format!("w{t}"),
                            pid: None,
                            kind: "tool".into(),
                        },
                    );
                    l.text = Some(format!("{t}:{i} {}", "y".repeat(i % 300)));
                    ag::room::file::append(&path, &l).unwrap();
                }
            })
        })
        .collect();
    // And 16 real processes, 50 `ag-room tell` each, at the same time.
    let procs: Vec<_> = (0..16)
        .map(|p| {
            let mut c = Command::new("sh");
            c.env_clear().envs(env.env.iter().map(|(k, v)| (k, v))).current_dir(&env.cwd);
            c.args(["-c", &format!("i=0; while [ $i -lt 50 ]; do ag-room tell --from p{p} \"p{p} $i\" >/dev/null || exit 1; i=$((i+1)); done")])
                .spawn()
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for mut p in procs {
        assert!(p.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(&r.path).unwrap();
    assert!(text.ends_with('\n'));
    let mut ids = std::collections::HashSet::new();
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("torn line {l:?}: {e}"));
        assert!(ids.insert(v["id"].as_str().unwrap().to_string()));
    }
    assert_eq!(ids.len(), 32_000 + 800);
    // A reader streams it all.
    let tail = room(&env, &["tail", "-n", "3"]).ok();
    assert_eq!(tail.stdout.lines().count(), 3);
}

#[test]
fn room_tail_n_shows_the_last_lines_shown_however_many_hidden_lines_follow_them() {
    let env = env();
    for i in 0..5 {
        room(&env, &["tell", "--from", "a", &format!("said {i}")]).ok();
    }
    // 3,000 direct messages between two others after them: hidden from `tail` without --all,
    // so the last five lines shown lie far before the room's last 5 (or 500) lines.
    let path = the_room(&env);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for i in 0..3000 {
        let l = json!({"v":1,"id":format!("01a00000-0000-7000-8000-{i:012}"),"ts":"2026-11-30T00:00:00.000Z",
            "type":"say","from":{"name":"b","kind":"tool"},"to":"name:c","text":format!("dm {i}")});
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    let tail = room(&env, &["tail", "-n", "3", "--from", "z"]).ok();
    let lines: Vec<&str> = tail.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", tail.stdout);
    for (l, want) in lines.iter().zip(["said 2", "said 3", "said 4"]) {
        assert!(l.ends_with(want), "{l}");
    }
    let all = room(&env, &["tail", "-n", "2", "--all", "--json"])
        .ok()
        .json_lines();
    let texts: Vec<&str> = all.iter().map(|v| v["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["dm 2998", "dm 2999"]);
    assert_eq!(room(&env, &["tail", "-n", "0"]).ok().stdout, "");
    // Without -n, every shown line.
    assert_eq!(room(&env, &["tail"]).ok().stdout.lines().count(), 5);
}

#[test]
fn room_status_finds_an_old_message_and_its_receipts_thousands_of_lines_back() {
    let env = env();
    room(&env, &["tell", "--from", "a", "first"]).ok();
    let id = room(&env, &["tell", "--from", "a", "the one"])
        .ok()
        .stdout
        .trim()
        .to_string();
    let path = the_room(&env);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let line = |i: usize, extra: Value| {
        let mut l = json!({"v":1,"id":format!("01a00000-0000-7000-8000-{i:012}"),"ts":"2026-11-30T00:00:00.000Z",
            "type":"say","from":{"name":"b","kind":"tool"},"text":format!("filler {i}")});
        for (k, v) in extra.as_object().unwrap() {
            l[k] = v.clone();
        }
        l
    };
    for i in 0..6000 {
        let l = match i {
            10 => line(
                i,
                json!({"type":"delivered","in_reply_to":id,"from":{"name":"c","kind":"tool"}}),
            ),
            5990 => line(
                i,
                json!({"type":"ack","in_reply_to":id,"from":{"name":"c","kind":"tool"}}),
            ),
            _ => line(i, json!({})),
        };
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    let st = room(&env, &["status", &id, "--json"]).ok().json();
    assert_eq!(st["id"], id.as_str());
    assert_eq!(st["delivered"].as_array().unwrap().len(), 1, "{st}");
    assert_eq!(st["acked"].as_array().unwrap().len(), 1, "{st}");
    let first = room(&env, &["tail", "-n", "6002", "--json", "--all"])
        .ok()
        .json_lines();
    let first_id = first[0]["id"].as_str().unwrap().to_string();
    assert_eq!(first[0]["text"], "first");
    assert_eq!(
        room(&env, &["status", &first_id, "--json"]).ok().json()["id"],
        first_id.as_str()
    );
    room(&env, &["status", "01a00000-ffff-7000-8000-000000000000"]).code(4);
}

/// Whether process `pid` holds an inotify watch (a follower past its first read).
pub(crate) fn watching(pid: u32) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_to_string(fd.path()).is_ok_and(|info| info.contains("inotify wd:")))
}

#[test]
fn room_torn_and_corrupt_lines_do_not_stop_readers() {
    let env = env();
    room(&env, &["tell", "--from", "a", "before"]).ok();
    let path = the_room(&env);
    let torn = json!({"v":1,"id":"01a00000-0000-7000-8000-000000000001","ts":"2026-11-30T00:00:00.000Z","type":"say",
        "from":{"name":"b","kind":"tool"},"text":"the torn one"})
    .to_string();
    let corrupt_at = std::fs::metadata(&path).unwrap().len();
    {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{not json at all\n").unwrap();
    }
    room(&env, &["tell", "--from", "a", "after"]).ok();
    {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&torn.as_bytes()[..30]).unwrap();
    }
    let t = room(&env, &["tail"]).ok();
    assert!(
        t.stdout.contains("before") && t.stdout.contains("after"),
        "{}",
        t.stdout
    );
    assert!(!t.stdout.contains("torn"));
    assert!(
        t.stderr.contains(&path.display().to_string())
            && t.stderr.contains(&format!("byte {corrupt_at}")),
        "{}",
        t.stderr
    );
    // A follower shows the torn line once it is complete, once.
    let out = env.dir.path().join("tail.out");
    let mut follower = env
        .command("ag-room")
        .args(["tail", "-f", "-n", "0"])
        .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // It watches the folder once its first read is done: the rest of the line comes after.
    assert!(
        wait_until(Duration::from_secs(30), || watching(follower.id())),
        "the follower never started watching"
    );
    {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&torn.as_bytes()[30..]).unwrap();
        f.write_all(b"\n").unwrap();
    }
    room(&env, &["tell", "--from", "a", "later"]).ok();
    let ok = wait_until(Duration::from_secs(30), || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("later")
    });
    let _ = follower.kill();
    let _ = follower.wait();
    let shown = std::fs::read_to_string(&out).unwrap();
    assert!(ok, "{shown}");
    assert_eq!(shown.matches("the torn one").count(), 1, "{shown}");
}

pub(crate) fn make_executable(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn room_tell_works_from_a_post_commit_hook_with_an_empty_environment() {
    let env = env();
    let hook = env.cwd.join(".git/hooks/post-commit");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ngit log -1 --format='committed %s' | env -i HOME=\"{}\" AG_HOME=\"{}\" {} tell -\n",
            env.dir.path().display(),
            env.home.display(),
            bin("ag-room").display()
        ),
    )
    .unwrap();
    make_executable(&hook);
    env.write_file("f.txt", "x\n");
    git(&env.cwd, &["add", "f.txt"]);
    git(&env.cwd, &["commit", "-qm", "first change"]);
    let lines = room_lines(&env);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["text"], "committed first change");
    assert_eq!(lines[0]["from"]["name"], "user");
    assert_eq!(lines[0]["from"]["kind"], "tool");
    // And it is this worktree's room.
    assert!(room(&env, &["tail"])
        .ok()
        .stdout
        .contains("committed first change"));
}

#[test]
fn room_tail_follow_ends_when_its_reader_goes_away_with_nothing_new() {
    let env = env();
    room(&env, &["tell", "--from", "a", "the only line"]).ok();
    let mut tail = env
        .command("ag-room")
        .args(["tail", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut out = std::io::BufReader::new(tail.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    assert!(first.contains("the only line"), "{first:?}");
    drop(out);
    let status = crate::faults::wait_exit(&mut tail);
    assert_eq!(status.code(), Some(0));
}

#[test]
fn room_tell_prints_the_line_id_for_scripts_and_nothing_with_q() {
    let env = env();
    let id = room(&env, &["tell", "--from", "hook", "one"]).ok().stdout;
    assert_eq!(id.trim().len(), 36, "{id}");
    let quiet = room(&env, &["tell", "-q", "--from", "hook", "two"]).ok();
    assert_eq!(quiet.stdout, "");
    let texts: Vec<String> = room_lines(&env)
        .iter()
        .filter_map(|l| l["text"].as_str().map(str::to_string))
        .collect();
    assert!(texts.contains(&"two".to_string()), "{texts:?}");
}
