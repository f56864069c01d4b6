//! Peer talk between real `ag-prompt` processes on `script:` models: the roster a model is
//! shown and `peer_who`, receipts and replies reaching the sender's next request, direct
//! messages marked as such with the sender's handle, and `all` refused.

use std::time::Duration;

use serde_json::Value;

use crate::prompt::{script, spawn, spawn_in, wait_for_chunk, wait_until};
use crate::room::handle;
use crate::support::TestEnv;

fn env() -> TestEnv {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.cwd.join(".git")).unwrap();
    env
}

/// The user-side texts of a session's fold: what its next request shows the model.
fn shown(env: &TestEnv, id: &str) -> Vec<String> {
    let fold = env.log(&["fold", id]).ok().json();
    fold["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| match &m["content"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str().map(str::to_string))
                .collect(),
            _ => vec![],
        })
        .collect()
}

fn peer_chunks(env: &TestEnv, id: &str) -> Vec<Value> {
    env.chunks(id)
        .into_iter()
        .filter(|c| c["type"] == "peer")
        .collect()
}

fn rosters(env: &TestEnv, id: &str) -> Vec<Value> {
    peer_chunks(env, id)
        .into_iter()
        .filter(|c| !c["data"]["roster"].is_null())
        .map(|c| {
            assert_eq!(c["role"], "peer", "a roster is a peer record: {c}");
            c["data"]["roster"].clone()
        })
        .collect()
}

pub(crate) fn results(env: &TestEnv, id: &str, tool: &str) -> Vec<Value> {
    env.chunks(id)
        .into_iter()
        .filter(|c| c["type"] == "tool_result" && c["data"]["name"] == tool)
        .map(|c| c["data"].clone())
        .collect()
}

fn live(env: &TestEnv, id: &str) -> bool {
    let who = env.run("ag-room", &["who", "--json"]);
    who.code == 0 && who.json_lines().iter().any(|w| w["id"] == id)
}

#[test]
fn peer_roster_is_shown_on_meeting_and_on_change_and_peer_who_lists_handles() {
    let env = env();
    let a_script = script(
        &env,
        "a.toml",
        "[[step]]\nwait_for = \"g1\"\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n\
         [[step]]\ntool_calls = [{ name = \"peer_who\" }]\n\
         [[step]]\nwait_for = \"g3\"\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let b_script = script(
        &env,
        "b.toml",
        "[[step]]\nwait_for = \"gb\"\ntext = \"done\"\n",
    );
    let mut a = spawn(&env, &["-m", &a_script, "alpha: fix the parser"]);
    let ida = a.session();
    assert!(wait_until(Duration::from_secs(30), || live(&env, &ida)));
    std::fs::create_dir_all(env.cwd.join("docs")).unwrap();
    let mut b = spawn_in(
        &env,
        &env.cwd.join("docs"),
        &["-m", &b_script, "beta: write the docs"],
    );
    let idb = b.session();
    let (ha, hb) = (handle(&env, &ida), handle(&env, &idb));
    // B met A at its first step boundary: one roster line naming A by handle, goal and place.
    wait_for_chunk(&env, &idb, |c| c["type"] == "peer");
    let rb = rosters(&env, &idb);
    assert_eq!(rb.len(), 1, "{rb:?}");
    assert_eq!(rb[0][0]["handle"], ha.as_str());
    assert_eq!(rb[0][0]["goal"], "alpha: fix the parser");
    assert_eq!(rb[0][0]["where"], ".");
    let text = shown(&env, &idb).join("\n");
    assert!(
        text.contains("<peer roster=\"yes\">Live in this worktree: ")
            && text.contains(&format!("(session={ha})"))
            && text.contains("alpha: fix the parser")
            && text.contains(" in ."),
        "{text}"
    );
    // A meets B after its first step, then asks peer_who while B is live.
    std::fs::write(env.cwd.join("g1"), "").unwrap();
    wait_for_chunk(&env, &ida, |c| {
        c["data"]["name"] == "peer_who" && c["type"] == "tool_result"
    });
    let ra = rosters(&env, &ida);
    assert_eq!(ra.len(), 1, "{ra:?}");
    assert_eq!(ra[0][0]["handle"], hb.as_str());
    assert_eq!(ra[0][0]["where"], "docs");
    let who = &results(&env, &ida, "peer_who")[0];
    assert_eq!(who["is_error"], false, "{who}");
    let rows: Vec<Value> = who["result"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "only the others: {rows:?}");
    assert_eq!(rows[0]["session"], hb.as_str());
    assert_eq!(rows[0]["goal"], "beta: write the docs");
    assert!(rows[0]["age"].is_string() && rows[0]["last_tool"].is_string());
    // B leaves; A's next boundary says so, once.
    std::fs::write(env.cwd.join("docs/gb"), "").unwrap();
    assert_eq!(b.wait(Duration::from_secs(30)).code, 0);
    std::fs::write(env.cwd.join("g3"), "").unwrap();
    let ra = a.wait(Duration::from_secs(30));
    assert_eq!(ra.code, 0, "{}", ra.stderr);
    let ra = rosters(&env, &ida);
    assert_eq!(ra.len(), 2, "shown on meeting and on change only: {ra:?}");
    assert_eq!(ra[1], Value::Array(vec![]));
    let text = shown(&env, &ida).join("\n");
    assert!(
        text.contains("No other session is live in this worktree now."),
        "{text}"
    );
    assert!(!text.contains("\"all\""), "{text}");
}

