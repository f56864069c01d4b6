//! Incremental folds: a run keeps the messages of its view between requests, so a step folds
//! only what the previous requests did not.
//!
//! A fold is a function of the view alone, and within a run the view only grows (a
//! compaction reloads it, and the run starts over). The messages kept are those of the chunks
//! before a *cut*: a place where the fold of what comes before it and the fold of what comes
//! after, put end to end, are the fold of the whole. A place is a cut when
//! - the chunk after it starts an item of its own: user-side input, or a block of another
//!   step than the last block before it;
//! - no result after it answers a call before it;
//! - no record on one side names a chunk on the other (prunes, abandoned attempts), and no
//!   compaction comes after it;
//! - the message before it and the message after it have different roles, so no builder joins
//!   them (checked on the messages themselves).
//!
//! Each request checks that the kept cut still is one for the chunks added since; when it is
//! not, the run folds its whole view again. Either way the messages are [`super::fold`]'s,
//! which the property tests compare byte for byte.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{anthropic, ids, openai, part, prune, walk, Dialect, FoldOptions, Part};
use crate::log::{Chunk, ChunkData};
use crate::provider::Sizes;

/// How many places a request looks at for a new cut before it keeps the old one.
const TRIES: usize = 8;

/// The messages of a view kept between the requests of a run.
#[derive(Debug, Default)]
pub(crate) struct Folded {
    dialect: Option<Dialect>,
    /// `chunks[..cut]` of the view fold to `messages`, and nothing after the cut changes them.
    cut: usize,
    /// The seq of the chunk before the cut: the view the cut belongs to.
    cut_seq: i64,
    messages: Vec<Value>,
    /// The characters and assistant messages among `messages`.
    tally: Tally,
    /// The ids that records before the cut name.
    named: HashSet<String>,
    /// The calls before the cut that no result before it answers.
    open: HashSet<String>,
    /// The step of the last block before the cut, when no user-side input follows it.
    last_key: Option<(String, i64)>,
    /// What the request in flight moves the cut to, once its messages come back.
    pending: Option<Pending>,
}

#[derive(Debug)]
struct Pending {
    cut: usize,
    cut_seq: i64,
    /// The request's first `kept` messages stay.
    kept: usize,
    tally: Tally,
    named: HashSet<String>,
    open: HashSet<String>,
    last_key: Option<(String, i64)>,
}

/// Characters of compact JSON, and assistant messages, over some messages.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Tally {
    chars: usize,
    assistants: usize,
    count: usize,
}

impl Tally {
    fn of(messages: &[Value]) -> Tally {
        let mut t = Tally::default();
        for m in messages {
            t.add(m);
        }
        t
    }

    fn add(&mut self, m: &Value) {
        let mut chars = Chars(0);
        serde_json::to_writer(&mut chars, m).expect("a message serializes");
        self.chars += chars.0;
        self.assistants += usize::from(m["role"] == "assistant");
        self.count += 1;
    }

    fn plus(self, o: Tally) -> Tally {
        Tally {
            chars: self.chars + o.chars,
            assistants: self.assistants + o.assistants,
            count: self.count + o.count,
        }
    }
}

/// Counts the characters of the UTF-8 text written to it (every byte but a continuation
/// byte), holding none of it.
struct Chars(usize);

impl std::io::Write for Chars {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.iter().filter(|&&b| b & 0xC0 != 0x80).count();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sizes {
    fn from_tally(t: Tally) -> Sizes {
        // `[` and `]`, and a comma between two messages.
        Sizes {
            message_chars: 2 + t.chars + t.count.saturating_sub(1),
            assistant_messages: t.assistants,
        }
    }
}

impl Folded {
    /// The messages of `chunks` (a view: seq order, only ever extended) for `dialect`, as
    /// [`super::fold`] puts them in a body (OpenAI's system message left out), and their tally.
    /// Give them back with [`Folded::keep`] once the request is made.
    pub(crate) fn messages(&mut self, chunks: &[Chunk], dialect: Dialect) -> (Vec<Value>, Tally) {
        let fits = self.pending.is_none()
            && self.dialect == Some(dialect)
            && chunks.len() >= self.cut
            && (self.cut == 0 || chunks[self.cut - 1].seq == self.cut_seq);
        if !fits {
            *self = Folded::start(dialect);
        }
        if let Some(done) = self.fold_from_cut(chunks, dialect) {
            return done;
        }
        *self = Folded::start(dialect);
        self.fold_from_cut(chunks, dialect)
            .expect("a fold from the start needs no cut")
    }

