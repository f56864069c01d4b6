//! The loop's view of its context: the fold's chunks from the latest compaction on, kept
//! across steps and extended with what each step adds (a step never re-reads the log), the
//! last request's measured prompt tokens, and the three compaction triggers — auto (the
//! estimate passes `compact_at` of the window; a prune of old tool results is tried first,
//! and when it is enough no summary is written), overflow (the provider said "too long") and
//! manual (`ag-prompt --compact`, or `ag-log compact` queued while the session ran).

use serde_json::Value;

use super::{Agent, AgentError, Event};
use crate::context::{self, cut, window, CompactError, Compacted, Summarizer, SummarySource};
use crate::fold::compaction::{self, Trigger};

/// Automatic compactions that may fail in a row before a session stops trying them.
const BREAKER: u32 = 2;

/// The scales a provider's count may have against the estimate: a count outside them is
/// taken as a provider that does not count what it is sent, not as a tokenizer.
const MIN_SCALE: f64 = 0.1;
const MAX_SCALE: f64 = 10.0;

/// `tokens` (an estimate) as the provider counts them.
fn scaled(tokens: u64, scale: f64) -> u64 {
    (tokens as f64 * scale).round() as u64
}
use crate::fold::prune;
use crate::log::Chunk;

/// The fold's chunks of the session, from its latest compaction on.
#[derive(Debug, Default)]
pub(crate) struct View {
    pub(crate) chunks: Vec<Chunk>,
    /// The highest seq read so far.
    last_seq: i64,
    /// `(seq, tokens)`: the prompt tokens of a request built from the chunks up to `seq`.
    measured: Option<(i64, u64)>,
    /// An automatic compaction failed in this turn: do not try again before the next turn.
    auto_failed: bool,
    /// The messages of the run's earlier requests that later chunks cannot change.
    pub(crate) folded: crate::fold::incremental::Folded,
}

impl View {
    /// The highest seq of the view: what a request built now covers.
    pub(crate) fn last_seq(&self) -> i64 {
        self.last_seq
    }

    /// Record what a request covering chunks up to `seq` measured.
    pub(crate) fn measure(&mut self, seq: i64, tokens: u64) {
        self.measured = Some((seq, tokens));
    }

    /// The last request's measured prompt tokens, if a request of this view measured them.
    pub(crate) fn measured_tokens(&self) -> Option<u64> {
        self.measured.map(|(_, t)| t)
    }
}

/// What a manual compaction did.
#[derive(Debug)]
pub(crate) enum Manual {
    Done,
    Nothing,
}

