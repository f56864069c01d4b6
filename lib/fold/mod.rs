//! Fold: the log as a provider request (DESIGN §3).
//!
//! This module owns turning a session's chunks (the whole view, in seq order) into the body of
//! an Anthropic Messages or OpenAI Chat Completions request. It is pure: the same chunks and
//! options always give the same bytes, and a build never rewrites what an earlier build sent,
//! so the provider's prompt cache keeps hitting. The only part that moves between builds is
//! Anthropic's rolling `cache_control` marker, which the provider ignores for prefix matching.
//!
//! A view that holds a `system/compaction` record folds from the latest one (see
//! [`compaction`]): its handoff message, then the kept suffix and what came after. A
//! `system/prune` record (see [`prune`]) has the results it names sent as placeholders.
//!
//! The walk is shared: chunks become [`Item`]s (user-side text, or one assistant step with the
//! replies to its calls already paired), and each dialect renders those items.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::Value;

use crate::log::{Chunk, ChunkData, Role};

mod anthropic;
pub mod compaction;
mod ids;
pub(crate) mod incremental;
mod openai;
pub(crate) mod peer;
pub mod prune;
pub(crate) mod stream;

#[cfg(test)]
pub(crate) use ids::id_ok;

/// The content of the result that stands in for a tool call that never got one (a crash or a
/// cut mid-step). Fixed text, so a log folds to the same bytes every time.
pub const SYNTHETIC_RESULT: &str = "[no result: the tool call was interrupted before it finished]";

/// What an empty tool result is sent as: Anthropic (and some OpenAI-compatible servers) reject
/// a tool result with empty content.
pub(crate) const EMPTY_RESULT: &str = "(no output)";

/// The user message put before a log that starts with the assistant, because Anthropic wants
/// the first message from the user. Fixed text for byte stability.
pub(crate) const CONVERSATION_START: &str = "(conversation start)";

/// Anthropic's `max_tokens` when the caller gives none (the API requires the field).
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 8192;

/// A provider request format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Anthropic,
    OpenAi,
}

impl Dialect {
    pub const ALL: [Dialect; 2] = [Dialect::Anthropic, Dialect::OpenAi];

    #[cfg(test)]
    pub(crate) fn parse(s: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Anthropic => "anthropic",
            Dialect::OpenAi => "openai",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub(crate) name: String,
    pub(crate) description: String,
    /// JSON Schema of the arguments.
    pub(crate) input_schema: Value,
}

/// Everything in a request body that does not come from the log.
#[derive(Debug, Clone, Default)]
pub struct FoldOptions {
    /// `model`; omitted when `None`.
    pub model: Option<String>,
    /// System prompt; omitted when `None` or empty.
    pub system: Option<String>,
    /// Omitted when empty.
    pub tools: Vec<ToolSpec>,
    /// Anthropic requires it and gets [`DEFAULT_MAX_TOKENS`] (raised above the thinking budget)
    /// when `None`; OpenAI gets `max_tokens` only when `Some`.
    pub max_tokens: Option<u64>,
    /// Anthropic only: `"thinking":{"type":"enabled","budget_tokens":N}`.
    pub thinking_budget: Option<u64>,
    /// Adds `"stream":true` (and OpenAI's `stream_options.include_usage`).
    pub stream: bool,
    /// OpenAI only: how the limit and thinking are named for this model.
    pub openai: OpenAiParams,
}

/// How an OpenAI request names the answer's limit and thinking. OpenAI's reasoning models (the
/// o-series) and the gpt-5 family refuse `max_tokens` with a 400 and take
/// `max_completion_tokens`, and take `reasoning_effort` where other models refuse it. Decided
/// by the model's name; a model's `[models."openai/NAME"]` config may say otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OpenAiParams {
    /// `max_completion_tokens` rather than `max_tokens`; `None`: by family.
    pub completion_tokens: Option<bool>,
    /// A reasoning model (`reasoning_effort` when thinking is asked for); `None`: by family.
    pub reasoning: Option<bool>,
}

/// Whether an Anthropic model takes extended thinking (`thinking` in the request): Claude 3.7
/// Sonnet and every Claude 4 model do; Claude 3 and 3.5 models, and older ones, refuse the
/// field with a 400. Names nobody knows (a proxy's) are let through: the API decides.
pub fn anthropic_thinks(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let old = name.starts_with("claude-2")
        || name.starts_with("claude-instant")
        || (name.starts_with("claude-3-") && !name.starts_with("claude-3-7"));
    !old
}

