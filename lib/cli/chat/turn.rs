//! The chat's work off the input thread: a turn of the session, a side question beside it, a
//! compaction. Each opens its own store and runs through the library as `ag-prompt`,
//! `ag-fork --btw` and `ag-log compact` do; what it shows goes through the shared printer, so
//! the person can go on typing.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::shared::{Pending, Shared};
use super::view::TurnView;
use crate::agent::approve::{Approver, Ask, Decision};
use crate::agent::{Outcome, Prepared, TurnRequest};
use crate::cli::escape_controls;
use crate::config::Config;
use crate::paths::Home;
use crate::store::{Session, Store};

/// What every piece of work needs: where the store is, the configuration, the directory.
pub(super) struct ChatEnv {
    pub(super) home: Home,
    pub(super) config: Config,
    pub(super) cwd: PathBuf,
    /// The chat's participant in rooms, made once (on shared rooms, one connection).
    pub(super) rooms: crate::room::Rooms,
}

impl ChatEnv {
    fn store(&self, shared: &Shared) -> Option<Store> {
        match Store::open(&self.home) {
            Ok(s) => Some(s),
            Err(e) => {
                error(shared, &e.to_string(), None);
                None
            }
        }
    }
}

/// An error line, and its hint dimmed beneath.
pub(super) fn error(shared: &Shared, message: &str, hint: Option<&str>) {
    let l = format!(
        "{} {}",
        shared.paint("31", "error:"),
        escape_controls(message, false)
    );
    shared.print(l);
    if let Some(h) = hint {
        shared.print(shared.paint("2", &format!("hint: {}", escape_controls(h, false))));
    }
}

/// A turn to run.
pub(super) struct TurnJob {
    pub(super) env: Arc<ChatEnv>,
    pub(super) shared: Arc<Shared>,
    pub(super) req: TurnRequest,
    pub(super) yes: bool,
    pub(super) prompt: String,
    pub(super) interrupt: Arc<AtomicBool>,
    /// Set as soon as the turn has its session (a new one is made by the first turn).
    pub(super) session: Arc<Mutex<Option<Session>>>,
    pub(super) mcp: Option<Arc<crate::mcp::McpServers>>,
}

/// Run a turn to its end.
pub(super) fn run(job: TurnJob) {
    let shared = job.shared.clone();
    let end = turn(job);
    // The line that ends the turn also draws the prompt again, with the status of now.
    if let Some(end) = end {
        shared.print(end);
    }
}

/// The turn; the line that ends it, when it ran.
fn turn(job: TurnJob) -> Option<String> {
    let TurnJob {
        env,
        shared,
        req,
        yes,
        prompt,
        interrupt,
        session: slot,
        mcp,
    } = job;
    let store = env.store(&shared)?;
    let mut plan = match crate::agent::prepare(&store, &env.config, req) {
        Ok(Prepared::Ready(plan)) => plan,
        Ok(Prepared::Queued { session, owner, .. }) => {
            shared.print(shared.paint(
                "2",
                &format!(
                    "session {} is busy in another process (pid {owner}); your prompt was \
                     queued and joins its turn",
                    session.handle
                ),
            ));
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(*session);
            return None;
        }
        Ok(Prepared::CompactionQueued { .. }) => return None,
        Err(e) => {
            let e = crate::cli::prompt::plan_error(e, &env.config);
            error(&shared, &format!("{:#}", e.error), e.hint.as_deref());
            return None;
        }
    };
    for n in &plan.notes {
        shared.print(shared.paint("2", &escape_controls(n, false)));
    }
    for w in &plan.warnings {
        shared.print(format!(
            "{} {}",
            shared.paint("33", "warning:"),
            escape_controls(w, false)
        ));
    }
    plan.yes = yes;
    let session = plan.session.clone();
    *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(session.clone());
    shared.status().model = plan.model.clone();
    let mut agent = plan.into_agent(&store, &env.home, &env.config, &env.cwd, interrupt.clone());
    agent.mcp = mcp;
    agent.approver = Some(Arc::new(ChatApprover {
        shared: shared.clone(),
        interrupt,
    }));
    let mut view = TurnView::new(&shared);
    let outcome = agent.run_turn(&prompt, Vec::new(), &mut |ev| view.event(ev));
    view.flush();
    drop(agent);
    refresh_status(&shared, &store, &env, &session);
    let done = view.done.take();
    let status = shared.status().line();
    Some(match outcome {
        Ok(Outcome::Done { .. }) => {
            shared.paint("2", &format!("{} · {status}", done_line(done.as_ref())))
        }
        Ok(Outcome::Interrupted) => {
            shared.paint("2", "interrupted: what was written stays in the session")
        }
        Ok(Outcome::Failed { message, .. }) | Ok(Outcome::TooLarge { message }) => {
            error(&shared, &message, None);
            shared.paint("2", "the session keeps what was written")
        }
        Err(e) => {
            error(&shared, &e.to_string(), None);
            shared.paint("2", "the turn did not finish")
        }
    })
}

/// `─ 3 steps · 1.2k in · 310 out · $0.0031`: what the turn took.
fn done_line(done: Option<&(crate::reduce::Usage, Option<f64>)>) -> String {
    let Some((u, cost)) = done else {
        return "─ done".into();
    };
    let short = crate::context::window::short_tokens;
    let mut parts = vec![format!(
        "─ done · {} in · {} out",
        short(u.input + u.cache_read + u.cache_write),
        short(u.output)
    )];
    if let Some(c) = cost {
        parts.push(format!("${c:.4}"));
    }
    parts.join(" · ")
}