    /// The messages [`Folded::messages`] gave, back from the request: what stays final is kept.
    pub(crate) fn keep(&mut self, mut messages: Vec<Value>) {
        let Some(p) = self.pending.take() else {
            return;
        };
        if messages.len() < p.kept {
            *self = Folded::default();
            return;
        }
        messages.truncate(p.kept);
        self.messages = messages;
        self.cut = p.cut;
        self.cut_seq = p.cut_seq;
        self.tally = p.tally;
        self.named = p.named;
        self.open = p.open;
        self.last_key = p.last_key;
    }

    fn start(dialect: Dialect) -> Folded {
        Folded {
            dialect: Some(dialect),
            ..Folded::default()
        }
    }

    /// The messages from the kept cut on, after the kept ones; `None` when the chunks added
    /// since make the cut no longer one.
    fn fold_from_cut(&mut self, chunks: &[Chunk], dialect: Dialect) -> Option<(Vec<Value>, Tally)> {
        let tail = &chunks[self.cut..];
        if self.cut > 0 && !self.separable(tail) {
            return None;
        }
        let started = !self.messages.is_empty();
        let scan = Scan::new(tail, self);
        if let Some(p) = self.choose(tail, &scan.cuts(tail, TRIES), dialect) {
            let a = fold_part(&tail[..p], dialect, started, false);
            let b = fold_part(&tail[p..], dialect, started || !a.is_empty(), true);
            if joins(self.messages.last(), &a, &b) {
                let (named, open, last_key) = scan.state_at(tail, p, self);
                let added = Tally::of(&a);
                self.pending = Some(Pending {
                    cut: self.cut + p,
                    cut_seq: tail[p - 1].seq,
                    kept: self.messages.len() + a.len(),
                    tally: self.tally.plus(added),
                    named,
                    open,
                    last_key,
                });
                return Some(self.joined(a, b, added));
            }
        }
        let b = fold_part(tail, dialect, started, true);
        if !joins(self.messages.last(), &[], &b) {
            return None;
        }
        self.pending = Some(Pending {
            cut: self.cut,
            cut_seq: self.cut_seq,
            kept: self.messages.len(),
            tally: self.tally,
            named: std::mem::take(&mut self.named),
            open: std::mem::take(&mut self.open),
            last_key: self.last_key.take(),
        });
        Some(self.joined(Vec::new(), b, Tally::default()))
    }

    /// The latest of `cuts` (latest first) where the messages on either side have different
    /// roles, found by folding only what comes after it and the stretch to the cut before it
    /// (that stretch ends with the same message as everything before the cut does).
    fn choose(&self, tail: &[Chunk], cuts: &[usize], dialect: Dialect) -> Option<usize> {
        cuts.iter().enumerate().find_map(|(i, &p)| {
            let after = fold_part(&tail[p..], dialect, true, false);
            let first = after.first()?;
            let before = cuts[i + 1..]
                .iter()
                .chain(std::iter::once(&0))
                .find_map(|&q| fold_part(&tail[q..p], dialect, true, false).pop())
                .or_else(|| self.messages.last().cloned());
            before.is_none_or(|m| role(&m) != role(first)).then_some(p)
        })
    }

    /// The kept messages, then `a` (tallied as `added`), then `b`.
    fn joined(&mut self, a: Vec<Value>, b: Vec<Value>, added: Tally) -> (Vec<Value>, Tally) {
        let tally = self.tally.plus(added).plus(Tally::of(&b));
        let mut all = std::mem::take(&mut self.messages);
        all.reserve(a.len() + b.len());
        all.extend(a);
        all.extend(b);
        (all, tally)
    }

    /// Whether the kept cut is still a cut with `tail` after it (the chunk-side conditions).
    fn separable(&self, tail: &[Chunk]) -> bool {
        let ids: HashSet<&str> = tail.iter().map(|c| c.id.as_str()).collect();
        let abandoned = super::abandoned_ids(tail);
        let mut first = true;
        for c in tail {
            if let Some(names) = names(c) {
                if c.data.system_kind() == Some(super::compaction::KIND)
                    || names.iter().any(|n| !ids.contains(n))
                {
                    return false;
                }
            }
            if self.named.contains(&c.id) {
                return false;
            }
            if let ChunkData::ToolResult { call_id, .. } = &c.data {
                if self.open.contains(call_id) {
                    return false;
                }
            }
            if first && !gone(c, &abandoned) {
                match part(c) {
                    Part::Nothing => {}
                    Part::Block(_) if Some(key(c)) == self.last_key() => return false,
                    _ => first = false,
                }
            }
        }
        true
    }

