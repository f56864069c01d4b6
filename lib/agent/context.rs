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

    /// The prompt tokens the next request will take, about: the last measurement plus what
    /// was added since, else an estimate of the whole view with its system prompt and tools.
    pub(super) fn estimate(&self, view: &View) -> u64 {
        match view.measured {
            Some((seq, tokens)) => {
                tokens
                    + view
                        .chunks
                        .iter()
                        .filter(|c| c.seq > seq)
                        .map(cut::tokens)
                        .sum::<u64>()
            }
            None => self.fixed_tokens() + cut::view_tokens(&view.chunks),
        }
    }

    /// What every request carries besides the conversation, about: the system prompt (with
    /// the project's instructions) and every tool's name, description and schema.
    pub(super) fn fixed_tokens(&self) -> u64 {
        self.opts.system.as_deref().map_or(0, cut::tokens_of_text)
            + self
                .tool_specs()
                .iter()
                .map(|t| {
                    cut::tokens_of_text(&t.name)
                        + cut::tokens_of_text(&t.description)
                        + cut::tokens_of_text(&t.input_schema.to_string())
                        + 8
                })
                .sum::<u64>()
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
        window::keep_budget(&w, self.fixed_tokens(), self.opts.max_tokens, configured)
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
            home: self.home,
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

    /// The summarizer: `[context] compact_model` when set, else the session's model, with the
    /// session's system prompt and tools.
    fn summarizer(&self) -> Result<Summarizer, CompactError> {
        let (provider, window) = match &self.config.context.compact_model {
            Some(m) => {
                let p = crate::provider::resolve(m, self.config).map_err(|e| {
                    CompactError::Summarizer(format!("[context] compact_model {m:?}: {e}"))
                })?;
                let key = window::learned_key_of(m, self.config);
                let learned = self.store.learned_window(&key).ok().flatten();
                let w = context::lookup(m, self.config, learned).context_window;
                (std::sync::Arc::from(p), w)
            }
            None => (self.provider.clone(), self.own_window()),
        };
        Ok(Summarizer {
            provider,
            system: self.opts.system.clone(),
            tools: self.tool_specs(),
            window,
            network: self.config.network.clone(),
        })
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
