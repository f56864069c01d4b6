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

/// The request body, ready to serialize.
pub(super) struct Body<'a> {
    opts: &'a FoldOptions,
    max_tokens: u64,
    messages: Vec<Msg<'a>>,
}

pub(super) fn body<'a>(items: &'a [Item<'a>], opts: &'a FoldOptions) -> Body<'a> {
    let max_tokens = opts.max_tokens.unwrap_or(match opts.thinking_budget {
        // The API wants max_tokens above the thinking budget; a default that broke that rule
        // would turn a valid option into a rejected request.
        Some(budget) if budget >= DEFAULT_MAX_TOKENS => budget + DEFAULT_MAX_TOKENS,
        _ => DEFAULT_MAX_TOKENS,
    });
    Body {
        opts,
        max_tokens,
        messages: build(items),
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

struct Messages<'s, 'a>(&'s [Msg<'a>]);

impl Serialize for Messages<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0)
    }
}

/// Keys, in order: `model, max_tokens, system, tools, messages, thinking, stream`.
impl Serialize for Body<'_> {
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
        m.serialize_entry("messages", &Messages(&self.messages))?;
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

/// A content block as the API takes it, borrowed from the log.
enum ABlock<'a> {
    Text(&'a str),
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    Redacted(&'a str),
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    Result(&'a Reply<'a>),
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
                m.serialize_entry("text", text)?;
                m
            }
            ABlock::Thinking {
                thinking,
                signature,
            } => {
                let mut m = s.serialize_map(Some(3 + mark))?;
                m.serialize_entry("type", "thinking")?;
                m.serialize_entry("thinking", thinking)?;
                m.serialize_entry("signature", signature)?;
                m
            }
            ABlock::Redacted(data) => {
                let mut m = s.serialize_map(Some(2 + mark))?;
                m.serialize_entry("type", "redacted_thinking")?;
                m.serialize_entry("data", data)?;
                m
            }
            ABlock::ToolUse { id, name, input } => {
                let mut m = s.serialize_map(Some(4 + mark))?;
                m.serialize_entry("type", "tool_use")?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("name", name)?;
                m.serialize_entry("input", input.as_ref())?;
                m
            }
            ABlock::Result(r) => {
                let mut m = s.serialize_map(Some(3 + usize::from(r.is_error) + mark))?;
                m.serialize_entry("type", "tool_result")?;
                m.serialize_entry("tool_use_id", r.call_id)?;
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

pub(super) fn messages(items: &[Item]) -> Vec<Value> {
    build(items)
        .iter()
        .map(|m| serde_json::to_value(m).expect("a message serializes"))
        .collect()
}

fn build<'a>(items: &'a [Item<'a>]) -> Vec<Msg<'a>> {
    let mut msgs: Vec<Msg<'a>> = Vec::new();
    for item in items {
        match item {
            Item::User(text) => push(&mut msgs, Side::User, ABlock::Text(text)),
            Item::Step { blocks, replies } => {
                let mut any = false;
                for b in blocks.iter().filter_map(block) {
                    // Adjacent same-role content joins one message: the API rejects two in a
                    // row, and appending to the tail never changes anything before it.
                    push(&mut msgs, Side::Assistant, b);
                    any = true;
                }
                if !any {
                    continue;
                }
                // Replies open the next user message: the step's tool_use blocks must be
                // answered first thing, before any text that follows.
                if !replies.is_empty() {
                    msgs.push(Msg {
                        side: Side::User,
                        content: replies.iter().map(ABlock::Result).collect(),
                        mark: None,
                    });
                }
            }
        }
    }
    if msgs.first().is_some_and(|m| m.side == Side::Assistant) {
        msgs.insert(
            0,
            Msg {
                side: Side::User,
                content: vec![ABlock::Text(CONVERSATION_START)],
                mark: None,
            },
        );
    }
    // The rolling breakpoint: the next build extends this prefix, so caching up to here pays.
    // Thinking blocks cannot carry cache_control, so it goes on the last block that can.
    if let Some(last) = msgs.last_mut() {
        last.mark = last
            .content
            .iter()
            .rposition(|b| !matches!(b, ABlock::Thinking { .. } | ABlock::Redacted(_)));
    }
    msgs
}

fn push<'a>(msgs: &mut Vec<Msg<'a>>, side: Side, block: ABlock<'a>) {
    match msgs.last_mut() {
        Some(last) if last.side == side => last.content.push(block),
        _ => msgs.push(Msg {
            side,
            content: vec![block],
            mark: None,
        }),
    }
}

fn block<'a>(b: &Block<'a>) -> Option<ABlock<'a>> {
    Some(match *b {
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
        Block::Text("") => return None,
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
fn input(arguments: &Value) -> Cow<'_, Value> {
    Cow::Owned(match arguments {
        Value::Object(_) => return Cow::Borrowed(arguments),
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
