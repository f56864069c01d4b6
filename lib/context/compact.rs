//! One compaction: plan the cut, get the summary (given, or written by a model in slices when
//! its input does not fit), state the durable state, and append the `system/compaction`
//! record — all or nothing. A summarizer that fails leaves the log exactly as it was.

use std::path::Path;
use std::sync::Arc;

use crate::fold::compaction::{Compaction, Trigger};
use crate::fold::{fold, FoldOptions, ToolSpec};
use crate::log::{Chunk, ChunkData, NewChunk, Role};
use crate::provider::Provider;
use crate::reduce::ChunkOp;
use crate::store::{Session, Store, StoreError};

use super::cut::{self, tokens, tokens_of_text};
use super::{handoff, window};

/// What the summarizer is asked, after the conversation.
pub(crate) const SUMMARY_PROMPT: &str = "\
Write a handoff summary of the conversation above for the assistant who will continue it \
with no other memory of it. Cover, in short sections:
1. The user's goal and every request or constraint they gave; quote their own words \
verbatim where the exact wording matters (names, numbers, rules, \"do not\"s).
2. Decisions made, and why.
3. Files read, written or edited, and what changed in each.
4. Errors met and how they were resolved.
5. Open tasks, and the very next step.
Messages from other agents (peers) are left out on purpose: do not transcribe them. Do not \
call tools. Answer with the summary only.";

/// Put before a later slice: what the earlier slices said.
const EARLIER: &str = "Summary of the earlier part of this conversation:";

/// Tokens the summary may take at most (an eighth of a small window).
const SUMMARY_MAX_TOKENS: u64 = 4096;

fn summary_max(window: u64) -> u64 {
    SUMMARY_MAX_TOKENS.min(window / 8).max(256)
}

/// Where a summary comes from.
pub(crate) enum SummarySource {
    /// Written by a person or a script: no model call.
    Given(String),
    /// Written by a model over the summarized part.
    Model(Summarizer),
}

/// A model that writes summaries, and what its requests carry besides the conversation (the
/// session's system prompt and tools, so a provider accepts the replayed tool calls and
/// the cached prefix can be reused).
pub(crate) struct Summarizer {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) system: Option<String>,
    pub(crate) tools: Vec<ToolSpec>,
    /// The summarizer's own window.
    pub(crate) window: u64,
    /// How its requests are retried: the same `[network]` rules as a step's (attempts,
    /// backoff, the server's `Retry-After`).
    pub(crate) network: crate::config::Network,
}

/// Everything a compaction needs besides its summary.
pub(crate) struct Request<'a> {
    pub(crate) store: &'a Store,
    /// The run's participant in rooms: the handoff names the live peers and the claims.
    pub(crate) rooms: &'a crate::room::Rooms,
    pub(crate) session: &'a Session,
    /// The session's working directory: its worktree room.
    pub(crate) cwd: &'a Path,
    pub(crate) trigger: Trigger,
    pub(crate) keep_tokens: u64,
    /// A compaction asked for by hand: keep this many of the latest human turns verbatim
    /// (whatever their size) and summarize everything before them, instead of `keep_tokens`.
    pub(crate) keep_turns: Option<usize>,
    /// What the summary should keep or focus on (`ag-log compact --instructions`).
    pub(crate) instructions: Option<String>,
    /// The prompt tokens the session is at, when a request measured them.
    pub(crate) tokens_before: Option<u64>,
    /// The turn and step the records belong to (inside a turn), else a turn of their own.
    pub(crate) turn: Option<(&'a str, i64)>,
    /// Whether the session may call `recall`: the handoff then says what it is for.
    pub(crate) recall: bool,
}

/// A compaction that was written.
#[derive(Debug, Clone)]
pub(crate) struct Compacted {
    pub(crate) compaction: Compaction,
    /// The record, then the copies of unanswered peer chunks it carried over.
    pub(crate) chunks: Vec<Chunk>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum CompactError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the summarizer failed: {0}")]
    Summarizer(String),
    #[error("the summarizer's provider stayed unavailable: {0}")]
    Unavailable(String),
    #[error("the session changed while it was being compacted; try again")]
    Changed,
}

