//! Rooms on NATS JetStream across two homes ("machines") that share a repository: lines,
//! direct messages and receipts, presence, claims racing from both sides, a server restart
//! mid-run, an unreachable server and a refused credential. Each test runs its own
//! `nats-server` (see `nats_server.rs`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::nats_server::NatsServer;
use crate::prompt::{script, spawn, wait_until};
use crate::room::handle;
use crate::support::TestEnv;

pub(crate) const LONG: Duration = Duration::from_secs(30);

pub(crate) fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// A home whose work directory is a checkout of the team's repository (`origin` spelled
/// `origin_url`), with rooms on `server`.
pub(crate) fn home(server: &NatsServer, origin_url: &str) -> TestEnv {
    let mut env = TestEnv::new();
    env.set("AG_ROOM_URL", server.url());
    // The whole suite loads the machine: a connection may take longer than the default 2 s.
    let cfg = env.dir.path().join("config/ag");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("config.toml"), "[rooms]\nconnect_timeout_s = 30\n").unwrap();
    git(&env.cwd, &["init", "-q"]);
    git(&env.cwd, &["remote", "add", "origin", origin_url]);
    env
}

/// Two checkouts of one repository on two "machines".
pub(crate) fn two_homes(server: &NatsServer) -> (TestEnv, TestEnv) {
    (
        home(server, "https://example.com/Team/Proj.git"),
        home(server, "git@example.com:team/proj"),
    )
}

/// `ag-room tail -f --json` running in the background, its lines collected (the last 100
/// lines of the room first, so a line posted while it starts is shown either way).
struct Tail {
    child: Child,
    lines: Arc<Mutex<Vec<Value>>>,
}

