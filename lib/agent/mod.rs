//! The agent loop (DESIGN §4): a user chunk, then steps until the model stops calling tools,
//! then `turn_end`. Every step's request is the fold of the loop's view (the log from its
//! latest compaction on, kept across steps); chunks are written as they seal;
//! queued input joins at step boundaries; a broken attempt is retried and its sealed chunks
//! are named by an `attempt_abandoned` record so the fold leaves them out.

pub(crate) mod approve;
mod context;
pub(crate) mod instructions;
mod peer;
mod plan;
mod registry;
pub(crate) mod side;
mod step;
mod structured;
mod summon;
mod wait;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::config::Network;

use crate::log::{Chunk, ChunkData, NewChunk, Role, StopReason};
use crate::policy::{self, Policy, Verdict};
use crate::provider::Provider;
use crate::reduce::Usage;
use crate::store::{Session, SessionStatus, Store, StoreError, TurnEnd};
use crate::tools::{ToolCtx, ToolOutput};

pub(crate) use approve::{Approval, ApprovalMode, Approver};
pub(crate) use context::{Manual, View};
pub(crate) use plan::{narrow, prepare, PlanError, Prepared, SessionChoice, TurnPlan, TurnRequest};
pub(crate) use step::StepOutcome;
pub(crate) use structured::turn_answer;
pub(crate) use wait::{type_ahead, wait_for_queued, Waited};

