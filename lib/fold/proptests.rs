//! Property tests for `fold`: random logs (broken attempts, parallel results, peers, queued
//! input, notices) fold into requests each provider accepts, and earlier steps stay
//! byte-identical as the turn grows.

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::json;

use super::testkit::{strip_all, Log};
use super::*;

#[derive(Debug, Clone)]
pub(super) struct StepSpec {
    /// A broken attempt before the step: (thinking, text, calls).
    abandoned: Option<(bool, bool, usize)>,
    /// Some(empty text?).
    thinking: Option<bool>,
    text: Option<bool>,
    calls: usize,
    answered: [bool; 3],
    errors: [bool; 3],
    json_results: bool,
    /// Results written in reverse call order (parallel tools finish in any order).
    reversed: bool,
    peer: Option<(usize, u64)>,
    queued: bool,
    notice: bool,
    error: bool,
}

#[derive(Debug, Clone)]
pub(super) struct TurnSpec {
    user: bool,
    steps: Vec<StepSpec>,
    turn_end: bool,
}

fn step_spec() -> impl Strategy<Value = StepSpec> {
    (
        prop::option::weighted(0.15, (any::<bool>(), any::<bool>(), 0..3usize)),
        prop::option::of(prop::bool::weighted(0.2)),
        prop::option::of(prop::bool::weighted(0.2)),
        0..=3usize,
        prop::array::uniform3(prop::bool::weighted(0.8)),
        prop::array::uniform3(prop::bool::weighted(0.2)),
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::option::weighted(0.25, (0..=3usize, 0..3u64)),
        prop::bool::weighted(0.2),
        (prop::bool::weighted(0.15), prop::bool::weighted(0.15)),
    )
        .prop_map(
            |(
                abandoned,
                thinking,
                text,
                calls,
                answered,
                errors,
                json_results,
                reversed,
                peer,
                queued,
                (notice, error),
            )| StepSpec {
                abandoned,
                thinking,
                text,
                calls,
                answered,
                errors,
                json_results,
                reversed,
                peer,
                queued,
                notice,
                error,
            },
        )
}

pub(super) fn turns() -> impl Strategy<Value = Vec<TurnSpec>> {
    let turn = (
        prop::bool::weighted(0.9),
        prop::collection::vec(step_spec(), 1..=4),
        any::<bool>(),
    )
        .prop_map(|(user, steps, turn_end)| TurnSpec {
            user,
            steps,
            turn_end,
        });
    prop::collection::vec(turn, 1..=3)
}

pub(super) struct Built {
    pub(super) log: Log,
    /// Lengths at which a request is built: after a user text, after a whole step.
    boundaries: Vec<usize>,
    /// Calls that never get a result in the whole log.
    unmatched: usize,
}

