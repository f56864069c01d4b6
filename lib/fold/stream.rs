//! The fold of a log too big to hold: the same bytes as [`super::fold_to_writer`], written
//! while the log is read, with memory that does not grow with it.
//!
//! The log is read in three passes, each oldest first from the latest compaction's kept
//! suffix: the records (which chunks were abandoned, which results pruned: a record names
//! chunks that come before it), the tool calls and results (which calls are never answered:
//! a result may come after later conversation), then every chunk. The last pass turns chunks
//! into items and items into messages, and each message is written as soon as nothing later
//! can change it. What is held at once: the step and the message being gathered, the ids the
//! records name, the calls still open, and, only when a result comes after the conversation
//! has moved on, the items between its call and it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::marker::PhantomData;

use serde::ser::{Error as _, SerializeSeq};
use serde::{Serialize, Serializer};

use super::compaction::Compaction;
use super::{
    anthropic, ids, openai, peer, prune, Block, Dialect, FoldOptions, Item, Reply, SYNTHETIC_RESULT,
};
use crate::log::{Chunk, ChunkData, Role};

/// A tool call or result as the second pass reads it.
#[derive(Debug, Clone)]
pub(crate) struct CallMark {
    pub(crate) seq: i64,
    /// The chunk's id.
    pub(crate) id: String,
    pub(crate) call_id: String,
    /// A call, or else a result.
    pub(crate) is_call: bool,
}

/// A view the streaming fold reads, in seq order, each pass from `after` on (`seq > after`).
pub(crate) trait Source {
    type Error;
    /// The latest compaction of the view, if any.
    fn latest_compaction(&mut self) -> Result<Option<Compaction>, Self::Error>;
    /// The `system` records (others may come too: they are ignored).
    fn records(&mut self, after: i64, f: &mut dyn FnMut(Chunk)) -> Result<(), Self::Error>;
    /// Every tool call and tool result.
    fn calls(&mut self, after: i64, f: &mut dyn FnMut(CallMark)) -> Result<(), Self::Error>;
    /// Every chunk the fold reads, until `f` says stop (returns false).
    fn chunks(&mut self, after: i64, f: &mut dyn FnMut(Chunk) -> bool) -> Result<(), Self::Error>;
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum StreamError<E> {
    #[error(transparent)]
    Source(E),
    #[error(transparent)]
    Write(serde_json::Error),
}

/// Write the request body of `src` for `dialect` to `w`, byte for byte what
/// [`super::fold_to_writer`] writes for the same chunks in memory. `full` ignores compactions
/// and prunes, as a fold of the log without their records. A source error in the last pass
/// leaves the text cut short.
pub(crate) fn fold_to_writer<S: Source, W: std::io::Write>(
    src: &mut S,
    full: bool,
    dialect: Dialect,
    opts: &FoldOptions,
    pretty: bool,
    w: W,
) -> Result<(), StreamError<S::Error>> {
    let compaction = if full {
        None
    } else {
        src.latest_compaction().map_err(StreamError::Source)?
    };
    let after = compaction.as_ref().map_or(0, |c| c.kept_from_seq - 1);
    let facts = Facts::read(src, after, full).map_err(StreamError::Source)?;
    let handoff = compaction.map(|c| c.handoff());
    let failed = RefCell::new(None);
    let items = |emit: &mut dyn FnMut(Item<'static>) -> bool| {
        let mut walker = Walker::new(&facts);
        if let Some(h) = handoff {
            walker.queue.push_back(Pending::User(Cow::Owned(h)));
        }
        let mut going = true;
        let read = src.chunks(after, &mut |c| {
            going = walker.chunk(c, emit);
            going
        });
        match read {
            Err(e) => *failed.borrow_mut() = Some(e),
            Ok(()) if going => walker.finish(emit),
            Ok(()) => {}
        }
    };
    let written = match dialect {
        Dialect::Anthropic => {
            let msgs = Lazy::<anthropic::Msg<'static>, _>::new(|put| {
                let mut b = anthropic::Builder::default();
                let mut ok = true;
                items(&mut |item| {
                    b.item(item, &mut |m| ok = ok && put(m));
                    ok
                });
                if ok && failed.borrow().is_none() {
                    b.finish(&mut |m| ok = ok && put(m));
                }
            });
            super::write(w, pretty, &anthropic::body(opts, msgs))
        }
        Dialect::OpenAi => {
            let msgs = Lazy::<openai::Msg<'_>, _>::new(|put| {
                let mut ok = true;
                let mut b = openai::Builder::new(opts, &mut |m| ok = ok && put(m));
                items(&mut |item| {
                    b.item(item, &mut |m| ok = ok && put(m));
                    ok
                });
                if ok && failed.borrow().is_none() {
                    b.finish(&mut |m| ok = ok && put(m));
                }
            });
            super::write(w, pretty, &openai::body(opts, msgs))
        }
    };
    // The source's error is the cause when it stopped the messages short.
    if let Some(e) = failed.into_inner() {
        return Err(StreamError::Source(e));
    }
    written.map_err(StreamError::Write)
}