    fn last_key(&self) -> Option<(&str, i64)> {
        self.last_key.as_ref().map(|(t, s)| (t.as_str(), *s))
    }
}

/// Whether the fold leaves `c` out: a record, an error, or a chunk of an abandoned attempt.
fn gone(c: &Chunk, abandoned: &HashSet<&str>) -> bool {
    matches!(c.data, ChunkData::System(_) | ChunkData::Error { .. })
        || abandoned.contains(c.id.as_str())
}

fn key(c: &Chunk) -> (&str, i64) {
    (c.turn.as_str(), c.step)
}

/// The ids a record names (a prune's cleared results, an abandoned attempt's chunks), or
/// `None` when `c` is not such a record; a compaction names none but counts as one.
fn names(c: &Chunk) -> Option<Vec<&str>> {
    let ChunkData::System(m) = &c.data else {
        return None;
    };
    let field = match c.data.system_kind()? {
        "attempt_abandoned" => "chunk_ids",
        prune::KIND => "cleared",
        super::compaction::KIND => return Some(Vec::new()),
        _ => return None,
    };
    Some(
        m.get(field)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default(),
    )
}

/// What one forward pass over the tail learns, for finding the latest new cut in it.
struct Scan<'c> {
    /// Ids named by abandoned-attempt records in the tail: not in the fold.
    abandoned: HashSet<&'c str>,
    /// For each position, whether a new item starts there.
    starts: Vec<bool>,
    /// For each position, the position of the call its result answers (results only).
    answers: Vec<Option<usize>>,
    /// For each id, the first position of a record in the tail naming it.
    named_at: HashMap<&'c str, usize>,
}

