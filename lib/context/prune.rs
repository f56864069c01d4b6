//! The cheap reduction before a summary: choose the old tool results a prune clears (all but
//! the most recent few, and only those bigger than their placeholder, so a prune never grows
//! a request), and append the `system/prune` record. Tried before an automatic compaction
//! calls the model, and by hand with `ag-log prune`.

use crate::fold::compaction;
use crate::fold::prune::{self, Prune};
use crate::log::{Chunk, ChunkData, NewChunk, Role};
use crate::store::{Session, Store, StoreError};

use super::cut::{tokens, tokens_with};

/// A prune that was written.
#[derive(Debug, Clone)]
pub(crate) struct Pruned {
    pub(crate) prune: Prune,
    pub(crate) chunk: Chunk,
    /// About how many tokens the placeholders save.
    pub(crate) tokens_saved: u64,
}

/// What to clear in `view` (a fold view), keeping the `keep` most recent tool results; `None`
/// when nothing would get smaller. The second value is about how many tokens it saves.
pub(crate) fn plan(view: &[Chunk], keep: usize) -> Option<(Prune, u64)> {
    let from = compaction::latest(view).map_or(0, |(_, from)| from);
    let view = &view[from..];
    let cleared = prune::cleared_ids(view);
    let results: Vec<&Chunk> = view
        .iter()
        .filter(|c| matches!(c.data, ChunkData::ToolResult { .. }))
        .collect();
    let old = &results[..results.len().saturating_sub(keep)];
    let mut saved = 0;
    let mut ids = Vec::new();
    let mut through_seq = 0;
    for c in old.iter().filter(|c| !cleared.contains(c.id.as_str())) {
        let (full, small) = (tokens(c), tokens_with(c, &[c.id.as_str()].into()));
        if full > small {
            saved += full - small;
            ids.push(c.id.clone());
            through_seq = c.seq;
        }
    }
    (!ids.is_empty()).then_some((
        Prune {
            through_seq,
            cleared: ids,
        },
        saved,
    ))
}

/// Prune `session` whose fold view is `view`, keeping its `keep` most recent tool results.
/// `turn`: the turn and step the record belongs to (inside a turn), else a turn of its own.
/// `Ok(None)` when nothing would get smaller.
pub(crate) fn prune(
    store: &Store,
    session: &Session,
    view: &[Chunk],
    keep: usize,
    turn: Option<(&str, i64)>,
) -> Result<Option<Pruned>, StoreError> {
    let Some((prune, tokens_saved)) = plan(view, keep) else {
        return Ok(None);
    };
    let mut record = NewChunk::new(Role::System, prune.to_data());
    if let Some((t, s)) = turn {
        record = record.in_turn(t, s);
    }
    let chunk = store
        .append(&session.id, vec![record])?
        .pop()
        .expect("one chunk appended");
    Ok(Some(Pruned {
        prune,
        chunk,
        tokens_saved,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fold::testkit::Log;

    #[test]
    fn a_prune_clears_old_big_results_keeps_recent_ones_and_never_grows() {
        let mut log = Log::new();
        log.user("go");
        let mut big = Vec::new();
        for i in 0..5 {
            log.step(i + 1);
            log.call(&format!("c{i}"), "read", json!({}));
            big.push(log.result(&format!("c{i}"), json!("x".repeat(4000)), false));
        }
        log.step(9);
        log.call("tiny", "glob", json!({}));
        let tiny = log.result("tiny", json!("a.rs"), false);
        let (p, saved) = plan(&log.chunks, 2).unwrap();
        // c4 and `tiny` are the two most recent; c0..c3 go.
        assert_eq!(p.cleared, big[..4].to_vec());
        assert!(saved > 3 * 900, "{saved}");
        // A small result is never cleared, however old.
        let (p, _) = plan(&log.chunks, 0).unwrap();
        assert_eq!(p.cleared, big);
        assert!(!p.cleared.contains(&tiny));
        // What a prune cleared is not cleared again, and it folds as a placeholder.
        log.system(
            "prune",
            json!({"through_seq": p.through_seq, "cleared": p.cleared}),
        );
        assert_eq!(plan(&log.chunks, 0), None);
        let body = crate::fold::fold(
            &log.chunks,
            crate::fold::Dialect::OpenAi,
            &Default::default(),
        );
        let text = body.to_string();
        assert!(!text.contains("xxxx"), "{text}");
        assert!(text.contains("call recall with"), "{text}");
        assert!(text.contains("a.rs"), "{text}");
    }
}