/// What the first two passes learn: the chunks abandoned and the results cleared (by id),
/// and the calls no result ever answers (by seq).
struct Facts {
    abandoned: HashSet<String>,
    cleared: HashSet<String>,
    unanswered: HashSet<i64>,
}

impl Facts {
    fn read<S: Source>(src: &mut S, after: i64, full: bool) -> Result<Facts, S::Error> {
        let mut abandoned = HashSet::new();
        let mut cleared = HashSet::new();
        src.records(after, &mut |c| {
            let one = std::slice::from_ref(&c);
            abandoned.extend(super::abandoned_ids(one).into_iter().map(str::to_string));
            if !full {
                cleared.extend(prune::cleared_ids(one).into_iter().map(str::to_string));
            }
        })?;
        // The pairing rule of the walk: a result answers the latest open call with its id.
        let mut open: HashMap<String, i64> = HashMap::new();
        let mut unanswered = HashSet::new();
        src.calls(after, &mut |m| {
            if abandoned.contains(&m.id) {
                return;
            }
            let call_id = ids::wire_id(&m.call_id).into_owned();
            if m.is_call {
                unanswered.extend(open.insert(call_id, m.seq));
            } else {
                open.remove(&call_id);
            }
        })?;
        unanswered.extend(open.into_values());
        Ok(Facts {
            abandoned,
            cleared,
            unanswered,
        })
    }
}

/// An item on its way out: a step may wait for a result that comes later in the log.
enum Pending {
    User(Cow<'static, str>),
    Image {
        media_type: Cow<'static, str>,
        data: Cow<'static, str>,
    },
    Step {
        blocks: Vec<Block<'static>>,
        /// The reply slot of each call, in call order.
        slots: Vec<u64>,
    },
}

/// The step being gathered.
struct OpenStep {
    key: (String, i64),
    blocks: Vec<Block<'static>>,
    /// `(slot, call seq, call id)`
    calls: Vec<(u64, i64, String)>,
}

/// The third pass: chunks in, items out, in the order and shape of [`super::walk`].
struct Walker<'f> {
    facts: &'f Facts,
    /// Open calls by id: the slot their reply goes to.
    open: HashMap<String, u64>,
    /// Replies by slot, until their step goes out.
    replies: HashMap<u64, Reply<'static>>,
    next_slot: u64,
    step: Option<OpenStep>,
    queue: VecDeque<Pending>,
}

