//! Property tests of compacted folds: random logs compacted where [`super::cut::plan`] cuts
//! them fold into requests each provider accepts (tool pairs intact, Anthropic's roles
//! alternating), the summarizer's input never holds peer speech, and every build after the
//! compaction keeps the earlier builds' messages byte for byte.

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

use super::cut;
use crate::fold::compaction::{Compaction, Trigger};
use crate::fold::testkit::Log;
use crate::fold::{messages, strip_cache_control, Dialect};
use crate::log::ChunkData;

#[derive(Debug, Clone)]
struct StepSpec {
    text: Option<usize>,
    calls: usize,
    answered: bool,
    peer: bool,
    queued: bool,
}

#[derive(Debug, Clone)]
struct TurnSpec {
    prompt: usize,
    steps: Vec<StepSpec>,
}

fn turns(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<TurnSpec>> {
    let step = (
        prop::option::of(0..400usize),
        0..3usize,
        prop::bool::weighted(0.9),
        prop::bool::weighted(0.25),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(text, calls, answered, peer, queued)| StepSpec {
            text,
            calls,
            answered,
            peer,
            queued,
        });
    let turn = (1..300usize, prop::collection::vec(step, 1..4))
        .prop_map(|(prompt, steps)| TurnSpec { prompt, steps });
    prop::collection::vec(turn, n)
}

/// Append turns to the log; returns the lengths at each step boundary.
fn play(log: &mut Log, turns: &[TurnSpec], tag: &str) -> Vec<usize> {
    let mut bounds = Vec::new();
    for (t, turn) in turns.iter().enumerate() {
        log.turn(&format!("{tag}{t}"));
        log.user(&format!("ask {tag}{t} {}", "w".repeat(turn.prompt)));
        bounds.push(log.len());
        for (s, spec) in turn.steps.iter().enumerate() {
            log.step(s as i64 + 1);
            if let Some(n) = spec.text {
                log.text(&format!("{tag}{t}s{s} {}", "a".repeat(n)));
            }
            let ids: Vec<String> = (0..spec.calls)
                .map(|k| format!("{tag}{t}s{s}c{k}"))
                .collect();
            for id in &ids {
                log.call(id, "read", json!({"path": id}));
            }
            for id in &ids {
                if spec.answered {
                    log.result(id, json!(format!("out {id} {}", "r".repeat(120))), false);
                }
            }
            if spec.peer {
                log.peer(&[(&format!("PEER{tag}{t}{s}"), "bob", "PEERTEXT hi")], 0);
            }
            if spec.queued {
                log.user(&format!("queued {tag}{t}{s}"));
            }
            bounds.push(log.len());
        }
        log.turn_end();
    }
    bounds
}

fn check_anthropic(msgs: &[Value]) -> Result<(), TestCaseError> {
    for (i, m) in msgs.iter().enumerate() {
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        prop_assert_eq!(&m["role"], want, "roles alternate from user, at {}", i);
        let content = m["content"].as_array().unwrap();
        prop_assert!(!content.is_empty());
        let uses: Vec<&Value> = if i == 0 {
            vec![]
        } else {
            msgs[i - 1]["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| &b["id"])
                .collect()
        };
        if want == "user" {
            let results: Vec<&Value> = content
                .iter()
                .take_while(|b| b["type"] == "tool_result")
                .map(|b| &b["tool_use_id"])
                .collect();
            prop_assert_eq!(&results, &uses, "results answer the calls, at {}", i);
            prop_assert_eq!(
                content
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .count(),
                results.len()
            );
        }
    }
    Ok(())
}

fn check_openai(msgs: &[Value]) -> Result<(), TestCaseError> {
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        prop_assert!(m["role"] != "tool", "a tool message {} answers no call", i);
        i += 1;
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            prop_assert!(i < msgs.len(), "calls without answers");
            prop_assert_eq!(&msgs[i]["role"], "tool");
            prop_assert_eq!(&msgs[i]["tool_call_id"], &c["id"]);
            i += 1;
        }
    }
    Ok(())
}

fn stripped(msgs: &[Value]) -> Vec<String> {
    msgs.iter()
        .map(|m| strip_cache_control(m).to_string())
        .collect()
}

proptest! {
    #![proptest_config(Config { cases: 64, failure_persistence: None, ..Config::default() })]

    #[test]
    fn compacted_folds_are_valid_and_byte_stable(
        before in turns(2..6),
        after in turns(1..3),
        keep in 0..3000u64,
    ) {
        let mut log = Log::new();
        play(&mut log, &before, "b");
        let Some(plan) = cut::plan(&log.chunks, keep) else {
            return Ok(());
        };
        // What the summarizer would read: no peer speech, nothing of the kept suffix.
        let read: Vec<_> = log.chunks[plan.summarized_from..plan.kept_from]
            .iter()
            .filter(|c| cut::summarizable(c))
            .cloned()
            .collect();
        let no_peers = read.iter().all(|c| !matches!(c.data, ChunkData::Peer { .. }));
        prop_assert!(no_peers, "the summarizer reads peer speech");
        prop_assert!(
            plan.kept_from == log.len()
                || cut::is_human_turn(&log.chunks[plan.kept_from])
                || cut::starts_step(&log.chunks, plan.kept_from),
            "the suffix starts inside a step"
        );
        let next = log.len() as i64 + 1;
        let kept_from_seq = log.chunks.get(plan.kept_from).map_or(next, |c| c.seq);
        let c = Compaction {
            summary: "SUMMARY".into(),
            through_seq: kept_from_seq - 1,
            kept_from_seq,
            trigger: Trigger::Auto,
            tokens_before: 1,
            tokens_after: 1,
            model: "m".into(),
            state: Some("STATE".into()),
        };
        let ChunkData::System(mut fields) = c.to_data() else { unreachable!() };
        fields.remove("kind");
        log.system("compaction", Value::Object(fields));
        let at = log.len();
        let mut bounds = vec![at];
        bounds.extend(play(&mut log, &after, "a"));
        for dialect in Dialect::ALL {
            let builds: Vec<Vec<Value>> = bounds
                .iter()
                .map(|&b| messages(&log.chunks[..b], dialect))
                .collect();
            for m in &builds {
                match dialect {
                    Dialect::Anthropic => check_anthropic(m)?,
                    Dialect::OpenAi => check_openai(m)?,
                }
                let text = serde_json::to_string(m).unwrap();
                prop_assert!(text.contains("SUMMARY") && text.contains("STATE"));
                // Nothing summarized comes back verbatim (the suffix starts after it).
                for c in &read {
                    if let ChunkData::Text { text: t } = &c.data {
                        prop_assert!(!text.contains(t.as_str()), "{} folded after compaction", t);
                    }
                }
            }
            for (i, short) in builds.iter().enumerate() {
                let fixed = short.len().saturating_sub(1);
                let s = stripped(short);
                for long in &builds[i + 1..] {
                    prop_assert_eq!(&s[..fixed], &stripped(long)[..fixed], "{}", dialect);
                }
            }
        }
    }
}
