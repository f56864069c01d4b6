//! Where a compaction cuts: token estimates of chunks, the kept suffix (it starts at a human
//! user turn, or at a step of the latest turn when no whole turn fits; never at a peer chunk,
//! and never separates a tool call from its result), what
//! the summarizer reads (never a peer chunk), and the slices it reads them in when they do
//! not fit its window. Pure: chunks in, positions out.

use std::collections::HashSet;

use serde_json::Value;

use crate::fold::{compaction, prune};
use crate::log::{Chunk, ChunkData, Role};

/// About four bytes of text a token, plus a little for each message's framing.
pub(crate) fn tokens_of_text(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// What an image adds to a request, about (Anthropic's count for a 1092×1092 image).
pub(crate) const IMAGE_TOKENS: u64 = 1600;

/// What a chunk adds to a request, about. Records the fold skips add nothing.
pub(crate) fn tokens(c: &Chunk) -> u64 {
    let body = match &c.data {
        ChunkData::Text { text } => tokens_of_text(text),
        ChunkData::Thinking { text, redacted, .. } => {
            tokens_of_text(text) + redacted.as_deref().map_or(0, tokens_of_text)
        }
        ChunkData::ToolCall {
            name, arguments, ..
        } => tokens_of_text(name) + tokens_of_text(&arguments.to_string()),
        ChunkData::ToolResult { result, .. } => match result {
            Value::String(s) => tokens_of_text(s),
            other => tokens_of_text(&other.to_string()),
        },
        ChunkData::Peer { messages, .. } => {
            messages.iter().map(|m| tokens_of_text(&m.text) + 12).sum()
        }
        // Providers count an image by its pixels, not its bytes: about 1 600 tokens for
        // the largest they take without scaling it down.
        ChunkData::Image { .. } => IMAGE_TOKENS,
        ChunkData::System(_) | ChunkData::Error { .. } => return 0,
    };
    body + 4
}

/// What a chunk adds to a request when the results in `cleared` are sent as a prune's
/// placeholders.
pub(crate) fn tokens_with(c: &Chunk, cleared: &HashSet<&str>) -> u64 {
    match &c.data {
        ChunkData::ToolResult { name, .. } if cleared.contains(c.id.as_str()) => {
            tokens_of_text(&prune::placeholder(name, c.seq)) + 4
        }
        _ => tokens(c),
    }
}

/// The tokens of a fold view, about: the latest compaction's handoff and what follows it,
/// with pruned results as their placeholders.
pub(crate) fn view_tokens(view: &[Chunk]) -> u64 {
    let cleared = prune::cleared_ids(view);
    let sum = |cs: &[Chunk]| cs.iter().map(|c| tokens_with(c, &cleared)).sum::<u64>();
    match compaction::latest(view) {
        Some((c, from)) => tokens_of_text(&c.handoff()) + sum(&view[from..]),
        None => sum(view),
    }
}

/// A human user turn: text a person (or a script speaking for one) typed. Peer speech,
/// tool results and records are never one.
pub(crate) fn is_human_turn(c: &Chunk) -> bool {
    c.role == Role::User && matches!(&c.data, ChunkData::Text { text } if !text.trim().is_empty())
}

/// Where a compaction of a view cuts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Position in the view of the first kept chunk (`view.len()` when nothing is kept).
    pub(crate) kept_from: usize,
    /// Where the summarized part starts: the previous compaction's kept suffix (0 without one).
    pub(crate) summarized_from: usize,
}

/// Choose the kept suffix of `view` (a fold view: from the latest compaction's kept suffix,
/// or the whole log): the earliest human user turn whose suffix fits in `keep_tokens` and
/// does not take a tool result away from its call; when none fits, the earliest step of the
/// latest turn that does, or that turn's prompt when no step has answered it yet. `None` when there is nothing to compact:
/// no conversation lies between the previous compaction's suffix and the new one.
pub(crate) fn plan(view: &[Chunk], keep_tokens: u64) -> Option<Cut> {
    let summarized_from = compaction::latest(view).map_or(0, |(_, from)| from);
    // Suffix sizes from each position to the end, as the fold sends them.
    let cleared = prune::cleared_ids(view);
    let mut suffix = vec![0u64; view.len() + 1];
    for i in (0..view.len()).rev() {
        suffix[i] = suffix[i + 1] + tokens_with(&view[i], &cleared);
    }
    let splits = split_pairs(view);
    let fits = |i: usize| suffix[i] <= keep_tokens && !splits.contains(&i);
    let kept_from = (summarized_from..view.len())
        .find(|&i| is_human_turn(&view[i]) && fits(i))
        .or_else(|| {
            let human = (summarized_from..view.len())
                .rev()
                .find(|&i| is_human_turn(&view[i]));
            let head = human.unwrap_or(summarized_from);
            let mut steps = (head + 1..view.len()).filter(|&i| starts_step(view, i));
            match steps.find(|&i| fits(i)) {
                // Even the latest human turn is too large: cut inside it, at the earliest
                // step whose suffix fits. The turn's prompt is summarized and restated in
                // the handoff as the latest request; its newest steps stay verbatim.
                Some(i) => Some(i),
                // A prompt no step has answered yet is kept whole, whatever its size: a
                // summary of it would lose what is being asked. (When it cannot fit the
                // window at all, the provider's refusal says so.)
                None if (head + 1..view.len()).all(|i| !starts_step(view, i)) => {
                    human.filter(|h| !splits.contains(h))
                }
                None => None,
            }
        })
        .unwrap_or(view.len());
    cut_if_conversation(view, summarized_from, kept_from)
}