#[test]
fn peer_direct_message_reply_lands_first_try_and_receipts_reach_the_sender() {
    let env = env();
    let a_script = script(
        &env,
        "a.toml",
        "[[step]]\nwait_for = \"go\"\ntool_calls = [{ name = \"peer_message\", arguments = { session = \"all\", text = \"hi all\" } }]\n\
         [[step]]\ntool_calls = [{ name = \"peer_message\", arguments = { session = \"beta-docs\", text = \"please review parser.rs\" } }]\n\
         [[step]]\nwait_for = \"replied\"\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let b_script = script(
        &env,
        "b.toml",
        "[[step]]\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n\
         [[step]]\nwait_for = \"b-go\"\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n\
         [[step]]\ntext = \"heard\"\n",
    );
    let mut a = spawn(&env, &["-m", &a_script, "alpha: fix the parser"]);
    let ida = a.session();
    let mut b = spawn(&env, &["-m", &b_script, "beta-docs: write the docs"]);
    let idb = b.session();
    assert!(wait_until(Duration::from_secs(30), || live(&env, &ida)
        && live(&env, &idb)));
    let (ha, hb) = (handle(&env, &ida), handle(&env, &idb));
    // B's first step boundary has passed: from here on it hears what is said.
    wait_for_chunk(&env, &idb, |c| c["type"] == "tool_call");
    std::fs::write(env.cwd.join("go"), "").unwrap();
    // Both calls' results (the refusal's sentence also says "direct message": count them).
    assert!(
        wait_until(Duration::from_secs(30), || results(
            &env,
            &ida,
            "peer_message"
        )
        .len()
            == 2),
        "A's two peer_message calls never both returned"
    );
    // `all` is refused with the sentence, and nothing was posted.
    let sent = results(&env, &ida, "peer_message");
    assert_eq!(sent[0]["is_error"], true, "{}", sent[0]);
    assert!(
        sent[0]["result"]
            .as_str()
            .unwrap()
            .contains("there is no \"all\" session"),
        "{}",
        sent[0]
    );
    let refused = env
        .run("ag-room", &["tell", "--to", "everyone", "x"])
        .code(2);
    assert!(
        refused.stderr.contains("no \"all\" session"),
        "{}",
        refused.stderr
    );
    // The direct message resolved by goal fragment and names the handle to re-use.
    let dm = sent[1]["result"].as_str().unwrap();
    assert_eq!(sent[1]["is_error"], false, "{dm}");
    assert!(
        dm.contains(&format!("Re-ping with session=\"{hb}\"")),
        "{dm}"
    );
    let msg = dm.split_whitespace().nth(1).unwrap().to_string();
    // B takes it in as a direct message from A's handle, with the hint to reply.
    std::fs::write(env.cwd.join("b-go"), "").unwrap();
    assert_eq!(b.wait(Duration::from_secs(30)).code, 0);
    let heard = peer_chunks(&env, &idb);
    let m = heard
        .iter()
        .flat_map(|c| c["data"]["messages"].as_array().unwrap().clone())
        .find(|m| m["id"] == msg.as_str())
        .expect("B heard the direct message");
    assert_eq!(m["handle"], ha.as_str());
    let text = shown(&env, &idb).join("\n");
    assert!(
        text.contains(&format!(
            "<peer direct=\"yes\" from=\"alpha: fix the parser\" session=\"{ha}\" msg=\"{msg}\" \
             hint=\"reply with peer_message session={ha}\">please review parser.rs</peer>"
        )),
        "{text}"
    );
    assert!(!text.contains("hi all"), "{text}");
    // B's next turn replies exactly as the hint says; it lands on the first try.
    let reply = script(
        &env,
        "reply.toml",
        &format!(
            "[[step]]\ntext = \"-\"\n[[step]]\ntext = \"-\"\n[[step]]\ntext = \"-\"\n\
             [[step]]\ntool_calls = [{{ name = \"peer_peek\", arguments = {{ session = \"{ha}\" }} }}]\n\
             [[step]]\ntool_calls = [{{ name = \"peer_message\", arguments = {{ session = \"{ha}\", in_reply_to = \"{msg}\", text = \"looks fine\" }} }}]\n\
             [[step]]\ntext = \"replied\"\n"
        ),
    );
    env.run("ag-prompt", &["-s", &idb, "-m", &reply, "answer alpha"])
        .ok();
    // peer_peek takes the handle the roster and peer_who show.
    let peek = &results(&env, &idb, "peer_peek")[0];
    assert_eq!(peek["is_error"], false, "{peek}");
    assert!(
        peek["result"]
            .as_str()
            .unwrap()
            .contains("alpha: fix the parser"),
        "{peek}"
    );
    let r = &results(&env, &idb, "peer_message")[0];
    assert_eq!(r["is_error"], false, "{r}");
    // A's next request carries B's receipt and B's reply, one line each.
    std::fs::write(env.cwd.join("replied"), "").unwrap();
    let done = a.wait(Duration::from_secs(30));
    assert_eq!(done.code, 0, "{}", done.stderr);
    let text = shown(&env, &ida).join("\n");
    assert!(
        text.contains(&format!(
            "<peer receipt=\"delivered\" of=\"{msg}\" by=\"beta-docs: write the docs\" session=\"{hb}\"/>"
        )),
        "{text}"
    );
    let reply_line = text
        .lines()
        .find(|l| l.contains(">looks fine</peer>"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        reply_line.contains(&format!("in_reply_to=\"{msg}\""))
            && reply_line.contains("direct=\"yes\"")
            && reply_line.contains(&format!("session=\"{hb}\"")),
        "{reply_line}"
    );
}

#[test]
fn peer_claim_survives_the_turn_end_and_ends_when_its_session_fails_or_is_removed() {
    let env = env();
    env.write_file("shared.txt", "original\n");
    env.write_file("other.txt", "original\n");
    let claim = script(
        &env,
        "claim.toml",
        "[[step]]\ntool_calls = [{ name = \"peer_claim\", arguments = { paths = [\"shared.txt\"], intent = \"rewriting the notes\" } }]\n\
         [[step]]\ntext = \"claimed\"\n\
         [[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"shared.txt\", content = \"mine\" } }]\n\
         [[step]]\ntext = \"written\"\n",
    );
    let writer = script(
        &env,
        "writer.toml",
        "[[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"shared.txt\", content = \"theirs\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    // A chat's first turn claims the file, then its process exits.
    let first = env
        .run(
            "ag-prompt",
            &["-m", &claim, "--tools", "all", "holder of notes"],
        )
        .ok();
    let idh = crate::prompt::session_id(&first);
    let claims = env.run("ag-room", &["claims", "--json"]).ok().json_lines();
    assert_eq!(claims.len(), 1, "the claim outlives the turn");
    assert_eq!(claims[0]["holder"]["session"], idh.as_str());
    assert_eq!(claims[0]["holder_state"], "idle");
    // Between its turns another session's write is refused, naming the holder.
    let w = env
        .run("ag-prompt", &["-m", &writer, "--tools", "all", "writer"])
        .ok();
    let idw = crate::prompt::session_id(&w);
    let r = &results(&env, &idw, "write")[0];
    assert_eq!(r["is_error"], true, "{r}");
    assert!(
        r["result"].as_str().unwrap().contains("holder of notes"),
        "{r}"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("shared.txt")).unwrap(),
        "original\n"
    );
    // Its next turn still holds it: its own write goes through.
    env.run("ag-prompt", &["-s", &idh, "-m", &claim, "go on"])
        .ok();
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("shared.txt")).unwrap(),
        "mine"
    );
    // A session that fails (its process killed) loses its claims.
    let hold = script(
        &env,
        "hold.toml",
        "[[step]]\ntool_calls = [{ name = \"peer_claim\", arguments = { paths = [\"other.txt\"], intent = \"holding\" } }]\n\
         [[step]]\nwait_for = \"never\"\ntext = \"-\"\n",
    );
    let mut k = spawn(&env, &["-m", &hold, "killed holder"]);
    let idk = k.session();
    wait_for_chunk(&env, &idk, |c| c["type"] == "tool_result");
    let held = |id: &str| {
        env.run("ag-room", &["claims", "--json"])
            .ok()
            .json_lines()
            .iter()
            .any(|c| c["holder"]["session"] == id)
    };
    assert!(held(&idk));
    k.child.kill().unwrap();
    k.child.wait().unwrap();
    assert!(!held(&idk), "a failed session holds nothing");
    assert!(held(&idh));
    // Removing the session ends its claim: the other writer gets through.
    env.log(&["rm", &idh]).ok();
    assert!(!held(&idh));
    let w2 = script(
        &env,
        "writer2.toml",
        "[[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"shared.txt\", content = \"theirs\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    env.run("ag-prompt", &["-m", &w2, "--tools", "all", "writer again"])
        .ok();
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("shared.txt")).unwrap(),
        "theirs"
    );
}

