//! The durable state a handoff restates after a compaction: the goal (the first human
//! prompt), the latest request when the kept suffix lost it, the files the session wrote or
//! edited (from its tool calls), the live peers in its worktree room as a one-line roster
//! from presence (who is here now, never what they said), the claims it holds, and, when the
//! session may call it, one sentence on `recall`.

use std::path::Path;

use crate::log::Chunk;
use crate::room::{claims, roster};
use crate::store::{Session, Store, StoreError};

/// Characters of the goal and of the latest request kept in the note.
const PROMPT_CHARS: usize = 1200;
/// File names listed at most.
const FILES: usize = 40;

/// What the handoff says about `recall`, in one sentence, when the session may call it.
pub(crate) const RECALL_NOTE: &str = "- Nothing before this summary is lost: call `recall` with \
    words from the earlier conversation (or with a seq) to get back the exact text of anything \
    this summary left out or shortened, such as the user's own words or a tool's output.";

/// The note, from the store and the rooms. `cwd` is the session's working directory (its
/// worktree room); `lost_request` is the latest human prompt when it is not in the suffix
/// (the turn being worked on was cut inside), restated up to `keep_tokens` of text (and at
/// least as much as the goal).
pub(crate) fn durable_state(
    store: &Store,
    rooms: &crate::room::Rooms,
    session: &Session,
    cwd: &Path,
    lost_request: Option<&str>,
    keep_tokens: u64,
    recall: bool,
) -> Result<String, StoreError> {
    let mut lines = vec!["Durable state that survived the compaction:".to_string()];
    let goal = store.first_prompt(session)?;
    if let Some(goal) = &goal {
        lines.push(format!(
            "- Goal (the first request, verbatim): {}",
            clip(goal)
        ));
    }
    if let Some(req) = lost_request.filter(|r| Some(*r) != goal.as_deref()) {
        let chars = (keep_tokens as usize).saturating_mul(4).max(PROMPT_CHARS);
        lines.push(format!(
            "- The latest request (verbatim): {}",
            crate::text::clip_chars(req.trim(), chars + 1)
        ));
    }
    let files = store.files_written(session)?;
    if !files.is_empty() {
        let more = files.len().saturating_sub(FILES);
        let mut list = files.into_iter().take(FILES).collect::<Vec<_>>().join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        lines.push(format!("- Files written or edited: {list}"));
    }
    let worktree = rooms.worktree(cwd);
    let peers: Vec<String> = roster::roster(store, &worktree, &session.id)?
        .iter()
        .map(|p| format!("{} (session={})", p.name, p.handle))
        .collect();
    if !peers.is_empty() {
        lines.push(format!(
            "- Live peers in this worktree: {} (message them with peer_message)",
            peers.join("; ")
        ));
    }
    let mine: Vec<String> = claims::active(store, &worktree, &mut |_| {})
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.holder.session.as_deref() == Some(session.id.as_str()))
        .map(|c| format!("{} ({}, {})", c.paths.join(" "), c.mode, c.id))
        .collect();
    if !mine.is_empty() {
        lines.push(format!("- Claims this session holds: {}", mine.join("; ")));
    }
    lines.push(
        "- The full history stays in the session's log (`ag-log cat`); earlier messages from \
         peers were left out on purpose."
            .into(),
    );
    if recall {
        lines.push(RECALL_NOTE.into());
    }
    Ok(lines.join("\n"))
}

/// The latest human prompt of `summarized`, when the kept suffix holds none.
pub(crate) fn lost_request<'a>(summarized: &[&'a Chunk], kept: &[Chunk]) -> Option<&'a str> {
    if kept.iter().any(super::cut::is_human_turn) {
        return None;
    }
    summarized
        .iter()
        .rev()
        .find(|c| super::cut::is_human_turn(c))
        .and_then(|c| match &c.data {
            crate::log::ChunkData::Text { text } => Some(text.as_str()),
            _ => None,
        })
}

/// At most [`PROMPT_CHARS`] characters of the text, then `…` when there were more.
fn clip(text: &str) -> String {
    crate::text::clip_chars(text.trim(), PROMPT_CHARS + 1)
}
