//! The live view of a turn: text to stdout as it streams, tool calls and progress to stderr
//! (a spinner only on a terminal), or the JSON events of `--json`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::agent::Event;
use crate::cli::{escape_controls, Ctx};
use crate::log::{ChunkData, ChunkType};

/// Prints the live turn: text to stdout as it streams, the rest to stderr; or JSON events.
pub(super) struct LiveView<'a> {
    pub(super) ctx: &'a mut Ctx,
    session: String,
    json: bool,
    spinner: Option<indicatif::ProgressBar>,
    text_open: bool,
    wrote_text: bool,
}

impl<'a> LiveView<'a> {
    pub(super) fn new(
        ctx: &'a mut Ctx,
        session: &str,
        sandbox: &crate::sandbox::Settings,
    ) -> LiveView<'a> {
        let json = ctx.global.json;
        if json {
            let _ = ctx.out.line(
                &json!({"type": "session", "session": session, "sandbox": sandbox.to_json()})
                    .to_string(),
            );
        }
        LiveView {
            ctx,
            session: session.to_string(),
            json,
            spinner: None,
            text_open: false,
            wrote_text: false,
        }
    }

    fn stop_spinner(&mut self) {
        if let Some(s) = self.spinner.take() {
            s.finish_and_clear();
        }
    }

    fn emit(&mut self, v: Value) {
        let _ = self.ctx.out.line(&v.to_string());
        let _ = self.ctx.out.flush();
    }

    pub(super) fn event(&mut self, ev: Event) {
        if self.json {
            if let Some(v) = self.json_event(ev) {
                self.emit(v);
            }
            return;
        }
        self.text_event(ev);
    }

    /// The `--json` line of an event (DESIGN §2 "Live events"); `None` for the spinner's.
    fn json_event(&self, ev: Event) -> Option<Value> {
        Some(match ev {
            Event::Open {
                id,
                turn,
                step,
                role,
                ty,
            } => json!({
                "type": "chunk-open", "session": self.session, "id": id, "turn": turn,
                "step": step, "role": role.as_str(), "chunk_type": ty.as_str(),
            }),
            Event::Delta { id, text, .. } => {
                json!({"type": "chunk-delta", "session": self.session, "id": id, "text": text})
            }
            Event::Seal(c) => {
                json!({"type": "chunk-seal", "session": self.session, "chunk": c.to_value()})
            }
            Event::Retry {
                attempt,
                wait,
                reason,
            } => json!({
                "type": "retry", "session": self.session, "attempt": attempt,
                "wait_ms": wait.as_millis() as u64, "reason": reason,
            }),
            Event::Waiting => return None,
            Event::Warning(message) => json!({
                "type": "warning", "session": self.session, "message": message,
            }),
            Event::Compacted {
                trigger,
                tokens_before,
                tokens_after,
                model,
            } => json!({
                "type": "compacted", "session": self.session, "trigger": trigger.as_str(),
                "tokens_before": tokens_before, "tokens_after": tokens_after, "model": model,
            }),
            Event::CompactFailed { trigger, reason } => json!({
                "type": "compact-failed", "session": self.session,
                "trigger": trigger.as_str(), "reason": reason,
            }),
            Event::TurnDone {
                turn,
                stop_reason,
                usage,
            } => json!({
                "type": "turn-done", "session": self.session, "turn": turn, "stop_reason": stop_reason,
                "usage": {"input": usage.input, "output": usage.output, "cache_read": usage.cache_read, "cache_write": usage.cache_write},
            }),
        })
    }

    /// An event for people: text on stdout as it streams, the rest on stderr.
    fn text_event(&mut self, ev: Event) {
        match ev {
            Event::Waiting => {
                if self.spinner.is_none() {
                    self.spinner = self.ctx.out.spinner();
                    if let Some(s) = &self.spinner {
                        s.set_message("waiting for the model…");
                        s.enable_steady_tick(Duration::from_millis(100));
                    }
                }
            }
            Event::Warning(w) => {
                self.stop_spinner();
                self.ctx.out.warn(&w);
            }
            Event::Open { .. } => self.stop_spinner(),
            Event::Delta { ty, text, .. } => {
                self.stop_spinner();
                match ty {
                    ChunkType::Text => {
                        self.text_open = true;
                        self.wrote_text = true;
                        let _ = self.ctx.out.raw(&escape_controls(&text, true));
                        let _ = self.ctx.out.flush();
                    }
                    ChunkType::Thinking => self.ctx.out.stream_err(&text),
                    _ => {}
                }
            }
            Event::Seal(c) => self.seal(&c),
            Event::Retry {
                attempt,
                wait,
                reason,
            } => {
                self.stop_spinner();
                self.ctx.out.note(&format!(
                    "{reason}; attempt {attempt} in {:.1}s",
                    wait.as_secs_f64()
                ));
            }
            Event::TurnDone { .. } => self.stop_spinner(),
            Event::Compacted {
                tokens_before,
                tokens_after,
                ..
            } => {
                self.stop_spinner();
                self.ctx.out.note(&format!(
                    "compacted {} → {} tokens",
                    crate::context::window::short_tokens(tokens_before),
                    crate::context::window::short_tokens(tokens_after)
                ));
            }
            Event::CompactFailed { trigger, reason } => {
                self.stop_spinner();
                self.ctx.out.note(&format!(
                    "could not compact ({}): {}",
                    trigger.as_str(),
                    escape_controls(&reason, false)
                ));
            }
        }
    }

    /// A chunk that was written: close the streamed text, or say what a tool did.
    fn seal(&mut self, c: &crate::log::Chunk) {
        match &c.data {
            ChunkData::Text { .. } if c.role == crate::log::Role::Assistant && self.text_open => {
                let _ = self.ctx.out.raw("\n");
                let _ = self.ctx.out.flush();
                self.text_open = false;
            }
            ChunkData::Thinking { .. } => self.ctx.out.stream_err("\n"),
            ChunkData::ToolCall {
                name, arguments, ..
            } => {
                self.stop_spinner();
                self.ctx.out.note(&format!(
                    "→ {name} {}",
                    crate::cli::log::clip(&arguments.to_string(), 160)
                ));
            }
            ChunkData::ToolResult {
                name,
                is_error: true,
                result,
                ..
            } => {
                let r = result
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| result.to_string());
                self.ctx.out.note(&format!(
                    "  {name} failed: {}",
                    crate::cli::log::clip(&r, 160)
                ));
            }
            ChunkData::Error { message, .. } => self.ctx.out.note(&format!("error: {message}")),
            _ => {}
        }
    }

    pub(super) fn close(&mut self) {
        self.stop_spinner();
        if self.text_open && !self.json {
            let _ = self.ctx.out.raw("\n");
        }
        let _ = self.ctx.out.flush();
        let _ = self.wrote_text;
    }
}
