//! The Anthropic Messages dialect: roles alternate starting with the user, thinking is replayed
//! with its signature, and cache breakpoints are placed (at most 4).
//!
//! The body is a tree of small borrowed structs serialized straight to JSON (or to a `Value`
//! for [`super::fold`]), with keys in a fixed order: the same bytes a `Value` tree built key by
//! key would give, without building one.

use std::borrow::Cow;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use super::{Block, FoldOptions, Item, Reply, CONVERSATION_START, DEFAULT_MAX_TOKENS};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    User,
    Assistant,
}

/// The request body, ready to serialize; `M` is the `messages` array (a `Vec<Msg>`, or
/// messages produced as the body is written).
pub(super) struct Body<'a, M> {
    opts: &'a FoldOptions,
    max_tokens: u64,
    messages: M,
}

pub(super) fn body<M: Serialize>(opts: &FoldOptions, messages: M) -> Body<'_, M> {
    let max_tokens = opts.max_tokens.unwrap_or(match opts.thinking_budget {
        // The API wants max_tokens above the thinking budget; a default that broke that rule
        // would turn a valid option into a rejected request.
        Some(budget) if budget >= DEFAULT_MAX_TOKENS => budget + DEFAULT_MAX_TOKENS,
        _ => DEFAULT_MAX_TOKENS,
    });
    Body {
        opts,
        max_tokens,
        messages,
    }
}

/// `{"type":"ephemeral"}`
struct Ephemeral;

impl Serialize for Ephemeral {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("type", "ephemeral")?;
        m.end()
    }
}

struct SystemBlock<'a>(&'a str);

impl Serialize for SystemBlock<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("type", "text")?;
        m.serialize_entry("text", self.0)?;
        m.serialize_entry("cache_control", &Ephemeral)?;
        m.end()
    }
}

struct Tools<'a>(&'a [super::ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (i, t) in self.0.iter().enumerate() {
            // The last tool carries a breakpoint: tools change rarely, so they cache well.
            seq.serialize_element(&Tool {
                tool: t,
                mark: i + 1 == self.0.len(),
            })?;
        }
        seq.end()
    }
}

struct Tool<'a> {
    tool: &'a super::ToolSpec,
    mark: bool,
}

impl Serialize for Tool<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3 + usize::from(self.mark)))?;
        m.serialize_entry("name", &self.tool.name)?;
        m.serialize_entry("description", &self.tool.description)?;
        m.serialize_entry("input_schema", &self.tool.input_schema)?;
        if self.mark {
            m.serialize_entry("cache_control", &Ephemeral)?;
        }
        m.end()
    }
}

struct Thinking(u64);

impl Serialize for Thinking {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("type", "enabled")?;
        m.serialize_entry("budget_tokens", &self.0)?;
        m.end()
    }
}

/// Keys, in order: `model, max_tokens, system, tools, messages, thinking, stream`.
impl<M: Serialize> Serialize for Body<'_, M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let o = self.opts;
        let system = o.system.as_deref().filter(|s| !s.is_empty());
        let len = usize::from(o.model.is_some())
            + 1
            + usize::from(system.is_some())
            + usize::from(!o.tools.is_empty())
            + 1
            + usize::from(o.thinking_budget.is_some())
            + usize::from(o.stream);
        let mut m = s.serialize_map(Some(len))?;
        if let Some(model) = &o.model {
            m.serialize_entry("model", model)?;
        }
        m.serialize_entry("max_tokens", &self.max_tokens)?;
        if let Some(system) = system {
            m.serialize_entry("system", &[SystemBlock(system)])?;
        }
        if !o.tools.is_empty() {
            m.serialize_entry("tools", &Tools(&o.tools))?;
        }
        m.serialize_entry("messages", &self.messages)?;
        if let Some(budget) = o.thinking_budget {
            m.serialize_entry("thinking", &Thinking(budget))?;
        }
        if o.stream {
            m.serialize_entry("stream", &true)?;
        }
        m.end()
    }
}

/// One message: its role, its blocks, and which block (if any) carries the rolling breakpoint.
pub(super) struct Msg<'a> {
    side: Side,
    content: Vec<ABlock<'a>>,
    mark: Option<usize>,
}