impl<'c> Scan<'c> {
    fn new(tail: &'c [Chunk], kept: &Folded) -> Scan<'c> {
        // The ids kept as named cannot be in the tail (the cut would not hold).
        let abandoned: HashSet<&str> = super::abandoned_ids(tail);
        let mut named_at = HashMap::new();
        for (i, c) in tail.iter().enumerate() {
            for n in names(c).unwrap_or_default() {
                named_at.entry(n).or_insert(i);
            }
        }
        let mut starts = vec![false; tail.len()];
        let mut answers = vec![None; tail.len()];
        let mut last = kept.last_key();
        let mut open: HashMap<&str, usize> = HashMap::new();
        for (i, c) in tail.iter().enumerate() {
            if gone(c, &abandoned) {
                continue;
            }
            match &c.data {
                ChunkData::ToolCall { call_id, .. } => {
                    open.insert(call_id, i);
                }
                ChunkData::ToolResult { call_id, .. } => {
                    answers[i] = open.remove(call_id.as_str());
                    continue;
                }
                _ => {}
            }
            match part(c) {
                Part::Block(_) => {
                    starts[i] = last != Some(key(c));
                    last = Some(key(c));
                }
                Part::User(_) => {
                    starts[i] = true;
                    last = None;
                }
                Part::Nothing => {}
            }
        }
        Scan {
            abandoned,
            starts,
            answers,
            named_at,
        }
    }

    /// The positions after the first where the tail can be cut by the chunk-side
    /// conditions, latest first, at most `max` of them.
    fn cuts(&self, tail: &[Chunk], max: usize) -> Vec<usize> {
        let mut found = Vec::new();
        // Over the part after `p`, as `p` moves back: the earliest call a result in it
        // answers, the earliest record before it naming one of its chunks, whether it holds
        // a compaction, and the names its records give that it does not hold.
        let mut earliest_call = usize::MAX;
        let mut earliest_naming = usize::MAX;
        let mut compaction = false;
        let mut held: HashSet<&str> = HashSet::new();
        let mut missing: HashSet<&str> = HashSet::new();
        for p in (1..tail.len()).rev() {
            let c = &tail[p];
            if let Some(names) = names(c) {
                compaction |= c.data.system_kind() == Some(super::compaction::KIND);
                missing.extend(names.into_iter().filter(|n| !held.contains(n)));
            }
            held.insert(&c.id);
            missing.remove(c.id.as_str());
            if let Some(at) = self.answers[p] {
                earliest_call = earliest_call.min(at);
            }
            if let Some(&at) = self.named_at.get(c.id.as_str()) {
                earliest_naming = earliest_naming.min(at);
            }
            if compaction || found.len() == max {
                break;
            }
            if self.starts[p] && earliest_call >= p && earliest_naming >= p && missing.is_empty() {
                found.push(p);
            }
        }
        found
    }

    /// The kept state for a cut at `p` of the tail: names before it, calls still open at it,
    /// and the step of its last block.
    fn state_at(
        &self,
        tail: &[Chunk],
        p: usize,
        kept: &Folded,
    ) -> (HashSet<String>, HashSet<String>, Option<(String, i64)>) {
        let mut named = kept.named.clone();
        let mut open = kept.open.clone();
        let mut last = kept.last_key.clone();
        for c in &tail[..p] {
            named.extend(names(c).unwrap_or_default().into_iter().map(String::from));
            if gone(c, &self.abandoned) {
                continue;
            }
            match &c.data {
                ChunkData::ToolCall { call_id, .. } => {
                    open.insert(call_id.clone());
                }
                ChunkData::ToolResult { call_id, .. } => {
                    open.remove(call_id);
                    continue;
                }
                _ => {}
            }
            match part(c) {
                Part::Block(_) => last = Some((c.turn.clone(), c.step)),
                Part::User(_) => last = None,
                Part::Nothing => {}
            }
        }
        (named, open, last)
    }
}

/// Whether `before` (the last kept message), `a` and `b`, put end to end, keep every message
/// as its own: each meets one of another role. `b` holds the last message, which carries
/// the breakpoint, unless there is no message at all.
fn joins(before: Option<&Value>, a: &[Value], b: &[Value]) -> bool {
    if b.is_empty() {
        return before.is_none() && a.is_empty();
    }
    let first = a.first().unwrap_or(&b[0]);
    before.is_none_or(|m| role(m) != role(first))
        && (a.is_empty() || role(&a[a.len() - 1]) != role(&b[0]))
}

fn role(m: &Value) -> &Value {
    &m["role"]
}

/// The messages of `chunks` folded on their own: after messages that went out already when
/// `started`, with the breakpoint on the last when `mark`.
fn fold_part(chunks: &[Chunk], dialect: Dialect, started: bool, mark: bool) -> Vec<Value> {
    let chunks = ids::sanitized(chunks);
    let items = walk(&chunks);
    let mut out = Vec::new();
    match dialect {
        Dialect::Anthropic => {
            let mut put = |m: anthropic::Msg<'_>| out.push(value(&m));
            let mut b = anthropic::Builder::continuing(started);
            for item in items {
                b.item(item, &mut put);
            }
            if mark {
                b.finish(&mut put);
            } else {
                b.end(&mut put);
            }
        }
        Dialect::OpenAi => {
            let none = FoldOptions::default();
            let mut put = |m: openai::Msg<'_>| out.push(value(&m));
            let mut b = openai::Builder::new(&none, &mut put);
            for item in items {
                b.item(item, &mut put);
            }
            b.finish(&mut put);
        }
    }
    out
}

fn value<M: serde::Serialize>(m: &M) -> Value {
    serde_json::to_value(m).expect("a message serializes")
}

/// The body of a request with `opts` and `messages` (with their tally, as
/// [`Folded::messages`] gives them), and the sizes of its messages: the same body as
/// [`super::fold`] of the view.
pub(crate) fn body(
    dialect: Dialect,
    opts: &FoldOptions,
    mut messages: Vec<Value>,
    tally: Tally,
) -> (Value, Sizes) {
    let mut tally = tally;
    let mut body = match dialect {
        Dialect::Anthropic => value(&anthropic::body(opts, Vec::<Value>::new())),
        Dialect::OpenAi => {
            if let Some(system) = system_message(opts) {
                tally.add(&system);
                messages.insert(0, system);
            }
            value(&openai::body(opts, Vec::<Value>::new()))
        }
    };
    body["messages"] = Value::Array(messages);
    (body, Sizes::from_tally(tally))
}

/// The messages of a body [`body`] built, for [`Folded::keep`].
pub(crate) fn messages_of(dialect: Dialect, opts: &FoldOptions, mut body: Value) -> Vec<Value> {
    let Value::Array(mut messages) = body["messages"].take() else {
        return Vec::new();
    };
    if dialect == Dialect::OpenAi && system_message(opts).is_some() && !messages.is_empty() {
        messages.remove(0);
    }
    messages
}

/// OpenAI's first message, the system prompt, when `opts` has one.
fn system_message(opts: &FoldOptions) -> Option<Value> {
    let mut system = None;
    openai::Builder::new(opts, &mut |m| system = Some(value(&m)));
    system
}

#[cfg(test)]
mod tests;