impl OpenAiParams {
    /// o1, o3, o4-mini, gpt-5, gpt-5-mini, … (with or without a `provider/` prefix).
    pub fn reasoning_family(model: &str) -> bool {
        let name = model.rsplit('/').next().unwrap_or(model);
        let o_series =
            name.len() >= 2 && name.starts_with('o') && name.as_bytes()[1].is_ascii_digit();
        o_series || name.starts_with("gpt-5")
    }

    pub(crate) fn completion_tokens(&self, model: Option<&str>) -> bool {
        self.completion_tokens
            .unwrap_or_else(|| model.is_some_and(Self::reasoning_family))
    }

    pub(crate) fn reasoning(&self, model: Option<&str>) -> bool {
        self.reasoning
            .unwrap_or_else(|| model.is_some_and(Self::reasoning_family))
    }

    /// The effort a thinking budget asks for: up to 2k tokens low, up to 8k medium, else high.
    pub(crate) fn effort(budget: u64) -> &'static str {
        match budget {
            0..=2048 => "low",
            2049..=8192 => "medium",
            _ => "high",
        }
    }
}

/// The whole request body for `dialect`.
///
/// Keys, in order: anthropic `model, max_tokens, system, tools, messages, thinking, stream`;
/// openai `model, messages, tools, max_tokens, stream, stream_options` (each only when set).
pub(crate) fn fold(chunks: &[Chunk], dialect: Dialect, opts: &FoldOptions) -> Value {
    let chunks = ids::sanitized(chunks);
    let items = walk(&chunks);
    match dialect {
        Dialect::Anthropic => serde_json::to_value(anthropic::body(opts, anthropic::build(items))),
        Dialect::OpenAi => serde_json::to_value(openai::body(opts, openai::build(items, opts))),
    }
    .expect("a request body serializes")
}

/// The same body as [`fold`], written as JSON text to `w` (compact, or pretty as
/// `serde_json::to_writer_pretty` prints), without building a `Value` tree: the bytes are
/// exactly those of serializing [`fold`]'s result. [`stream::fold_to_writer`] writes the same
/// bytes from a log it reads as it goes.
pub fn fold_to_writer<W: std::io::Write>(
    chunks: &[Chunk],
    dialect: Dialect,
    opts: &FoldOptions,
    pretty: bool,
    w: W,
) -> serde_json::Result<()> {
    let chunks = ids::sanitized(chunks);
    let items = walk(&chunks);
    match dialect {
        Dialect::Anthropic => write(w, pretty, &anthropic::body(opts, anthropic::build(items))),
        Dialect::OpenAi => write(w, pretty, &openai::body(opts, openai::build(items, opts))),
    }
}

/// `body` as compact or pretty JSON text.
fn write<W: std::io::Write, B: serde::Serialize>(
    w: W,
    pretty: bool,
    body: &B,
) -> serde_json::Result<()> {
    if pretty {
        serde_json::to_writer_pretty(w, body)
    } else {
        serde_json::to_writer(w, body)
    }
}

/// Just the `messages` array, exactly as [`fold`] puts it in the body (for Anthropic that
/// includes the rolling cache breakpoint on the last message; for OpenAI it leaves out the
/// system message, which comes from the options).
#[cfg(test)]
pub(crate) fn messages(chunks: &[Chunk], dialect: Dialect) -> Vec<Value> {
    let chunks = ids::sanitized(chunks);
    let items = walk(&chunks);
    match dialect {
        Dialect::Anthropic => values(anthropic::build(items)),
        Dialect::OpenAi => values(openai::build(items, &FoldOptions::default())),
    }
}

#[cfg(test)]
fn values<M: serde::Serialize>(msgs: Vec<M>) -> Vec<Value> {
    msgs.iter()
        .map(|m| serde_json::to_value(m).expect("a message serializes"))
        .collect()
}

/// A copy of `v` without any `cache_control` key, at any depth: what must stay byte-identical
/// between builds.
pub fn strip_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), strip_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_cache_control).collect()),
        other => other.clone(),
    }
}

/// How many `cache_control` markers `v` holds (Anthropic allows at most 4 per request).
#[cfg(test)]
pub(crate) fn cache_breakpoints(v: &Value) -> usize {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| usize::from(k == "cache_control") + cache_breakpoints(v))
            .sum(),
        Value::Array(a) => a.iter().map(cache_breakpoints).sum(),
        _ => 0,
    }
}