impl Serialize for Msg<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry(
            "role",
            match self.side {
                Side::User => "user",
                Side::Assistant => "assistant",
            },
        )?;
        m.serialize_entry("content", &Content(self))?;
        m.end()
    }
}

struct Content<'s, 'a>(&'s Msg<'a>);

impl Serialize for Content<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let msg = self.0;
        let mut seq = s.serialize_seq(Some(msg.content.len()))?;
        for (i, b) in msg.content.iter().enumerate() {
            seq.serialize_element(&Marked {
                block: b,
                mark: msg.mark == Some(i),
            })?;
        }
        seq.end()
    }
}

/// A content block as the API takes it, borrowed from the log where it can be.
enum ABlock<'a> {
    Text(Cow<'a, str>),
    /// `{"type":"image","source":{"type":"base64","media_type":…,"data":…}}`
    Image {
        media_type: Cow<'a, str>,
        data: Cow<'a, str>,
    },
    Thinking {
        thinking: Cow<'a, str>,
        signature: Cow<'a, str>,
    },
    Redacted(Cow<'a, str>),
    ToolUse {
        id: Cow<'a, str>,
        name: Cow<'a, str>,
        input: Cow<'a, Value>,
    },
    Result(Reply<'a>),
}

struct Marked<'s, 'a> {
    block: &'s ABlock<'a>,
    mark: bool,
}

impl Serialize for Marked<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mark = usize::from(self.mark);
        let m = match self.block {
            ABlock::Text(text) => {
                let mut m = s.serialize_map(Some(2 + mark))?;
                m.serialize_entry("type", "text")?;
                m.serialize_entry("text", text.as_ref())?;
                m
            }
            ABlock::Image { media_type, data } => {
                let mut m = s.serialize_map(Some(2 + mark))?;
                m.serialize_entry("type", "image")?;
                m.serialize_entry(
                    "source",
                    &ImageSource {
                        media_type: media_type.as_ref(),
                        data: data.as_ref(),
                    },
                )?;
                m
            }
            ABlock::Thinking {
                thinking,
                signature,
            } => {
                let mut m = s.serialize_map(Some(3 + mark))?;
                m.serialize_entry("type", "thinking")?;
                m.serialize_entry("thinking", thinking.as_ref())?;
                m.serialize_entry("signature", signature.as_ref())?;
                m
            }
            ABlock::Redacted(data) => {
                let mut m = s.serialize_map(Some(2 + mark))?;
                m.serialize_entry("type", "redacted_thinking")?;
                m.serialize_entry("data", data.as_ref())?;
                m
            }
            ABlock::ToolUse { id, name, input } => {
                let mut m = s.serialize_map(Some(4 + mark))?;
                m.serialize_entry("type", "tool_use")?;
                m.serialize_entry("id", id.as_ref())?;
                m.serialize_entry("name", name.as_ref())?;
                m.serialize_entry("input", input.as_ref())?;
                m
            }
            ABlock::Result(r) => {
                let mut m = s.serialize_map(Some(3 + usize::from(r.is_error) + mark))?;
                m.serialize_entry("type", "tool_result")?;
                m.serialize_entry("tool_use_id", r.call_id.as_ref())?;
                m.serialize_entry("content", r.content.as_ref())?;
                if r.is_error {
                    m.serialize_entry("is_error", &true)?;
                }
                m
            }
        };
        let mut m = m;
        if self.mark {
            m.serialize_entry("cache_control", &Ephemeral)?;
        }
        m.end()
    }
}

/// The messages of `items`, all at once.
pub(super) fn build<'a>(items: impl IntoIterator<Item = Item<'a>>) -> Vec<Msg<'a>> {
    let mut msgs = Vec::new();
    let mut b = Builder::default();
    for item in items {
        b.item(item, &mut |m| msgs.push(m));
    }
    b.finish(&mut |m| msgs.push(m));
    msgs
}

struct ImageSource<'a> {
    media_type: &'a str,
    data: &'a str,
}

impl Serialize for ImageSource<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("type", "base64")?;
        m.serialize_entry("media_type", self.media_type)?;
        m.serialize_entry("data", self.data)?;
        m.end()
    }
}

/// Items in, messages out, one at a time: a message goes out once nothing later can change
/// it (adjacent same-role content joins one message, and the last carries the rolling
/// breakpoint), so only the message being gathered is held.
#[derive(Default)]
pub(super) struct Builder<'a> {
    last: Option<Msg<'a>>,
    started: bool,
}

