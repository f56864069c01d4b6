//! The live view of a turn: text to stdout as it streams, tool calls and progress to stderr
//! (a spinner only on a terminal), or the JSON events of `--json`.

use std::time::Duration;

use serde_json::Value;

use crate::agent::Event;
use crate::cli::{escape_controls, Ctx};
use crate::log::event::{LiveEvent, TurnDone};
use crate::log::{ChunkData, ChunkType};

/// Prints the live turn: text to stdout, the rest to stderr; or JSON events. On a terminal
/// text streams as it arrives and an abandoned attempt's text is marked as discarded; in a
/// pipe an attempt's text is printed once the attempt is known good, so stdout holds exactly
/// the answer the log holds.
pub(super) struct LiveView<'a> {
    pub(super) ctx: &'a mut Ctx,
    session: String,
    json: bool,
    /// Stream deltas as they come (stdout is a terminal).
    live: bool,
    spinner: Option<indicatif::ProgressBar>,
    text_open: bool,
    /// Whether this attempt has put text on the terminal.
    attempt_printed: bool,
    /// The text of this attempt's sealed chunks, not yet printed (pipes only).
    pending: String,
    /// The first failure to write stdout other than a closed pipe; the turn goes on.
    stdout_error: Option<std::io::Error>,
    /// `--output json`: stdout gets only the result object, so the stream is not printed.
    pub(super) mute: bool,
    /// What the turn ended with (the `turn-done` event), for the `result` object.
    pub(super) turn_done: Option<TurnDone>,
    /// The open block's progress, published for `ag-log tail -f` in another process.
    feed: Option<crate::live::Feed>,
}

