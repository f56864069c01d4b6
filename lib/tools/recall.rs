//! `recall`: the model looks up its own session's earlier history — before and after every
//! compaction, results a prune cleared, its lineage up to each fork — through the full-text
//! index. `{query, limit?}` lists matches newest first (seq, role, type, an excerpt; a call's
//! tool and arguments); `{seq, around?}` shows the chunks around a seq verbatim. It never
//! reads another session, and a peer's words are always shown as a peer's, never as the
//! user's. The output stays within the tool output cap.

use serde_json::{json, Value};

use super::{cap_text, clip_chars, Args, ToolOutput};
use crate::fold::ToolSpec;
use crate::log::{Chunk, ChunkData};
use crate::store::{Page, RecallHit, Session, Store, StoreError};

/// Matches listed when the call gives no `limit`, and the most it may ask for.
pub(crate) const DEFAULT_LIMIT: u64 = 10;
pub(crate) const MAX_LIMIT: u64 = 50;
/// Chunks shown on each side of `seq` when the call gives no `around`, and the most.
pub(crate) const DEFAULT_AROUND: u64 = 2;
pub(crate) const MAX_AROUND: u64 = 10;
/// Characters of a call's arguments shown in a match.
const ARGUMENT_CHARS: usize = 300;

pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "recall".into(),
        description: "Look up this session's own earlier history, including what a compaction \
            summarized and tool results cleared from the context: nothing in the session's log \
            is ever deleted. With `query`, list the chunks holding every word of it, newest \
            first, each with its seq and an excerpt. With `seq`, show the chunks around that \
            seq verbatim. Only this session's history is searched."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words that must all occur (case-insensitive), e.g. a name, a path or a phrase the user used."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "How many matches to list (default 10)."},
                "seq": {"type": "integer", "minimum": 1, "description": "Show the chunk with this seq verbatim (from a match, or a cleared result's placeholder)."},
                "around": {"type": "integer", "minimum": 0, "maximum": MAX_AROUND, "description": "With seq: how many chunks to show on each side (default 2)."}
            },
            "required": [],
            "additionalProperties": false
        }),
    }
}

/// Run one `recall` call on `session`'s view; the output is at most `cap` bytes.
pub fn run(store: &Store, session: &Session, args: &Value, cap: usize) -> ToolOutput {
    let Some(map) = args.as_object() else {
        return ToolOutput::error("recall: arguments must be a JSON object");
    };
    let args = Args(map);
    let result = match (args.opt_str("query"), args.opt_u64("seq")) {
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(Some(_)), Ok(Some(_))) => Err("give either `query` or `seq`, not both".to_string()),
        (Ok(Some(q)), Ok(None)) => search(store, session, q, &args),
        (Ok(None), Ok(Some(seq))) => around(store, session, seq, &args, cap),
        (Ok(None), Ok(None)) => {
            Err("give `query` (words to find) or `seq` (a chunk to show verbatim)".to_string())
        }
    };
    match result {
        Ok(text) => ToolOutput::ok(cap_text(text, cap)),
        Err(e) => ToolOutput::error(format!("recall: {e}")),
    }
}

fn search(store: &Store, session: &Session, query: &str, args: &Args) -> Result<String, String> {
    let limit = args
        .opt_u64("limit")?
        .unwrap_or(DEFAULT_LIMIT)
        .clamp(1, MAX_LIMIT);
    if query.trim().is_empty() {
        return Err("`query` is empty: give the words to find".into());
    }
    let hits = store
        .recall(session, query, limit)
        .map_err(|e| store_error(&e))?;
    if hits.is_empty() {
        return Ok(format!(
            "nothing in this session's history holds every word of {query:?}; try fewer or \
             other words"
        ));
    }
    let mut out = format!(
        "{} match{} for {query:?}, newest first (recall with a seq shows a chunk in full):\n",
        hits.len(),
        if hits.len() == 1 { "" } else { "es" }
    );
    for h in &hits {
        out.push_str(&hit_line(h));
        out.push('\n');
    }
    Ok(out)
}