/// Whether `view[i]` opens a model step: the first assistant chunk of its turn and step.
pub(crate) fn starts_step(view: &[Chunk], i: usize) -> bool {
    let c = &view[i];
    c.role == Role::Assistant
        && view[..i]
            .iter()
            .rev()
            .find(|p| p.role == Role::Assistant)
            .is_none_or(|p| (p.turn.as_str(), p.step) != (c.turn.as_str(), c.step))
}

/// The cut of a compaction asked for by hand: keep the latest `turns` human turns (at least
/// one) verbatim, whatever their size, and summarize everything before them. `None` when
/// nothing but those turns lies after the previous compaction.
pub(crate) fn plan_turns(view: &[Chunk], turns: usize) -> Option<Cut> {
    let summarized_from = compaction::latest(view).map_or(0, |(_, from)| from);
    let splits = split_pairs(view);
    let starts: Vec<usize> = (summarized_from..view.len())
        .filter(|&i| is_human_turn(&view[i]) && !splits.contains(&i))
        .collect();
    let kept_from = *starts.iter().rev().nth(turns.max(1) - 1)?;
    cut_if_conversation(view, summarized_from, kept_from)
}

/// The cut, when some conversation lies between the previous compaction's suffix and the
/// new one.
fn cut_if_conversation(view: &[Chunk], summarized_from: usize, kept_from: usize) -> Option<Cut> {
    let has_conversation = view[summarized_from..kept_from]
        .iter()
        .any(|c| summarizable(c) && compaction::of_chunk(c).is_none());
    has_conversation.then_some(Cut {
        kept_from,
        summarized_from,
    })
}

/// Positions where a suffix would start after a tool call whose result comes later.
fn split_pairs(view: &[Chunk]) -> HashSet<usize> {
    let mut open: Vec<(&str, usize)> = Vec::new();
    let mut bad = HashSet::new();
    for (i, c) in view.iter().enumerate() {
        match &c.data {
            ChunkData::ToolCall { call_id, .. } => open.push((call_id, i)),
            ChunkData::ToolResult { call_id, .. } => {
                if let Some(k) = open.iter().rposition(|(id, _)| id == call_id) {
                    let (_, at) = open.remove(k);
                    bad.extend(at + 1..=i);
                }
            }
            _ => {}
        }
    }
    bad
}

/// What the summarizer may read of a chunk: never peer speech (other agents' words are not
/// the conversation's to keep), never records.
pub(crate) fn summarizable(c: &Chunk) -> bool {
    !matches!(
        c.data,
        ChunkData::Peer { .. } | ChunkData::System(_) | ChunkData::Error { .. }
    )
}

/// The peer chunks at the end of `view` that nothing has answered yet: no assistant, tool
/// or human chunk follows them. They must survive a compaction.
pub(crate) fn trailing_peers(view: &[Chunk]) -> Vec<&Chunk> {
    let last_answer = view.iter().rposition(|c| {
        !matches!(
            c.data,
            ChunkData::Peer { .. } | ChunkData::System(_) | ChunkData::Error { .. }
        )
    });
    let from = last_answer.map_or(0, |i| i + 1);
    view[from..]
        .iter()
        .filter(|c| matches!(c.data, ChunkData::Peer { .. }))
        .collect()
}

