use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

use super::*;
use crate::fold::proptests::{build, turns};
use crate::fold::testkit::Log;
use crate::fold::{fold, ToolSpec};
use crate::log::Role;

fn opts() -> FoldOptions {
    FoldOptions {
        model: Some("m".into()),
        system: Some("be brief".into()),
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "r".into(),
            input_schema: json!({"type": "object"}),
        }],
        stream: true,
        ..FoldOptions::default()
    }
}

/// Build a request of `chunks` through `folded` and check it against the whole fold; give
/// the messages back unless `drop` (a request that never came back).
fn request(
    folded: &mut Folded,
    chunks: &[Chunk],
    dialect: Dialect,
    drop: bool,
) -> Result<(), TestCaseError> {
    let opts = opts();
    let (messages, tally) = folded.messages(chunks, dialect);
    let (body, sizes) = body(dialect, &opts, messages, tally);
    let whole = fold(chunks, dialect, &opts);
    prop_assert_eq!(
        serde_json::to_string(&body).unwrap(),
        serde_json::to_string(&whole).unwrap(),
        "{} at {} chunks",
        dialect,
        chunks.len()
    );
    prop_assert_eq!(sizes, Sizes::of(&whole));
    if !drop {
        folded.keep(messages_of(dialect, &opts, body));
    }
    Ok(())
}

/// A record that reaches other chunks, put at `at` among `chunks`: `kind` 0 a prune of the
/// results before it, 1 an abandoned attempt naming the two chunks before it, 2 a
/// compaction keeping the last few chunks before it, 3 a prune naming a result after it, 4
/// a late result for the last call before it that has none.
fn insert_record(chunks: &mut Vec<Chunk>, at: usize, kind: u8) {
    let before = &chunks[..at];
    let results = |cs: &[Chunk]| -> Vec<String> {
        cs.iter()
            .filter(|c| matches!(c.data, ChunkData::ToolResult { .. }))
            .map(|c| c.id.clone())
            .collect()
    };
    let data = match kind {
        0 => ChunkData::system(
            prune::KIND,
            json!({"through_seq": 0, "cleared": results(before).into_iter().step_by(2).collect::<Vec<_>>()}),
        ),
        1 => ChunkData::system(
            "attempt_abandoned",
            json!({"chunk_ids": before.iter().rev().take(2).map(|c| c.id.clone()).collect::<Vec<_>>()}),
        ),
        2 => ChunkData::system(
            super::super::compaction::KIND,
            json!({"summary": "the story so far", "through_seq": 0,
                   "kept_from_seq": before.get(at.saturating_sub(3)).map_or(0, |c| c.seq)}),
        ),
        4 => {
            let answered: Vec<&str> = chunks
                .iter()
                .filter_map(|c| match &c.data {
                    ChunkData::ToolResult { call_id, .. } => Some(call_id.as_str()),
                    _ => None,
                })
                .collect();
            let open = before.iter().rev().find_map(|c| match &c.data {
                ChunkData::ToolCall { call_id, .. } if !answered.contains(&call_id.as_str()) => {
                    Some(call_id.clone())
                }
                _ => None,
            });
            let Some(call_id) = open else { return };
            ChunkData::ToolResult {
                call_id,
                name: "read".into(),
                result: json!("late"),
                is_error: false,
                synthetic: false,
            }
        }
        _ => ChunkData::system(
            prune::KIND,
            json!({"through_seq": 0, "cleared": results(&chunks[at..]).into_iter().take(1).collect::<Vec<_>>()}),
        ),
    };
    let mut c = chunks[at.saturating_sub(1).min(chunks.len() - 1)].clone();
    c.id = format!("r{at}k{kind}");
    c.role = if matches!(data, ChunkData::ToolResult { .. }) {
        Role::Tool
    } else {
        Role::System
    };
    c.data = data;
    chunks.insert(at, c);
}

/// Seqs 1, 2, … again after insertions; a compaction's kept seq moves with its chunk.
fn renumber(chunks: &mut [Chunk]) {
    let old: Vec<i64> = chunks.iter().map(|c| c.seq).collect();
    for (i, c) in chunks.iter_mut().enumerate() {
        c.seq = i as i64 + 1;
    }
    for c in chunks.iter_mut() {
        if let ChunkData::System(m) = &mut c.data {
            if let Some(kept) = m.get("kept_from_seq").and_then(Value::as_i64) {
                let at = old.iter().position(|&s| s >= kept).unwrap_or(0);
                m.insert("kept_from_seq".into(), json!(at as i64 + 1));
            }
        }
    }
}

proptest! {
    #![proptest_config(Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn a_fold_through_the_kept_messages_is_the_whole_fold(
        turns in turns(),
        records in prop::collection::vec((any::<prop::sample::Index>(), 0..5u8), 0..5),
        asks in prop::collection::vec(prop::bool::weighted(0.6), 80),
        drops in prop::collection::vec(prop::bool::weighted(0.05), 80),
    ) {
        let mut chunks = build(&turns).log.chunks;
        for (at, kind) in records {
            let at = at.index(chunks.len()).max(1);
            insert_record(&mut chunks, at, kind);
        }
        renumber(&mut chunks);
        for dialect in Dialect::ALL {
            let mut folded = Folded::default();
            for len in 1..=chunks.len() {
                if len < chunks.len() && !asks[len % asks.len()] {
                    continue;
                }
                request(&mut folded, &chunks[..len], dialect, drops[len % drops.len()])?;
            }
        }
    }
}

