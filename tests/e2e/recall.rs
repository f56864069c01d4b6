//! `recall` end to end on the fake provider: after an automatic compaction the model finds a
//! word of the first turn and reads that chunk verbatim (both dialects); a peer's words come
//! back marked as a peer's; recall's own answers are not found again; a fork made before a
//! compaction cannot reach what its source wrote after the fork, nor any other session; a
//! side chat recalls its source's history.

use serde_json::{json, Value};

use crate::compaction::{answer, first_user_text, model_of, small_window, ANTHROPIC};
use crate::fake_provider::sse::{self, Block};
use crate::fake_provider::{FakeProvider, Recorded, Reply};
use crate::prompt::env_with;
use crate::support::{chunk, TestEnv};

/// The assistant's first-turn words the summary will not carry.
const CONSTRAINT: &str =
    "Noted: the user said never to rename the ZEBRAFISH table, whatever the migration wants.";

/// One step that calls tools: `(id, name, input)` each.
pub(crate) fn calls(dialect: &str, calls: &[(&str, &str, Value)]) -> Reply {
    Reply::Sse(match dialect {
        "anthropic" => sse::anthropic(
            &calls
                .iter()
                .map(|(id, name, input)| Block::Tool {
                    id: id.to_string(),
                    name: name.to_string(),
                    input: input.clone(),
                })
                .collect::<Vec<_>>(),
            "tool_use",
            (30, 5, 0, 0),
        ),
        _ => sse::openai(
            None,
            &calls
                .iter()
                .map(|(id, name, input)| (id.to_string(), name.to_string(), input.clone()))
                .collect::<Vec<_>>(),
            "tool_calls",
            (30, 5),
        ),
    })
}

/// The tool results a request carries, in order, as text.
pub(crate) fn results_in(r: &Recorded) -> Vec<String> {
    let mut out = Vec::new();
    for m in r.body["messages"].as_array().unwrap() {
        if m["role"] == "tool" {
            out.push(m["content"].as_str().unwrap_or_default().to_string());
        }
        if let Some(blocks) = m["content"].as_array() {
            for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
                out.push(match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
            }
        }
    }
    out
}

/// A session whose first turn holds [`CONSTRAINT`] and a peer's line about the same table,
/// then enough long turns to pass half of the small window. Returns its id and the seq of
/// the constraint.
fn history(env: &TestEnv) -> (String, i64) {
    let id = env.new_session("recall", "ask 0: tidy the billing module");
    let mut lines = vec![
        chunk::step(chunk::assistant(CONSTRAINT), "turn0", 1),
        json!({"role": "peer", "type": "peer", "turn": "turn0", "step": 1,
            "data": {"messages": [{"id": "0190bbbb-peer", "from": "bob", "text": "the ZEBRAFISH table is mine today"}],
                     "omitted": 0, "room": "r"}}),
        chunk::step(chunk::turn_end(0, 0), "turn0", 1),
    ];
    for t in 1..8 {
        let turn = format!("turn{t}");
        lines.push(chunk::step(
            chunk::user(&format!("ask {t}: keep going")),
            &turn,
            0,
        ));
        lines.push(chunk::step(
            chunk::assistant(&format!("answer {t}: {}", "words ".repeat(450))),
            &turn,
            1,
        ));
        lines.push(chunk::step(chunk::turn_end(0, 0), &turn, 1));
    }
    let stored = env.append(&id, &lines);
    (id, stored[0]["seq"].as_i64().unwrap())
}