/// What the loop reports as it goes; the CLI prints these.
#[derive(Debug, Clone)]
pub(crate) enum Event {
    /// A block started streaming (not yet in the log).
    Open {
        id: String,
        turn: String,
        step: i64,
        role: Role,
        ty: crate::log::ChunkType,
    },
    Delta {
        id: String,
        ty: crate::log::ChunkType,
        text: String,
    },
    /// A chunk was written to the log.
    Seal(Chunk),
    /// An attempt failed and will be retried after `wait`.
    Retry {
        attempt: u32,
        wait: Duration,
        reason: String,
    },
    /// An attempt at a step ended: `ok` when its stream finished, so its sealed chunks are
    /// the answer; otherwise they are abandoned (a printer holding them back drops them).
    AttemptEnd { ok: bool },
    /// Waiting for the provider (spinners start here).
    Waiting,
    /// Something went wrong beside the turn (a room that cannot be read, a receipt not
    /// written); the turn goes on.
    Warning(String),
    TurnDone {
        turn: String,
        stop_reason: StopReason,
        usage: Usage,
        /// What the turn cost at its model's price, when the model has one.
        cost_usd: Option<f64>,
    },
    /// The session was compacted (its record came as a `Seal` just before).
    Compacted {
        trigger: crate::fold::compaction::Trigger,
        tokens_before: u64,
        tokens_after: u64,
        /// The model that wrote the summary (`manual` when one was given).
        model: String,
    },
    /// Old tool results were cleared (the prune's record came as a `Seal` just before).
    Pruned {
        cleared: usize,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// A compaction was tried and did not happen; the log is as it was.
    CompactFailed {
        trigger: crate::fold::compaction::Trigger,
        reason: String,
    },
    /// An MCP tool's server reported progress on the running call.
    ToolProgress {
        name: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct TurnOptions {
    pub(crate) max_steps: u32,
    pub(crate) system: Option<String>,
    pub(crate) max_tokens: u64,
    /// Extended thinking (Anthropic): the budget in tokens, when asked for.
    pub(crate) thinking_budget: Option<u64>,
    pub(crate) network: Network,
    /// The tools offered to the model when they differ from the policy (a `--keep-cache` side
    /// chat offers its source's list, byte for byte); the guard still decides on `policy`.
    pub(crate) offered: Option<Vec<String>>,
    /// `--schema`: the final answer must satisfy it.
    pub(crate) schema: Option<Arc<crate::structured::AnswerSchema>>,
    /// How many times a failing answer is sent back to the model before the turn fails.
    pub(crate) schema_retries: u32,
    /// `--max-cost`: US dollars the turn may spend; it stops before a step that would pass it.
    pub(crate) max_cost: Option<f64>,
    /// `--context-window`: the window this run plans against, whatever the model's.
    pub(crate) context_window: Option<u64>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    Done {
        stop_reason: StopReason,
    },
    /// The newest message alone is more than the model's window (recorded as an error).
    TooLarge {
        message: String,
    },
    /// The provider stayed unavailable, or refused the request.
    Failed {
        message: String,
        status: Option<u16>,
        retryable: bool,
    },
    Interrupted,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot compact the session: {0}")]
    Compact(String),
    /// The summarizer's provider stayed unavailable: worth trying again later.
    #[error("cannot compact the session: {0}")]
    CompactUnavailable(String),
}

pub(crate) struct Agent<'a> {
    pub(crate) store: &'a Store,
    pub(crate) home: &'a crate::paths::Home,
    pub(crate) config: &'a crate::config::Config,
    pub(crate) session: Session,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) policy: Policy,
    pub(crate) tool_ctx: ToolCtx,
    pub(crate) opts: TurnOptions,
    pub(crate) interrupt: Arc<AtomicBool>,
    /// Warnings noted by the room code, reported as events by the loop.
    pub(crate) warnings: std::sync::Mutex<Vec<String>>,
    /// What the peer channel remembers between step boundaries.
    pub(crate) peer: std::sync::Mutex<peer::PeerState>,
    /// The session, held for this run: the end of a turn releases it, and dropping the agent
    /// releases it on every other path (`failed` after an error, `idle` otherwise).
    pub(crate) lease: crate::store::Lease<'a>,
    /// This run's participant in rooms: every room the loop and the peer tools reach.
    pub(crate) rooms: crate::room::Rooms,
    /// The MCP servers `mcp__SERVER__TOOL` calls go to, when any are configured.
    pub(crate) mcp: Option<std::sync::Arc<crate::mcp::McpServers>>,
    /// How calls that change something are decided this run (`--yes`: as `auto`).
    pub(crate) approval: std::sync::Mutex<Approval>,
    /// Who decides them when the mode is `ask`; none: they are denied.
    pub(crate) approver: Option<Arc<dyn Approver>>,
}

impl Agent<'_> {
    /// The status a turn leaves behind: `idle` for a chat; a spawned agent (subagent, user
    /// agent) is `done` once its turn ends, so `ag-summon retrieve` knows it finished.
    fn end_status(&self, stop_reason: StopReason) -> SessionStatus {
        let spawned = matches!(
            self.session.kind,
            crate::store::SessionKind::Subagent | crate::store::SessionKind::UserAgent
        );
        match stop_reason {
            StopReason::Error => SessionStatus::Failed,
            StopReason::Interrupted if spawned => SessionStatus::Cancelled,
            _ if spawned => SessionStatus::Done,
            _ => SessionStatus::Idle,
        }
    }

