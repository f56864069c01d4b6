//! One step: fold, stream from the provider with retries, write each block as it seals.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{Agent, AgentError, Event, View};
use crate::context::window;
use crate::fold::incremental::{self, Folded};
use crate::fold::FoldOptions;
use crate::log::{ChunkData, NewChunk, Role};
use crate::provider::Sizes;
use crate::provider::{backoff, AttemptError};
use crate::reduce::{ChunkOp, StepEnd};

pub(crate) enum StepOutcome {
    /// The model finished the step; `calls` are its tool calls in order.
    Completed {
        end: StepEnd,
        calls: Vec<(String, String, Value)>,
    },
    Failed {
        message: String,
        status: Option<u16>,
        retryable: bool,
    },
    /// The newest message alone does not fit the model's window: no compaction can help.
    TooLarge {
        message: String,
    },
    Interrupted,
}

enum Msg {
    Op(ChunkOp),
    Done(Result<StepEnd, AttemptError>),
}

impl Agent<'_> {
    pub(super) fn step(
        &self,
        turn: &str,
        step: i64,
        view: &mut View,
        on: &mut dyn FnMut(Event),
    ) -> Result<StepOutcome, AgentError> {
        let mut failures = 0u32;
        let mut compacted_for_overflow = false;
        loop {
            self.refresh(view)?;
            let covers = view.last_seq();
            // A request no earlier one measured is planned on the estimate alone: its count
            // calibrates the next such plan.
            let raw = view
                .measured_tokens()
                .is_none()
                .then(|| self.raw_estimate(view));
            let opts = self.fold_options();
            let (body, sizes) = self.request(view, &opts);
            let body = Arc::new(body);
            on(Event::Waiting);
            let attempted = self.attempt(turn, step, Arc::clone(&body), sizes, on);
            self.give_back(view, &opts, body);
            let (outcome, sealed) = attempted?;
            if !matches!(outcome, AttemptResult::Interrupted) {
                on(Event::AttemptEnd {
                    ok: matches!(outcome, AttemptResult::Ok(..)),
                });
            }
            match outcome {
                AttemptResult::Interrupted => return Ok(StepOutcome::Interrupted),
                AttemptResult::Ok(end, calls) => {
                    let tokens = window::prompt_tokens(self.provider.dialect(), &end.usage);
                    if tokens > 0 {
                        view.measure(covers, tokens);
                        if let Some(raw) = raw {
                            self.calibrate(tokens, raw)?;
                        }
                    }
                    return Ok(StepOutcome::Completed { end, calls });
                }
                AttemptResult::Err(err)
                    if sealed.is_empty()
                        && err.status.is_some_and(|s| (400..500).contains(&s))
                        && window::too_long(&err.message).is_some()
                        && self.newest_too_large(view, &err.message).is_some() =>
                {
                    let message = self
                        .newest_too_large(view, &err.message)
                        .unwrap_or_default();
                    return Ok(StepOutcome::TooLarge { message });
                }
                AttemptResult::Err(err)
                    if !compacted_for_overflow
                        && sealed.is_empty()
                        && err.status.is_some_and(|s| (400..500).contains(&s))
                        && window::too_long(&err.message).is_some() =>
                {
                    // Too long for the window: compact and try the same step once more. Not a
                    // failed attempt, so it is never retried as one.
                    compacted_for_overflow = true;
                    if !self.on_too_long(view, &err.message, turn, step, on)? {
                        return Ok(StepOutcome::Failed {
                            message: format!(
                                "the provider refused the request: {err}; compacting the session did not help"
                            ),
                            status: err.status,
                            retryable: false,
                        });
                    }
                }
                AttemptResult::Err(err) => {
                    failures += 1;
                    if let Some(stop) =
                        self.after_failure(&err, &sealed, failures, turn, step, on)?
                    {
                        return Ok(stop);
                    }
                }
            }
        }
    }

    /// What every request of the run carries besides the conversation.
    fn fold_options(&self) -> FoldOptions {
        FoldOptions {
            model: Some(self.provider.api_model().to_string()),
            system: self.opts.system.clone(),
            tools: self.offered_specs(),
            // The API wants room for the answer beyond the thinking budget.
            max_tokens: Some({
                let answer = self.answer_tokens();
                match self.opts.thinking_budget {
                    // Thinking counts in `max_tokens`, which stays within the model's output.
                    Some(b) if answer <= b => (b + answer).min(self.max_output().max(b + 1)),
                    _ => answer,
                }
            }),
            thinking_budget: self.opts.thinking_budget,
            stream: true,
            openai: self.openai_params(),
        }
    }

    /// The request for the next step: the fold of the view, built on the messages kept from
    /// the run's earlier requests ([`Folded`]), and the sizes of its messages.
    fn request(&self, view: &mut View, opts: &FoldOptions) -> (Value, Sizes) {
        let dialect = self.provider.dialect();
        let (messages, tally) = view.folded.messages(&view.chunks, dialect);
        let (body, sizes) = incremental::body(dialect, opts, messages, tally);
        (self.with_schema(body), sizes)
    }

    /// The request's body, back from its attempt: its messages are kept for the next one. A
    /// body still held by an attempt that was given up on is not waited for; the next
    /// request folds the whole view.
    fn give_back(&self, view: &mut View, opts: &FoldOptions, body: Arc<Value>) {
        match Arc::try_unwrap(body) {
            Ok(body) => view.folded.keep(incremental::messages_of(
                self.provider.dialect(),
                opts,
                body,
            )),
            Err(_) => view.folded = Folded::default(),
        }
    }

    /// When a "too long" refusal is the newest message's fault: it alone, with what every
    /// request carries (system prompt, tool definitions), is more than the window the provider
    /// stated. The estimates are scaled to the provider's own count of the refused request
    /// (when it gave one), so a tokenizer that counts differently does not mislead. What to
    /// say, then.
    fn newest_too_large(&self, view: &View, refusal: &str) -> Option<String> {
        let too_long = window::too_long(refusal)?;
        let window = too_long.window?;
        let newest: u64 = view
            .chunks
            .iter()
            .rev()
            .take_while(|c| c.role == crate::log::Role::User)
            .map(crate::context::cut::tokens)
            .sum();
        let fixed = self.fixed_tokens();
        let estimate = fixed + crate::context::cut::view_tokens(&view.chunks);
        let scale = match too_long.sent {
            Some(sent) if estimate > 0 => (sent as f64 / estimate as f64).clamp(0.1, 10.0),
            _ => 1.0,
        };
        let real = |n: u64| (n as f64 * scale).round() as u64;
        let needed = real(newest + fixed);
        (newest > 0 && needed > window).then(|| {
            format!(
                "the newest message is too large for the model's window: it is about {} tokens, \
                 and with the system prompt and tool definitions (about {}) a request needs \
                 about {needed} tokens, more than the {window} the provider allows",
                real(newest),
                real(fixed),
            )
        })
    }

    /// A failed attempt: its sealed chunks are named abandoned, then either the step ends
    /// (`Some`: not retryable, out of attempts, or told to wait too long) or, after the
    /// backoff, the caller tries again (`None`).
    fn after_failure(
        &self,
        err: &AttemptError,
        sealed: &[String],
        failures: u32,
        turn: &str,
        step: i64,
        on: &mut dyn FnMut(Event),
    ) -> Result<Option<StepOutcome>, AgentError> {
        let net = &self.opts.network;
        // What the broken attempt sealed stays in the log (it is append-only) but must not be
        // taken as the answer: name it so the fold skips it.
        if !sealed.is_empty() {
            let abandoned = NewChunk::new(
                Role::System,
                ChunkData::system(
                    "attempt_abandoned",
                    json!({"chunk_ids": sealed, "reason": err.to_string()}),
                ),
            )
            .in_turn(turn, step);
            self.append(vec![abandoned], on)?;
        }
        if let Some(message) = too_long_to_wait(err, net) {
            return Ok(Some(StepOutcome::Failed {
                message,
                status: err.status,
                retryable: true,
            }));
        }
        if !err.retryable || failures >= net.max_attempts.max(1) {
            let message = if err.retryable {
                let s = if failures == 1 { "" } else { "s" };
                format!("the provider stayed unavailable after {failures} attempt{s}: {err}")
            } else {
                format!("the provider refused the request: {err}")
            };
            return Ok(Some(StepOutcome::Failed {
                message,
                status: err.status,
                retryable: err.retryable,
            }));
        }
        let seed = crate::clock::now_ms() as u64 ^ std::process::id() as u64;
        let wait = backoff(
            failures,
            err.retry_after,
            Duration::from_millis(net.retry_base_ms),
            Duration::from_millis(net.retry_max_ms),
            seed,
        );
        on(Event::Retry {
            attempt: failures + 1,
            wait,
            reason: err.to_string(),
        });
        Ok((!self.sleep(wait)).then_some(StepOutcome::Interrupted))
    }

    /// Sleep unless interrupted; false when interrupted.
    fn sleep(&self, d: Duration) -> bool {
        let until = std::time::Instant::now() + d;
        while std::time::Instant::now() < until {
            if self.interrupted() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20).min(until - std::time::Instant::now()));
        }
        !self.interrupted()
    }

    /// One attempt on a worker thread; this thread writes chunks as they seal and watches
    /// for an interrupt. Returns the outcome and the ids of the chunks it wrote.
    fn attempt(
        &self,
        turn: &str,
        step: i64,
        body: Arc<Value>,
        sizes: Sizes,
        on: &mut dyn FnMut(Event),
    ) -> Result<(AttemptResult, Vec<String>), AgentError> {
        let (tx, rx) = mpsc::channel();
        let provider = self.provider.clone();
        std::thread::spawn(move || {
            let tx2 = tx.clone();
            let result = provider.attempt_sized(&body, &sizes, &mut |op| {
                let _ = tx2.send(Msg::Op(op));
            });
            // Let go of the body before saying so, so the loop can keep its messages.
            drop(body);
            let _ = tx.send(Msg::Done(result));
        });
        let mut blocks = Blocks::default();
        loop {
            let msg = match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    if self.interrupted() {
                        return Ok((AttemptResult::Interrupted, blocks.sealed));
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Ok((
                        AttemptResult::Err(AttemptError {
                            message: "the provider stopped unexpectedly".into(),
                            status: None,
                            retryable: true,
                            retry_after: None,
                        }),
                        blocks.sealed,
                    ))
                }
            };
            if self.interrupted() {
                return Ok((AttemptResult::Interrupted, blocks.sealed));
            }
            match msg {
                Msg::Op(op) => blocks.take(self, op, turn, step, on)?,
                Msg::Done(Ok(end)) => {
                    return Ok((AttemptResult::Ok(end, blocks.calls), blocks.sealed))
                }
                Msg::Done(Err(e)) => return Ok((AttemptResult::Err(e), blocks.sealed)),
            }
        }
    }
}

