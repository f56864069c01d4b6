//! What a running turn shows in the chat: the answer as rendered Markdown, a line at a time as
//! it streams; each tool call as one line with its outcome; thinking folded to one dim line;
//! input the person typed ahead, once the turn took it; retries, compactions and warnings.

use std::collections::HashMap;

use serde_json::Value;

use super::markdown::Markdown;
use super::shared::Shared;
use crate::agent::Event;
use crate::cli::escape_controls;
use crate::log::{ChunkData, ChunkType, Role};

pub(super) struct TurnView<'a> {
    shared: &'a Shared,
    md: Markdown,
    /// The answer's text not yet ended by a newline.
    partial: String,
    /// Words of thinking seen in the open block.
    thinking: usize,
    /// Tool calls waiting for their result: id → the line that names them.
    calls: HashMap<String, String>,
    /// Lines prefixed this way (the side chat's answer).
    prefix: String,
    /// Held back rather than printed (the side chat prints its answer whole).
    pub(super) held: Option<Vec<String>>,
    /// What the turn used and cost, once it is done.
    pub(super) done: Option<(crate::reduce::Usage, Option<f64>)>,
}

impl<'a> TurnView<'a> {
    pub(super) fn new(shared: &'a Shared) -> TurnView<'a> {
        TurnView {
            shared,
            md: Markdown::new(shared.color),
            partial: String::new(),
            thinking: 0,
            calls: HashMap::new(),
            prefix: String::new(),
            held: None,
            done: None,
        }
    }

    /// A view that keeps its lines (prefixed) for the caller to print as one block.
    pub(super) fn held(shared: &'a Shared, prefix: String) -> TurnView<'a> {
        TurnView {
            prefix,
            held: Some(Vec::new()),
            ..TurnView::new(shared)
        }
    }

    fn out(&mut self, line: String) {
        let line = format!("{}{line}", self.prefix);
        match &mut self.held {
            Some(lines) => lines.push(line),
            None => self.shared.print(line),
        }
    }

    fn dim(&self, s: &str) -> String {
        self.shared.paint("2", s)
    }

    pub(super) fn event(&mut self, ev: Event) {
        match ev {
            Event::Delta {
                ty: ChunkType::Text,
                text,
                ..
            } => {
                self.partial.push_str(&text);
                while let Some(n) = self.partial.find('\n') {
                    let line: String = self.partial.drain(..=n).collect();
                    let shown = self.md.line(line.trim_end_matches('\n'));
                    self.out(shown);
                }
            }
            Event::Delta {
                ty: ChunkType::Thinking,
                text,
                ..
            } => self.thinking += text.split_whitespace().count(),
            Event::Seal(c) => self.seal(&c),
            Event::AttemptEnd { ok: false } => {
                self.flush();
                let l = self.dim("[discarded: the stream broke before the answer was complete]");
                self.out(l);
            }
            Event::Retry {
                attempt,
                wait,
                reason,
            } => {
                let l = format!(
                    "{}; attempt {attempt} in {:.1}s",
                    escape_controls(&reason, false),
                    wait.as_secs_f64()
                );
                let l = self.dim(&l);
                self.out(l);
            }
            Event::Warning(w) => {
                let l = format!(
                    "{} {}",
                    self.shared.paint("33", "warning:"),
                    escape_controls(&w, false)
                );
                self.out(l);
            }
            Event::Compacted {
                tokens_before,
                tokens_after,
                ..
            } => {
                let l = format!(
                    "compacted {} → {} tokens",
                    crate::context::window::short_tokens(tokens_before),
                    crate::context::window::short_tokens(tokens_after)
                );
                let l = self.dim(&l);
                self.out(l);
            }
            Event::CompactFailed { reason, .. } => {
                let l = format!("could not compact: {}", escape_controls(&reason, false));
                let l = self.dim(&l);
                self.out(l);
            }
            Event::ToolProgress {
                name,
                progress,
                total,
                message,
            } => {
                let t = total.map(|t| format!("/{t}")).unwrap_or_default();
                let m = message.map(|m| format!(" {m}")).unwrap_or_default();
                let l = escape_controls(&format!("  {name}: {progress}{t}{m}"), false);
                let l = self.dim(&l);
                self.out(l);
            }
            Event::TurnDone {
                usage, cost_usd, ..
            } => self.done = Some((usage, cost_usd)),
            Event::Open { .. }
            | Event::Delta { .. }
            | Event::AttemptEnd { .. }
            | Event::Waiting
            | Event::Pruned { .. } => {}
        }
    }

    /// The rest of the answer's last line.
    pub(super) fn flush(&mut self) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            let shown = self.md.line(&line);
            self.out(shown);
        }
    }