    /// Whether the model may run bash commands with no sandbox at all (`--sandbox off`).
    pub(crate) fn bash_unconfined(&self) -> bool {
        self.policy.allows(crate::policy::Tool::Bash.name())
            && self.tool_ctx.sandbox.mode == crate::sandbox::Mode::Off
    }

    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::SeqCst)
    }

    fn append(
        &self,
        chunks: Vec<NewChunk>,
        on: &mut dyn FnMut(Event),
    ) -> Result<Vec<Chunk>, AgentError> {
        let stored = self.store.append(&self.session.id, chunks)?;
        for c in &stored {
            on(Event::Seal(c.clone()));
        }
        Ok(stored)
    }

    /// Run one turn for `prompt`. The session must already be claimed by this process. The
    /// person's images (`user/image` payloads) come first, in the same append; a prompt that
    /// is only images writes no text chunk.
    pub(crate) fn run_turn(
        &self,
        prompt: &str,
        images: Vec<ChunkData>,
        on: &mut dyn FnMut(Event),
    ) -> Result<Outcome, AgentError> {
        let outcome = self.turn(prompt, images, on);
        if outcome.is_err() {
            self.lease.end_as(SessionStatus::Failed);
        }
        outcome
    }

    fn turn(
        &self,
        prompt: &str,
        images: Vec<ChunkData>,
        on: &mut dyn FnMut(Event),
    ) -> Result<Outcome, AgentError> {
        let mut t = Tally {
            started: Instant::now(),
            turn: crate::ids::new_id(),
            usage: Usage::default(),
            model: None,
        };
        self.clear_killed_run()?;
        // On rooms shared across machines, this session is here while the turn runs.
        let _here = self.be_here();
        self.open_turn(&t.turn, prompt, images, on)?;
        let mut step: i64 = 0;
        let mut retries = self.opts.schema_retries;
        let mut view = self.load_view()?;
        // What the last step cost: the estimate of what the next one will.
        let mut step_cost = 0.0;
        loop {
            if let Some(stop_reason) = self.at_boundary(&t.turn, step, on)? {
                return self.finish(&t, step, stop_reason, &view, on);
            }
            if self.over_budget(&t, step_cost) {
                return self.finish(&t, step, StopReason::MaxCost, &view, on);
            }
            step += 1;
            self.before_step(&mut view, &t.turn, step, on)?;
            let (end, calls) = match self.step(&t.turn, step, &mut view, on)? {
                StepOutcome::Completed { end, calls } => (end, calls),
                StepOutcome::Interrupted => {
                    return self.finish(&t, step, StopReason::Interrupted, &view, on);
                }
                StepOutcome::Failed {
                    message,
                    status,
                    retryable,
                } => {
                    return self.fail(&t, step, message, status, retryable, &view, on);
                }
                StepOutcome::TooLarge { message } => {
                    self.fail(&t, step, message.clone(), Some(400), false, &view, on)?;
                    return Ok(Outcome::TooLarge { message });
                }
            };
            let before = self.cost(&t).unwrap_or(0.0);
            t.usage.add(&end.usage);
            step_cost = self.cost(&t).unwrap_or(0.0) - before;
            t.model = end.model.clone().or(t.model);
            let last_stop = end.stop_reason;
            let (calls, answer) = match self.judge(&t.turn, step, calls, &mut retries, on)? {
                structured::Judged::Proceed { calls, answer } => (calls, answer),
                structured::Judged::Again => continue,
                structured::Judged::Invalid(message) => {
                    return self.fail(&t, step, message, None, false, &view, on)
                }
            };
            if calls.is_empty() {
                match self.end_answered(&t, step, last_stop, answer, &view, on)? {
                    Some(outcome) => return Ok(outcome),
                    None => continue,
                }
            }
            if !self.run_tools(&t.turn, step, &calls, on)? {
                return self.finish(&t, step, StopReason::Interrupted, &view, on);
            }
        }
    }

    /// What a run that was killed (kill -9) left behind: its tool's processes and its
    /// private temp dirs, which nothing else removes.
    fn clear_killed_run(&self) -> Result<(), AgentError> {
        if let Some((pgid, start)) = self.store.take_tool_group(&self.session.id)? {
            crate::proc::kill_leftover_group(pgid, start);
        }
        crate::sandbox::jail::sweep_stale_temp_dirs();
        Ok(())
    }

    /// The turn's opening chunks: the person's images, then the prompt's text (none when the
    /// prompt is only images).
    fn open_turn(
        &self,
        turn: &str,
        prompt: &str,
        images: Vec<ChunkData>,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), AgentError> {
        let text = (images.is_empty() || !prompt.is_empty()).then(|| ChunkData::text(prompt));
        let opening = images
            .into_iter()
            .chain(text)
            .map(|d| NewChunk::new(Role::User, d).in_turn(turn, 0))
            .collect();
        self.append(opening, on)?;
        Ok(())
    }

    /// A step boundary: input that arrived meanwhile joins the log here, the rooms are heard
    /// and their warnings reported. Returns why the turn stops here, if it does.
    fn at_boundary(
        &self,
        turn: &str,
        step: i64,
        on: &mut dyn FnMut(Event),
    ) -> Result<Option<StopReason>, AgentError> {
        for c in self.store.drain_queue(&self.session.id, turn, step)? {
            on(Event::Seal(c));
        }
        self.hear(turn, step, on)?;
        self.report_warnings(on);
        Ok(if self.interrupted() {
            Some(StopReason::Interrupted)
        } else if step >= self.opts.max_steps as i64 {
            Some(StopReason::MaxSteps)
        } else {
            None
        })
    }

    /// End a turn whose model called no more tools, with its answer (`--schema`), unless
    /// input was queued meanwhile: then that input is in the log and the turn goes on
    /// (`None`).
    fn end_answered(
        &self,
        t: &Tally,
        step: i64,
        stop_reason: StopReason,
        answer: Option<Value>,
        view: &View,
        on: &mut dyn FnMut(Event),
    ) -> Result<Option<Outcome>, AgentError> {
        let mut end_chunk = t.end_chunk(step, stop_reason, self.model_name(t), self.cost(t), view);
        structured::record(&mut end_chunk, answer);
        match self.lease.end_turn_or_drain(
            &t.turn,
            step,
            end_chunk,
            self.end_status(StopReason::EndTurn),
        )? {
            TurnEnd::Ended(c) => {
                on(Event::Seal(*c));
                on(Event::TurnDone {
                    turn: t.turn.clone(),
                    stop_reason,
                    usage: t.usage,
                    cost_usd: self.cost(t).map(crate::usage::round),
                });
                Ok(Some(Outcome::Done { stop_reason }))
            }
            TurnEnd::Drained(chunks) => {
                for c in chunks {
                    on(Event::Seal(c));
                }
                Ok(None)
            }
        }
    }

    /// The model named in `turn_end`: the one that last answered, else the provider's.
    fn model_name<'t>(&'t self, t: &'t Tally) -> &'t str {
        t.model.as_deref().unwrap_or(self.provider.name())
    }

    /// What the turn's steps cost so far at the model's price: the configuration's price for
    /// the model this session runs on, else the list price of the model that answered.
    fn cost(&self, t: &Tally) -> Option<f64> {
        let tokens = crate::usage::Tokens {
            input: t.usage.input,
            output: t.usage.output,
            cache_read: t.usage.cache_read,
            cache_write: t.usage.cache_write,
        };
        crate::usage::turn_cost(
            self.provider.name(),
            t.model.as_deref(),
            &tokens,
            Some(self.provider.dialect()),
            self.config,
        )
    }

    /// `--max-cost`: whether the next step would pass the budget, estimating it at what the
    /// last one cost.
    fn over_budget(&self, t: &Tally, next_step: f64) -> bool {
        match (self.opts.max_cost, self.cost(t)) {
            (Some(max), Some(spent)) => spent + next_step > max,
            _ => false,
        }
    }

    /// End the turn with an error chunk saying why.
    #[allow(clippy::too_many_arguments)]
    fn fail(
        &self,
        t: &Tally,
        step: i64,
        message: String,
        status: Option<u16>,
        retryable: bool,
        view: &View,
        on: &mut dyn FnMut(Event),
    ) -> Result<Outcome, AgentError> {
        self.append(
            vec![NewChunk::new(
                Role::System,
                ChunkData::Error {
                    message: message.clone(),
                    status,
                },
            )
            .in_turn(&t.turn, step)],
            on,
        )?;
        self.finish(t, step, StopReason::Error, view, on)?;
        Ok(Outcome::Failed {
            message,
            status,
            retryable,
        })
    }

    /// End the turn without waiting for the queue (error, interrupt, step limit).
    fn finish(
        &self,
        t: &Tally,
        step: i64,
        stop_reason: StopReason,
        view: &View,
        on: &mut dyn FnMut(Event),
    ) -> Result<Outcome, AgentError> {
        let end = t.end_chunk(step, stop_reason, self.model_name(t), self.cost(t), view);
        let status = self.end_status(stop_reason);
        // Input queued during this turn goes into the log before `turn_end` (DESIGN §2: the
        // loop drains the queue before it ends a turn), in the same transaction as the end
        // and the release, so none waits unseen in the queue behind an idle session.
        loop {
            match self
                .lease
                .end_turn_or_drain(&t.turn, step, end.clone(), status)?
            {
                TurnEnd::Ended(c) => {
                    on(Event::Seal(*c));
                    break;
                }
                TurnEnd::Drained(chunks) => {
                    for c in chunks {
                        on(Event::Seal(c));
                    }
                }
            }
        }
        on(Event::TurnDone {
            turn: t.turn.clone(),
            stop_reason,
            usage: t.usage,
            cost_usd: self.cost(t).map(crate::usage::round),
        });
        Ok(if stop_reason == StopReason::Interrupted {
            Outcome::Interrupted
        } else {
            Outcome::Done { stop_reason }
        })
    }

    /// How an OpenAI request names its limit and thinking for this model: the model's config,
    /// else its family.
    fn openai_params(&self) -> crate::fold::OpenAiParams {
        let m = self.config.models.get(self.provider.name());
        crate::fold::OpenAiParams {
            completion_tokens: m.and_then(|m| m.max_completion_tokens),
            reasoning: m.and_then(|m| m.reasoning),
        }
    }

    /// Run a step's tool calls through the guard, in order, writing each result as it
    /// finishes. Returns false when interrupted.
    fn run_tools(
        &self,
        turn: &str,
        step: i64,
        calls: &[(String, String, Value)],
        on: &mut dyn FnMut(Event),
    ) -> Result<bool, AgentError> {
        for (call_id, name, args) in calls {
            if self.interrupted() {
                return Ok(false);
            }
            let output = match policy::guard(&self.policy, name) {
                Verdict::Deny(reason) => ToolOutput {
                    text: reason,
                    is_error: true,
                },
                Verdict::Allow => match self.approve((turn, step), call_id, name, args, on)? {
                    Some(refusal) => ToolOutput {
                        text: refusal,
                        is_error: true,
                    },
                    None if self.interrupted() => return Ok(false),
                    None => match self.execute(name, args, on) {
                        Some(o) => o,
                        None => return Ok(false),
                    },
                },
            };
            let result = NewChunk::new(
                Role::Tool,
                ChunkData::ToolResult {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    // A key the tool came across (a `.env` file, a log) never reaches the store.
                    result: Value::String(self.tool_ctx.secrets.scrub(output.text)),
                    is_error: output.is_error,
                    synthetic: false,
                },
            )
            .in_turn(turn, step);
            self.append(vec![result], on)?;
            self.report_warnings(on);
        }
        Ok(true)
    }
}

