//! Unit tests for `fold`: one rule of the walk per test.

use serde_json::json;

use super::testkit::{strip_all, Log};
use super::*;

#[test]
fn dialect_names_round_trip() {
    for d in Dialect::ALL {
        assert_eq!(Dialect::parse(d.as_str()), Some(d));
        assert_eq!(d.to_string(), d.as_str());
    }
    assert_eq!(Dialect::parse("anthropic"), Some(Dialect::Anthropic));
    assert_eq!(Dialect::parse("openai"), Some(Dialect::OpenAi));
    assert_eq!(Dialect::parse("OpenAI"), None);
}

#[test]
fn strip_and_count_cache_control() {
    let v = json!({"a": [{"type": "text", "cache_control": {"type": "ephemeral"}}],
                   "cache_control": 1, "b": {"c": {"cache_control": null}}});
    assert_eq!(cache_breakpoints(&v), 3);
    let s = strip_cache_control(&v);
    assert_eq!(cache_breakpoints(&s), 0);
    assert_eq!(s, json!({"a": [{"type": "text"}], "b": {"c": {}}}));
}

#[test]
fn walk_skips_system_error_and_abandoned_chunks() {
    let mut log = Log::new();
    log.user("hi");
    log.system("notice", json!({"text": "compacted"}));
    log.step(1);
    let a = log.text("half an answ");
    let b = log.call("gone", "read", json!({}));
    log.error("overloaded");
    log.abandon(&[a, b]);
    log.text("answer");
    log.turn_end();
    let items = walk(&log.chunks);
    assert_eq!(
        items,
        vec![
            Item::User("hi".into()),
            Item::Step {
                blocks: vec![Block::Text("answer".into())],
                replies: vec![]
            }
        ]
    );
}

#[test]
fn abandoned_call_result_is_dropped_and_named_ids_anywhere_count() {
    let mut log = Log::new();
    log.user("hi");
    log.step(1);
    let call = log.call("k1", "read", json!({}));
    log.result("k1", json!("late"), false);
    // The marker may come long after what it names.
    log.user("more");
    log.abandon(&[call]);
    let items = walk(&log.chunks);
    assert_eq!(
        items,
        vec![Item::User("hi".into()), Item::User("more".into())]
    );
}

#[test]
fn replies_follow_call_order_synthetic_for_missing_orphans_dropped() {
    let mut log = Log::new();
    log.user("hi");
    log.result("nobody", json!("orphan"), false);
    log.step(1);
    log.call("a", "read", json!({}));
    log.call("b", "grep", json!({}));
    log.call("c", "glob", json!({}));
    log.result("c", json!({"n": 1}), false);
    log.result("a", json!("A"), true);
    log.result("a", json!("duplicate"), false);
    let items = walk(&log.chunks);
    let Item::Step { replies, .. } = &items[1] else {
        panic!("{items:?}")
    };
    assert_eq!(
        replies,
        &vec![
            Reply {
                call_id: "a".into(),
                content: "A".into(),
                is_error: true
            },
            Reply {
                call_id: "b".into(),
                content: SYNTHETIC_RESULT.into(),
                is_error: true
            },
            Reply {
                call_id: "c".into(),
                content: "{\"n\":1}".into(),
                is_error: false
            },
        ]
    );
    assert_eq!(items.len(), 2, "the orphan result adds nothing: {items:?}");
}

#[test]
fn an_empty_result_is_sent_as_no_output() {
    let mut log = Log::new();
    log.user("hi");
    log.step(1);
    log.call("a", "bash", json!({"cmd": "true"}));
    log.result("a", json!(""), true);
    let items = walk(&log.chunks);
    let Item::Step { replies, .. } = &items[1] else {
        panic!("{items:?}")
    };
    assert_eq!(replies[0].content, EMPTY_RESULT);
    assert!(replies[0].is_error);
}

#[test]
fn a_result_before_its_call_does_not_answer_it() {
    let mut log = Log::new();
    log.user("hi");
    log.result("a", json!("too early"), false);
    log.step(1);
    log.call("a", "read", json!({}));
    let items = walk(&log.chunks);
    let Item::Step { replies, .. } = &items[1] else {
        panic!("{items:?}")
    };
    assert_eq!(replies[0].content, SYNTHETIC_RESULT);
}

#[test]
fn each_step_is_its_own_item_and_results_do_not_split_a_step() {
    let mut log = Log::new();
    log.user("hi");
    log.step(1);
    log.text("one");
    log.step(2);
    log.text("two");
    log.call("a", "read", json!({}));
    log.result("a", json!("A"), false);
    log.call("b", "read", json!({}));
    log.result("b", json!("B"), false);
    let items = walk(&log.chunks);
    assert_eq!(items.len(), 3, "{items:?}");
    let Item::Step { blocks, replies } = &items[2] else {
        panic!()
    };
    assert_eq!(blocks.len(), 3);
    assert_eq!(replies.len(), 2);
}

/// The DESIGN §3 regression: a 3-step turn; the messages of steps 0 and 1 are the same bytes
/// in the step-2 and step-3 builds.
#[test]
fn three_step_turn_keeps_earlier_steps_byte_identical() {
    let mut log = Log::new();
    log.user("fix the bug");
    log.step(1);
    log.text("Let me look.");
    log.call("call_1", "read", json!({"path": "src/main.rs"}));
    log.result("call_1", json!("fn main() {}"), false);
    let step1 = log.len();
    log.step(2);
    log.thinking("it is in main", Some("sig-2"));
    log.call(
        "call_2",
        "edit",
        json!({"path": "src/main.rs", "old": "{}", "new": "{ }"}),
    );
    log.result("call_2", json!("ok"), false);
    let step2 = log.len();
    log.step(3);
    log.text("Fixed.");
    log.turn_end();
    let step3 = log.len();

    for dialect in Dialect::ALL {
        let b1 = messages(&log.chunks[..step1], dialect);
        let b2 = messages(&log.chunks[..step2], dialect);
        let b3 = messages(&log.chunks[..step3], dialect);
        // Messages of steps 0 and 1: the user text, step 1's assistant message and its
        // results (one user message for anthropic, one tool message for openai).
        let (s01, s012) = match dialect {
            Dialect::Anthropic => (3, 5),
            Dialect::OpenAi => (3, 5),
        };
        assert_eq!(b2.len(), s012, "{dialect}: {b2:#?}");
        assert_eq!(b3.len(), s012 + 1, "{dialect}: {b3:#?}");
        assert_eq!(
            strip_all(&b2[..s01]),
            strip_all(&b3[..s01]),
            "{dialect}: steps 0 and 1 moved"
        );
        // Everything of the step-2 build survives into the step-3 build.
        assert_eq!(strip_all(&b2), strip_all(&b3[..s012]), "{dialect}");
        assert_eq!(strip_all(&b1[..2]), strip_all(&b2[..2]), "{dialect}");
        let last = b3.last().unwrap();
        assert_eq!(last["role"], "assistant");
        if dialect == Dialect::Anthropic {
            // Without stripping, only the rolling marker differs: it moved to the tail.
            assert_eq!(
                b2[..s01].iter().map(Value::to_string).collect::<Vec<_>>(),
                b3[..s01].iter().map(Value::to_string).collect::<Vec<_>>()
            );
            assert_eq!(cache_breakpoints(&b2[s012 - 1]), 1);
            assert_eq!(cache_breakpoints(&b3[s012 - 1]), 0);
            assert_eq!(
                last["content"][0]["cache_control"],
                json!({"type": "ephemeral"})
            );
        }
    }
}