/// The blocks of one attempt: open ones (by the reducer's key, with the id their chunk will
/// have), the ids of those sealed and written, and the tool calls among them.
#[derive(Default)]
struct Blocks {
    open: Vec<(usize, String, crate::log::ChunkType)>,
    sealed: Vec<String>,
    calls: Vec<(String, String, Value)>,
}

impl Blocks {
    /// Announce an opened block, pass a delta on, or write a sealed block as its chunk.
    fn take(
        &mut self,
        agent: &Agent<'_>,
        op: ChunkOp,
        turn: &str,
        step: i64,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), AgentError> {
        match op {
            ChunkOp::Open { key, role, ty } => {
                let id = crate::ids::new_id();
                self.open.push((key, id.clone(), ty));
                on(Event::Open {
                    id,
                    turn: turn.to_string(),
                    step,
                    role,
                    ty,
                });
            }
            ChunkOp::Delta { key, text } => {
                if let Some((_, id, ty)) = self.open.iter().find(|(k, _, _)| *k == key) {
                    on(Event::Delta {
                        id: id.clone(),
                        ty: *ty,
                        text,
                    });
                }
            }
            ChunkOp::Seal { key, data } => {
                let id = self
                    .open
                    .iter()
                    .position(|(k, _, _)| *k == key)
                    .map(|i| self.open.remove(i).1)
                    .unwrap_or_else(crate::ids::new_id);
                if let ChunkData::ToolCall {
                    call_id,
                    name,
                    arguments,
                } = &data
                {
                    self.calls
                        .push((call_id.clone(), name.clone(), arguments.clone()));
                }
                let mut chunk = NewChunk::new(Role::Assistant, data).in_turn(turn, step);
                chunk.id = Some(id.clone());
                agent.append(vec![chunk], on)?;
                self.sealed.push(id);
            }
        }
        Ok(())
    }
}

/// A `Retry-After` beyond `retry_max_ms`: waiting that long would look like a hang, so the
/// turn ends at once saying when the provider will take requests again.
fn too_long_to_wait(err: &AttemptError, net: &crate::config::Network) -> Option<String> {
    let wait = err.retry_after.filter(|_| err.retryable)?;
    if wait <= Duration::from_millis(net.retry_max_ms) {
        return None;
    }
    let at = crate::clock::now_ms().saturating_add(wait.as_millis() as i64);
    let when = jiff::Timestamp::from_millisecond(at)
        .map(|t| t.strftime("%H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| "later".into());
    Some(format!(
        "the provider accepts requests again in {} s (at {when}), longer than \
         network.retry_max_ms ({} ms) allows waiting: {err}",
        wait.as_secs(),
        net.retry_max_ms
    ))
}

enum AttemptResult {
    Ok(StepEnd, Vec<(String, String, Value)>),
    Err(AttemptError),
    Interrupted,
}