/// One unit of the conversation, before a dialect gives it a shape. Borrowed from the log
/// when the fold reads it in memory, owned when it reads it as a stream.
#[derive(Debug, Clone, PartialEq)]
enum Item<'a> {
    /// User-side text: what the person typed, or a wrapped peer batch. Never empty.
    User(Cow<'a, str>),
    /// An image the person gave: media type and base64 bytes.
    Image {
        media_type: Cow<'a, str>,
        data: Cow<'a, str>,
    },
    /// One assistant step (its chunks in seq order) and the replies to its calls, in call
    /// order, one per call.
    Step {
        blocks: Vec<Block<'a>>,
        replies: Vec<Reply<'a>>,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Block<'a> {
    Thinking {
        text: Cow<'a, str>,
        signature: Option<Cow<'a, str>>,
        redacted: Option<Cow<'a, str>>,
    },
    Text(Cow<'a, str>),
    Call {
        id: Cow<'a, str>,
        name: Cow<'a, str>,
        arguments: Cow<'a, Value>,
    },
}

#[derive(Debug, Clone, PartialEq)]
struct Reply<'a> {
    call_id: Cow<'a, str>,
    content: Cow<'a, str>,
    is_error: bool,
}

/// The ids named by every `attempt_abandoned` record in the log. A record can come after the
/// chunks it names (it always does), so this is a pass of its own.
pub(crate) fn abandoned_ids(chunks: &[Chunk]) -> HashSet<&str> {
    chunks
        .iter()
        .filter(|c| c.data.system_kind() == Some("attempt_abandoned"))
        .filter_map(|c| match &c.data {
            ChunkData::System(m) => m.get("chunk_ids").and_then(Value::as_array),
            _ => None,
        })
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The conversation in `chunks` as items: the latest compaction's handoff first, when there
/// is one, then user-side input and assistant steps with their replies.
fn walk<'a>(chunks: &'a [Chunk]) -> Vec<Item<'a>> {
    // After a compaction the conversation restarts from its handoff and kept suffix.
    let (handoff, chunks) = match compaction::latest(chunks) {
        Some((c, from)) => (Some(c.handoff()), &chunks[from..]),
        None => (None, chunks),
    };
    let live = live_chunks(chunks);
    let answers = pair_results(&live);
    let mut steps = Steps {
        items: handoff
            .map(|h| Item::User(Cow::Owned(h)))
            .into_iter()
            .collect(),
        step: None,
        answers: &answers,
        cleared: prune::cleared_ids(chunks),
    };
    for (i, c) in live.iter().enumerate() {
        match part(c) {
            Part::Block(block) => steps.block((c.turn.as_str(), c.step), i, block),
            Part::User(item) => steps.user(item),
            Part::Nothing => {}
        }
    }
    steps.close();
    steps.items
}

/// The chunks the conversation is made of: neither abandoned by a retried attempt nor a
/// record or an error.
fn live_chunks(chunks: &[Chunk]) -> Vec<&Chunk> {
    let abandoned = abandoned_ids(chunks);
    chunks
        .iter()
        .filter(|c| abandoned.is_empty() || !abandoned.contains(c.id.as_str()))
        .filter(|c| !matches!(c.data, ChunkData::System(_) | ChunkData::Error { .. }))
        .collect()
}

/// The result answering each call, by the position of the call in `live`. Each result
/// answers the latest still-open call with its id that comes before it; a result with no
/// such call is dropped, since a provider rejects a reply to nothing.
fn pair_results<'a>(live: &[&'a Chunk]) -> Vec<Option<&'a Chunk>> {
    let mut open: HashMap<&str, usize> = HashMap::new();
    let mut answers: Vec<Option<&'a Chunk>> = vec![None; live.len()];
    for (i, c) in live.iter().enumerate() {
        match &c.data {
            ChunkData::ToolCall { call_id, .. } => {
                open.insert(call_id, i);
            }
            ChunkData::ToolResult { call_id, .. } => {
                if let Some(at) = open.remove(call_id.as_str()) {
                    answers[at] = Some(c);
                }
            }
            _ => {}
        }
    }
    answers
}