pub(super) fn build(turns: &[TurnSpec]) -> Built {
    let mut log = Log::new();
    let mut boundaries = vec![0];
    let mut unmatched = 0;
    for (t, turn) in turns.iter().enumerate() {
        log.turn(&format!("t{t}"));
        if turn.user {
            log.user(&format!("question {t}"));
            boundaries.push(log.len());
        }
        for (s, spec) in turn.steps.iter().enumerate() {
            let tag = format!("t{t}s{}", s + 1);
            log.step(s as i64 + 1);
            if let Some((thinking, text, calls)) = spec.abandoned {
                let mut ids = Vec::new();
                if thinking {
                    ids.push(log.thinking("ABANDONED", Some("sig-ABANDONED")));
                }
                if text {
                    ids.push(log.text("ABANDONED"));
                }
                for k in 0..calls {
                    ids.push(log.call(&format!("ABANDONED-{tag}-{k}"), "read", json!({})));
                }
                log.error("stream broke");
                log.abandon(&ids);
            }
            if let Some(empty) = spec.thinking {
                let text = if empty { String::new() } else { tag.clone() };
                log.thinking(&text, Some(&format!("sig-{tag}")));
            }
            if let Some(empty) = spec.text {
                let text = if empty {
                    String::new()
                } else {
                    format!("{tag} says")
                };
                log.text(&text);
            }
            let ids: Vec<String> = (0..spec.calls).map(|k| format!("{tag}-call{k}")).collect();
            for id in &ids {
                log.call(id, "read", json!({"path": id, "n": 1}));
            }
            let mut order: Vec<usize> = (0..spec.calls).collect();
            if spec.reversed {
                order.reverse();
            }
            for k in order {
                if spec.answered[k] {
                    let result = if spec.json_results {
                        json!({"out": ids[k]})
                    } else {
                        json!(format!("out {}", ids[k]))
                    };
                    log.result(&ids[k], result, spec.errors[k]);
                } else {
                    unmatched += 1;
                }
            }
            if let Some((n, omitted)) = spec.peer {
                let texts: Vec<(String, String)> = (0..n)
                    .map(|i| (format!("{tag}peer{i}xxxx"), format!("hello {i}")))
                    .collect();
                let msgs: Vec<(&str, &str, &str)> = texts
                    .iter()
                    .map(|(id, text)| (id.as_str(), "bob", text.as_str()))
                    .collect();
                log.peer(&msgs, omitted);
            }
            if spec.queued {
                log.user(&format!("queued {tag}"));
            }
            if spec.notice {
                log.system("notice", json!({"text": "note"}));
            }
            if spec.error {
                log.error("oops");
            }
            boundaries.push(log.len());
        }
        if turn.turn_end {
            log.turn_end();
            boundaries.push(log.len());
        }
    }
    Built {
        log,
        boundaries,
        unmatched,
    }
}

fn block_type(b: &Value) -> &str {
    b["type"].as_str().unwrap_or("")
}

/// The step tag a generated block came from (`t0s1`), if it carries one.
fn step_tag(b: &Value) -> Option<String> {
    let s = match block_type(b) {
        "thinking" => b["signature"].as_str()?.strip_prefix("sig-")?,
        "text" => b["text"].as_str()?.strip_suffix(" says")?,
        "tool_use" => b["id"].as_str()?.split('-').next()?,
        _ => return None,
    };
    Some(s.to_string())
}

fn check_anthropic(msgs: &[Value]) -> Result<(), TestCaseError> {
    for (i, m) in msgs.iter().enumerate() {
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        prop_assert_eq!(&m["role"], want, "roles must alternate from user at {}", i);
        let content = m["content"].as_array().expect("content is an array");
        prop_assert!(!content.is_empty(), "empty message {}", i);
        for b in content {
            if block_type(b) == "text" {
                prop_assert!(
                    !b["text"].as_str().unwrap().is_empty(),
                    "empty text at {}",
                    i
                );
            }
        }
        let uses = |m: &Value| -> Vec<String> {
            m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| block_type(b) == "tool_use")
                .map(|b| b["id"].as_str().unwrap().to_string())
                .collect()
        };
        if want == "user" {
            let answered = if i == 0 { vec![] } else { uses(&msgs[i - 1]) };
            let results: Vec<String> = content
                .iter()
                .filter(|b| block_type(b) == "tool_result")
                .map(|b| b["tool_use_id"].as_str().unwrap().to_string())
                .collect();
            prop_assert_eq!(&results, &answered, "results of message {}", i);
            prop_assert!(
                content[..results.len()]
                    .iter()
                    .all(|b| block_type(b) == "tool_result"),
                "tool_result blocks must open message {}",
                i
            );
            for b in &content[..results.len()] {
                prop_assert!(b["content"].is_string());
                prop_assert!(b.get("is_error").is_none_or(|e| e == true));
            }
        } else {
            prop_assert!(
                uses(m).is_empty() || i + 1 < msgs.len(),
                "tool_use in the last message {}",
                i
            );
            // Within each step's blocks, thinking comes first.
            let mut seen_other: HashSet<String> = HashSet::new();
            for b in content {
                let Some(tag) = step_tag(b) else { continue };
                if block_type(b) == "thinking" {
                    prop_assert!(
                        !seen_other.contains(&tag),
                        "thinking after output in {}",
                        tag
                    );
                } else {
                    seen_other.insert(tag);
                }
                prop_assert!(b["type"] != "tool_use" || b["input"].is_object());
            }
        }
    }
    Ok(())
}

