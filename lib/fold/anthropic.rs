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
mod tests {
    use serde_json::{json, Value};

    use crate::fold::testkit::Log;
    use crate::fold::{
        cache_breakpoints, fold, messages, strip_cache_control, Dialect, FoldOptions, ToolSpec,
        CONVERSATION_START, SYNTHETIC_RESULT,
    };

    fn msgs(log: &Log) -> Vec<Value> {
        messages(&log.chunks, Dialect::Anthropic)
    }

    /// The messages without cache markers, as one JSON array for exact comparison.
    fn plain(log: &Log) -> Value {
        strip_cache_control(&Value::Array(msgs(log)))
    }

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("{name} things"),
            input_schema: json!({"type": "object", "properties": {}}),
        }
    }

    #[test]
    fn body_keys_in_order_with_breakpoints_on_system_last_tool_and_tail() {
        let mut log = Log::new();
        log.user("hi");
        let opts = FoldOptions {
            model: Some("claude-x".into()),
            system: Some("You are terse.".into()),
            tools: vec![tool("read"), tool("grep")],
            max_tokens: None,
            thinking_budget: Some(2048),
            stream: true,
        };
        let body = fold(&log.chunks, Dialect::Anthropic, &opts);
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "model",
                "max_tokens",
                "system",
                "tools",
                "messages",
                "thinking",
                "stream"
            ]
        );
        assert_eq!(body["model"], "claude-x");
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["tools"],
            json!([
                {"name": "read", "description": "read things", "input_schema": {"type": "object", "properties": {}}},
                {"name": "grep", "description": "grep things", "input_schema": {"type": "object", "properties": {}},
                 "cache_control": {"type": "ephemeral"}}
            ])
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
        );
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(body["stream"], true);
        assert_eq!(cache_breakpoints(&body), 3);
    }

    #[test]
    fn minimal_body_omits_what_is_unset() {
        let body = fold(&[], Dialect::Anthropic, &FoldOptions::default());
        assert_eq!(body, json!({"max_tokens": 8192, "messages": []}));
        let opts = FoldOptions {
            system: Some(String::new()),
            max_tokens: Some(100),
            ..FoldOptions::default()
        };
        let body = fold(&[], Dialect::Anthropic, &opts);
        assert_eq!(body, json!({"max_tokens": 100, "messages": []}));
        // A default that could not hold the thinking budget is raised above it.
        let opts = FoldOptions {
            thinking_budget: Some(10_000),
            ..FoldOptions::default()
        };
        let body = fold(&[], Dialect::Anthropic, &opts);
        assert_eq!(body["max_tokens"], 18_192);
    }

    #[test]
    fn adjacent_user_side_content_merges_into_one_message() {
        let mut log = Log::new();
        log.user("first");
        log.system("notice", json!({"text": "x"}));
        log.peer(&[("0190aaaabbbb", "alice", "ping")], 0);
        log.user("second");
        assert_eq!(
            plain(&log),
            json!([{"role": "user", "content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": "<peer from=\"alice (0190aaaa)\" msg=\"0190aaaabbbb\">ping</peer>"},
                {"type": "text", "text": "second"},
            ]}])
        );
    }

    #[test]
    fn a_step_is_one_assistant_message_and_its_results_open_the_next_user_message() {
        let mut log = Log::new();
        log.user("go");
        log.step(1);
        log.thinking("plan", Some("sig1"));
        log.text("Looking.");
        log.call("a", "read", json!({"path": "x"}));
        log.call("b", "grep", json!({"q": "y"}));
        log.result("b", json!("B out"), true);
        log.result("a", json!(["A", 1]), false);
        log.peer(&[("0190ccccdddd", "bob", "fyi")], 2);
        log.user("also this");
        log.step(2);
        log.text("Done.");
        assert_eq!(
            plain(&log),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "plan", "signature": "sig1"},
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "x"}},
                    {"type": "tool_use", "id": "b", "name": "grep", "input": {"q": "y"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "[\"A\",1]"},
                    {"type": "tool_result", "tool_use_id": "b", "content": "B out", "is_error": true},
                    {"type": "text", "text": "<peer from=\"bob (0190cccc)\" msg=\"0190ccccdddd\">fyi</peer>\n(2 more: call peer_inbox)"},
                    {"type": "text", "text": "also this"},
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            ])
        );
    }

    #[test]
    fn thinking_signed_empty_is_kept_unsigned_dropped_redacted_replayed() {
        let mut log = Log::new();
        log.user("q");
        log.step(1);
        log.thinking("", Some("sig-empty"));
        log.thinking("no signature", None);
        log.thinking("empty signature", Some(""));
        log.redacted("opaque==");
        log.text("");
        log.text("answer");
        let m = plain(&log);
        assert_eq!(
            m[1]["content"],
            json!([
                {"type": "thinking", "thinking": "", "signature": "sig-empty"},
                {"type": "redacted_thinking", "data": "opaque=="},
                {"type": "text", "text": "answer"},
            ])
        );
    }

    #[test]
    fn a_step_with_nothing_to_send_leaves_no_message() {
        let mut log = Log::new();
        log.user("q");
        log.step(1);
        log.thinking("unsigned", None);
        log.text("");
        log.step(2);
        log.text("hello");
        let m = plain(&log);
        assert_eq!(m.as_array().unwrap().len(), 2);
        assert_eq!(m[1]["content"], json!([{"type": "text", "text": "hello"}]));
    }

    #[test]
    fn adjacent_assistant_steps_merge_and_a_leading_assistant_gets_a_start_message() {
        let mut log = Log::new();
        log.step(1);
        log.text("one");
        log.step(2);
        log.thinking("t", Some("s"));
        log.text("two");
        let m = plain(&log);
        assert_eq!(
            m,
            json!([
                {"role": "user", "content": [{"type": "text", "text": CONVERSATION_START}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "one"},
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "text", "text": "two"},
                ]},
            ])
        );
    }

    #[test]
    fn unmatched_call_gets_the_synthetic_result_where_the_real_one_would_go() {
        let mut log = Log::new();
        log.user("q");
        log.step(1);
        log.call("a", "read", json!({}));
        log.call("b", "read", json!({}));
        log.result("b", json!("B"), false);
        log.user("next");
        let m = plain(&log);
        assert_eq!(
            m[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "a", "content": SYNTHETIC_RESULT, "is_error": true},
                {"type": "tool_result", "tool_use_id": "b", "content": "B"},
                {"type": "text", "text": "next"},
            ])
        );
        // Even with nothing after it, the call is answered, so the request stays valid.
        log.chunks.truncate(3);
        let m = plain(&log);
        assert_eq!(m[2]["content"][0]["content"], SYNTHETIC_RESULT);
        assert_eq!(m[2]["content"][1]["content"], SYNTHETIC_RESULT);
    }

    #[test]
    fn orphan_result_is_dropped() {
        let mut log = Log::new();
        log.user("q");
        log.result("ghost", json!("boo"), false);
        log.step(1);
        log.text("a");
        assert_eq!(
            plain(&log),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "q"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
            ])
        );
    }

    #[test]
    fn abandoned_attempt_is_left_out() {
        let mut log = Log::new();
        log.user("q");
        log.step(1);
        let a = log.thinking("first try", Some("s1"));
        let b = log.call("x", "read", json!({}));
        log.error("connection reset");
        log.abandon(&[a, b]);
        log.thinking("second try", Some("s2"));
        log.call("y", "read", json!({}));
        log.result("y", json!("Y"), false);
        assert_eq!(
            plain(&log),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "q"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "second try", "signature": "s2"},
                    {"type": "tool_use", "id": "y", "name": "read", "input": {}},
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "y", "content": "Y"}]},
            ])
        );
    }

    #[test]
    fn tool_input_is_always_an_object() {
        let mut log = Log::new();
        log.user("q");
        log.step(1);
        log.call("a", "read", json!("{\"path\":\"x\"}"));
        log.call("b", "read", json!(""));
        log.call("c", "read", Value::Null);
        log.call("d", "read", json!([1, 2]));
        log.call("e", "read", json!("not json"));
        let m = plain(&log);
        let inputs: Vec<&Value> = m[1]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| &b["input"])
            .collect();
        assert_eq!(
            inputs,
            [
                &json!({"path": "x"}),
                &json!({}),
                &json!({}),
                &json!({"arguments": [1, 2]}),
                &json!({"arguments": "not json"}),
            ]
        );
    }

    #[test]
    fn rolling_breakpoint_sits_on_the_last_block_that_can_hold_it() {
        let mut log = Log::new();
        log.user("q");
        log.step(1);
        log.text("a");
        log.thinking("trailing", Some("s"));
        let m = msgs(&log);
        assert_eq!(cache_breakpoints(&Value::Array(m.clone())), 1);
        assert_eq!(
            m[1]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(m[1]["content"][1].get("cache_control").is_none());
        // Only the tail carries one; earlier messages are clean.
        log.step(2);
        log.call("k", "read", json!({}));
        log.result("k", json!("K"), false);
        let m = msgs(&log);
        assert_eq!(m.len(), 3);
        assert_eq!(cache_breakpoints(&Value::Array(m[..2].to_vec())), 0);
        assert_eq!(
            m[2]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
    }

    #[test]
    fn never_more_than_four_breakpoints() {
        let mut log = Log::new();
        for t in 0..5 {
            log.turn(&format!("t{t}"));
            log.user("q");
            log.step(1);
            log.call(&format!("c{t}"), "read", json!({}));
            log.result(&format!("c{t}"), json!("r"), false);
        }
        let opts = FoldOptions {
            system: Some("s".into()),
            tools: (0..10).map(|i| tool(&format!("t{i}"))).collect(),
            ..FoldOptions::default()
        };
        let body = fold(&log.chunks, Dialect::Anthropic, &opts);
        assert_eq!(cache_breakpoints(&body), 3);
    }
}