impl Agent<'_> {
    /// Read the view from the latest compaction on.
    pub(super) fn load_view(&self) -> Result<View, AgentError> {
        let chunks = self.store.load_context_view(&self.session)?;
        let last_seq = self.store.view_len(&self.session)?;
        let compacted = compaction::latest(&chunks).map_or(0, |(_, i)| {
            chunks[i..]
                .iter()
                .find(|c| compaction::of_chunk(c).is_some())
                .map_or(0, |c| c.seq)
        });
        let pruned = chunks
            .iter()
            .rev()
            .find(|c| c.data.system_kind() == Some(prune::KIND))
            .map_or(0, |c| c.seq);
        let since = compacted.max(pruned);
        // A measurement from before the latest compaction or prune says nothing about the
        // view now.
        let measured = self
            .store
            .last_context_input(&self.session)?
            .filter(|(seq, _)| *seq > since);
        Ok(View {
            chunks,
            last_seq,
            measured,
            auto_failed: false,
            folded: Default::default(),
        })
    }

    /// Add what was written since the view was last read; a new compaction reloads it.
    pub(super) fn refresh(&self, view: &mut View) -> Result<(), AgentError> {
        let new = self.store.fold_view_after(&self.session, view.last_seq)?;
        if new.iter().any(|c| compaction::of_chunk(c).is_some()) {
            let auto_failed = view.auto_failed;
            *view = self.load_view()?;
            view.auto_failed = auto_failed;
            return Ok(());
        }
        if let Some(last) = new.last() {
            view.last_seq = view.last_seq.max(last.seq);
        }
        // A prune (by hand, from another process) makes the last measurement too high.
        if new
            .iter()
            .any(|c| c.data.system_kind() == Some(prune::KIND))
        {
            view.measured = None;
        }
        view.chunks.extend(new);
        Ok(())
    }

    /// The model's window, when it has one: offline models have none unless configured.
    pub(super) fn window(&self) -> Option<window::Window> {
        let model = self.provider.name();
        // A window given for the run (`--context-window`, a script's own) wins.
        if let Some(w) = self.opts.context_window.or(self.provider.context_window()) {
            let mut given = context::lookup(model, self.config, None);
            given.context_window = w;
            given.source = window::Source::Given;
            return Some(given);
        }
        if window::is_offline(model) && !self.config.models.contains_key(model) {
            return None;
        }
        let key = window::learned_key(self.provider.as_ref());
        let learned = self.store.learned_window(&key).ok().flatten();
        Some(context::lookup(model, self.config, learned))
    }

    /// The prompt tokens the next request will take, about, as the provider counts: the last
    /// measurement plus what was added since, else an estimate of the whole view with its
    /// system prompt and tools. Estimates are scaled by how the provider counted before
    /// ([`Self::scale`]).
    pub(super) fn estimate(&self, view: &View) -> u64 {
        let scale = self.scale();
        match view.measured {
            Some((seq, tokens)) => {
                let added = view
                    .chunks
                    .iter()
                    .rev()
                    .take_while(|c| c.seq > seq)
                    .map(cut::tokens)
                    .sum::<u64>();
                tokens + scaled(added, scale)
            }
            None => scaled(self.raw_estimate(view), scale),
        }
    }

    /// The estimate of a request built from the whole view, unscaled.
    pub(super) fn raw_estimate(&self, view: &View) -> u64 {
        self.fixed_tokens() + cut::view_tokens(&view.chunks)
    }

    /// How this model at this endpoint counts a prompt against the estimate (its count over
    /// the estimate), as measured on an earlier request; 1 until one was. Plans take it only
    /// when it is above 1: a provider that counts more than estimated (code, JSON, CJK text
    /// in its tokenizer) makes every plan larger, but one that counts less may be skipping
    /// something (a proxy or mock that ignores tool definitions), and a plan never trusts it
    /// to let a request grow past the estimate.
    pub(super) fn scale(&self) -> f64 {
        if window::is_offline(self.provider.name()) {
            return 1.0;
        }
        let key = window::learned_key(self.provider.as_ref());
        self.store
            .model_scale(&key)
            .ok()
            .flatten()
            .map_or(1.0, |s| s.max(1.0))
    }

    /// Learn the scale from a provider's count of a request whose unscaled estimate was `raw`.
    /// Small requests say little (a few framing tokens weigh too much): below 200 estimated
    /// tokens nothing is learned.
    pub(super) fn calibrate(&self, counted: u64, raw: u64) -> Result<(), AgentError> {
        if raw < 200 || counted == 0 || window::is_offline(self.provider.name()) {
            return Ok(());
        }
        let scale = (counted as f64 / raw as f64).clamp(MIN_SCALE, MAX_SCALE);
        let key = window::learned_key(self.provider.as_ref());
        let before = self.store.model_scale(&key)?;
        // Written only when it moved: a step does not write the store for nothing.
        if before.is_none_or(|b| (b - scale).abs() > 0.02 * b) {
            self.store.set_model_scale(&key, scale)?;
        }
        Ok(())
    }

    /// What every request carries besides the conversation, about: the system prompt (with
    /// the project's instructions) and every tool's name, description and schema.
    pub(super) fn fixed_tokens(&self) -> u64 {
        self.opts.system.as_deref().map_or(0, cut::tokens_of_text)
            + self
                .tool_specs()
                .iter()
                .map(context::brief::spec_tokens)
                .sum::<u64>()
    }

    /// What an answer may take: `[agent] max_tokens`, and on a window that is known (not the
    /// default guess) never more than a quarter of it, the reserve the plans keep: a 2,048-token
    /// local model is not asked for 8,192 tokens of answer.
    pub(super) fn answer_tokens(&self) -> u64 {
        let asked = self.opts.max_tokens.min(self.max_output());
        match self.window() {
            Some(w) if w.source != window::Source::Default => {
                asked.min(w.context_window / 4).max(1)
            }
            _ => asked,
        }
    }

    /// The most a model writes in one answer, when its `[models]` entry or the built-in table
    /// says (Claude 3 Haiku 4,096, the 3.5 family 8,192: the API refuses a `max_tokens` above
    /// it); unbounded otherwise.
    pub(super) fn max_output(&self) -> u64 {
        let model = self.provider.name();
        let name = model.split_once('/').map_or(model, |(_, n)| n);
        self.config
            .models
            .get(model)
            .and_then(|m| m.max_output)
            .or(window::builtin(name).map(|(_, o)| o))
            .unwrap_or(u64::MAX)
    }

    /// How much of the conversation a compaction keeps verbatim: `[context] keep_tokens` at
    /// most, and never more than [`window::KEEP_SHARE`] of what the window leaves after the
    /// fixed part and the room kept for the answer, so that on a small window the kept part
    /// itself cannot overflow and the part before it is summarized.
    pub(super) fn keep_budget(&self) -> u64 {
        let configured = self.config.context.keep_tokens;
        let Some(w) = self.window() else {
            return configured;
        };
        window::keep_budget_scaled(
            &w,
            self.fixed_tokens(),
            self.scale(),
            self.opts.max_tokens,
            configured,
        )
    }

    /// Before a step: take queued compactions, then compact when the estimate passes
    /// `compact_at` of the window.
    pub(super) fn before_step(
        &self,
        view: &mut View,
        turn: &str,
        step: i64,
        on: &mut dyn FnMut(Event),
    ) -> Result<(), AgentError> {
        self.refresh(view)?;
        for summary in self.store.take_queued_compactions(&self.session.id)? {
            self.run_compaction(view, Trigger::Manual, summary, None, Some((turn, step)), on)?;
        }
        let Some(w) = self.window() else {
            return Ok(());
        };
        let mut est = self.estimate(view);
        // `compact_at` of the window, and never so late that the answer's reserve is gone.
        let reserve = self.opts.max_tokens.min(w.context_window / 4);
        let limit = ((w.context_window as f64 * self.config.context.compact_at.clamp(0.05, 1.0))
            as u64)
            .min(w.context_window.saturating_sub(reserve));
        if est <= limit || view.auto_failed {
            return Ok(());
        }
        // The cheap reduction first: where a compaction would happen, and only there.
        if let Some(after) = self.run_prune(view, est, (turn, step), on)? {
            if after <= limit {
                return Ok(());
            }
            est = after;
        }
        if !self.run_compaction(view, Trigger::Auto, None, Some(est), Some((turn, step)), on)? {
            view.auto_failed = true;
        }
        Ok(())
    }

    /// Clear old tool results; the estimate after it, or `None` when nothing would shrink.
    fn run_prune(
        &self,
        view: &mut View,
        est: u64,
        at: (&str, i64),
        on: &mut dyn FnMut(Event),
    ) -> Result<Option<u64>, AgentError> {
        let keep = self.config.context.keep_tool_results;
        let Some(done) =
            context::prune::prune(self.store, &self.session, &view.chunks, keep, Some(at))?
        else {
            return Ok(None);
        };
        let after = est.saturating_sub(done.tokens_saved);
        on(Event::Seal(done.chunk.clone()));
        on(Event::Pruned {
            cleared: done.prune.cleared.len(),
            tokens_before: est,
            tokens_after: after,
        });
        self.refresh(view)?;
        // The measurement stands, less what the placeholders save, until a request measures.
        view.measure(view.last_seq, after);
        Ok(Some(after))
    }

    /// After a "too long" refusal: learn the window it states, then compact. True when the
    /// step may be tried again.
    pub(super) fn on_too_long(
        &self,
        view: &mut View,
        message: &str,
        turn: &str,
        step: i64,
        on: &mut dyn FnMut(Event),
    ) -> Result<bool, AgentError> {
        let said = window::too_long(message);
        if let Some(w) = said.and_then(|t| t.window) {
            self.store
                .learn_window(&window::learned_key(self.provider.as_ref()), w)?;
        }
        self.refresh(view)?;
        if let Some(sent) = said.and_then(|t| t.sent) {
            self.calibrate(sent, self.raw_estimate(view))?;
        }
        let before = said
            .and_then(|t| t.sent)
            .unwrap_or_else(|| self.estimate(view));
        self.run_compaction(
            view,
            Trigger::Overflow,
            None,
            Some(before),
            Some((turn, step)),
            on,
        )
    }

    /// `ag-prompt --compact`: compact now, with the model, outside a turn.
    pub(crate) fn compact_now(&self, on: &mut dyn FnMut(Event)) -> Result<Manual, AgentError> {
        let mut view = self.load_view()?;
        let est = self.estimate(&view);
        let req = self.compaction_request(Trigger::Manual, Some(est), None);
        match self
            .source(None)
            .and_then(|source| context::compact(&req, &view.chunks, source))
        {
            Ok(Some(done)) => {
                self.announce(&done, on);
                self.refresh(&mut view)?;
                Ok(Manual::Done)
            }
            Ok(None) => Ok(Manual::Nothing),
            Err(CompactError::Store(e)) => Err(e.into()),
            Err(e @ CompactError::Unavailable(_)) => {
                Err(AgentError::CompactUnavailable(e.to_string()))
            }
            Err(e) => Err(AgentError::Compact(e.to_string())),
        }
    }

    /// Compact and report it; false (and a `CompactFailed` event) when the summarizer failed
    /// or there was nothing to compact, leaving the log as it was.
    fn run_compaction(
        &self,
        view: &mut View,
        trigger: Trigger,
        given: Option<String>,
        before: Option<u64>,
        at: Option<(&str, i64)>,
        on: &mut dyn FnMut(Event),
    ) -> Result<bool, AgentError> {
        // A summarizer that failed twice in a row is not called automatically again until a
        // compaction succeeds (by hand) or another summarizer model is configured.
        let automatic = matches!(trigger, Trigger::Auto | Trigger::Overflow);
        let summarizer_model = self.summarizer_model();
        if automatic
            && given.is_none()
            && self
                .store
                .compact_failures(&self.session.id, &summarizer_model)?
                >= BREAKER
        {
            return Ok(false);
        }
        // The compaction plans on the loop's own view (a second copy of a long view is what
        // a turn on it would otherwise hold at its peak), brought up to date first.
        self.refresh(view)?;
        let req = self.compaction_request(trigger, before, at);
        match self
            .source(given)
            .and_then(|source| context::compact(&req, &view.chunks, source))
        {
            Ok(Some(done)) => {
                self.announce(&done, on);
                self.refresh(view)?;
                Ok(true)
            }
            // An automatic compaction with nothing before the part it keeps (the first turn
            // of a session whose tools crowd a small window) is no failure: the request goes
            // as it is, and a provider's refusal says what is too large.
            Ok(None) if trigger == Trigger::Auto => Ok(false),
            Ok(None) => {
                on(Event::CompactFailed {
                    trigger,
                    reason: "there is nothing before the kept suffix to compact".into(),
                });
                Ok(false)
            }
            Err(CompactError::Store(e)) => Err(e.into()),
            Err(e) => {
                let mut reason = e.to_string();
                if automatic
                    && self
                        .store
                        .record_compact_failure(&self.session.id, &summarizer_model)?
                        == BREAKER
                {
                    reason.push_str(&format!(
                        "; after {BREAKER} failures in a row, automatic compaction of this \
                         session is off until a compaction by hand succeeds or [context] \
                         compact_model names another summarizer"
                    ));
                }
                on(Event::CompactFailed { trigger, reason });
                Ok(false)
            }
        }
    }

    /// The model that writes this session's summaries.
    fn summarizer_model(&self) -> String {
        self.config
            .context
            .compact_model
            .clone()
            .unwrap_or_else(|| self.provider.name().to_string())
    }

    fn compaction_request<'s>(
        &'s self,
        trigger: Trigger,
        before: Option<u64>,
        at: Option<(&'s str, i64)>,
    ) -> context::Request<'s> {
        context::Request {
            store: self.store,
            rooms: &self.rooms,
            session: &self.session,
            cwd: &self.tool_ctx.cwd,
            trigger,
            keep_tokens: self.keep_budget(),
            keep_turns: (trigger == Trigger::Manual && at.is_none()).then_some(1),
            instructions: None,
            tokens_before: before,
            turn: at,
            recall: self.policy.allows(crate::policy::Tool::Recall.name()),
        }
    }

    fn announce(&self, done: &Compacted, on: &mut dyn FnMut(Event)) {
        for c in &done.chunks {
            on(Event::Seal(c.clone()));
        }
        on(Event::Compacted {
            trigger: done.compaction.trigger,
            tokens_before: done.compaction.tokens_before,
            tokens_after: done.compaction.tokens_after,
            model: done.compaction.model.clone(),
        });
    }

    /// The summarizer: `[context] compact_model` when set, else the session's model (with its
    /// provider and window as this run has them), with the session's system prompt and tools.
    fn summarizer(&self) -> Result<Summarizer, CompactError> {
        let own = self.config.context.compact_model.is_none();
        context::by_hand::summarizer(
            self.store,
            self.config,
            &self.summarizer_model(),
            own.then(|| self.provider.clone()),
            self.opts.system.clone(),
            self.tool_specs(),
            own.then(|| self.own_window()),
        )
    }

    /// Where a summary comes from: given, or the summarizer.
    fn source(&self, given: Option<String>) -> Result<SummarySource, CompactError> {
        match given {
            Some(s) => Ok(SummarySource::Given(s)),
            None => self.summarizer().map(SummarySource::Model),
        }
    }

    fn own_window(&self) -> u64 {
        self.window()
            .map_or(window::DEFAULT_WINDOW, |w| w.context_window)
    }
}

/// The `context_input` a `turn_end` records: the last request's prompt tokens.
pub(crate) fn context_input(view: &View) -> Value {
    view.measured_tokens().map_or(Value::Null, Value::from)
}