impl<'a> LiveView<'a> {
    pub(super) fn new(
        ctx: &'a mut Ctx,
        session: &str,
        sandbox: &crate::sandbox::Settings,
    ) -> LiveView<'a> {
        let json = ctx.global.json;
        let live = std::io::IsTerminal::is_terminal(&std::io::stdout());
        let mut view = LiveView {
            ctx,
            session: session.to_string(),
            json,
            live,
            spinner: None,
            text_open: false,
            attempt_printed: false,
            pending: String::new(),
            stdout_error: None,
            mute: false,
            turn_done: None,
            feed: None,
        };
        view.feed = crate::live::Feed::start(&view.ctx.home, session).ok();
        if json {
            view.emit(
                LiveEvent::Session {
                    session: session.to_string(),
                    sandbox: sandbox.to_json(),
                }
                .to_value(),
            );
        }
        view
    }

    /// Write to stdout; a failure is kept (the first one) and never ends the turn.
    fn write(&mut self, s: &str) {
        if self.mute {
            return;
        }
        let r = self.ctx.out.raw(s).and_then(|()| self.ctx.out.flush());
        if let Err(e) = r {
            if e.kind() != std::io::ErrorKind::BrokenPipe && self.stdout_error.is_none() {
                self.stdout_error = Some(e);
            }
        }
    }

    fn stop_spinner(&mut self) {
        if let Some(s) = self.spinner.take() {
            s.finish_and_clear();
        }
    }

    pub(super) fn emit(&mut self, v: Value) {
        self.write(&format!("{v}\n"));
    }

    /// A line of the answer on stdout (a validated `--schema` answer).
    pub(super) fn emit_text(&mut self, text: &str) {
        self.write(&format!("{text}\n"));
    }

    pub(super) fn event(&mut self, ev: Event) {
        if let Event::TurnDone { .. } = &ev {
            if let Some(LiveEvent::TurnDone(done)) = self.json_event(ev.clone()) {
                self.turn_done = Some(done);
            }
        }
        if matches!(ev, Event::Open { .. } | Event::Delta { .. }) && self.feed.is_some() {
            if let Some(e) = self.json_event(ev.clone()) {
                if let Some(f) = &mut self.feed {
                    f.event(&e.to_value());
                }
            }
        }
        if self.json {
            if let Some(e) = self.json_event(ev) {
                self.emit(e.to_value());
            }
            return;
        }
        self.text_event(ev);
    }

    /// The `--json` event of an event (DESIGN §2 "Live events"); `None` for the spinner's.
    fn json_event(&self, ev: Event) -> Option<LiveEvent> {
        let session = self.session.clone();
        Some(match ev {
            Event::Open {
                id,
                turn,
                step,
                role,
                ty,
            } => LiveEvent::ChunkOpen {
                session,
                id,
                turn,
                step,
                role: role.as_str(),
                chunk_type: ty.as_str(),
            },
            Event::Delta { id, text, .. } => LiveEvent::ChunkDelta { session, id, text },
            Event::Seal(c) => LiveEvent::ChunkSeal {
                session,
                chunk: c.to_value(),
            },
            Event::Retry {
                attempt,
                wait,
                reason,
            } => LiveEvent::Retry {
                session,
                attempt,
                wait_ms: wait.as_millis() as u64,
                reason,
            },
            Event::Waiting | Event::AttemptEnd { .. } => return None,
            Event::Warning(message) => LiveEvent::Warning { session, message },
            Event::Compacted {
                trigger,
                tokens_before,
                tokens_after,
                model,
            } => LiveEvent::Compacted {
                session,
                trigger: trigger.as_str(),
                tokens_before,
                tokens_after,
                model,
            },
            Event::Pruned {
                cleared,
                tokens_before,
                tokens_after,
            } => LiveEvent::Pruned {
                session,
                cleared,
                tokens_before,
                tokens_after,
            },
            Event::CompactFailed { trigger, reason } => LiveEvent::CompactFailed {
                session,
                trigger: trigger.as_str(),
                reason,
            },
            Event::ToolProgress {
                name,
                progress,
                total,
                message,
            } => LiveEvent::ToolProgress {
                session,
                name,
                progress,
                total,
                message,
            },
            Event::TurnDone {
                turn,
                stop_reason,
                usage,
                cost_usd,
            } => LiveEvent::TurnDone(TurnDone {
                session,
                turn,
                stop_reason,
                usage,
                cost_usd,
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
                    ChunkType::Text if self.live => {
                        self.text_open = true;
                        self.attempt_printed = true;
                        self.write(&escape_controls(&text, true));
                    }
                    ChunkType::Thinking => self.ctx.out.stream_err(&text),
                    _ => {}
                }
            }
            Event::AttemptEnd { ok } => self.attempt_end(ok),
            Event::Seal(c) => {
                self.stop_spinner();
                self.seal(&c)
            }
            // The status line, on a terminal: what the tool's server says it is doing. Its
            // words are the server's: escaped.
            Event::ToolProgress {
                name,
                progress,
                total,
                message,
            } => {
                if self.spinner.is_none() {
                    self.spinner = self.ctx.out.spinner();
                    if let Some(s) = &self.spinner {
                        s.enable_steady_tick(Duration::from_millis(100));
                    }
                }
                if let Some(s) = &self.spinner {
                    s.set_message(progress_line(&name, progress, total, message.as_deref()));
                }
            }
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
            Event::Pruned {
                cleared,
                tokens_before,
                tokens_after,
            } => {
                self.stop_spinner();
                self.ctx.out.note(&format!(
                    "pruned {cleared} old tool result{} {} → {} tokens",
                    if cleared == 1 { "" } else { "s" },
                    crate::context::window::short_tokens(tokens_before),
                    crate::context::window::short_tokens(tokens_after)
                ));
            }
            Event::CompactFailed { trigger, reason } => {
                self.stop_spinner();
                self.ctx.out.note(&format!(
                    "could not compact ({}): {}; `ag-log compact {} --summary TEXT` compacts \
                     with a summary you write, and [context] compact_model names another \
                     summarizer",
                    trigger.as_str(),
                    escape_controls(&reason, false),
                    self.session
                ));
            }
        }
    }

    /// A chunk that was written: close the streamed text, or say what a tool did.
    fn seal(&mut self, c: &crate::log::Chunk) {
        match &c.data {
            ChunkData::Text { text } if c.role == crate::log::Role::Assistant => {
                if !self.live {
                    self.pending.push_str(&escape_controls(text, true));
                    self.pending.push('\n');
                } else if self.text_open {
                    self.write("\n");
                    self.text_open = false;
                }
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
            ChunkData::Peer {
                messages,
                omitted,
                roster,
                ..
            } => {
                self.stop_spinner();
                self.ctx
                    .out
                    .note(&peer_notice(messages, *omitted, roster.as_deref()));
            }
            _ => {}
        }
    }

    /// The end of an attempt: a good one's held-back text is printed, a broken one's is
    /// dropped (pipe) or marked as discarded (terminal).
    fn attempt_end(&mut self, ok: bool) {
        let pending = std::mem::take(&mut self.pending);
        if ok {
            self.write(&pending);
        } else if self.attempt_printed {
            self.stop_spinner();
            let nl = if self.text_open { "\n" } else { "" };
            self.text_open = false;
            let mark = self.ctx.out.paint(
                "2",
                "[discarded: the stream broke before the answer was complete]",
            );
            self.write(&format!("{nl}{mark}\n"));
        }
        self.attempt_printed = false;
    }

    /// The end of the turn. Text an interrupted attempt sealed stays in the log, so it is
    /// printed too. Returns the first failure to write stdout (other than a closed pipe).
    pub(super) fn close(&mut self) -> Option<std::io::Error> {
        self.stop_spinner();
        let pending = std::mem::take(&mut self.pending);
        self.write(&pending);
        if self.text_open && !self.json {
            self.write("\n");
            self.text_open = false;
        }
        self.stdout_error.take()
    }
}

/// One line on stderr when the agent heard something: who spoke (and whether to it alone),
/// receipts for its own lines, and who is here when that changed.
fn peer_notice(
    messages: &[crate::log::PeerMessage],
    omitted: u64,
    roster: Option<&[crate::log::PeerPresent]>,
) -> String {
    use crate::log::PeerKind;
    let who = |m: &crate::log::PeerMessage| match &m.handle {
        Some(h) => format!("{} [{h}]", m.from),
        None => m.from.clone(),
    };
    let mut parts = Vec::new();
    for m in messages {
        parts.push(match m.kind {
            PeerKind::Say => format!(
                "{}{}: {}",
                who(m),
                if m.to.is_some() { " (to you)" } else { "" },
                crate::text::clip_bytes(&crate::text::one_line(&m.text), 60)
            ),
            k => format!("{} by {}", k.as_str(), who(m)),
        });
    }
    if omitted > 0 {
        parts.push(format!("{omitted} more held back"));
    }
    if let Some(r) = roster {
        let names: Vec<String> = r
            .iter()
            .map(|p| format!("{} [{}]", p.name, p.handle))
            .collect();
        parts.push(if names.is_empty() {
            "nobody else here now".into()
        } else {
            format!("here: {}", names.join(", "))
        });
    }
    crate::cli::log::clip(&format!("peer: {}", parts.join("; ")), 240)
}

/// `mcp__git__index: 3/8 indexing src`: a tool's progress for the status line, the server's
/// words escaped.
fn progress_line(name: &str, progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let n = |x: f64| {
        if x.fract() == 0.0 && x.abs() < 1e15 {
            format!("{}", x as i64)
        } else {
            format!("{x:.1}")
        }
    };
    let mut line = match total {
        Some(t) => format!("{name}: {}/{}", n(progress), n(t)),
        None => format!("{name}: {}", n(progress)),
    };
    if let Some(m) = message.filter(|m| !m.trim().is_empty()) {
        line.push(' ');
        line.push_str(m.trim());
    }
    escape_controls(&line, false)
}
