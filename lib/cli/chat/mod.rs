//! The chat: `ag-prompt` on a terminal with no prompt (and `ag chat`). A person types prompts
//! and slash commands; each prompt is a turn of one session in the store, run through the same
//! library as a one-shot `ag-prompt`, so every other command reads the session the chat
//! writes. While a turn runs the person goes on typing: a prompt typed ahead joins the turn at
//! its next step (the queued-input path), `/btw` is answered beside it, Ctrl-C stops it and
//! keeps the chat, Ctrl-D leaves.

mod console;
mod markdown;
mod shared;
mod slash;
mod turn;
mod view;

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use console::{Console, Input, Words};
use shared::Shared;
use turn::{ChatEnv, TurnJob};

use crate::agent::{SessionChoice, TurnRequest};
use crate::cli::{CliError, CliResult, Ctx};
use crate::store::Session;

/// What the chat was started with: the one-shot flags that make sense for a conversation.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChatArgs {
    pub(crate) session: Option<String>,
    pub(crate) continue_last: bool,
    pub(crate) model: Option<String>,
    pub(crate) tools: Option<String>,
    pub(crate) agent: Option<crate::summon::AgentDef>,
    pub(crate) approval: Option<crate::agent::ApprovalMode>,
    pub(crate) yes: bool,
    pub(crate) sandbox: Option<crate::sandbox::Mode>,
    pub(crate) net: bool,
    pub(crate) system: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) project_context: bool,
}

/// Whether `ag-prompt` with no prompt is a chat: stdin and stdout are a terminal.
pub(crate) fn wanted() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// A turn running on its own thread.
struct Running {
    handle: JoinHandle<()>,
    interrupt: Arc<AtomicBool>,
}

pub(super) struct Chat<'c> {
    ctx: &'c mut Ctx,
    shared: Arc<Shared>,
    env: Arc<ChatEnv>,
    args: ChatArgs,
    /// The session the chat talks in; `None` until the first turn makes one.
    session: Arc<Mutex<Option<Session>>>,
    running: Option<Running>,
    /// Side questions and compactions in flight.
    helpers: Vec<JoinHandle<()>>,
    commands: crate::commands::Commands,
    words: Arc<Mutex<Words>>,
    mcp: Option<(Vec<String>, Option<Arc<crate::mcp::McpServers>>)>,
}

/// Run the chat until the person leaves.
pub(crate) fn run(ctx: &mut Ctx, args: ChatArgs) -> CliResult<()> {
    let cwd = std::fs::canonicalize(std::env::current_dir()?)?;
    let config = ctx.config()?.clone();
    let store = ctx.store()?;
    let session = match (&args.session, args.continue_last) {
        (Some(r), _) => Some(store.resolve(r)?),
        (None, true) => Some(store.continued(false)?),
        _ => None,
    };
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    let editor = wanted() && !dumb;
    let color = ctx.out.color && !dumb;
    let words = Arc::new(Mutex::new(Words::default()));
    let history = console::history_file(&ctx.home, &cwd);
    let (mut console, printer) = Console::open(editor, history.as_deref(), color, words.clone());
    let shared = Arc::new(Shared::new(printer, color));
    let env = Arc::new(ChatEnv {
        home: ctx.home.clone(),
        config,
        cwd: cwd.clone(),
        rooms: ctx.rooms(),
    });
    let commands = crate::commands::Commands::load(&cwd, slash::BUILT_IN);
    for p in &commands.problems {
        ctx.out.warn(p);
    }
    let mut chat = Chat {
        ctx,
        shared,
        env,
        args,
        session: Arc::new(Mutex::new(session)),
        running: None,
        helpers: Vec::new(),
        commands,
        words,
        mcp: None,
    };
    chat.greet(&store);
    drop(store);
    let interrupts = interrupt_on_signals();
    let result = chat.run_loop(&mut console, &interrupts);
    chat.leave();
    result
}

/// Ctrl-C outside the line editor (the plain chat, or between two reads) raises this flag
/// instead of ending the program; the chat passes it to the running turn.
fn interrupt_on_signals() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, flag.clone());
    flag
}