#[test]
fn peer_bash_is_told_the_claims_first_and_a_claimed_file_it_changes_is_reported() {
    let env = env();
    env.write_file("notes/a.txt", "one\n");
    let claim = script(
        &env,
        "claim.toml",
        "[[step]]\ntool_calls = [{ name = \"peer_claim\", arguments = { paths = [\"notes/**\"], intent = \"rewriting the notes\" } }]\n\
         [[step]]\ntext = \"claimed\"\n",
    );
    let h = env
        .run("ag-prompt", &["-m", &claim, "holder of notes"])
        .ok();
    let idh = crate::prompt::session_id(&h);
    let hh = handle(&env, &idh);
    let bash = script(
        &env,
        "bash.toml",
        "[[step]]\ntool_calls = [{ name = \"bash\", arguments = { command = \"echo two >> notes/a.txt\" } }]\n\
         [[step]]\ntool_calls = [{ name = \"bash\", arguments = { command = \"echo two >> notes/a.txt; echo new > notes/b.txt\" } }]\n\
         [[step]]\ntool_calls = [{ name = \"bash\", arguments = { command = \"echo untouched\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let b = env
        .run("ag-prompt", &["-m", &bash, "--tools", "all", "bash runner"])
        .ok();
    let idb = crate::prompt::session_id(&b);
    let r = results(&env, &idb, "bash");
    assert_eq!(r.len(), 3, "{r:?}");
    // Before its first bash of the turn, the model is told what is claimed and by whom.
    let told = r[0]["result"].as_str().unwrap();
    assert_eq!(r[0]["is_error"], true, "{told}");
    assert!(
        told.contains("bash did not run")
            && told.contains("notes/**")
            && told.contains(&hh)
            && told.contains("rewriting the notes"),
        "{told}"
    );
    // Called again it runs: the claimed file is read-only in its sandbox, and a file it
    // creates under the claimed glob (nothing existed there to bind) is reported.
    let ran = r[1]["result"].as_str().unwrap();
    assert!(ran.contains("Read-only file system"), "{ran}");
    assert!(
        ran.contains("This command changed claimed files: notes/b.txt") && ran.contains(&hh),
        "{ran}"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("notes/a.txt")).unwrap(),
        "one\n",
        "the held-back call did not run, the second could not write the claimed file"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("notes/b.txt")).unwrap(),
        "new\n"
    );
    let clean = r[2]["result"].as_str().unwrap();
    assert!(
        clean.contains("untouched") && !clean.contains("[room]"),
        "{clean}"
    );
    // The room was told, and the holder hears it at its next turn.
    env.run("ag-prompt", &["-s", &idh, "-m", "echo", "anything new?"])
        .ok();
    let heard: Vec<String> = peer_chunks(&env, &idh)
        .iter()
        .flat_map(|c| c["data"]["messages"].as_array().unwrap().clone())
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    assert!(
        heard
            .iter()
            .any(|t| t.contains("changed files others claim: notes/b.txt")),
        "{heard:?}"
    );
}

