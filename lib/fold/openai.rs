//! The OpenAI Chat Completions dialect (also what Ollama, llama.cpp, vLLM and friends speak):
//! the system prompt is the first message, every assistant `tool_calls` is followed at once by
//! one `tool` message per call, and thinking is not replayed.
//!
//! As for Anthropic, the body is small borrowed structs serialized with keys in a fixed order.

use std::borrow::Cow;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::{Block, FoldOptions, Item, Reply};

/// The request body, ready to serialize; `M` is the `messages` array (a `Vec<Msg>`, or
/// messages produced as the body is written), which starts with the system message.
pub(super) struct Body<'a, M> {
    opts: &'a FoldOptions,
    messages: M,
}

pub(super) fn body<M: Serialize>(opts: &FoldOptions, messages: M) -> Body<'_, M> {
    Body { opts, messages }
}

struct Tools<'a>(&'a [super::ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for t in self.0 {
            seq.serialize_element(&Tool(t))?;
        }
        seq.end()
    }
}

struct Tool<'a>(&'a super::ToolSpec);

impl Serialize for Tool<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("type", "function")?;
        m.serialize_entry("function", &ToolFunction(self.0))?;
        m.end()
    }
}

struct ToolFunction<'a>(&'a super::ToolSpec);

impl Serialize for ToolFunction<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("name", &self.0.name)?;
        m.serialize_entry("description", &self.0.description)?;
        m.serialize_entry("parameters", &self.0.input_schema)?;
        m.end()
    }
}

struct StreamOptions;

impl Serialize for StreamOptions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("include_usage", &true)?;
        m.end()
    }
}

/// Keys, in order: `model, messages, tools, max_tokens (or max_completion_tokens),
/// reasoning_effort, stream, stream_options`.
impl<M: Serialize> Serialize for Body<'_, M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let o = self.opts;
        let model = o.model.as_deref();
        let effort = o
            .thinking_budget
            .filter(|_| o.openai.reasoning(model))
            .map(super::OpenAiParams::effort);
        let len = usize::from(o.model.is_some())
            + 1
            + usize::from(!o.tools.is_empty())
            + usize::from(o.max_tokens.is_some())
            + usize::from(effort.is_some())
            + 2 * usize::from(o.stream);
        let mut m = s.serialize_map(Some(len))?;
        if let Some(model) = &o.model {
            m.serialize_entry("model", model)?;
        }
        m.serialize_entry("messages", &self.messages)?;
        if !o.tools.is_empty() {
            m.serialize_entry("tools", &Tools(&o.tools))?;
        }
        if let Some(max_tokens) = o.max_tokens {
            let key = if o.openai.completion_tokens(model) {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            m.serialize_entry(key, &max_tokens)?;
        }
        if let Some(effort) = effort {
            m.serialize_entry("reasoning_effort", effort)?;
        }
        if o.stream {
            m.serialize_entry("stream", &true)?;
            m.serialize_entry("stream_options", &StreamOptions)?;
        }
        m.end()
    }
}

/// One message, borrowed from the log where it can be.
pub(super) enum Msg<'a> {
    System(Cow<'a, str>),
    User(Cow<'a, str>),
    /// A user message with an image: content parts (text and `image_url` data URLs). Only
    /// a message that holds an image takes this form, so logs without images fold as before.
    Parts(Vec<Part<'a>>),
    Assistant {
        /// `null` when the step has only calls.
        content: Option<Cow<'a, str>>,
        calls: Vec<CallRef<'a>>,
    },
    Tool(Reply<'a>),
}

impl Serialize for Msg<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Msg::System(content) => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("role", "system")?;
                m.serialize_entry("content", content.as_ref())?;
                m.end()
            }
            Msg::User(content) => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("role", "user")?;
                m.serialize_entry("content", content.as_ref())?;
                m.end()
            }
            Msg::Parts(parts) => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("role", "user")?;
                m.serialize_entry("content", parts)?;
                m.end()
            }
            Msg::Assistant { content, calls } => {
                let mut m = s.serialize_map(Some(2 + usize::from(!calls.is_empty())))?;
                m.serialize_entry("role", "assistant")?;
                m.serialize_entry("content", &content.as_deref())?;
                // An empty tool_calls array is rejected, so the key is there only with calls.
                if !calls.is_empty() {
                    m.serialize_entry("tool_calls", &Calls(calls))?;
                }
                m.end()
            }
            Msg::Tool(r) => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("role", "tool")?;
                m.serialize_entry("tool_call_id", r.call_id.as_ref())?;
                m.serialize_entry("content", r.content.as_ref())?;
                m.end()
            }
        }
    }
}

