//! What the chat's threads share: the printer above the input line, the status the prompt
//! shows, and the approval question waiting for the person's next line.

use std::sync::mpsc;
use std::sync::Mutex;

use crate::agent::approve::Decision;

/// Where lines go: above the line editor (it keeps the person's half-typed line), or straight
/// to stdout in the plain chat.
pub(super) enum Printer {
    Editor(Mutex<Box<dyn rustyline::ExternalPrinter + Send>>),
    Plain,
}

/// The status line: model, context used, cost so far, who is in the room.
#[derive(Debug, Clone, Default)]
pub(super) struct Status {
    pub(super) model: String,
    /// Tokens the last request took, and the model's window when known.
    pub(super) context: Option<(u64, Option<u64>)>,
    pub(super) cost_usd: f64,
    pub(super) here: Vec<String>,
    /// Lines typed ahead and not yet taken by the turn.
    pub(super) queued: usize,
}

/// A tool call waiting for the person's decision.
pub(super) struct Pending {
    pub(super) tool: String,
    pub(super) reply: mpsc::Sender<Decision>,
}

pub(super) struct Shared {
    printer: Printer,
    pub(super) color: bool,
    pub(super) status: Mutex<Status>,
    pub(super) pending: Mutex<Option<Pending>>,
}

impl Shared {
    pub(super) fn new(printer: Printer, color: bool) -> Shared {
        Shared {
            printer,
            color,
            status: Mutex::default(),
            pending: Mutex::default(),
        }
    }

    /// Print a line (already escaped and painted).
    pub(super) fn print(&self, line: String) {
        match &self.printer {
            Printer::Editor(p) => {
                let mut p = p.lock().unwrap_or_else(|e| e.into_inner());
                let _ = p.print(format!("{line}\n"));
            }
            Printer::Plain => {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
        }
    }

    /// Print a line from the input thread, between two reads: the terminal is as the line
    /// editor left it (not raw), so the line goes straight to stdout.
    pub(super) fn say(&self, line: &str) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    pub(super) fn paint(&self, sgr: &str, s: &str) -> String {
        crate::cli::paint(self.color, sgr, s)
    }

    pub(super) fn status(&self) -> std::sync::MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn pending(&self) -> std::sync::MutexGuard<'_, Option<Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Status {
    /// `sonnet · 12k/200k · $0.04 · here: alice`, and what runs.
    pub(super) fn line(&self) -> String {
        let mut parts = vec![self.model.clone()];
        if let Some((used, window)) = self.context {
            let short = crate::context::window::short_tokens;
            parts.push(match window {
                Some(w) => format!("{}/{} ctx", short(used), short(w)),
                None => format!("{} ctx", short(used)),
            });
        }
        if self.cost_usd > 0.0 {
            parts.push(format!("session ${:.4}", self.cost_usd));
        }
        if !self.here.is_empty() {
            parts.push(format!("here: {}", self.here.join(", ")));
        }
        if self.queued > 0 {
            parts.push(format!("{} queued", self.queued));
        }
        crate::cli::escape_controls(&parts.join(" · "), false)
    }
}