impl Tail {
    fn start(env: &TestEnv) -> Tail {
        let mut child = env
            .command("ag-room")
            .args(["--json", "tail", "-f", "-n", "100"])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(env.dir.path().join("tail.err")).unwrap())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&l) {
                    sink.lock().unwrap().push(v);
                }
            }
        });
        Tail { child, lines }
    }

    /// The texts of the `say` lines seen so far.
    fn said(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l["type"] == "say")
            .filter_map(|l| l["text"].as_str().map(str::to_string))
            .collect()
    }

    fn wait_for(&self, text: &str) {
        let ok = wait_until(LONG, || self.said().iter().any(|t| t == text));
        assert!(ok, "{text:?} did not reach tail -f: {:?}", self.said());
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn who_ids(env: &TestEnv) -> Vec<String> {
    let r = env.run("ag-room", &["--json", "who"]);
    if r.code != 0 {
        return Vec::new();
    }
    r.json_lines()
        .iter()
        .filter_map(|w| w["id"].as_str().map(str::to_string))
        .collect()
}

pub(crate) fn peer_texts(env: &TestEnv, id: &str) -> Vec<(String, bool)> {
    env.chunks(id)
        .into_iter()
        .filter(|c| c["type"] == "peer")
        .flat_map(|c| {
            c["data"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|m| {
            (
                m["text"].as_str().unwrap_or("").to_string(),
                !m["to"].is_null(),
            )
        })
        .collect()
}

#[test]
fn nats_lines_direct_messages_receipts_and_presence_cross_homes() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let (a, b) = two_homes(&server);
    let wait = "[[step]]\nwait_for = \"go\"\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n\
                [[step]]\ntext = \"done\"\n";
    let mut agent_a = spawn(&a, &["-m", &script(&a, "a.toml", wait), "alpha: parser"]);
    let mut agent_b = spawn(&b, &["-m", &script(&b, "b.toml", wait), "beta: docs"]);
    let (ida, idb) = (agent_a.session(), agent_b.session());
    // Presence: each home's `who` shows the sessions of both.
    for env in [&a, &b] {
        let both = wait_until(LONG, || {
            let ids = who_ids(env);
            ids.contains(&ida) && ids.contains(&idb)
        });
        assert!(
            both,
            "who in one home lists both sessions: {:?}",
            who_ids(env)
        );
    }
    let tail_b = Tail::start(&b);
    // A line from one home reaches the other's tail -f …
    a.run("ag-room", &["tell", "--from", "ann", "hello from a"])
        .ok();
    tail_b.wait_for("hello from a");
    // … and a direct message reaches only its addressee, whose receipt comes back.
    let hb = handle(&b, &idb);
    let mut tell = a
        .command("ag-room")
        .args([
            "--json",
            "tell",
            "--from",
            "ann",
            "--to",
            &hb,
            "--wait=30",
            "direct to b",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stored (tail without --all does not show others' direct messages) before B's step.
    let stored = wait_until(LONG, || {
        let all = b.run("ag-room", &["--json", "tail", "--all"]);
        all.code == 0 && all.json_lines().iter().any(|l| l["text"] == "direct to b")
    });
    assert!(stored, "the direct message was not stored");
    std::fs::write(b.cwd.join("go"), "").unwrap();
    let ok = wait_until(LONG, || matches!(tell.try_wait(), Ok(Some(_))));
    assert!(ok, "tell --wait did not end");
    let out = tell.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the receipt came back: {err}");
    assert!(err.contains("delivered to"), "{err}");
    assert_eq!(agent_b.wait(LONG).code, 0);
    let heard_b = peer_texts(&b, &idb);
    assert!(
        heard_b.contains(&("hello from a".into(), false)),
        "{heard_b:?}"
    );
    assert!(
        heard_b.contains(&("direct to b".into(), true)),
        "{heard_b:?}"
    );
    // A's agent heard the room line, not the direct message to B.
    std::fs::write(a.cwd.join("go"), "").unwrap();
    assert_eq!(agent_a.wait(LONG).code, 0);
    let heard_a = peer_texts(&a, &ida);
    assert!(
        heard_a.iter().any(|(t, _)| t == "hello from a"),
        "{heard_a:?}"
    );
    assert!(
        !heard_a.iter().any(|(t, _)| t == "direct to b"),
        "{heard_a:?}"
    );
    // Both turns ended: nobody is here any more, in either home.
    for env in [&a, &b] {
        assert!(wait_until(LONG, || who_ids(env).is_empty()));
    }
    // Each line was stored once, whoever read it how often.
    let all = b
        .run("ag-room", &["--json", "tail", "--all"])
        .ok()
        .json_lines();
    let says: Vec<&Value> = all.iter().filter(|l| l["type"] == "say").collect();
    assert_eq!(says.len(), 2, "{all:?}");
}

#[test]
fn nats_claims_race_from_two_homes_and_one_wins() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let (a, b) = two_homes(&server);
    let racers: Vec<Child> = (0..6)
        .map(|i| {
            let env = if i % 2 == 0 { &a } else { &b };
            env.command("ag-room")
                .args(["claim", "src/lib.rs", "--intent", "race", "--from"])
                .arg(format!("p{i}"))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let (codes, errs): (Vec<i32>, Vec<String>) = racers
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            (out.status.code().unwrap(), err)
        })
        .unzip();
    assert_eq!(
        codes.iter().filter(|c| **c == 0).count(),
        1,
        "{codes:?} {errs:?}"
    );
    assert_eq!(
        codes.iter().filter(|c| **c == 3).count(),
        5,
        "{codes:?} {errs:?}"
    );
    let winner = format!("p{}", codes.iter().position(|c| *c == 0).unwrap());
    for env in [&a, &b] {
        let claims = env.run("ag-room", &["--json", "claims"]).ok().json_lines();
        assert_eq!(claims.len(), 1, "{claims:?}");
        assert_eq!(claims[0]["holder"]["name"], winner.as_str());
    }
    // The guard in the other home sees the claim on a staged file.
    std::fs::create_dir_all(b.cwd.join("src")).unwrap();
    std::fs::write(b.cwd.join("src/lib.rs"), "x").unwrap();
    git(&b.cwd, &["add", "src/lib.rs"]);
    let g = b.run(
        "ag-room",
        &["guard", "--staged", "--mode", "block", "--from", "zed"],
    );
    assert_ne!(g.code, 0, "{}", g.stderr);
    assert!(
        g.stdout.contains(&winner) || g.stderr.contains(&winner),
        "{g:?}"
    );
    // Released in one home, the path is free in the other.
    let other = if winner == "p0" { "p1" } else { "p0" };
    let home_of = |p: &str| {
        if p[1..].parse::<usize>().unwrap() % 2 == 0 {
            &a
        } else {
            &b
        }
    };
    home_of(&winner)
        .run("ag-room", &["release", "--all", "--from", &winner])
        .ok();
    home_of(other)
        .run(
            "ag-room",
            &[
                "claim",
                "src/lib.rs",
                "--intent",
                "mine",
                "--ttl",
                "1s",
                "--from",
                other,
            ],
        )
        .ok();
    // Expiry is honoured: once its second is over, anyone may claim it.
    let freed = wait_until(LONG, || {
        a.run(
            "ag-room",
            &["claim", "src/lib.rs", "--intent", "after", "--from", "late"],
        )
        .code
            == 0
    });
    assert!(freed, "an expired claim still held the path");
}

#[test]
fn nats_server_restart_mid_run_loses_and_repeats_nothing() {
    let Some(mut server) = NatsServer::start() else {
        return;
    };
    let (a, b) = two_homes(&server);
    let tail_b = Tail::start(&b);
    a.run(
        "ag-room",
        &["claim", "docs", "--intent", "kept", "--from", "ann"],
    )
    .ok();
    for i in 0..5 {
        a.run(
            "ag-room",
            &["tell", "--from", "ann", &format!("before {i}")],
        )
        .ok();
    }
    tail_b.wait_for("before 4");
    server.stop();
    // Down: a line cannot be posted (a temporary failure), and nothing half is left.
    let down = a.run("ag-room", &["tell", "--from", "ann", "while down"]);
    assert_eq!(down.code, 75, "{down:?}");
    assert!(
        down.stderr.contains("cannot reach the room server"),
        "{}",
        down.stderr
    );
    assert_eq!(a.run("ag-room", &["doctor"]).code, 75);
    server.restart();
    for i in 0..5 {
        let ok = wait_until(LONG, || {
            a.run("ag-room", &["tell", "--from", "ann", &format!("after {i}")])
                .code
                == 0
        });
        assert!(ok, "the server did not come back");
    }
    tail_b.wait_for("after 4");
    let want: Vec<String> = (0..5)
        .map(|i| format!("before {i}"))
        .chain((0..5).map(|i| format!("after {i}")))
        .collect();
    assert_eq!(
        tail_b.said(),
        want,
        "nothing lost, nothing repeated, in order"
    );
    // The claim made before the restart still holds.
    let claims = b.run("ag-room", &["--json", "claims"]).ok().json_lines();
    assert_eq!(claims.len(), 1, "{claims:?}");
    let doctor = b.run("ag-room", &["doctor"]).ok();
    assert_eq!(doctor.stdout.lines().count(), 5, "{}", doctor.stdout);
    assert!(
        doctor.stdout.lines().all(|l| l.starts_with("ok")),
        "{}",
        doctor.stdout
    );
}

#[test]
fn nats_refused_credential_unreachable_server_and_project_file_are_clear() {
    let Some(server) = NatsServer::start_with(&["--user", "team", "--pass", "right-pass"]) else {
        return;
    };
    let mut a = TestEnv::new();
    let cfg = a.dir.path().join("config/ag");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("pw"), "wrong-pass\n").unwrap();
    std::fs::write(
        cfg.join("config.toml"),
        format!(
            "[rooms]\nurl = \"{}\"\nuser = \"team\"\npassword_file = \"pw\"\n",
            server.url()
        ),
    )
    .unwrap();
    let r = a.run("ag-room", &["tell", "hi"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("refused the credential"), "{}", r.stderr);
    assert!(!r.stderr.contains("wrong-pass") && !r.stdout.contains("wrong-pass"));
    std::fs::write(cfg.join("pw"), "right-pass\n").unwrap();
    a.run("ag-room", &["tell", "hi"]).ok();
    // Nothing listens: a temporary failure, with the server named.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    a.set("AG_ROOM_URL", format!("nats://127.0.0.1:{port}"));
    let r = a.run("ag-room", &["tell", "hi"]);
    assert_eq!(r.code, 75, "{r:?}");
    assert!(
        r.stderr.contains(&format!("127.0.0.1:{port}")),
        "{}",
        r.stderr
    );
    // `who` still lists this machine's sessions, and says the others are missing.
    let r = a.run("ag-room", &["who"]).ok();
    assert!(
        r.stderr.contains(&format!("127.0.0.1:{port}"))
            && r.stderr.contains("only this machine's sessions are listed"),
        "{}",
        r.stderr
    );
    // A project file cannot move rooms: ignored with a warning, rooms stay files.
    let p = TestEnv::new();
    p.write_file(
        ".ag/config.toml",
        &format!("[rooms]\nurl = \"{}\"\n", server.url()),
    );
    let r = p.run("ag-room", &["tell", "--from", "x", "local"]).ok();
    assert!(
        r.stderr.contains("[rooms] is ignored in a project file"),
        "{}",
        r.stderr
    );
    let rooms = std::fs::read_dir(p.home.join("rooms")).unwrap().count();
    assert_eq!(rooms, 1, "the line went to a room file");
}

#[test]
fn nats_running_agent_keeps_working_while_the_server_is_down_and_hears_the_room_after() {
    let Some(mut server) = NatsServer::start() else {
        return;
    };
    let (a, b) = two_homes(&server);
    // Step N waits for the gate gN; the test opens them one at a time.
    const STEPS: usize = 40;
    let mut steps = String::new();
    for n in 0..STEPS {
        steps.push_str(&format!(
            "[[step]]\nwait_for = \"g{n}\"\ntool_calls = [{{ name = \"glob\", arguments = {{ pattern = \"*.none\" }} }}]\n"
        ));
    }
    steps.push_str("[[step]]\ntext = \"done\"\n");
    let mut agent = spawn(
        &b,
        &["-m", &script(&b, "b.toml", &steps), "beta: keep going"],
    );
    let id = agent.session();
    assert!(wait_until(LONG, || who_ids(&a).contains(&id)));
    let globs = |env: &TestEnv| {
        env.chunks(&id)
            .iter()
            .filter(|c| c["type"] == "tool_result")
            .count()
    };
    let mut gate = 0;
    let open = |n: &mut usize| {
        std::fs::write(b.cwd.join(format!("g{n}")), "").unwrap();
        let want = *n + 1;
        assert!(
            wait_until(LONG, || globs(&b) >= want),
            "step {n} did not run"
        );
        *n += 1;
    };
    server.stop();
    // The server is gone: the agent's steps go on.
    open(&mut gate);
    open(&mut gate);
    server.restart();
    let posted = wait_until(LONG, || {
        a.run("ag-room", &["tell", "--from", "ann", "after the restart"])
            .code
            == 0
    });
    assert!(posted, "the server did not come back");
    // The agent hears the room again once its connection is back (it reconnects by itself).
    while gate < STEPS
        && !peer_texts(&b, &id)
            .iter()
            .any(|(t, _)| t == "after the restart")
    {
        open(&mut gate);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        peer_texts(&b, &id)
            .iter()
            .any(|(t, _)| t == "after the restart"),
        "the agent did not hear the room after the restart"
    );
    while gate < STEPS {
        open(&mut gate);
    }
    assert_eq!(agent.wait(LONG).code, 0);
    let heard: Vec<(String, bool)> = peer_texts(&b, &id);
    let times = heard
        .iter()
        .filter(|(t, _)| t == "after the restart")
        .count();
    assert_eq!(times, 1, "heard once: {heard:?}");
}
