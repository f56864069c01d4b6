//! `ag-room` end to end: real `ag-prompt` processes on `script:` models talking in one
//! worktree, direct messages, the peer chunk's caps, `tell --wait` and the inbox, reaping the dead
//! and the device room. Claims are in `room_claims.rs`, file-level faults in `room_files.rs`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::prompt::{script, session_id, spawn, wait_for_chunk, wait_until};
use crate::support::TestEnv;

pub(crate) fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(crate) fn env() -> TestEnv {
    let env = TestEnv::new();
    git(&env.cwd, &["init", "-q"]);
    env
}

pub(crate) fn room(env: &TestEnv, args: &[&str]) -> crate::support::Run {
    env.run("ag-room", args)
}

/// Every line of every room file, parsed.
pub(crate) fn room_lines(env: &TestEnv) -> Vec<Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(env.home.join("rooms")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        out.extend(
            text.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()),
        );
    }
    out
}

pub(crate) fn the_room(env: &TestEnv) -> std::path::PathBuf {
    std::fs::read_dir(env.home.join("rooms"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.ends_with("device.jsonl"))
        .expect("a worktree room")
}

pub(crate) fn peer_texts(env: &TestEnv, session: &str) -> Vec<String> {
    env.chunks(session)
        .iter()
        .filter(|c| c["type"] == "peer")
        .flat_map(|c| {
            assert_eq!(c["role"], "peer");
            c["data"]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["text"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

pub(crate) fn tool_results(env: &TestEnv, session: &str, name: &str) -> Vec<Value> {
    env.chunks(session)
        .into_iter()
        .filter(|c| c["type"] == "tool_result" && c["data"]["name"] == name)
        .collect()
}

pub(crate) fn msg_id_in(result: &Value) -> String {
    let text = result["data"]["result"].as_str().unwrap();
    text.split_whitespace().nth(1).unwrap().to_string()
}

#[test]
fn room_two_agents_talk_and_see_each_others_receipts() {
    let env = env();
    // Gates: both speak once both are live; both go on to hear once both have spoken.
    let (go, spoken) = (env.cwd.join("gate-go"), env.cwd.join("gate-spoken"));
    let talk = |name: &str, say: &str| {
        script(
            &env,
            name,
            &format!(
                "[[step]]\nwait_for = {go:?}\ntool_calls = [{{ name = \"peer_message\", arguments = {{ text = \"{say}\" }} }}]\n\
                 [[step]]\ntext = \"waiting\"\nwait_for = {spoken:?}\ntool_calls = [{{ name = \"glob\", arguments = {{ pattern = \"*.none\" }} }}]\n\
                 [[step]]\ntext = \"done\"\n"
            ),
        )
    };
    let (ma, mb) = (
        talk("a.toml", "hello from alpha"),
        talk("b.toml", "hello from beta"),
    );
    let mut a = spawn(
        &env,
        &["-m", &ma, "--tools", "all", "alpha: fix the parser"],
    );
    let ida = a.session();
    let mut b = spawn(&env, &["-m", &mb, "--tools", "all", "beta: write the docs"]);
    let idb = b.session();
    wait_for_chunk(&env, &idb, |c| c["type"] == "tool_call");
    // Both are live in this worktree.
    let who = room(&env, &["who", "--json"]).ok();
    let ids: Vec<String> = who
        .json_lines()
        .iter()
        .map(|w| w["id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.contains(&ida) && ids.contains(&idb), "{}", who.stdout);
    std::fs::write(&go, "").unwrap();
    wait_for_chunk(&env, &ida, |c| {
        c["type"] == "tool_result" && c["data"]["name"] == "peer_message"
    });
    wait_for_chunk(&env, &idb, |c| {
        c["type"] == "tool_result" && c["data"]["name"] == "peer_message"
    });
    std::fs::write(&spoken, "").unwrap();
    let ra = a.wait(Duration::from_secs(30));
    assert_eq!(ra.code, 0, "{}", ra.stderr);
    let rb = b.wait(Duration::from_secs(30));
    assert_eq!(rb.code, 0, "{}", rb.stderr);

    assert!(
        peer_texts(&env, &ida).contains(&"hello from beta".to_string()),
        "{:?}",
        env.chunks(&ida)
    );
    assert!(peer_texts(&env, &idb).contains(&"hello from alpha".to_string()));
    // Nobody hears itself.
    assert!(!peer_texts(&env, &ida).contains(&"hello from alpha".to_string()));
    // Each sees the other's receipt.
    let msg_a = msg_id_in(&tool_results(&env, &ida, "peer_message")[0]);
    let msg_b = msg_id_in(&tool_results(&env, &idb, "peer_message")[0]);
    let st = room(&env, &["status", &msg_a, "--json"]).ok().json();
    assert_eq!(st["delivered"][0]["by"]["session"], idb.as_str(), "{st}");
    let st = room(&env, &["status", &msg_b]).ok();
    assert!(
        st.stdout.contains("delivered") && st.stdout.contains(&handle(&env, &ida)),
        "{}",
        st.stdout
    );
    let st = room(&env, &["status", &msg_b, "--json"]).ok().json();
    assert_eq!(st["delivered"][0]["by"]["session"], ida.as_str());
    // Exactly one receipt per carried line.
    let receipts = room_lines(&env)
        .into_iter()
        .filter(|l| l["type"] == "delivered")
        .count();
    assert_eq!(receipts, 2);
    // Both are gone now: who is empty.
    assert!(room(&env, &["who", "--json"]).ok().stdout.trim().is_empty());
}

#[test]
fn room_direct_message_is_heard_only_by_its_addressee() {
    let env = env();
    let gate = env.cwd.join("gate-told");
    let slow = script(
        &env,
        "slow.toml",
        &format!(
            "[[step]]\ntext = \"looking\"\nwait_for = {gate:?}\ntool_calls = [{{ name = \"glob\", arguments = {{ pattern = \"*.none\" }} }}]\n\
             [[step]]\ntext = \"done\"\n"
        ),
    );
    let mut a = spawn(&env, &["-m", &slow, "alpha task"]);
    let ida = a.session();
    let mut b = spawn(&env, &["-m", &slow, "beta task"]);
    let idb = b.session();
    wait_for_chunk(&env, &ida, |c| c["type"] == "tool_call");
    wait_for_chunk(&env, &idb, |c| c["type"] == "tool_call");
    // Ambiguous: both titles hold "task".
    let amb = room(&env, &["tell", "--to", "task", "x"]).code(2);
    assert!(
        amb.stderr.contains(&handle(&env, &ida)) && amb.stderr.contains(&handle(&env, &idb)),
        "{}",
        amb.stderr
    );
    // A unique title fragment resolves, and the result names the id.
    let dm = room(&env, &["tell", "--to", "ALPHA", "for alpha only"]).ok();
    assert!(dm.stderr.contains(&ida), "{}", dm.stderr);
    room(&env, &["tell", "--from", "carol", "to everyone"]).ok();
    // A device-wide broadcast is refused with the reason.
    let r = room(&env, &["tell", "--device", "everyone everywhere"]).code(2);
    assert!(
        r.stderr.contains("device-wide broadcast is refused"),
        "{}",
        r.stderr
    );
    std::fs::write(&gate, "").unwrap();
    assert_eq!(a.wait(Duration::from_secs(30)).code, 0);
    assert_eq!(b.wait(Duration::from_secs(30)).code, 0);
    let (pa, pb) = (peer_texts(&env, &ida), peer_texts(&env, &idb));
    assert!(
        pa.contains(&"for alpha only".into()) && pa.contains(&"to everyone".into()),
        "{pa:?}"
    );
    assert!(
        !pb.contains(&"for alpha only".into()) && pb.contains(&"to everyone".into()),
        "{pb:?}"
    );
    // tail hides direct messages between others unless --all.
    let t = room(&env, &["tail", "--from", "dave"]).ok();
    assert!(
        t.stdout.contains("to everyone") && !t.stdout.contains("for alpha only"),
        "{}",
        t.stdout
    );
    let t = room(&env, &["tail", "--all"]).ok();
    assert!(t.stdout.contains("for alpha only"));
}

#[test]
fn room_peer_chunk_respects_every_cap() {
    let env = env();
    let first = env.run("ag-prompt", &["-m", "echo", "listener"]).ok();
    let id = session_id(&first);
    for i in 1..=7 {
        room(&env, &["tell", "--from", "tester", &format!("line {i}")]).ok();
    }
    let long_name = "n".repeat(200);
    let mut ids = Vec::new();
    for i in 8..=10 {
        let r = room(
            &env,
            &[
                "tell",
                "--from",
                &long_name,
                &format!("{i} {}", "x".repeat(500)),
            ],
        )
        .ok();
        ids.push(r.stdout.trim().to_string());
    }
    let inbox = script(
        &env,
        "inbox.toml",
        // The script answers by the count of assistant messages: echo answered the first turn.
        "[[step]]\ntext = \"(first turn)\"\n[[step]]\ntool_calls = [{ name = \"peer_inbox\" }]\n[[step]]\ntext = \"read\"\n",
    );
    env.run("ag-prompt", &["-s", &id, "-m", &inbox, "again"])
        .ok();
    let chunks = env.chunks(&id);
    let peers: Vec<&Value> = chunks.iter().filter(|c| c["type"] == "peer").collect();
    assert_eq!(peers.len(), 1, "one peer chunk");
    let d = &peers[0]["data"];
    let msgs = d["messages"].as_array().unwrap();
    for m in msgs {
        let t = m["text"].as_str().unwrap();
        assert!(t.len() <= 200 && t.ends_with('…'), "{t}");
    }
    // Names are shown clipped to 64 bytes, so more than one of the long lines fits; what the
    // model is shown — wrappers and the held-back note included — stays within 800 bytes.
    let n = msgs.len();
    assert!((2..=3).contains(&n), "{n} lines carried: {msgs:?}");
    assert!(msgs.iter().all(|m| m["from"].as_str().unwrap().len() <= 64));
    let fold = env.log(&["fold", &id]).ok().json();
    let shown: Vec<String> = fold["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| match &m["content"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str().map(str::to_string))
                .collect(),
            _ => vec![],
        })
        .filter(|t| t.contains("<peer "))
        .collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].len() <= 800,
        "{} bytes: {}",
        shown[0].len(),
        shown[0]
    );
    assert!(
        shown[0].ends_with(&format!("({} more: call peer_inbox)", 10 - n)),
        "{}",
        shown[0]
    );
    assert_eq!(msgs[n - 1]["id"], ids[2].as_str());
    assert_eq!(d["omitted"], 10 - n);
    // peer_inbox returns the held-back lines, and only then are they delivered.
    let res = &tool_results(&env, &id, "peer_inbox")[0];
    let text = res["data"]["result"].as_str().unwrap();
    for i in 1..=7 {
        assert!(text.contains(&format!("line {i}<")), "{text}");
    }
    for held in &ids[..3 - n] {
        assert!(text.contains(held.as_str()), "{text}");
    }
    assert!(
        !text.contains(&ids[2]),
        "a carried line is not held back: {text}"
    );
    let delivered = room_lines(&env)
        .into_iter()
        .filter(|l| l["type"] == "delivered")
        .count();
    assert_eq!(delivered, 10);
    // Nothing is heard twice.
    env.run("ag-prompt", &["-s", &id, "-m", "echo", "third"])
        .ok();
    assert_eq!(
        env.chunks(&id)
            .iter()
            .filter(|c| c["type"] == "peer")
            .count(),
        1
    );
}

#[test]
fn room_tell_wait_too_long_and_inbox() {
    let env = env();
    let r = room(&env, &["tell", "--wait=0.3", "anyone?"]).code(75);
    let id = r.stdout.trim().to_string();
    assert_eq!(id.len(), 36);
    let r = room(&env, &["status", &id]).ok();
    assert!(r.stdout.contains("(not yet)"));
    let big = "z".repeat(70_000);
    let r = room(&env, &["tell", &big]).code(2);
    assert!(
        r.stderr.contains("65536") && r.stderr.contains("nothing was written"),
        "{}",
        r.stderr
    );
    // A waiting teller returns once a reader takes the line in.
    let mut waiter = env
        .command("ag-room")
        .args(["tell", "--wait=60", "--from", "amy", "ping"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || room(
            &env,
            &["inbox", "--as", "bob", "--peek"]
        )
        .stdout
        .contains("ping")),
        "the waiting teller never posted"
    );
    let got = room(&env, &["inbox", "--as", "bob"]).ok();
    assert!(got.stdout.contains("ping") && got.stdout.contains("anyone?"));
    assert!(waiter.wait().unwrap().success());
    assert!(room(&env, &["inbox", "--as", "bob"]).ok().stdout.is_empty());
    let st = room(&env, &["ack", &id, "--from", "bob"]).ok();
    assert_eq!(st.stdout.trim().len(), 36);
    let st = room(&env, &["status", &id, "--json"]).ok().json();
    assert_eq!(st["acked"][0]["by"]["name"], "bob");
}

#[test]
fn room_who_reaps_a_dead_session() {
    let env = env();
    let slow = script(
        &env,
        "slow.toml",
        "[[step]]\ntext = \"zzz\"\nwait_for = \"never-opened\"\n",
    );
    let mut a = spawn(&env, &["-m", &slow, "sleeper"]);
    let id = a.session();
    assert!(
        wait_until(Duration::from_secs(30), || {
            room(&env, &["who", "--json"]).stdout.contains(&id)
        }),
        "the running session {id} was never listed by `ag-room who`"
    );
    let peek = room(&env, &["peek", "sleeper"]).ok();
    assert!(
        peek.stdout.contains(&id) && peek.stdout.contains("goal: sleeper"),
        "{}",
        peek.stdout
    );
    let _ = a.child.kill();
    let _ = a.child.wait();
    assert!(!room(&env, &["who", "--json"]).ok().stdout.contains(&id));
    let s = env.log(&["ls", "--json"]).ok();
    assert!(s.stdout.contains("interrupted"), "{}", s.stdout);
}

#[test]
fn room_direct_message_from_another_folder_goes_through_the_device_room() {
    let env = env();
    let gate = env.cwd.join("gate-told");
    let slow = script(
        &env,
        "slow.toml",
        &format!(
            "[[step]]\ntext = \"looking\"\nwait_for = {gate:?}\ntool_calls = [{{ name = \"glob\", arguments = {{ pattern = \"*.none\" }} }}]\n\
             [[step]]\ntext = \"done\"\n"
        ),
    );
    let mut a = spawn(&env, &["-m", &slow, "gamma work"]);
    let ida = a.session();
    wait_for_chunk(&env, &ida, |c| c["type"] == "tool_call");
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out = env
        .command("ag-room")
        .args(["tell", "--to", &ida[..13], "from another folder"])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("device"));
    std::fs::write(&gate, "").unwrap();
    assert_eq!(a.wait(Duration::from_secs(30)).code, 0);
    assert!(peer_texts(&env, &ida).contains(&"from another folder".to_string()));
    let device = std::fs::read_to_string(env.home.join("rooms/device.jsonl")).unwrap();
    assert!(device.contains("\"delivered\""), "{device}");
}

/// A session's handle, as `ag-log show` reports it.
pub fn handle(env: &TestEnv, id: &str) -> String {
    env.log(&["show", id, "--json"]).ok().json()["handle"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn room_lines_show_an_addressed_session_by_its_handle() {
    let env = env();
    let id = env.new_session("listener", "hello");
    let handle = env.log(&["show", &id, "--json"]).ok().json()["handle"]
        .as_str()
        .unwrap()
        .to_string();
    let msg = room(&env, &["tell", "--to", &id, "--from", "amy", "just you"]).ok();
    let msg = msg.stdout.trim().to_string();
    // The handle, which every command takes, never a prefix of the id that may stop being
    // unique.
    let tail = room(&env, &["tail", "--all"]).ok();
    assert!(
        tail.stdout.contains(&format!("amy → {handle}: just you")),
        "{}",
        tail.stdout
    );
    assert!(!tail.stdout.contains(&id[..8]), "{}", tail.stdout);
    let st = room(&env, &["status", &msg]).ok();
    assert!(st.stdout.contains(&format!("to {handle}")), "{}", st.stdout);
    let show = env.log(&["show", &handle]).ok();
    assert!(
        show.stdout.contains(&format!("\nhandle    {handle}\n")),
        "{}",
        show.stdout
    );
}

#[test]
fn room_a_line_posted_before_a_sessions_first_read_is_heard() {
    // The gap this closes: a session is running (or resumed) but has not read the rooms yet
    // when someone speaks. The line is newer than the session, so it is heard, not skipped
    // by a cursor that starts wherever the room ended at the first read.
    let env = env();
    room(
        &env,
        &["tell", "--from", "amy", "said before the session existed"],
    )
    .ok();
    let id = env.new_session("resumed", "hello");
    room(&env, &["tell", "--from", "amy", "said while it was away"]).ok();
    let model = script(&env, "once.toml", "[[step]]\ntext = \"ok\"\n");
    env.run("ag-prompt", &["-m", &model, "-s", &id, "anything new?"])
        .ok();
    assert_eq!(peer_texts(&env, &id), ["said while it was away"]);
}
