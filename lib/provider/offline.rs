//! The offline models: `echo` repeats the person's last words, `script:FILE` plays a TOML
//! script of steps. Both need no network, stream ops the way a real provider does, and are
//! deterministic, so demos, tests and CI runs of the agent loop are reproducible.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{AttemptError, ModelError, Provider};
use crate::fold::Dialect;
use crate::log::{ChunkData, ChunkType, Role, StopReason};
use crate::reduce::{ChunkOp, StepEnd, Usage};

/// What echo says when the last user message holds no words of the person's.
pub const NOTHING_TO_ECHO: &str = "(nothing to echo)";

/// The `echo` model.
#[derive(Debug, Default)]
pub struct EchoProvider;

impl EchoProvider {
    pub fn new() -> Self {
        EchoProvider
    }
}

impl Provider for EchoProvider {
    fn name(&self) -> &str {
        "echo"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Anthropic
    }

    fn api_model(&self) -> &str {
        "echo"
    }

    fn attempt(
        &self,
        body: &Value,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        let answer = last_user_words(body).unwrap_or_else(|| NOTHING_TO_ECHO.to_owned());
        let mut out = Emitter::new(sink);
        out.text(&answer);
        Ok(step_end(StopReason::EndTurn, body, out.chars, "echo"))
    }
}

/// The person's text in the last user message: its text blocks, minus tool results and
/// wrapped peer messages, joined with newlines.
fn last_user_words(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let last = messages.iter().rev().find(|m| m["role"] == "user")?;
    let words: Vec<&str> = match &last["content"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
        _ => Vec::new(),
    };
    let words: Vec<&str> = words.into_iter().filter(|t| !is_peer_text(t)).collect();
    let joined = words.join("\n");
    (!joined.trim().is_empty()).then_some(joined)
}

/// Whether a user-side text block is a wrapped peer batch (see `fold::peer_text`), which
/// carries other sessions' words, not the person's.
fn is_peer_text(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with("<peer from=") {
        return true;
    }
    // A batch with every line left unread is only its "N more" note.
    t.strip_prefix('(')
        .and_then(|r| r.trim_end().strip_suffix(" more: call peer_inbox)"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A script of steps, one per model request.
#[derive(Debug)]
pub struct ScriptProvider {
    name: String,
    path: String,
    steps: Vec<Step>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    #[serde(default)]
    step: Vec<Step>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    thinking: Option<String>,
    text: Option<String>,
    #[serde(default)]
    delay_ms: u64,
    /// A gate: the step is not finished until this file exists (relative to the current
    /// directory), so a test or a demo can hold an agent mid-turn without guessing a delay.
    wait_for: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ScriptCall>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    id: Option<String>,
}

impl ScriptProvider {
    /// Reads and checks the script at `path` (relative to the current directory).
    pub fn load(path: &str) -> Result<ScriptProvider, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Script {
            path: path.into(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// A script from its text; `path` names it in messages.
    pub fn parse(path: &str, text: &str) -> Result<ScriptProvider, ModelError> {
        let bad = |message: String| ModelError::BadScript {
            path: path.into(),
            message,
        };
        let file: ScriptFile = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().to_owned();
            bad(match e.span() {
                Some(span) => {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                    format!("line {line}: {message}")
                }
                None => message,
            })
        })?;
        for (n, step) in file.step.iter().enumerate() {
            for (i, call) in step.tool_calls.iter().enumerate() {
                let at = format!("step {}, tool call {}", n + 1, i + 1);
                if call.name.trim().is_empty() {
                    return Err(bad(format!("{at}: the name is empty")));
                }
                if !matches!(call.arguments, None | Some(Value::Object(_))) {
                    return Err(bad(format!("{at}: arguments must be a table")));
                }
            }
        }
        Ok(ScriptProvider {
            name: format!("script:{path}"),
            path: path.into(),
            steps: file.step,
        })
    }

    /// How many steps the script has.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

impl Provider for ScriptProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn dialect(&self) -> Dialect {
        Dialect::Anthropic
    }

    fn api_model(&self) -> &str {
        "script"
    }

    fn attempt(
        &self,
        body: &Value,
        sink: &mut dyn FnMut(ChunkOp),
    ) -> Result<StepEnd, AttemptError> {
        // The request's place in the session: one assistant message per answered step, so a
        // retried attempt gets the same step again.
        let n = body["messages"].as_array().map_or(0, |ms| {
            ms.iter().filter(|m| m["role"] == "assistant").count()
        });
        let Some(step) = self.steps.get(n) else {
            return Err(AttemptError {
                message: format!(
                    "the script {} has {} step{}; request {} has none left to answer it",
                    self.path,
                    self.steps.len(),
                    if self.steps.len() == 1 { "" } else { "s" },
                    n + 1
                ),
                status: None,
                retryable: false,
                retry_after: None,
            });
        };
        let mut out = Emitter::new(sink);
        if let Some(thinking) = step.thinking.as_deref().filter(|t| !t.is_empty()) {
            out.thinking(thinking, "script");
        }
        if let Some(text) = step.text.as_deref().filter(|t| !t.is_empty()) {
            out.text(text);
        }
        for (i, call) in step.tool_calls.iter().enumerate() {
            let call_id = call.id.clone().unwrap_or_else(|| format!("call_{n}_{i}"));
            let arguments = call
                .arguments
                .clone()
                .unwrap_or_else(|| Value::Object(Map::new()));
            out.tool_call(call_id, &call.name, arguments);
        }
        if step.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(step.delay_ms));
        }
        if let Some(gate) = &step.wait_for {
            wait_for_gate(gate).map_err(|message| AttemptError {
                message: format!("the script {}: {message}", self.path),
                status: None,
                retryable: false,
                retry_after: None,
            })?;
        }
        let stop = if step.tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        Ok(step_end(stop, body, out.chars, "script"))
    }
}

/// Streams blocks as ops, numbering them like a reducer does, and counts what it said.
struct Emitter<'a> {
    sink: &'a mut dyn FnMut(ChunkOp),
    next_key: usize,
    chars: usize,
}