#[test]
fn after_a_compaction_the_model_recalls_the_first_turn_and_reads_it_verbatim() {
    for dialect in ["anthropic", "openai"] {
        let fake = FakeProvider::start();
        let env = env_with(Some(&fake), &small_window());
        let (id, seq) = history(&env);
        fake.push(answer(
            dialect,
            "SUMMARY: the billing module is being tidied.",
        ));
        fake.push(calls(
            dialect,
            &[("call_1", "recall", json!({"query": "zebrafish"}))],
        ));
        fake.push(calls(
            dialect,
            &[
                ("call_2", "recall", json!({"seq": seq, "around": 0})),
                ("call_3", "recall", json!({"query": "ZEBRAFISH"})),
            ],
        ));
        fake.push(answer(dialect, "I will leave that table alone."));
        let run = env
            .run("ag-prompt", &["-s", &id, "-m", model_of(dialect), "go on"])
            .ok();
        assert!(
            run.stderr.contains("compacted "),
            "{dialect}: {}",
            run.stderr
        );
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 4, "{dialect}: a summary, then three steps");

        // The summary dropped the constraint; the handoff says recall can bring it back.
        let handoff = first_user_text(&reqs[1]);
        assert!(!handoff.contains("ZEBRAFISH"), "{dialect}: {handoff}");
        assert!(handoff.contains("call `recall`"), "{dialect}: {handoff}");
        assert!(
            reqs[1].body["tools"].to_string().contains("\"recall\""),
            "{dialect}: recall is offered"
        );

        // The search finds the assistant's words and the peer's, the peer's marked as such.
        let found = results_in(&reqs[2]).pop().unwrap();
        assert!(found.starts_with("2 matches"), "{dialect}: {found}");
        let line = found
            .lines()
            .find(|l| l.starts_with(&format!("seq {seq} ")))
            .unwrap_or_else(|| panic!("{dialect}: {found}"));
        assert!(
            line.contains("assistant text") && line.contains("[ZEBRAFISH]"),
            "{line}"
        );
        let peer = found.lines().find(|l| l.contains("bob")).unwrap();
        assert!(
            peer.contains("peer message (another agent's words, not the user's) from bob"),
            "{peer}"
        );
        assert!(!peer.contains("user text"), "{peer}");

        // `seq` gives the chunk back verbatim; the same search again does not find recall's
        // own earlier call and answer.
        let got = results_in(&reqs[3]);
        let verbatim = &got[got.len() - 2];
        assert!(verbatim.contains(CONSTRAINT), "{dialect}: {verbatim}");
        assert!(
            verbatim.starts_with(&format!("▶ seq {seq} · assistant text")),
            "{verbatim}"
        );
        assert!(got[got.len() - 1].starts_with("2 matches"), "{dialect}");
    }
}

#[test]
fn recall_stays_in_its_lineage_and_a_side_chat_recalls_its_source() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), "[context]\nkeep_tokens = 300\n");
    let source = env.new_session("source", "ask 0: plan the ZEBRAFISH migration");
    env.append(
        &source,
        &[chunk::assistant("planned"), chunk::turn_end(1, 1)],
    );
    // Another session holds both words: it must never be found.
    let other = env.new_session("other", "OSPREY and ZEBRAFISH in another session");
    env.append(&other, &[chunk::turn_end(1, 1)]);
    let fork = env
        .run("ag-fork", &[&source, "-q"])
        .ok()
        .stdout
        .trim()
        .to_string();
    // After the fork the source works on (so its seqs pass any the fork will reach), learns
    // a codename, then compacts.
    let mut lines: Vec<Value> = (0..30)
        .map(|i| chunk::user(&format!("filler {i}")))
        .collect();
    lines.extend([
        chunk::user("later: OSPREY is the codename"),
        chunk::assistant("ok"),
        chunk::turn_end(1, 1),
    ]);
    let later = env.append(&source, &lines);
    let osprey_seq = later[30]["seq"].as_i64().unwrap();
    env.log(&["compact", &source, "--summary", "SUMMARY: a migration"])
        .ok();

    fake.push(calls(
        "anthropic",
        &[
            ("c1", "recall", json!({"query": "osprey"})),
            ("c2", "recall", json!({"query": "zebrafish"})),
            ("c3", "recall", json!({"seq": osprey_seq})),
        ],
    ));
    fake.push(answer("anthropic", "done"));
    env.run(
        "ag-prompt",
        &["-s", &fork, "-m", ANTHROPIC, "what do you know?"],
    )
    .ok();
    let got = results_in(&fake.requests()[1]);
    assert!(
        got[0].starts_with("nothing in this session's history holds every word of \"osprey\""),
        "the fork saw its source's later chunk: {}",
        got[0]
    );
    assert!(got[1].starts_with("1 match "), "{}", got[1]);
    assert!(got[1].contains("seq 1 · user text"), "{}", got[1]);
    assert!(!got[1].contains("another session"), "{}", got[1]);
    assert!(
        got[2].contains(&format!(
            "seq {osprey_seq} is not in this session's history"
        )),
        "{}",
        got[2]
    );

    // The source itself finds the codename, from before its compaction.
    fake.push(calls(
        "anthropic",
        &[("c4", "recall", json!({"query": "osprey"}))],
    ));
    fake.push(answer("anthropic", "done"));
    env.run("ag-prompt", &["-s", &source, "-m", ANTHROPIC, "codename?"])
        .ok();
    let got = results_in(&fake.requests()[3]);
    let last = got.last().unwrap();
    assert!(last.starts_with("1 match "), "{last}");
    assert!(
        last.contains(&format!("seq {osprey_seq} · user text")),
        "{last}"
    );

    // A side chat looks only, and recalls its source's history up to its fork.
    fake.push(calls(
        "anthropic",
        &[("c5", "recall", json!({"query": "osprey codename"}))],
    ));
    fake.push(answer("anthropic", "OSPREY."));
    let btw = env
        .run(
            "ag-fork",
            &[&source, "--btw", "what is the codename?", "-m", ANTHROPIC],
        )
        .ok();
    assert!(btw.stdout.contains("OSPREY."), "{}", btw.stdout);
    let reqs = fake.requests();
    let side = &reqs[reqs.len() - 1];
    let last = results_in(side).pop().unwrap();
    assert!(
        last.contains(&format!("seq {osprey_seq} · user text")),
        "{last}"
    );
}