impl<'a> Builder<'a> {
    /// A builder that continues a conversation whose earlier messages went out already
    /// (`started`): no conversation-start message goes before its first.
    pub(super) fn continuing(started: bool) -> Builder<'a> {
        Builder {
            last: None,
            started,
        }
    }

    pub(super) fn item(&mut self, item: Item<'a>, out: &mut impl FnMut(Msg<'a>)) {
        match item {
            Item::User(text) => self.push(Side::User, ABlock::Text(text), out),
            Item::Image { media_type, data } => {
                self.push(Side::User, ABlock::Image { media_type, data }, out)
            }
            Item::Step { blocks, replies } => {
                let mut any = false;
                for b in blocks.into_iter().filter_map(block) {
                    // Adjacent same-role content joins one message: the API rejects two in a
                    // row, and appending to the tail never changes anything before it.
                    self.push(Side::Assistant, b, out);
                    any = true;
                }
                // Replies open the next user message: the step's tool_use blocks must be
                // answered first thing, before any text that follows.
                if any && !replies.is_empty() {
                    let done = self.last.replace(Msg {
                        side: Side::User,
                        content: replies.into_iter().map(ABlock::Result).collect(),
                        mark: None,
                    });
                    self.emit(done, out);
                }
            }
        }
    }

    /// The last message, with the rolling breakpoint: the next build extends this prefix, so
    /// caching up to here pays. Thinking blocks cannot carry cache_control, so it goes on the
    /// last block that can.
    pub(super) fn finish(mut self, out: &mut impl FnMut(Msg<'a>)) {
        let mut last = self.last.take();
        if let Some(last) = &mut last {
            last.mark = last
                .content
                .iter()
                .rposition(|b| !matches!(b, ABlock::Thinking { .. } | ABlock::Redacted(_)));
        }
        self.emit(last, out);
    }

    /// The last message as it is, without the breakpoint: later messages will follow it.
    pub(super) fn end(mut self, out: &mut impl FnMut(Msg<'a>)) {
        let last = self.last.take();
        self.emit(last, out);
    }

    fn push(&mut self, side: Side, block: ABlock<'a>, out: &mut impl FnMut(Msg<'a>)) {
        match &mut self.last {
            Some(last) if last.side == side => last.content.push(block),
            _ => {
                let done = self.last.replace(Msg {
                    side,
                    content: vec![block],
                    mark: None,
                });
                self.emit(done, out);
            }
        }
    }

    fn emit(&mut self, msg: Option<Msg<'a>>, out: &mut impl FnMut(Msg<'a>)) {
        let Some(msg) = msg else { return };
        // Anthropic wants the first message from the user.
        if !self.started && msg.side == Side::Assistant {
            out(Msg {
                side: Side::User,
                content: vec![ABlock::Text(Cow::Borrowed(CONVERSATION_START))],
                mark: None,
            });
        }
        self.started = true;
        out(msg);
    }
}

fn block(b: Block<'_>) -> Option<ABlock<'_>> {
    Some(match b {
        Block::Thinking {
            redacted: Some(data),
            ..
        } if !data.is_empty() => ABlock::Redacted(data),
        Block::Thinking {
            text,
            signature: Some(signature),
            ..
        } if !signature.is_empty() => ABlock::Thinking {
            thinking: text,
            signature,
        },
        // Unsigned thinking (another provider's, or a cut stream) is rejected by the API.
        Block::Thinking { .. } => return None,
        Block::Text(text) if text.is_empty() => return None,
        Block::Text(text) => ABlock::Text(text),
        Block::Call {
            id,
            name,
            arguments,
        } => ABlock::ToolUse {
            id,
            name,
            input: input(arguments),
        },
    })
}

/// `input` must be an object. Arguments stored as JSON text (as OpenAI streams them) are
/// parsed; anything else that is not an object is wrapped rather than lost.
fn input(arguments: Cow<'_, Value>) -> Cow<'_, Value> {
    Cow::Owned(match arguments.as_ref() {
        Value::Object(_) => return arguments,
        Value::Null => json!({}),
        Value::String(s) if s.trim().is_empty() => json!({}),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({ "arguments": arguments }),
        },
        other => json!({ "arguments": other }),
    })
}

#[cfg(test)]
mod tests;