/// One part of a user message with an image.
pub(super) enum Part<'a> {
    Text(Cow<'a, str>),
    Image {
        media_type: Cow<'a, str>,
        data: Cow<'a, str>,
    },
}

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        match self {
            Part::Text(text) => {
                m.serialize_entry("type", "text")?;
                m.serialize_entry("text", text.as_ref())?;
            }
            Part::Image { media_type, data } => {
                m.serialize_entry("type", "image_url")?;
                m.serialize_entry(
                    "image_url",
                    &DataUrl {
                        media_type: media_type.as_ref(),
                        data: data.as_ref(),
                    },
                )?;
            }
        }
        m.end()
    }
}

/// `{"url":"data:MEDIA;base64,DATA"}`, written without building the URL string first.
struct DataUrl<'a> {
    media_type: &'a str,
    data: &'a str,
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(
            "url",
            &format!("data:{};base64,{}", self.media_type, self.data),
        )?;
        m.end()
    }
}

/// `(id, name, arguments)`
type CallRef<'a> = (Cow<'a, str>, Cow<'a, str>, Cow<'a, Value>);

struct Calls<'s, 'a>(&'s [CallRef<'a>]);

impl Serialize for Calls<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (id, name, arguments) in self.0 {
            seq.serialize_element(&Call {
                id: id.as_ref(),
                name: name.as_ref(),
                arguments: arguments.as_ref(),
            })?;
        }
        seq.end()
    }
}

struct Call<'a> {
    id: &'a str,
    name: &'a str,
    arguments: &'a Value,
}

impl Serialize for Call<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("id", self.id)?;
        m.serialize_entry("type", "function")?;
        m.serialize_entry(
            "function",
            &Function {
                name: self.name,
                arguments: self.arguments,
            },
        )?;
        m.end()
    }
}

struct Function<'a> {
    name: &'a str,
    arguments: &'a Value,
}

impl Serialize for Function<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("name", self.name)?;
        // Arguments go over the wire as JSON text; text already stored that way is kept
        // verbatim.
        match self.arguments {
            Value::String(text) => m.serialize_entry("arguments", text)?,
            other => m.serialize_entry("arguments", &other.to_string())?,
        }
        m.end()
    }
}

/// The messages of `items`, all at once, after the system message of `opts`.
pub(super) fn build<'a>(
    items: impl IntoIterator<Item = Item<'a>>,
    opts: &'a FoldOptions,
) -> Vec<Msg<'a>> {
    let mut msgs = Vec::new();
    let mut b = Builder::new(opts, &mut |m| msgs.push(m));
    for item in items {
        b.item(item, &mut |m| msgs.push(m));
    }
    b.finish(&mut |m| msgs.push(m));
    msgs
}

/// Items in, messages out, one at a time: only consecutive user-side items join one
/// message, so only a user message is ever held back.
pub(super) struct Builder<'a> {
    /// The user message being gathered: `Msg::User` or `Msg::Parts`.
    user: Option<Msg<'a>>,
}