#[test]
fn bad_recall_calls_are_errors_the_model_can_act_on() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), "");
    let id = env.new_session("bad", "hello");
    env.append(&id, &[chunk::assistant("hi"), chunk::turn_end(1, 1)]);
    fake.push(calls(
        "anthropic",
        &[
            ("b1", "recall", json!({})),
            ("b2", "recall", json!({"query": "hello", "seq": 1})),
            ("b3", "recall", json!({"query": "   "})),
            ("b4", "recall", json!({"seq": 0})),
            ("b5", "recall", json!({"seq": "two"})),
            ("b6", "recall", json!({"query": "(hello*"})),
        ],
    ));
    fake.push(answer("anthropic", "ok"));
    env.run("ag-prompt", &["-s", &id, "-m", ANTHROPIC, "try"])
        .ok();
    let req = &fake.requests()[1];
    let got = results_in(req);
    assert_eq!(got.len(), 6);
    for (text, says) in got.iter().zip([
        "give `query`",
        "not both",
        "`query` is empty",
        "seq 0 is not in this session's history",
        "`seq` must be a number",
        "1 match ",
    ]) {
        assert!(text.contains(says), "{says}: {text}");
    }
    // The first five are errors; the FTS syntax in the last one was taken as words.
    let errors = req.body["messages"]
        .to_string()
        .matches("\"is_error\":true")
        .count();
    assert_eq!(errors, 5, "{}", req.body["messages"]);
}

#[test]
fn recall_output_stays_within_the_tool_output_cap() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), "[agent]\noutput_cap = 600\n");
    let id = env.new_session("cap", "hello");
    let long = format!("PUFFIN {}", "feather ".repeat(500));
    let mut lines: Vec<Value> = (0..40)
        .map(|i| chunk::assistant(&format!("PUFFIN sighting {i}")))
        .collect();
    lines.push(chunk::assistant(&long));
    lines.push(chunk::turn_end(1, 1));
    let stored = env.append(&id, &lines);
    let long_seq = stored[40]["seq"].as_i64().unwrap();
    fake.push(calls(
        "anthropic",
        &[
            ("k1", "recall", json!({"query": "puffin", "limit": 50})),
            ("k2", "recall", json!({"seq": long_seq})),
        ],
    ));
    fake.push(answer("anthropic", "ok"));
    env.run("ag-prompt", &["-s", &id, "-m", ANTHROPIC, "count them"])
        .ok();
    let got = results_in(&fake.requests()[1]);
    for text in &got {
        let body = text.split("[output cut:").next().unwrap();
        assert!(body.len() <= 601, "{} bytes: {text}", body.len());
        assert!(text.contains("[output cut:"), "{text}");
    }
    assert!(got[0].starts_with("41 matches"), "{}", got[0]);
    assert!(got[1].contains("PUFFIN feather"), "{}", got[1]);
}

#[test]
fn the_handoff_mentions_recall_only_when_the_session_may_call_it() {
    let env = env_with(None, "[context]\nkeep_tokens = 10\n");
    for (tools, says) in [("read", false), ("read,recall", true)] {
        let run = env
            .run("ag-prompt", &["-m", "echo", "--tools", tools, "first ask"])
            .ok();
        let id = crate::prompt::session_id(&run);
        env.run("ag-prompt", &["-s", &id, "-m", "echo", "second ask"])
            .ok();
        env.log(&["compact", &id, "--summary", "S"]).ok();
        let chunks = env.chunks(&id);
        let state = crate::prompt::system_kind(&chunks, "compaction")[0]["data"]["state"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(state.contains("call `recall`"), says, "{tools}: {state}");
    }
}