impl<'f> Walker<'f> {
    fn new(facts: &'f Facts) -> Walker<'f> {
        Walker {
            facts,
            open: HashMap::new(),
            replies: HashMap::new(),
            next_slot: 0,
            step: None,
            queue: VecDeque::new(),
        }
    }

    /// Take one chunk; false when `emit` said stop.
    fn chunk(&mut self, mut c: Chunk, emit: &mut dyn FnMut(Item<'static>) -> bool) -> bool {
        if self.facts.abandoned.contains(&c.id) {
            return true;
        }
        ids::sanitize(&mut c);
        let (seq, role) = (c.seq, c.role);
        let block = match c.data {
            ChunkData::System(_) | ChunkData::Error { .. } => return true,
            ChunkData::ToolResult {
                call_id,
                name,
                result,
                is_error,
                ..
            } => {
                let Some(slot) = self.open.remove(&call_id) else {
                    return true;
                };
                let content = if self.facts.cleared.contains(&c.id) {
                    Cow::Owned(prune::placeholder(&name, seq))
                } else {
                    super::result_text(Cow::Owned(result))
                };
                self.replies.insert(
                    slot,
                    Reply {
                        call_id: Cow::Owned(call_id),
                        content,
                        is_error,
                    },
                );
                return self.flush(emit);
            }
            ChunkData::Thinking {
                text,
                signature,
                redacted,
            } => Block::Thinking {
                text: Cow::Owned(text),
                signature: signature.map(Cow::Owned),
                redacted: redacted.map(Cow::Owned),
            },
            ChunkData::Text { text } if role == Role::Assistant => Block::Text(Cow::Owned(text)),
            ChunkData::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                let slot = self.next_slot;
                self.next_slot += 1;
                self.open.insert(call_id.clone(), slot);
                let step = self.open_step(c.turn, c.step);
                step.calls.push((slot, seq, call_id.clone()));
                step.blocks.push(Block::Call {
                    id: Cow::Owned(call_id),
                    name: Cow::Owned(name),
                    arguments: Cow::Owned(arguments),
                });
                return true;
            }
            ChunkData::Text { text } => return self.user(text, emit),
            ChunkData::Image { media_type, data } => {
                self.close();
                self.queue.push_back(Pending::Image {
                    media_type: Cow::Owned(media_type),
                    data: Cow::Owned(data),
                });
                return self.flush(emit);
            }
            ChunkData::Peer {
                messages,
                omitted,
                roster,
                ..
            } => return self.user(peer::peer_text(&messages, omitted, roster.as_deref()), emit),
        };
        self.open_step(c.turn, c.step).blocks.push(block);
        true
    }

    /// The step `(turn, step)`, closing the one gathered before when it is another.
    fn open_step(&mut self, turn: String, step: i64) -> &mut OpenStep {
        if self
            .step
            .as_ref()
            .is_some_and(|s| s.key.0 != turn || s.key.1 != step)
        {
            self.close();
        }
        self.step.get_or_insert_with(|| OpenStep {
            key: (turn, step),
            blocks: Vec::new(),
            calls: Vec::new(),
        })
    }

    fn user(&mut self, text: String, emit: &mut dyn FnMut(Item<'static>) -> bool) -> bool {
        self.close();
        if !text.is_empty() {
            self.queue.push_back(Pending::User(Cow::Owned(text)));
        }
        self.flush(emit)
    }

    /// Close the step being gathered: a call that no result will ever answer gets the
    /// synthetic one now.
    fn close(&mut self) {
        let Some(s) = self.step.take() else { return };
        let mut slots = Vec::with_capacity(s.calls.len());
        for (slot, seq, call_id) in s.calls {
            if !self.replies.contains_key(&slot) && self.facts.unanswered.contains(&seq) {
                self.replies.insert(slot, synthetic(call_id));
            }
            slots.push(slot);
        }
        self.queue.push_back(Pending::Step {
            blocks: s.blocks,
            slots,
        });
    }

    /// Send out the items at the head of the queue whose replies are all there.
    fn flush(&mut self, emit: &mut dyn FnMut(Item<'static>) -> bool) -> bool {
        while let Some(head) = self.queue.front() {
            if let Pending::Step { slots, .. } = head {
                if !slots.iter().all(|s| self.replies.contains_key(s)) {
                    return true;
                }
            }
            let item = match self.queue.pop_front().expect("a head") {
                Pending::User(text) => Item::User(text),
                Pending::Image { media_type, data } => Item::Image { media_type, data },
                Pending::Step { blocks, slots } => Item::Step {
                    blocks,
                    replies: slots
                        .iter()
                        .map(|s| self.replies.remove(s).expect("a reply"))
                        .collect(),
                },
            };
            if !emit(item) {
                return false;
            }
        }
        true
    }

    /// The end of the log: every call still waiting gets the synthetic result (the second
    /// pass already named them all; this keeps a source that changed between passes from
    /// losing the rest).
    fn finish(mut self, emit: &mut dyn FnMut(Item<'static>) -> bool) {
        self.close();
        for p in &self.queue {
            if let Pending::Step { blocks, slots } = p {
                let ids = blocks.iter().filter_map(|b| match b {
                    Block::Call { id, .. } => Some(id),
                    _ => None,
                });
                for (slot, id) in slots.iter().zip(ids) {
                    if !self.replies.contains_key(slot) {
                        self.replies.insert(*slot, synthetic(id.to_string()));
                    }
                }
            }
        }
        self.flush(emit);
    }
}

fn synthetic(call_id: String) -> Reply<'static> {
    Reply {
        call_id: Cow::Owned(call_id),
        content: Cow::Borrowed(SYNTHETIC_RESULT),
        is_error: true,
    }
}

/// A JSON array whose elements are made while it is written: `F` is called once with a
/// sink that writes each element (false: the write failed, stop).
struct Lazy<M, F>(RefCell<Option<F>>, PhantomData<fn(M)>);

impl<M, F: FnOnce(&mut dyn FnMut(M) -> bool)> Lazy<M, F> {
    fn new(f: F) -> Self {
        Lazy(RefCell::new(Some(f)), PhantomData)
    }
}

impl<M: Serialize, F: FnOnce(&mut dyn FnMut(M) -> bool)> Serialize for Lazy<M, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let run = self
            .0
            .borrow_mut()
            .take()
            .ok_or_else(|| S::Error::custom("a streamed array is written once"))?;
        // No length: serde_json writes the same bytes for a sequence of unknown length.
        let mut seq = s.serialize_seq(None)?;
        let mut failed = None;
        run(&mut |m| match seq.serialize_element(&m) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        });
        match failed {
            Some(e) => Err(e),
            None => seq.end(),
        }
    }
}