    fn seal(&mut self, c: &crate::log::Chunk) {
        match &c.data {
            ChunkData::Text { .. } if c.role == Role::Assistant => self.flush(),
            // Input the person typed ahead, taken by the turn at a step boundary.
            ChunkData::Text { text } if c.role == Role::User && c.step > 0 => {
                {
                    let mut s = self.shared.status();
                    s.queued = s.queued.saturating_sub(1);
                }
                let l = format!("› {}", escape_controls(&crate::text::one_line(text), false));
                let l = self.shared.paint("1", &l);
                self.out(l);
            }
            ChunkData::Thinking { .. } => {
                let words = std::mem::take(&mut self.thinking);
                let l = self.dim(&format!("✻ thought ({words} words; ag-log cat shows them)"));
                self.out(l);
            }
            ChunkData::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                self.flush();
                self.calls
                    .insert(call_id.clone(), call_line(name, arguments));
            }
            ChunkData::ToolResult {
                call_id,
                result,
                is_error,
                name,
                ..
            } => {
                let call = self
                    .calls
                    .remove(call_id)
                    .unwrap_or_else(|| escape_controls(name, false));
                let text = result
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| result.to_string());
                let l = match is_error {
                    false => format!(
                        "{} {call} {}",
                        self.shared.paint("32", "●"),
                        self.dim(&outcome(&text))
                    ),
                    true => format!(
                        "{} {call} {}",
                        self.shared.paint("31", "✗"),
                        self.shared.paint(
                            "31",
                            &escape_controls(
                                &crate::text::clip_chars(&crate::text::one_line(&text), 120),
                                false
                            )
                        )
                    ),
                };
                self.out(l);
            }
            ChunkData::System(m) if m.get("kind").and_then(Value::as_str) == Some("approval") => {
                let line = crate::export::system_line(m);
                let l = self.dim(&escape_controls(&line, false));
                self.out(l);
            }
            ChunkData::Peer { messages, .. } => {
                for m in messages {
                    let l = format!(
                        "✉ {}: {}",
                        escape_controls(&m.from, false),
                        escape_controls(
                            &crate::text::clip_chars(&crate::text::one_line(&m.text), 160),
                            false
                        )
                    );
                    let l = self.shared.paint("35", &l);
                    self.out(l);
                }
            }
            ChunkData::Error { message, .. } => {
                self.flush();
                let l = self
                    .shared
                    .paint("31", &format!("error: {}", escape_controls(message, false)));
                self.out(l);
            }
            _ => {}
        }
    }
}

/// `bash  cargo test`: a call as one line, its most telling argument first.
fn call_line(name: &str, args: &Value) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let what = s("command")
        .or(s("path"))
        .or(s("pattern"))
        .or(s("query"))
        .or(s("text"))
        .map(str::to_string)
        .unwrap_or_else(|| args.to_string());
    escape_controls(
        &format!(
            "{name}  {}",
            crate::text::clip_chars(&crate::text::one_line(&what), 100)
        ),
        false,
    )
}

/// A successful result in a few words: its line count and first line.
fn outcome(text: &str) -> String {
    let lines = text.lines().count();
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let first = escape_controls(&crate::text::clip_chars(first.trim(), 60), false);
    match lines {
        0 => "(no output)".into(),
        1 => format!("→ {first}"),
        n => format!("→ {first} (+{} lines)", n - 1),
    }
}