/// The status after a turn: what the session cost and how full its window is.
pub(super) fn refresh_status(shared: &Shared, store: &Store, env: &ChatEnv, session: &Session) {
    let config = &env.config;
    let Ok(session) = store.resolve(&session.id) else {
        return;
    };
    let usage = store.usage(&session).ok();
    let context = crate::cli::log::context_use(store, &session, config)
        .ok()
        .flatten();
    let mut s = shared.status();
    if let Some(u) = usage {
        s.cost_usd = u.cost_usd;
    }
    if let Some(m) = &session.model {
        s.model = m.clone();
    }
    s.context = context.and_then(|c| c.last_input.map(|n| (n, Some(c.window))));
    let cwd = session.cwd.clone().unwrap_or_default();
    let room = env.rooms.worktree(std::path::Path::new(&cwd));
    if let Ok(others) = crate::room::roster::roster(store, &room, &session.id) {
        s.here = others
            .into_iter()
            .map(|p| format!("{} [{}]", p.name, p.handle))
            .collect();
    }
}

/// The person at the chat decides: the call is shown above the input line and the next line
/// typed answers it (`y`, `a`, `n REASON`). Ctrl-C denies it and stops the turn.
struct ChatApprover {
    shared: Arc<Shared>,
    interrupt: Arc<AtomicBool>,
}

impl Approver for ChatApprover {
    fn who(&self) -> String {
        "terminal".into()
    }

    fn decide(&self, ask: &Ask<'_>) -> Decision {
        let (tx, rx) = mpsc::channel();
        // The question is set before the call is printed: printing draws the prompt again.
        *self.shared.pending() = Some(Pending {
            tool: ask.tool.to_string(),
            reply: tx,
        });
        let shown = crate::cli::approve::describe(ask, self.shared.color);
        for line in shown.lines() {
            self.shared.print(line.to_string());
        }
        let hint = format!(
            "  answer: y (once) · a (allow {} for this session) · n REASON (deny; the model reads why)",
            escape_controls(ask.tool, false)
        );
        self.shared.print(self.shared.paint("33", &hint));
        let decision = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(d) => break d,
                Err(mpsc::RecvTimeoutError::Timeout) if self.interrupt.load(Ordering::SeqCst) => {
                    break Decision::Deny("the user stopped the turn".into())
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Decision::Deny("the chat ended".into())
                }
            }
        };
        *self.shared.pending() = None;
        decision
    }
}

/// `/btw QUESTION`: the read-only side chat on the session's latest completed turn, answered
/// beside whatever runs; its answer is printed whole when it is done, and only the side
/// session (never the main one) records it.
pub(super) fn btw(
    env: Arc<ChatEnv>,
    shared: Arc<Shared>,
    source: String,
    question: String,
    interrupt: Arc<AtomicBool>,
) {
    let Some(store) = env.store(&shared) else {
        return;
    };
    let source = match store.resolve(&source) {
        Ok(s) => s,
        Err(e) => return error(&shared, &e.to_string(), None),
    };
    let ask = crate::agent::side::SideAsk {
        source: &source,
        question: &question,
        title: None,
        model: None,
        keep_cache: false,
    };
    let side = match crate::agent::side::side_chat(&store, &env.config, ask) {
        Ok(s) => s,
        Err(crate::agent::side::SideError::Fork(crate::fork::ForkError::NoCompletedTurn(_))) => {
            return error(
                &shared,
                crate::fork::NO_TURN_SIDE,
                Some("ask /btw once a turn has ended"),
            )
        }
        Err(e) => return error(&shared, &e.to_string(), None),
    };
    let handle = side.plan.session.handle.clone();
    let agent = side
        .plan
        .into_agent(&store, &env.home, &env.config, &env.cwd, interrupt);
    let bar = shared.paint("2", "│ ");
    let mut view = TurnView::held(&shared, bar);
    let outcome = agent.run_turn(&side.prompt, Vec::new(), &mut |ev| view.event(ev));
    view.flush();
    drop(agent);
    let head = format!(
        "btw · {} {}",
        escape_controls(&crate::text::headline(&question, 60), false),
        shared.paint("2", &format!("(side chat {handle})"))
    );
    shared.print(shared.paint("36", &head));
    for line in view.held.take().unwrap_or_default() {
        shared.print(line);
    }
    if let Ok(Outcome::Failed { message, .. }) = outcome {
        error(&shared, &message, None);
    }
}

/// `/compact [INSTRUCTIONS]`: the session's model summarizes what came before its latest turn.
pub(super) fn compact(
    env: Arc<ChatEnv>,
    shared: Arc<Shared>,
    session: String,
    instructions: Option<String>,
) {
    let Some(store) = env.store(&shared) else {
        return;
    };
    let session = match store.resolve(&session) {
        Ok(s) => s,
        Err(e) => return error(&shared, &e.to_string(), None),
    };
    shared.print(shared.paint("2", "compacting: the model writes the summary…"));
    let ask = crate::context::by_hand::Ask {
        summary: None,
        keep_turns: 1,
        instructions,
        queue: false,
    };
    match crate::context::by_hand::by_hand(&store, &env.rooms, &env.config, &session, ask) {
        Ok(crate::context::by_hand::Outcome::Done(done)) => shared.print(shared.paint(
            "2",
            &format!(
                "compacted {} → {} tokens",
                crate::context::window::short_tokens(done.compaction.tokens_before),
                crate::context::window::short_tokens(done.compaction.tokens_after)
            ),
        )),
        Ok(crate::context::by_hand::Outcome::Nothing) => shared.print(shared.paint(
            "2",
            "nothing to compact: the session holds nothing before its latest turn",
        )),
        Ok(_) => error(&shared, "the session is busy in another process", None),
        Err(e) => error(&shared, &e.to_string(), Some("the session is as it was")),
    }
    refresh_status(&shared, &store, &env, &session);
}