impl<'a> Builder<'a> {
    /// A builder whose first message, the system prompt when there is one, goes out now.
    pub(super) fn new(opts: &'a FoldOptions, out: &mut impl FnMut(Msg<'a>)) -> Builder<'a> {
        if let Some(system) = opts.system.as_deref().filter(|s| !s.is_empty()) {
            out(Msg::System(Cow::Borrowed(system)));
        }
        Builder { user: None }
    }

    pub(super) fn item(&mut self, item: Item<'a>, out: &mut impl FnMut(Msg<'a>)) {
        match item {
            Item::User(text) => match &mut self.user {
                // One string, parts joined by a blank line: local servers often accept only
                // string content. Only the tail message ever grows, so earlier bytes hold.
                Some(Msg::User(content)) => {
                    let content = content.to_mut();
                    content.push_str("\n\n");
                    content.push_str(&text);
                }
                Some(Msg::Parts(parts)) => parts.push(Part::Text(text)),
                _ => self.user = Some(Msg::User(text)),
            },
            // A message with an image is content parts; one without stays a string.
            Item::Image { media_type, data } => {
                let image = Part::Image { media_type, data };
                self.user = Some(match self.user.take() {
                    Some(Msg::Parts(mut parts)) => {
                        parts.push(image);
                        Msg::Parts(parts)
                    }
                    Some(Msg::User(text)) => Msg::Parts(vec![Part::Text(text), image]),
                    _ => Msg::Parts(vec![image]),
                });
            }
            Item::Step { blocks, replies } => {
                let mut content: Option<Cow<'a, str>> = None;
                let mut calls = Vec::new();
                for b in blocks {
                    match b {
                        Block::Text(t) if !t.is_empty() => match &mut content {
                            None => content = Some(t),
                            Some(c) => {
                                let c = c.to_mut();
                                c.push_str("\n\n");
                                c.push_str(&t);
                            }
                        },
                        Block::Call {
                            id,
                            name,
                            arguments,
                        } => calls.push((id, name, arguments)),
                        _ => {}
                    }
                }
                if content.is_none() && calls.is_empty() {
                    return;
                }
                self.finish_user(out);
                out(Msg::Assistant { content, calls });
                for r in replies {
                    out(Msg::Tool(r));
                }
            }
        }
    }

    pub(super) fn finish(mut self, out: &mut impl FnMut(Msg<'a>)) {
        self.finish_user(out);
    }

    fn finish_user(&mut self, out: &mut impl FnMut(Msg<'a>)) {
        if let Some(m) = self.user.take() {
            out(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::fold::testkit::Log;
    use crate::fold::{
        cache_breakpoints, fold, messages, Dialect, FoldOptions, ToolSpec, SYNTHETIC_RESULT,
    };

    fn msgs(log: &Log) -> Value {
        Value::Array(messages(&log.chunks, Dialect::OpenAi))
    }

    #[test]
    fn body_keys_in_order_with_system_first_and_function_tools() {
        let mut log = Log::new();
        log.user("hi");
        let opts = FoldOptions {
            model: Some("gpt-x".into()),
            system: Some("You are terse.".into()),
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "read a file".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: Some(500),
            thinking_budget: Some(1000),
            stream: true,
            openai: Default::default(),
        };
        let body = fold(&log.chunks, Dialect::OpenAi, &opts);
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
                "messages",
                "tools",
                "max_tokens",
                "stream",
                "stream_options"
            ]
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}])
        );
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {
                "name": "read", "description": "read a file", "parameters": {"type": "object"}}}])
        );
        assert_eq!(body["max_tokens"], 500);
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(cache_breakpoints(&body), 0);
        // Unset options leave no trace.
        let body = fold(&log.chunks, Dialect::OpenAi, &FoldOptions::default());
        assert_eq!(
            body,
            json!({"messages": [{"role": "user", "content": "hi"}]})
        );
    }

    #[test]
    fn a_step_becomes_assistant_tool_calls_then_one_tool_message_per_call() {
        let mut log = Log::new();
        log.user("go");
        log.step(1);
        log.thinking("private", Some("sig"));
        log.call("a", "read", json!({"path": "x", "n": 1}));
        log.call("b", "grep", json!("{\"q\": \"verbatim\"}"));
        log.call("c", "glob", json!({}));
        log.result("b", json!("B"), true);
        log.result("a", json!({"lines": 3}), false);
        log.user("and then");
        log.step(2);
        log.text("Done.");
        log.text("Really.");
        assert_eq!(
            msgs(&log),
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"x\",\"n\":1}"}},
                    {"id": "b", "type": "function", "function": {"name": "grep", "arguments": "{\"q\": \"verbatim\"}"}},
                    {"id": "c", "type": "function", "function": {"name": "glob", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "a", "content": "{\"lines\":3}"},
                {"role": "tool", "tool_call_id": "b", "content": "B"},
                {"role": "tool", "tool_call_id": "c", "content": SYNTHETIC_RESULT},
                {"role": "user", "content": "and then"},
                {"role": "assistant", "content": "Done.\n\nReally."},
            ])
        );
    }

    #[test]
    fn adjacent_user_side_content_joins_one_string() {
        let mut log = Log::new();
        log.user("first");
        log.error("boom");
        log.peer(&[("0190aaaabbbb", "alice", "ping")], 1);
        log.user("second");
        assert_eq!(
            msgs(&log),
            json!([{"role": "user", "content":
                "first\n\n<peer from=\"alice\" msg=\"0190aaaabbbb\">ping</peer>\n(1 more: call peer_inbox)\n\nsecond"}])
        );
    }

    #[test]
    fn text_with_calls_thinking_only_steps_and_orphans() {
        let mut log = Log::new();
        log.user("q");
        log.result("ghost", json!("boo"), false);
        log.step(1);
        log.thinking("only thinking", Some("s"));
        log.step(2);
        log.text("Checking.");
        log.call("a", "read", json!({}));
        log.result("a", json!("A"), false);
        assert_eq!(
            msgs(&log),
            json!([
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "A"},
            ])
        );
    }

    #[test]
    fn abandoned_attempt_is_left_out() {
        let mut log = Log::new();
        log.user("q");
        log.step(1);
        let a = log.text("half");
        let b = log.call("x", "read", json!({}));
        log.abandon(&[a, b]);
        log.text("whole");
        assert_eq!(
            msgs(&log),
            json!([
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "whole"},
            ])
        );
    }
}