/// What a running turn has gathered: its id, when it began, the tokens its steps used and
/// the model that last answered.
struct Tally {
    turn: String,
    started: Instant,
    usage: Usage,
    model: Option<String>,
}

impl Tally {
    /// The turn's `turn_end` record, at `step`, ended by `stop_reason`.
    fn end_chunk(
        &self,
        step: i64,
        stop_reason: StopReason,
        model: &str,
        cost: Option<f64>,
        view: &View,
    ) -> NewChunk {
        let mut fields = json!({
            "stop_reason": stop_reason.as_str(),
            "usage": {
                "input": self.usage.input,
                "output": self.usage.output,
                "cache_read": self.usage.cache_read,
                "cache_write": self.usage.cache_write,
            },
            "model": model,
            "duration_ms": self.started.elapsed().as_millis() as u64,
        });
        // What the turn cost at the model's price then, when it has one.
        if let Some(usd) = cost {
            fields["cost_usd"] = crate::usage::round(usd).into();
        }
        // The last request's prompt tokens: the session's context use.
        let context_input = context::context_input(view);
        if !context_input.is_null() {
            fields["context_input"] = context_input;
        }
        NewChunk::new(
            Role::System,
            ChunkData::system(crate::log::TURN_END, fields),
        )
        .in_turn(&self.turn, step)
    }
}