impl Chat<'_> {
    fn session(&self) -> Option<Session> {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A line from the input thread (a command's output, a note).
    fn print(&self, line: impl Into<String>) {
        self.shared.say(&line.into());
    }

    fn dim(&self, s: &str) -> String {
        self.shared.paint("2", s)
    }

    /// The first lines: the session continued (or that the first prompt starts one), the
    /// model, and how to get help.
    fn greet(&mut self, store: &crate::store::Store) {
        // The model a turn would run on, chosen as the turn chooses it.
        let session_model = self.session().and_then(|s| s.model);
        let sources = crate::provider::ModelSources {
            flag: self.args.model.as_deref(),
            definition: self
                .args
                .agent
                .as_ref()
                .map(|d| (d.slug.as_str(), d.models.as_slice())),
            session: session_model.as_deref(),
            ..crate::provider::ModelSources::with_env()
        };
        let model = match crate::provider::choose(&sources, &self.env.config) {
            Ok(chosen) => chosen.model,
            Err(_) => "(no model: /model NAME)".into(),
        };
        self.shared.status().model = model;
        let line = match self.session() {
            Some(s) => {
                turn::refresh_status(&self.shared, store, &self.env, &s);
                format!(
                    "ag chat · session {} · {}",
                    s.handle,
                    crate::text::headline(&s.title, 60)
                )
            }
            None => "ag chat · a new session starts with your first prompt".into(),
        };
        let line = crate::cli::escape_controls(&line, false);
        self.print(self.shared.paint("1", &line));
        self.print(self.dim(
            "/help lists the commands · Alt-Enter a new line · Ctrl-C stops a turn · Ctrl-D leaves",
        ));
        self.refresh_words();
    }

    /// The words completion offers now: commands, and this folder's sessions.
    fn refresh_words(&self) {
        let mut w = self.words.lock().unwrap_or_else(|e| e.into_inner());
        w.commands = slash::HELP
            .iter()
            .map(|(n, d)| (n.split(' ').next().unwrap_or(n).to_string(), d.to_string()))
            .chain(
                self.commands
                    .by_name
                    .values()
                    .map(|c| (c.name.clone(), c.summary())),
            )
            .collect();
        w.sessions = slash::folder_sessions(&self.ctx.home, &self.env.cwd)
            .into_iter()
            .map(|s| s.handle)
            .collect();
    }

    fn run_loop(&mut self, console: &mut Console, sigint: &AtomicBool) -> CliResult<()> {
        loop {
            // Lines from a pipe are a script: each waits for the work before it.
            if console.is_plain() {
                self.wait(sigint);
            }
            self.join_finished();
            let input = console.read();
            if sigint.swap(false, Ordering::SeqCst) {
                self.interrupt();
            }
            match input? {
                Input::Interrupt => self.interrupt(),
                Input::Leave => return Ok(()),
                Input::Line(line) => {
                    if !self.line(line)? {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Wait for the running turn and the side questions to end; Ctrl-C stops the turn.
    fn wait(&mut self, sigint: &AtomicBool) {
        if let Some(r) = self.running.take() {
            while !r.handle.is_finished() {
                if sigint.swap(false, Ordering::SeqCst) {
                    r.interrupt.store(true, Ordering::SeqCst);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let _ = r.handle.join();
        }
        for h in self.helpers.drain(..) {
            let _ = h.join();
        }
    }

    /// Whether a turn (or a compaction) is still at work.
    fn turn_runs(&self) -> bool {
        self.running
            .as_ref()
            .is_some_and(|r| !r.handle.is_finished())
    }

    /// A finished turn's thread is joined, and what it changed is taken in.
    fn join_finished(&mut self) {
        if self
            .running
            .as_ref()
            .is_some_and(|r| r.handle.is_finished())
        {
            if let Some(r) = self.running.take() {
                let _ = r.handle.join();
            }
            self.refresh_words();
        }
        self.helpers.retain(|h| !h.is_finished());
    }

    /// Ctrl-C: a question waiting is denied and the turn stops; with nothing running, the
    /// line is cleared and the chat stays.
    fn interrupt(&mut self) {
        if let Some(p) = self.shared.pending().take() {
            let _ = p.reply.send(crate::agent::approve::Decision::Deny(
                "the user stopped the turn".into(),
            ));
        }
        match &self.running {
            Some(r) if !r.handle.is_finished() => {
                r.interrupt.store(true, Ordering::SeqCst);
                self.print(self.dim("stopping the turn…"));
            }
            _ => self.print(self.dim("(Ctrl-D or /quit leaves)")),
        }
    }

    /// One line the person entered. `false`: leave.
    fn line(&mut self, line: String) -> CliResult<bool> {
        let pending = self.shared.pending().take();
        if let Some(p) = pending {
            match super::approve::parse_answer(&line) {
                Some(d) => {
                    let _ = p.reply.send(d);
                }
                None => {
                    let l = format!(
                        "{} waits for an answer: y (once), a (always, this session) or n REASON",
                        crate::cli::escape_controls(&p.tool, false)
                    );
                    self.print(self.dim(&l));
                    *self.shared.pending() = Some(p);
                }
            }
            return Ok(true);
        }
        if line.trim().is_empty() {
            return Ok(true);
        }
        if let Some(rest) = line.strip_prefix('/').filter(|r| !r.starts_with('/')) {
            return slash::run(self, rest.trim());
        }
        // `//text` sends `/text`.
        let text = line.strip_prefix('/').unwrap_or(&line).to_string();
        self.prompt(text)?;
        Ok(true)
    }

    /// A prompt: typed ahead into the running turn, or a new turn.
    fn prompt(&mut self, text: String) -> CliResult<()> {
        if self.turn_runs() {
            if let Some(s) = self.session() {
                let store = self.ctx.store()?;
                if crate::agent::type_ahead(&store, &s.id, &text)?.is_some() {
                    self.shared.status().queued += 1;
                    let l = format!(
                        "queued: {} (joins the turn at its next step)",
                        crate::cli::escape_controls(&crate::text::headline(&text, 60), false)
                    );
                    self.print(self.dim(&l));
                    return Ok(());
                }
            }
            // The turn is ending (or has not made its session yet): wait for it, then run.
            if let Some(r) = self.running.take() {
                let _ = r.handle.join();
            }
        }
        self.start_turn(text)
    }

    fn turn_request(&self, text: &str) -> CliResult<TurnRequest> {
        let session = match self.session() {
            Some(s) => SessionChoice::Existing(s.id),
            None => SessionChoice::New {
                title: self.args.title.clone(),
                id: None,
            },
        };
        Ok(TurnRequest {
            text: Some(text.to_string()),
            session,
            model: self.args.model.clone(),
            tools: super::tools_flag(self.args.tools.as_deref())?,
            system: self.args.system.clone(),
            agent: self.args.agent.clone(),
            max_steps: None,
            max_cost: None,
            thinking: None,
            compact: false,
            sandbox: self.args.sandbox,
            net: self.args.net,
            approval: self.args.approval,
            queue: true,
            cwd: self.env.cwd.clone(),
            project_context: self.args.project_context,
            images: 0,
        })
    }

    /// The MCP servers the next turn may use: started (and, for a project's new server,
    /// asked about) here, on the input thread, and kept while the tools stay the same.
    fn mcp_for(&mut self, req: &TurnRequest) -> Option<Arc<crate::mcp::McpServers>> {
        let stored = self
            .session()
            .and_then(|s| s.settings().ok())
            .map(|s| s.tools());
        let (policy, _) = crate::agent::narrow(stored, req);
        let names = policy.names();
        if let Some((had, servers)) = &self.mcp {
            if *had == names {
                return servers.clone();
            }
        }
        let servers = super::mcp_client::servers(self.ctx, &self.env.config, &policy);
        self.mcp = Some((names, servers.clone()));
        servers
    }

    fn start_turn(&mut self, text: String) -> CliResult<()> {
        let req = self.turn_request(&text)?;
        let mcp = self.mcp_for(&req);
        // The first prompt of a new session names it.
        if self.session().is_none() && self.args.title.is_none() {
            self.args.title = Some(crate::text::headline(&text, 60));
        }
        let interrupt = Arc::new(AtomicBool::new(false));
        let job = TurnJob {
            env: self.env.clone(),
            shared: self.shared.clone(),
            req,
            yes: self.args.yes,
            prompt: text,
            interrupt: interrupt.clone(),
            session: self.session.clone(),
            mcp,
        };
        let handle = std::thread::Builder::new()
            .name("turn".into())
            .spawn(move || turn::run(job))
            .map_err(|e| CliError::msg(format!("cannot start the turn: {e}")))?;
        self.running = Some(Running { handle, interrupt });
        Ok(())
    }

    /// Leave: a running turn is stopped and waited for (its lease releases the session),
    /// and so are the side questions.
    fn leave(&mut self) {
        if let Some(p) = self.shared.pending().take() {
            let _ = p.reply.send(crate::agent::approve::Decision::Deny(
                "the chat ended".into(),
            ));
        }
        if let Some(r) = self.running.take() {
            r.interrupt.store(true, Ordering::SeqCst);
            let _ = r.handle.join();
        }
        for h in self.helpers.drain(..) {
            let _ = h.join();
        }
        if let Some(s) = self.session() {
            self.ctx.out.note(&format!(
                "session {} · continue with ag-prompt -s {} (or ag chat -s {})",
                s.handle, s.handle, s.handle
            ));
        }
    }
}