/// Ten turns of a user question and three tool steps, as a run writes them.
fn long_log() -> Log {
    let mut log = Log::new();
    for t in 0..10 {
        log.turn(&format!("t{t}")).step(0);
        log.user(&format!("question {t}"));
        for s in 1..=3 {
            log.step(s);
            log.text(&format!("step {s}"));
            let id = format!("call{t}x{s}");
            log.call(&id, "read", json!({"path": "a"}));
            log.result(&id, json!("out"), false);
        }
        log.step(4);
        log.text("done");
        log.turn_end();
    }
    log
}

#[test]
fn each_request_folds_only_the_newest_steps() {
    let log = long_log();
    for dialect in Dialect::ALL {
        let mut folded = Folded::default();
        for len in 1..=log.chunks.len() {
            request(&mut folded, &log.chunks[..len], dialect, false).unwrap();
            // What is folded anew is the chunks after the cut: never more than the last step
            // and what follows it.
            let since = len - folded.cut;
            assert!(
                len < 8 || since <= 4,
                "{dialect}: {since} chunks after the cut at {len}"
            );
        }
    }
}

#[test]
fn a_prune_of_old_results_folds_the_whole_view_again_and_then_cuts() {
    let mut log = long_log();
    let old = log.chunks[3].id.clone();
    log.system(prune::KIND, json!({"through_seq": 4, "cleared": [old]}));
    log.turn("t99").step(0);
    log.user("again");
    let chunks = &log.chunks;
    let mut folded = Folded::default();
    let n = chunks.len();
    request(&mut folded, &chunks[..n - 2], Dialect::Anthropic, false).unwrap();
    let before = folded.cut;
    request(&mut folded, chunks, Dialect::Anthropic, false).unwrap();
    assert!(
        folded.cut >= before,
        "the cut is found again after the prune"
    );
    let (messages, _) = folded.messages(chunks, Dialect::Anthropic);
    let text = serde_json::to_string(&messages).unwrap();
    assert!(
        text.contains("was cleared"),
        "the pruned result is a placeholder"
    );
}

#[test]
fn sizes_count_what_a_walk_of_the_body_counts() {
    let mut log = long_log();
    log.turn("t10").step(0);
    log.user("déjà vu, 漢字, 🎉 and a \"quoted\" line\n");
    for dialect in Dialect::ALL {
        let mut folded = Folded::default();
        let (messages, tally) = folded.messages(&log.chunks, dialect);
        let (body, sizes) = body(dialect, &opts(), messages, tally);
        assert_eq!(sizes, Sizes::of(&body));
        assert_eq!(
            sizes.message_chars,
            body["messages"].to_string().chars().count()
        );
        assert!(sizes.assistant_messages >= 40);
    }
}

#[test]
fn a_result_that_comes_after_the_cut_reaches_its_call_before_it() {
    // A call, a queued question, then the call's result: the cut at the question does not
    // hold once the result answers the call before it.
    let mut log = Log::new();
    log.step(0);
    log.user("question");
    log.step(1);
    log.call("x", "read", json!({}));
    log.user("and more");
    log.result("x", json!("late out"), false);
    for dialect in Dialect::ALL {
        let mut folded = Folded::default();
        for len in 1..=log.chunks.len() {
            request(&mut folded, &log.chunks[..len], dialect, false).unwrap();
        }
    }
}

#[test]
fn a_cut_whose_chunk_is_abandoned_later_does_not_split_its_step() {
    // Step 1's blocks and result, a queued question (where the cut goes), then the question
    // is named abandoned and step 1 goes on: the fold joins step 1's blocks across it.
    let mut log = Log::new();
    log.step(0);
    log.user("question");
    log.step(1);
    log.text("first");
    log.call("x", "read", json!({}));
    log.result("x", json!("out"), false);
    let queued = log.user("queued");
    log.text("second");
    log.abandon(&[queued]);
    assert_eq!(log.chunks.len(), 7);
    for dialect in Dialect::ALL {
        let mut folded = Folded::default();
        // Requests after the queued question, then after the record.
        for len in [1, 5, 7] {
            request(&mut folded, &log.chunks[..len], dialect, false).unwrap();
        }
    }
}

#[test]
fn a_turn_that_stopped_after_a_result_still_leaves_a_cut_before_its_last_step() {
    // The last turn ended on a result (out of steps), and the new question joins that
    // result's user message: the cut goes one step further back.
    let mut log = long_log();
    log.turn("t10").step(0);
    log.user("question 10");
    log.step(1);
    let last_step = log.len();
    log.text("looking");
    log.call("y", "read", json!({}));
    log.result("y", json!("out"), false);
    log.turn_end();
    log.turn("t11").step(0);
    log.user("go on");
    for dialect in Dialect::ALL {
        let mut folded = Folded::default();
        request(&mut folded, &log.chunks, dialect, false).unwrap();
        assert!(
            folded.cut >= last_step,
            "{dialect}: the first request cut at {}, before the last step at {last_step}",
            folded.cut
        );
    }
}