/// What one live chunk adds to the conversation.
enum Part<'a> {
    /// A block of the assistant step it belongs to.
    Block(Block<'a>),
    /// User-side input, which ends the step before it; `None` when it sends nothing.
    User(Option<Item<'a>>),
    /// Nothing of its own: results travel with their call (paired beforehand), so they never
    /// split a step.
    Nothing,
}

/// What `c` adds: a block, user-side input, or nothing.
fn part(c: &Chunk) -> Part<'_> {
    match &c.data {
        ChunkData::Thinking {
            text,
            signature,
            redacted,
        } => Part::Block(Block::Thinking {
            text: Cow::Borrowed(text),
            signature: signature.as_deref().map(Cow::Borrowed),
            redacted: redacted.as_deref().map(Cow::Borrowed),
        }),
        ChunkData::Text { text } if c.role == Role::Assistant => {
            Part::Block(Block::Text(Cow::Borrowed(text)))
        }
        ChunkData::ToolCall {
            call_id,
            name,
            arguments,
        } => Part::Block(Block::Call {
            id: Cow::Borrowed(call_id),
            name: Cow::Borrowed(name),
            arguments: Cow::Borrowed(arguments),
        }),
        ChunkData::Text { text } => {
            Part::User((!text.is_empty()).then(|| Item::User(Cow::Borrowed(text))))
        }
        ChunkData::Image { media_type, data } => Part::User(Some(Item::Image {
            media_type: Cow::Borrowed(media_type),
            data: Cow::Borrowed(data),
        })),
        ChunkData::Peer {
            messages,
            omitted,
            roster,
            ..
        } => {
            let text = peer::peer_text(messages, *omitted, roster.as_deref());
            Part::User((!text.is_empty()).then(|| Item::User(Cow::Owned(text))))
        }
        ChunkData::ToolResult { .. } | ChunkData::System(_) | ChunkData::Error { .. } => {
            Part::Nothing
        }
    }
}

/// The items gathered so far and the assistant step being gathered.
struct Steps<'a, 'w> {
    items: Vec<Item<'a>>,
    step: Option<OpenStep<'a>>,
    /// The result answering each call, by the position of the call in the live chunks.
    answers: &'w [Option<&'a Chunk>],
    /// The results a prune cleared.
    cleared: HashSet<&'a str>,
}

impl<'a> Steps<'a, '_> {
    /// `block`, of the chunk at `at` in step `key`: it joins the open step when that is
    /// the same step, else starts a new one.
    fn block(&mut self, key: (&'a str, i64), at: usize, block: Block<'a>) {
        if self.step.as_ref().is_some_and(|s| s.key != key) {
            self.close();
        }
        let open = self.step.get_or_insert_with(|| OpenStep {
            key,
            blocks: Vec::new(),
            calls: Vec::new(),
        });
        if matches!(block, Block::Call { .. }) {
            open.calls.push(at);
        }
        open.blocks.push(block);
    }

    /// User-side input: the open step ends before it.
    fn user(&mut self, item: Option<Item<'a>>) {
        self.close();
        self.items.extend(item);
    }

    /// The open step, if any, becomes an item with a reply to each of its calls.
    fn close(&mut self) {
        if let Some(s) = self.step.take() {
            let replies = s
                .blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Call { id, .. } => Some(id.clone()),
                    _ => None,
                })
                .zip(s.calls)
                .map(|(id, at)| reply_for(id, self.answers[at], &self.cleared))
                .collect();
            self.items.push(Item::Step {
                blocks: s.blocks,
                replies,
            });
        }
    }
}

/// The step being gathered: chunks of one (turn, step) that follow each other.
struct OpenStep<'a> {
    key: (&'a str, i64),
    blocks: Vec<Block<'a>>,
    /// Positions in the live chunks of the step's calls, in order.
    calls: Vec<usize>,
}

fn reply_for<'a>(
    call_id: Cow<'a, str>,
    result: Option<&'a Chunk>,
    cleared: &HashSet<&str>,
) -> Reply<'a> {
    match result.map(|c| (c, &c.data)) {
        Some((c, ChunkData::ToolResult { name, is_error, .. }))
            if cleared.contains(c.id.as_str()) =>
        {
            Reply {
                call_id,
                content: Cow::Owned(prune::placeholder(name, c.seq)),
                is_error: *is_error,
            }
        }
        Some((
            _,
            ChunkData::ToolResult {
                result, is_error, ..
            },
        )) => Reply {
            call_id,
            content: result_text(Cow::Borrowed(result)),
            is_error: *is_error,
        },
        _ => Reply {
            call_id,
            content: Cow::Borrowed(SYNTHETIC_RESULT),
            is_error: true,
        },
    }
}

/// What a tool result is sent as: its text, or its JSON text when it is not a string.
fn result_text(result: Cow<'_, Value>) -> Cow<'_, str> {
    match result {
        Cow::Borrowed(Value::String(s)) if s.is_empty() => Cow::Borrowed(EMPTY_RESULT),
        Cow::Borrowed(Value::String(s)) => Cow::Borrowed(s.as_str()),
        Cow::Owned(Value::String(s)) if s.is_empty() => Cow::Borrowed(EMPTY_RESULT),
        Cow::Owned(Value::String(s)) => Cow::Owned(s),
        other => Cow::Owned(other.to_string()),
    }
}

#[cfg(test)]
pub(crate) mod testkit;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod stream_proptests;
#[cfg(test)]
mod tests;