impl<'a> Emitter<'a> {
    fn new(sink: &'a mut dyn FnMut(ChunkOp)) -> Self {
        Emitter {
            sink,
            next_key: 0,
            chars: 0,
        }
    }

    fn open(&mut self, ty: ChunkType) -> usize {
        let key = self.next_key;
        self.next_key += 1;
        (self.sink)(ChunkOp::Open {
            key,
            role: Role::Assistant,
            ty,
        });
        key
    }

    fn deltas(&mut self, key: usize, text: &str) {
        for piece in word_groups(text) {
            (self.sink)(ChunkOp::Delta {
                key,
                text: piece.to_owned(),
            });
        }
        self.chars += text.chars().count();
    }

    fn text(&mut self, text: &str) {
        let key = self.open(ChunkType::Text);
        self.deltas(key, text);
        (self.sink)(ChunkOp::Seal {
            key,
            data: ChunkData::Text {
                text: text.to_owned(),
            },
        });
    }

    fn thinking(&mut self, text: &str, signature: &str) {
        let key = self.open(ChunkType::Thinking);
        self.deltas(key, text);
        let data = ChunkData::Thinking {
            text: text.to_owned(),
            signature: Some(signature.to_owned()),
            redacted: None,
        };
        (self.sink)(ChunkOp::Seal { key, data });
    }

    fn tool_call(&mut self, call_id: String, name: &str, arguments: Value) {
        let key = self.open(ChunkType::ToolCall);
        let json = arguments.to_string();
        self.chars += json.chars().count();
        (self.sink)(ChunkOp::Delta { key, text: json });
        let data = ChunkData::ToolCall {
            call_id,
            name: name.to_owned(),
            arguments,
        };
        (self.sink)(ChunkOp::Seal { key, data });
    }
}

/// `text` in up to four pieces cut after whitespace, so it streams like a model's output
/// and the pieces join back to exactly `text`.
fn word_groups(text: &str) -> Vec<&str> {
    let words: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    let per = words.len().div_ceil(4).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    for group in words.chunks(per) {
        let len: usize = group.iter().map(|w| w.len()).sum();
        out.push(&text[start..start + len]);
        start += len;
    }
    out
}

/// Deterministic usage: a quarter of the characters each way, the usual rough token size.
fn step_end(stop_reason: StopReason, body: &Value, output_chars: usize, model: &str) -> StepEnd {
    let input_chars = body["messages"].to_string().chars().count();
    StepEnd {
        stop_reason,
        usage: Usage {
            input: (input_chars / 4) as u64,
            output: (output_chars / 4) as u64,
            cache_read: 0,
            cache_write: 0,
        },
        model: Some(model.to_owned()),
    }
}