/// Compact the session whose fold view (from its latest compaction on, as
/// [`Store::load_context_view`] reads it, and current) is `view`. `Ok(None)`: nothing lies
/// before the kept suffix.
pub(crate) fn compact(
    req: &Request,
    view: &[Chunk],
    source: SummarySource,
) -> Result<Option<Compacted>, CompactError> {
    let plan = match req.keep_turns {
        Some(n) => cut::plan_turns(view, n),
        None => cut::plan(view, req.keep_tokens),
    };
    let Some(plan) = plan else {
        return Ok(None);
    };
    let next = req.store.view_len(req.session)? + 1;
    let previous = crate::fold::compaction::latest(view).map(|(c, _)| c);
    // Borrowed: the summarized part is most of a long view, and a copy would double it.
    let summarized: Vec<&Chunk> = view[plan.summarized_from..plan.kept_from]
        .iter()
        .filter(|c| cut::summarizable(c))
        .collect();
    let kept = &view[plan.kept_from..];
    let (summary, model) = match source {
        SummarySource::Given(s) => (s, "manual".to_string()),
        SummarySource::Model(s) => (
            summarize(
                previous.as_ref(),
                &summarized,
                &s,
                req.instructions.as_deref(),
            )?,
            s.provider.name().to_string(),
        ),
    };
    let state = handoff::durable_state(
        req.store,
        req.rooms,
        req.session,
        req.cwd,
        handoff::lost_request(&summarized, kept),
        req.keep_tokens,
        req.recall,
    )?;
    let kept_from_seq = kept.first().map_or(next, |c| c.seq);
    // Unanswered peer speech before the suffix would be lost with it: it is carried over.
    let carried: Vec<&Chunk> = cut::trailing_peers(view)
        .into_iter()
        .filter(|c| c.seq < kept_from_seq)
        .collect();
    let mut compaction = Compaction {
        summary,
        through_seq: kept_from_seq - 1,
        kept_from_seq,
        trigger: req.trigger,
        tokens_before: req.tokens_before.unwrap_or_else(|| cut::view_tokens(view)),
        tokens_after: 0,
        model,
        state: Some(state),
    };
    compaction.tokens_after = tokens_of_text(&compaction.handoff())
        + kept.iter().map(tokens).sum::<u64>()
        + carried.iter().map(|c| tokens(c)).sum::<u64>();
    let turn = req
        .turn
        .map(|(t, s)| (t.to_string(), s))
        .unwrap_or_else(|| (crate::ids::new_id(), 0));
    let mut record = NewChunk::new(Role::System, compaction.to_data()).in_turn(&turn.0, turn.1);
    // The record names seqs: if anything was appended meanwhile, it must not land.
    record.seq = Some(next);
    let mut batch = vec![record];
    batch.extend(
        carried
            .iter()
            .map(|c| NewChunk::new(Role::Peer, c.data.clone()).in_turn(&turn.0, turn.1)),
    );
    let chunks = match req.store.append(&req.session.id, batch) {
        Ok(c) => c,
        Err(StoreError::BadChunk { index: 0, .. }) => return Err(CompactError::Changed),
        Err(e) => return Err(e.into()),
    };
    req.store.reset_compact_failures(&req.session.id)?;
    Ok(Some(Compacted { compaction, chunks }))
}

/// The summary of `chunks` (after a `previous` compaction's summary), in slices that fit the
/// summarizer's window. A "too long" answer halves the slices and starts again, so a session
/// can always be compacted.
fn summarize(
    previous: Option<&Compaction>,
    chunks: &[&Chunk],
    s: &Summarizer,
    instructions: Option<&str>,
) -> Result<String, CompactError> {
    // What every summarizer request carries besides the conversation.
    let fixed = tokens_of_text(SUMMARY_PROMPT)
        + 64
        + s.system.as_deref().map_or(0, tokens_of_text)
        + s.tools.iter().map(super::brief::spec_tokens).sum::<u64>();
    let mut budget = (s.window / 10 * 9)
        .saturating_sub(fixed + summary_max(s.window))
        .max(1000);
    let mut tries = 0;
    'again: loop {
        let mut summary = previous.map(|c| c.summary.clone());
        let carry = summary.as_deref().map_or(0, tokens_of_text);
        for range in cut::slices(chunks, budget.saturating_sub(carry).max(500)) {
            let input = slice_input(summary.as_deref(), &chunks[range], budget, instructions);
            match call(s, &input) {
                Ok(text) => summary = Some(text),
                Err(Failure::TooLong) if tries < 6 => {
                    tries += 1;
                    budget = (budget / 2).max(250);
                    continue 'again;
                }
                Err(Failure::TooLong) => {
                    return Err(CompactError::Summarizer(
                        "its input stays too long even in small slices".into(),
                    ))
                }
                Err(Failure::Other(e)) => return Err(CompactError::Summarizer(e)),
                Err(Failure::Unavailable(e)) => return Err(CompactError::Unavailable(e)),
            }
        }
        return summary
            .ok_or_else(|| CompactError::Summarizer("there was nothing to summarize".into()));
    }
}