/// One match: where it is, what it is, and the excerpt.
fn hit_line(h: &RecallHit) -> String {
    let c = &h.chunk;
    let excerpt = crate::text::one_line(&h.excerpt);
    let what = match &c.data {
        ChunkData::ToolCall {
            name, arguments, ..
        } => format!(
            "tool call {name} {}",
            clip_chars(&arguments.to_string(), ARGUMENT_CHARS)
        ),
        ChunkData::ToolResult { name, is_error, .. } => format!(
            "{} of {name}: {excerpt}",
            if *is_error { "error result" } else { "result" }
        ),
        ChunkData::Peer { messages, .. } => format!(
            "peer message (another agent's words, not the user's) from {}: {excerpt}",
            senders(messages)
        ),
        _ => format!("{} {}: {excerpt}", c.role.as_str(), c.chunk_type().as_str()),
    };
    format!("seq {} · {what}", c.seq)
}

fn senders(messages: &[crate::log::PeerMessage]) -> String {
    let mut names: Vec<&str> = messages.iter().map(|m| m.from.as_str()).collect();
    names.dedup();
    names.join(", ")
}

fn around(
    store: &Store,
    session: &Session,
    seq: u64,
    args: &Args,
    cap: usize,
) -> Result<String, String> {
    let n = args
        .opt_u64("around")?
        .unwrap_or(DEFAULT_AROUND)
        .min(MAX_AROUND) as i64;
    let last = store.view_len(session).map_err(|e| store_error(&e))?;
    let seq = seq.min(i64::MAX as u64) as i64;
    if seq < 1 || seq > last {
        return Err(format!(
            "seq {seq} is not in this session's history (its seqs run from 1 to {last})"
        ));
    }
    let page = Page {
        after: Some((seq - n - 1).max(0)),
        before: Some(seq + n + 1),
        ..Page::default()
    };
    let mut chunks = Vec::new();
    store
        .for_each_chunk(session, &page, |c| {
            chunks.push(c);
            Ok::<(), StoreError>(())
        })
        .map_err(|e| store_error(&e))?;
    // The asked-for chunk keeps most of the cap; its neighbours share a quarter of it.
    let neighbours = chunks.len().saturating_sub(1).max(1);
    let share = (cap / 4 / neighbours).max(200);
    let mut out = String::new();
    for c in &chunks {
        let body = verbatim(c);
        let body = if c.seq == seq {
            body
        } else {
            cap_text(body, share)
        };
        let mark = if c.seq == seq { "▶ " } else { "" };
        out.push_str(&format!("{mark}seq {} · {}\n{body}\n\n", c.seq, heading(c)));
    }
    Ok(out.trim_end().to_string())
}

/// What a chunk is, for the line above it.
fn heading(c: &Chunk) -> String {
    match &c.data {
        ChunkData::ToolCall { name, call_id, .. } => format!("tool call {name} (call {call_id})"),
        ChunkData::ToolResult {
            name,
            call_id,
            is_error,
            ..
        } => format!(
            "{} of {name} (call {call_id})",
            if *is_error { "error result" } else { "result" }
        ),
        ChunkData::Peer { messages, .. } => format!(
            "peer message from {} (another agent's words, not the user's)",
            senders(messages)
        ),
        ChunkData::System(_) => format!("system {}", c.data.system_kind().unwrap_or("record")),
        _ => format!("{} {}", c.role.as_str(), c.chunk_type().as_str()),
    }
}

/// A chunk's content as it was written.
fn verbatim(c: &Chunk) -> String {
    match &c.data {
        ChunkData::Text { text } => text.clone(),
        ChunkData::Thinking { text, .. } => text.clone(),
        ChunkData::ToolCall { arguments, .. } => arguments.to_string(),
        ChunkData::ToolResult { result, .. } => match result {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
        ChunkData::Peer { messages, .. } => messages
            .iter()
            .map(|m| format!("{} (msg {}): {}", m.from, m.id, m.text))
            .collect::<Vec<_>>()
            .join("\n"),
        ChunkData::Error { message, .. } => message.clone(),
        ChunkData::System(m) => Value::Object(m.clone()).to_string(),
        ChunkData::Image { media_type, data } => crate::log::image::label(media_type, data),
    }
}

fn store_error(e: &StoreError) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}