/// How long a `wait_for` gate stays closed before the step fails.
const GATE_LIMIT: Duration = Duration::from_secs(120);

/// Wait until `path` exists, polling; an error after `GATE_LIMIT`.
fn wait_for_gate(path: &str) -> Result<(), String> {
    let until = std::time::Instant::now() + GATE_LIMIT;
    while !std::path::Path::new(path).exists() {
        if std::time::Instant::now() >= until {
            return Err(format!(
                "the gate {path} did not open within {} s",
                GATE_LIMIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(p: &dyn Provider, body: &Value) -> (Vec<ChunkOp>, Result<StepEnd, AttemptError>) {
        let mut ops = Vec::new();
        let end = p.attempt(body, &mut |op| ops.push(op));
        (ops, end)
    }

    /// The sealed data of each block, in order.
    fn sealed(ops: &[ChunkOp]) -> Vec<ChunkData> {
        ops.iter()
            .filter_map(|op| match op {
                ChunkOp::Seal { data, .. } => Some(data.clone()),
                _ => None,
            })
            .collect()
    }

    /// Every block opens, streams and seals in order, and its deltas add up to what it seals.
    fn assert_well_formed(ops: &[ChunkOp]) {
        let mut key = 0;
        let mut i = 0;
        while i < ops.len() {
            assert!(
                matches!(ops[i], ChunkOp::Open { key: k, .. } if k == key),
                "{ops:?}"
            );
            i += 1;
            let mut streamed = String::new();
            while let ChunkOp::Delta { key: k, text } = &ops[i] {
                assert_eq!(*k, key);
                streamed.push_str(text);
                i += 1;
            }
            match &ops[i] {
                ChunkOp::Seal { key: k, data } => {
                    assert_eq!(*k, key);
                    match data {
                        ChunkData::Text { text } | ChunkData::Thinking { text, .. } => {
                            assert_eq!(&streamed, text)
                        }
                        ChunkData::ToolCall { arguments, .. } => {
                            assert_eq!(
                                serde_json::from_str::<Value>(&streamed).unwrap(),
                                *arguments
                            )
                        }
                        other => panic!("unexpected seal {other:?}"),
                    }
                }
                other => panic!("expected seal, got {other:?}"),
            }
            i += 1;
            key += 1;
        }
    }

    fn text(t: &str) -> ChunkData {
        ChunkData::Text { text: t.into() }
    }

    #[test]
    fn echo_repeats_the_last_user_words_and_skips_tool_results_and_peers() {
        let body = json!({"model": "echo", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "first question"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "file text"},
                {"type": "text", "text": "<peer from=\"bob (0190cccc)\" msg=\"0190ccccdddd\">fyi</peer>\n(2 more: call peer_inbox)"},
                {"type": "text", "text": "say this back", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "and this"},
            ]},
        ]});
        let (ops, end) = run(&EchoProvider::new(), &body);
        assert_well_formed(&ops);
        assert_eq!(sealed(&ops), vec![text("say this back\nand this")]);
        assert!(
            ops.iter()
                .filter(|op| matches!(op, ChunkOp::Delta { .. }))
                .count()
                >= 2
        );
        let end = end.unwrap();
        assert_eq!(end.stop_reason, StopReason::EndTurn);
        assert_eq!(
            end.usage.output,
            ("say this back\nand this".len() / 4) as u64
        );
        assert_eq!(
            end.usage.input,
            (body["messages"].to_string().len() / 4) as u64
        );
        // Deterministic.
        assert_eq!(run(&EchoProvider::new(), &body).1.unwrap(), end);
    }

    #[test]
    fn echo_with_nothing_of_the_persons_to_echo() {
        for body in [
            json!({"messages": []}),
            json!({}),
            json!({"messages": [
                {"role": "user", "content": [{"type": "text", "text": "earlier"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "x"},
                    {"type": "text", "text": "(3 more: call peer_inbox)"},
                ]},
            ]}),
        ] {
            let (ops, end) = run(&EchoProvider::new(), &body);
            assert_eq!(sealed(&ops), vec![text(NOTHING_TO_ECHO)], "{body}");
            assert_eq!(end.unwrap().stop_reason, StopReason::EndTurn);
        }
        let body = json!({"messages": [{"role": "user", "content": "plain string"}]});
        assert_eq!(
            sealed(&run(&EchoProvider::new(), &body).0),
            vec![text("plain string")]
        );
    }

    const SCRIPT: &str = r#"
# a two-step script
[[step]]
thinking = "I should look."
text = "Let me read the README file first."
[[step.tool_calls]]
name = "read"
arguments = { path = "README.md" }
[[step.tool_calls]]
name = "grep"
arguments = { pattern = "x", limit = 3 }
id = "mine"

[[step]]
text = "Done."
"#;

    fn request(assistant_messages: usize) -> Value {
        let mut messages =
            vec![json!({"role": "user", "content": [{"type": "text", "text": "go"}]})];
        for _ in 0..assistant_messages {
            messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": "…"}]}));
            messages.push(json!({"role": "user", "content": [{"type": "text", "text": "more"}]}));
        }
        json!({"model": "script", "messages": messages})
    }

    #[test]
    fn script_steps_follow_the_assistant_message_count() {
        let p = ScriptProvider::parse("s.toml", SCRIPT).unwrap();
        assert_eq!(p.name(), "script:s.toml");
        assert_eq!(p.len(), 2);

        let (ops, end) = run(&p, &request(0));
        assert_well_formed(&ops);
        assert_eq!(
            sealed(&ops),
            vec![
                ChunkData::Thinking {
                    text: "I should look.".into(),
                    signature: Some("script".into()),
                    redacted: None
                },
                text("Let me read the README file first."),
                ChunkData::ToolCall {
                    call_id: "call_0_0".into(),
                    name: "read".into(),
                    arguments: json!({"path": "README.md"})
                },
                ChunkData::ToolCall {
                    call_id: "mine".into(),
                    name: "grep".into(),
                    arguments: json!({"pattern": "x", "limit": 3})
                },
            ]
        );
        assert_eq!(end.unwrap().stop_reason, StopReason::ToolUse);

        let (ops, end) = run(&p, &request(1));
        assert_eq!(sealed(&ops), vec![text("Done.")]);
        assert_eq!(end.unwrap().stop_reason, StopReason::EndTurn);

        // A retry of the same request gets the same step.
        assert_eq!(sealed(&run(&p, &request(1)).0), vec![text("Done.")]);

        let (ops, end) = run(&p, &request(2));
        assert!(ops.is_empty());
        let e = end.unwrap_err();
        assert!(!e.retryable);
        assert!(
            e.message.contains("s.toml") && e.message.contains("2 steps"),
            "{}",
            e.message
        );
    }

    #[test]
    fn script_errors_name_the_file_and_line() {
        let e = ScriptProvider::parse("bad.toml", "[[step]]\ntext = \"a\"\ncolour = \"red\"\n")
            .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ModelError::BadScript { .. }));
        assert!(
            msg.contains("bad.toml") && msg.contains("line 3") && msg.contains("colour"),
            "{msg}"
        );

        let e = ScriptProvider::parse(
            "t.toml",
            "[[step]]\n[[step.tool_calls]]\nname = \"read\"\narguments = 3\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("step 1, tool call 1"), "{e}");

        let e = ScriptProvider::parse("t.toml", "[[step]]\ntext = \n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");

        let e = ScriptProvider::load("/nonexistent/ag-script.toml").unwrap_err();
        assert!(matches!(e, ModelError::Script { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/ag-script.toml"));
    }

    #[test]
    fn script_delay_holds_the_stop() {
        let p =
            ScriptProvider::parse("d.toml", "[[step]]\ntext = \"slow\"\ndelay_ms = 150\n").unwrap();
        let t = std::time::Instant::now();
        let (ops, end) = run(&p, &request(0));
        assert!(t.elapsed() >= Duration::from_millis(150));
        assert_eq!(sealed(&ops), vec![text("slow")]);
        assert_eq!(end.unwrap().stop_reason, StopReason::EndTurn);
    }

    #[test]
    fn word_groups_rejoin_exactly() {
        for t in [
            "one",
            "a b",
            "Let me read the README file first.",
            "  lead\nand trail  ",
            "",
        ] {
            let g = word_groups(t);
            assert_eq!(g.concat(), t);
            assert!(g.len() <= 4);
        }
        assert!(word_groups("a b c d e f g h").len() >= 2);
    }
}