/// What one summarizer call reads: the summary so far, the slice (clipped to the budget when
/// one turn alone is bigger), and the prompt.
fn slice_input(
    earlier: Option<&str>,
    slice: &[&Chunk],
    budget: u64,
    instructions: Option<&str>,
) -> Vec<Chunk> {
    let user = |text: String| Chunk {
        id: String::new(),
        session: String::new(),
        seq: 0,
        turn: "summary".into(),
        step: 0,
        role: Role::User,
        data: ChunkData::Text { text },
        ts: 0,
    };
    let mut out = Vec::with_capacity(slice.len() + 2);
    if let Some(e) = earlier {
        out.push(user(format!("{EARLIER}\n\n{e}")));
    }
    out.extend(clip_to(slice, budget));
    out.push(user(match instructions {
        Some(i) => format!("{SUMMARY_PROMPT}\n\nThe person asking for this summary adds: {i}"),
        None => SUMMARY_PROMPT.to_string(),
    }));
    out
}

/// `slice` with long texts and results cut short until it fits `budget` tokens.
fn clip_to(slice: &[&Chunk], budget: u64) -> Vec<Chunk> {
    let mut cap = usize::MAX;
    loop {
        let clipped: Vec<Chunk> = slice.iter().map(|c| clip_chunk(c, cap)).collect();
        let size: u64 = clipped.iter().map(tokens).sum();
        if size <= budget || cap <= 200 {
            return clipped;
        }
        let longest = clipped
            .iter()
            .map(|c| tokens(c) as usize * 4)
            .max()
            .unwrap_or(0);
        cap = (cap.min(longest) / 2).max(200);
    }
}

fn clip_chunk(c: &Chunk, cap: usize) -> Chunk {
    let clip = |s: &str| -> Option<String> {
        (s.len() > cap).then(|| {
            let mut end = cap;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            format!(
                "{}\n[… {} more bytes left out of the summary's input]",
                &s[..end],
                s.len() - end
            )
        })
    };
    let data = match &c.data {
        ChunkData::Text { text } => clip(text).map(|text| ChunkData::Text { text }),
        ChunkData::ToolResult {
            call_id,
            name,
            result,
            is_error,
            synthetic,
        } => {
            let s = match result {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            clip(&s).map(|s| ChunkData::ToolResult {
                call_id: call_id.clone(),
                name: name.clone(),
                result: s.into(),
                is_error: *is_error,
                synthetic: *synthetic,
            })
        }
        _ => None,
    };
    match data {
        Some(data) => Chunk { data, ..c.clone() },
        None => c.clone(),
    }
}

enum Failure {
    TooLong,
    Other(String),
    /// Retryable failures outlasted `[network] max_attempts`.
    Unavailable(String),
}

/// One summarizer request; the text it answered. Transient failures are tried again as a
/// step's are: up to `[network] max_attempts`, backing off, never sooner than `Retry-After`.
fn call(s: &Summarizer, input: &[Chunk]) -> Result<String, Failure> {
    let opts = FoldOptions {
        model: Some(s.provider.api_model().to_string()),
        system: s.system.clone(),
        tools: s.tools.clone(),
        max_tokens: Some(summary_max(s.window)),
        thinking_budget: None,
        stream: true,
        openai: Default::default(),
    };
    let body = fold(input, s.provider.dialect(), &opts);
    let net = &s.network;
    let mut failures = 0u32;
    loop {
        let mut text = String::new();
        let result = s.provider.attempt(&body, &mut |op| {
            if let ChunkOp::Seal {
                data: ChunkData::Text { text: t },
                ..
            } = op
            {
                if !text.is_empty() && !t.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&t);
            }
        });
        match result {
            Ok(_) if text.trim().is_empty() => {
                return Err(Failure::Other("it wrote no summary".into()))
            }
            Ok(_) => return Ok(text.trim().to_string()),
            Err(e) if window::too_long(&e.message).is_some() => return Err(Failure::TooLong),
            Err(e) if e.retryable => {
                failures += 1;
                if failures >= net.max_attempts.max(1) {
                    let s = if failures == 1 { "" } else { "s" };
                    return Err(Failure::Unavailable(format!(
                        "after {failures} attempt{s}: {e}"
                    )));
                }
                let seed = crate::clock::now_ms() as u64 ^ std::process::id() as u64;
                std::thread::sleep(crate::provider::backoff(
                    failures,
                    e.retry_after,
                    std::time::Duration::from_millis(net.retry_base_ms),
                    std::time::Duration::from_millis(net.retry_max_ms),
                    seed,
                ));
            }
            Err(e) => return Err(Failure::Other(e.to_string())),
        }
    }
}