/// Split `chunks` (what the summarizer reads) into consecutive slices of at most `budget`
/// tokens: whole turns (each starting at a human user turn, but the first), and a turn
/// bigger than the budget split at its steps (a call never apart from its result); a single
/// step bigger than the budget is a slice of its own, which the caller clips.
pub(crate) fn slices<C: std::borrow::Borrow<Chunk>>(
    chunks: &[C],
    budget: u64,
) -> Vec<std::ops::Range<usize>> {
    let mut turns: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        match turns.last_mut() {
            Some(t) if !is_human_turn(c.borrow()) => t.end = i + 1,
            _ => turns.push(i..i + 1),
        }
    }
    let size = |r: &std::ops::Range<usize>| {
        chunks[r.clone()]
            .iter()
            .map(|c| tokens(c.borrow()))
            .sum::<u64>()
    };
    // A step starts at the first assistant chunk of its turn and step.
    let step_of = |c: &Chunk| (c.turn.clone(), c.step);
    let mut units: Vec<std::ops::Range<usize>> = Vec::new();
    for t in turns {
        if size(&t) <= budget {
            units.push(t);
            continue;
        }
        let mut last_step = None;
        let mut from = t.start;
        for i in t.clone() {
            let c = chunks[i].borrow();
            if c.role != Role::Assistant {
                continue;
            }
            let step = Some(step_of(c));
            if last_step.is_some() && step != last_step && i > from {
                units.push(from..i);
                from = i;
            }
            last_step = step;
        }
        units.push(from..t.end);
    }
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for u in units {
        match out.last_mut() {
            Some(s) if size(s) + size(&u) <= budget => s.end = u.end,
            _ => out.push(u),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fold::testkit::Log;

    fn big(n: usize) -> String {
        "x".repeat(n * 4)
    }

    #[test]
    fn the_suffix_starts_at_the_earliest_human_turn_that_fits() {
        let mut log = Log::new();
        log.user(&big(100));
        log.step(1);
        log.text(&big(3000));
        log.turn("t2");
        log.user("second");
        log.step(1);
        log.text(&big(100));
        log.turn("t3");
        log.user("third");
        log.step(1);
        log.text(&big(10));
        let cut = plan(&log.chunks, 200).unwrap();
        assert_eq!(cut.kept_from, 2, "starts at `second`");
        let cut = plan(&log.chunks, 50).unwrap();
        assert_eq!(cut.kept_from, 4, "starts at `third`");
        let cut = plan(&log.chunks, 5).unwrap();
        assert_eq!(cut.kept_from, 6, "nothing fits: nothing kept");
    }

    #[test]
    fn a_turn_too_large_to_keep_is_cut_at_a_step_inside_it() {
        let mut log = Log::new();
        log.user("read all ten");
        for s in 1..=10 {
            log.step(s);
            log.call(&format!("k{s}"), "read", json!({"path": "big.txt"}));
            log.result(&format!("k{s}"), json!(big(100)), false);
        }
        log.step(11);
        log.text("done");
        // Each step is about 120 tokens: 300 keeps the last two steps and the answer.
        let cut = plan(&log.chunks, 300).unwrap();
        assert_eq!(cut.kept_from, 17, "{cut:?}");
        assert!(matches!(log.chunks[17].data, ChunkData::ToolCall { .. }));
        assert_eq!(log.chunks[17].step, 9);
        // The head of the turn (its prompt) is summarized, never the kept part's calls.
        assert_eq!(cut.summarized_from, 0);
        // After that compaction, the next cut inside the same turn starts from its suffix.
        log.system(
            "compaction",
            json!({"summary": "s", "through_seq": 17, "kept_from_seq": 18}),
        );
        log.step(12);
        log.call("k12", "read", json!({"path": "big.txt"}));
        log.result("k12", json!(big(100)), false);
        let cut = plan(&log.chunks, 300).unwrap();
        assert_eq!((cut.summarized_from, cut.kept_from), (17, 19), "{cut:?}");
    }

    #[test]
    fn a_prompt_no_step_has_answered_is_kept_whatever_its_size() {
        let mut log = Log::new();
        log.user(&big(100));
        log.step(1);
        log.text(&big(100));
        log.turn("t2");
        log.user(&big(900));
        log.peer(&[("m1", "bob", "hi")], 0);
        let cut = plan(&log.chunks, 50).unwrap();
        assert_eq!(cut.kept_from, 2, "{cut:?}");
        // Once a step answered it, a cut that cannot keep a step keeps nothing.
        log.step(1);
        log.text(&big(900));
        let cut = plan(&log.chunks, 50).unwrap();
        assert_eq!(cut.kept_from, log.len(), "{cut:?}");
    }

    #[test]
    fn a_peer_chunk_is_never_where_the_suffix_starts() {
        let mut log = Log::new();
        log.user(&big(500));
        log.step(1);
        log.text("ok");
        log.peer(&[("m1", "bob", "hold the build")], 0);
        log.text("fine");
        // The peer chunk sits inside step 1: the cut is at the step's start, not at it.
        let cut = plan(&log.chunks, 100).unwrap();
        assert_eq!(cut.kept_from, 1, "{cut:?}");
        let cut = plan(&log.chunks, 6).unwrap();
        assert_eq!(cut.kept_from, log.len(), "only the peer chunk would fit");
    }

    #[test]
    fn the_suffix_never_takes_a_result_from_its_call() {
        let mut log = Log::new();
        log.user(&big(2000));
        log.step(1);
        log.call("a", "read", json!({}));
        // A queued human line lands between a call and its late result (an imported log).
        log.user("also check b");
        log.result("a", json!("A"), false);
        log.text("done");
        let cut = plan(&log.chunks, 1000).unwrap();
        // `also check b` fits but would split `a` from its result: nothing is kept.
        assert_eq!(cut.kept_from, log.len(), "{cut:?}");
    }

    #[test]
    fn nothing_to_compact_when_nothing_lies_before_the_suffix() {
        let mut log = Log::new();
        log.user("hi");
        log.step(1);
        log.text("hello");
        assert_eq!(plan(&log.chunks, 8000), None);
        // Only records and peer speech before the suffix: still nothing.
        let mut log = Log::new();
        log.peer(&[("m1", "bob", "hi")], 0);
        log.system("notice", json!({}));
        log.user("hi");
        assert_eq!(plan(&log.chunks, 8000), None);
    }

    #[test]
    fn after_a_compaction_only_what_follows_its_suffix_is_new() {
        let mut log = Log::new();
        log.user("one");
        log.step(1);
        log.text(&big(50));
        log.system(
            "compaction",
            json!({"summary": "s", "through_seq": 0, "kept_from_seq": 1}),
        );
        // The compaction kept everything from seq 1: the same cut again is nothing new.
        assert_eq!(plan(&log.chunks, 8000), None);
        log.turn("t2");
        log.user("two");
        let cut = plan(&log.chunks, 10).unwrap();
        assert_eq!((cut.summarized_from, cut.kept_from), (0, 3));
    }

    #[test]
    fn trailing_unanswered_peers_are_found_and_spent_ones_are_not() {
        let mut log = Log::new();
        log.user("hi");
        log.peer(&[("m1", "bob", "spent")], 0);
        log.step(1);
        log.text("answer");
        log.peer(&[("m2", "bob", "fresh")], 0);
        log.system("notice", json!({}));
        log.peer(&[("m3", "carol", "fresher")], 0);
        let t = trailing_peers(&log.chunks);
        assert_eq!(t.iter().map(|c| c.seq).collect::<Vec<_>>(), vec![4, 6]);
        log.user("next");
        assert!(trailing_peers(&log.chunks).is_empty());
    }

    #[test]
    fn slices_cut_at_human_turns_and_cover_everything_in_order() {
        let mut log = Log::new();
        for t in 0..6 {
            log.turn(&format!("t{t}"));
            log.user(&big(20));
            log.step(1);
            log.text(&big(60));
        }
        let s = slices(&log.chunks, 200);
        let flat: Vec<usize> = s.iter().flat_map(|r| r.clone()).collect();
        assert_eq!(flat, (0..log.len()).collect::<Vec<_>>());
        for r in &s {
            assert!(is_human_turn(&log.chunks[r.start]), "{s:?}");
            let size: u64 = log.chunks[r.clone()].iter().map(tokens).sum();
            assert!(size <= 200, "{size} in {r:?}");
        }
        assert!(s.len() >= 3, "{s:?}");
        // A turn bigger than the budget with a single step is a slice of its own.
        let s = slices(&log.chunks, 10);
        assert_eq!(s.len(), 6, "{s:?}");
        assert!(s
            .iter()
            .all(|r| r.len() == 2 && is_human_turn(&log.chunks[r.start])));
    }

    #[test]
    fn a_turn_bigger_than_a_slice_is_split_at_its_steps() {
        let mut log = Log::new();
        log.user("read them all");
        for s in 1..=8 {
            log.step(s);
            log.call(&format!("k{s}"), "read", json!({}));
            log.result(&format!("k{s}"), json!(big(100)), false);
        }
        let s = slices(&log.chunks, 300);
        assert!(s.len() >= 3, "{s:?}");
        let flat: Vec<usize> = s.iter().flat_map(|r| r.clone()).collect();
        assert_eq!(flat, (0..log.len()).collect::<Vec<_>>());
        for r in &s[1..] {
            // Each later slice starts at a step's call, so its result comes with it.
            assert!(
                matches!(log.chunks[r.start].data, ChunkData::ToolCall { .. }),
                "{s:?}"
            );
            let size: u64 = log.chunks[r.clone()].iter().map(tokens).sum();
            assert!(size <= 300, "{size} in {r:?}");
        }
    }
}