#[test]
fn peer_nudge_names_live_peers_once_per_turn_when_nobody_claims() {
    let env = env();
    let idle = script(
        &env,
        "p.toml",
        "[[step]]\nwait_for = \"p-done\"\ntext = \"-\"\n",
    );
    let mut p = spawn(&env, &["-m", &idle, "peer: reviewing"]);
    let idp = p.session();
    assert!(wait_until(Duration::from_secs(30), || live(&env, &idp)));
    let hp = handle(&env, &idp);
    let w = script(
        &env,
        "w.toml",
        "[[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"a.txt\", content = \"a\" } }]\n\
         [[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"b.txt\", content = \"b\" } }]\n\
         [[step]]\ntext = \"one\"\n\
         [[step]]\ntool_calls = [{ name = \"write\", arguments = { path = \"c.txt\", content = \"c\" } }]\n\
         [[step]]\ntext = \"two\"\n",
    );
    let first = env
        .run("ag-prompt", &["-m", &w, "--tools", "all", "writer"])
        .ok();
    let idw = crate::prompt::session_id(&first);
    env.run("ag-prompt", &["-s", &idw, "-m", &w, "more"]).ok();
    let r: Vec<String> = results(&env, &idw, "write")
        .iter()
        .map(|d| d["result"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(r.len(), 3, "{r:?}");
    let nudge = format!("[room] Also working in this worktree: peer: reviewing (session={hp})");
    assert!(r[0].contains(&nudge), "the turn's first change: {}", r[0]);
    assert!(!r[1].contains("[room]"), "once per turn: {}", r[1]);
    assert!(
        r[2].contains(&nudge),
        "the next turn's first change: {}",
        r[2]
    );
    std::fs::write(env.cwd.join("p-done"), "").unwrap();
    assert_eq!(p.wait(Duration::from_secs(30)).code, 0);
}

#[test]
fn peer_peek_shows_peer_lines_and_plain_ag_prompt_notices_what_it_heard() {
    let env = env();
    let listener = script(
        &env,
        "l.toml",
        "[[step]]\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n\
         [[step]]\nwait_for = \"go\"\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*.none\" } }]\n\
         [[step]]\ntool_calls = [{ name = \"peer_message\", arguments = { text = \"on it\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let mut l = spawn(&env, &["-m", &listener, "listener"]);
    let idl = l.session();
    // Its first step boundary has passed: from here on it hears what is said.
    wait_for_chunk(&env, &idl, |c| c["type"] == "tool_call");
    env.run(
        "ag-room",
        &["tell", "--from", "carol", "please look at the parser"],
    )
    .ok();
    std::fs::write(env.cwd.join("go"), "").unwrap();
    let r = l.wait(Duration::from_secs(30));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let notices: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("peer: "))
        .collect();
    assert_eq!(notices.len(), 1, "{}", r.stderr);
    assert!(
        notices[0].contains("carol: please look at the parser"),
        "{}",
        notices[0]
    );
    let hl = handle(&env, &idl);
    let peek = env.run("ag-room", &["peek", &idl]).ok().stdout;
    assert!(
        peek.contains("heard: <peer from=\"carol\" msg=\"")
            && peek.contains(">please look at the parser</peer>"),
        "{peek}"
    );
    assert!(
        peek.contains(&format!(
            "peer said: <peer from=\"listener\" session=\"{hl}\">on it</peer>"
        )),
        "{peek}"
    );
    let json = env.run("ag-room", &["peek", &idl, "--json"]).ok().json();
    assert_eq!(json["peer_said"][0]["text"], "on it", "{json}");
}