fn check_openai(msgs: &[Value]) -> Result<(), TestCaseError> {
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        prop_assert!(m["role"] != "tool", "tool message {} answers no call", i);
        prop_assert!(m["role"] != "system");
        i += 1;
        if m["role"] == "assistant" {
            prop_assert!(m["content"].is_string() || m.get("tool_calls").is_some());
            let Some(calls) = m.get("tool_calls") else {
                continue;
            };
            let calls = calls.as_array().unwrap();
            prop_assert!(!calls.is_empty());
            for c in calls {
                prop_assert_eq!(&c["type"], "function");
                prop_assert!(c["function"]["arguments"].is_string());
                prop_assert!(i < msgs.len(), "calls without tool messages");
                let t = &msgs[i];
                prop_assert_eq!(&t["role"], "tool");
                prop_assert_eq!(&t["tool_call_id"], &c["id"]);
                prop_assert!(t["content"].is_string());
                i += 1;
            }
        } else {
            prop_assert_eq!(&m["role"], "user");
            prop_assert!(!m["content"].as_str().unwrap().is_empty());
        }
    }
    Ok(())
}

fn count_synthetic(msgs: &[Value]) -> usize {
    let text = serde_json::to_string(msgs).unwrap();
    text.matches(SYNTHETIC_RESULT).count()
}

proptest! {
    #![proptest_config(Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn folds_are_well_formed_and_prefix_stable(turns in turns()) {
        let built = build(&turns);
        let chunks = &built.log.chunks;
        let opts = FoldOptions {
            model: Some("m".into()),
            system: Some("be brief".into()),
            tools: vec![
                ToolSpec { name: "read".into(), description: "r".into(), input_schema: json!({"type": "object"}) },
                ToolSpec { name: "grep".into(), description: "g".into(), input_schema: json!({"type": "object"}) },
            ],
            thinking_budget: Some(1024),
            stream: true,
            ..FoldOptions::default()
        };
        for dialect in Dialect::ALL {
            let builds: Vec<Vec<String>> = built
                .boundaries
                .iter()
                .map(|&b| {
                    let msgs = messages(&chunks[..b], dialect);
                    match dialect {
                        Dialect::Anthropic => check_anthropic(&msgs),
                        Dialect::OpenAi => check_openai(&msgs),
                    }?;
                    let body = fold(&chunks[..b], dialect, &opts);
                    // The body carries the same messages (after OpenAI's system message).
                    let in_body = body["messages"].as_array().unwrap();
                    let skip = usize::from(dialect == Dialect::OpenAi);
                    prop_assert_eq!(&in_body[skip..], &msgs[..]);
                    prop_assert!(cache_breakpoints(&body) <= 4);
                    if dialect == Dialect::OpenAi {
                        prop_assert_eq!(cache_breakpoints(&body), 0);
                    }
                    Ok(strip_all(&msgs))
                })
                .collect::<Result<_, TestCaseError>>()?;
            // (a) every message of a shorter build but its last (which a later build may
            // still extend) is a byte-identical prefix of every longer build.
            for (i, short) in builds.iter().enumerate() {
                let fixed = short.len().saturating_sub(1);
                for long in &builds[i + 1..] {
                    prop_assert!(long.len() >= fixed);
                    prop_assert_eq!(&short[..fixed], &long[..fixed], "{}", dialect);
                }
            }
            let full = messages(chunks, dialect);
            let text = serde_json::to_string(&full).unwrap();
            prop_assert!(!text.contains("ABANDONED"), "abandoned chunks folded: {}", text);
            prop_assert!(!text.contains("oops") && !text.contains("note"));
            prop_assert_eq!(count_synthetic(&full), built.unmatched);
        }
    }
}
