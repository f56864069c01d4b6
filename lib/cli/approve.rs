//! Asking the person at the terminal about a tool call (approval mode `ask`): the call is
//! shown — a diff for `write` and `edit`, the command for `bash` — and one line answers it.
//! The question and the answer go through `/dev/tty`, so a prompt piped on stdin and an
//! answer on stdout stay what they are.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::sync::Mutex;

use crate::agent::approve::{Approver, Ask, Decision, Preview};
use crate::cli::escape_controls;

/// The controlling terminal, when there is one to ask on.
pub(crate) struct TerminalApprover {
    tty: Mutex<(File, BufReader<File>)>,
    color: bool,
}

impl TerminalApprover {
    /// The terminal's approver; `None` without a controlling terminal (a cron job, CI, a
    /// pipe from another program), where `ask` denies.
    pub(crate) fn open(color: bool) -> Option<TerminalApprover> {
        let out = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/tty")
            .ok()?;
        let input = File::open("/dev/tty").ok()?;
        Some(TerminalApprover {
            tty: Mutex::new((out, BufReader::new(input))),
            color,
        })
    }
}

/// The call as the person reads it: every word of it is the model's, so escaped.
pub(crate) fn describe(ask: &Ask<'_>, color: bool) -> String {
    let paint = |sgr: &str, s: &str| crate::cli::paint(color, sgr, s);
    let mut s = format!(
        "{} {}\n",
        paint("1;33", "approve?"),
        paint("1", &escape_controls(ask.tool, false))
    );
    match &ask.preview {
        Preview::Command(c) => {
            for (i, line) in c.lines().enumerate() {
                let lead = if i == 0 { "$" } else { " " };
                s.push_str(&format!("  {lead} {}\n", escape_controls(line, false)));
            }
        }
        Preview::Diff { diff, .. } => {
            for line in diff.lines() {
                let line = escape_controls(line, false);
                let sgr = match line.as_bytes().first() {
                    Some(b'+') if !line.starts_with("+++") => "32",
                    Some(b'-') if !line.starts_with("---") => "31",
                    Some(b'@') => "36",
                    _ => "",
                };
                let painted = match sgr {
                    "" => line,
                    sgr => paint(sgr, &line),
                };
                s.push_str(&format!("  {painted}\n"));
            }
        }
        Preview::Input(i) => {
            for line in crate::text::clip_chars(i, 2000).lines() {
                s.push_str(&format!("  {}\n", escape_controls(line, false)));
            }
        }
    }
    s
}

/// The terminal's approver for an agent whose session asks; `None` when it never asks.
pub(crate) fn terminal_if_asked(
    agent: &crate::agent::Agent<'_>,
    color: bool,
) -> Option<std::sync::Arc<dyn Approver>> {
    let asks = agent.approval.lock().ok()?.mode == crate::agent::ApprovalMode::Ask;
    if !asks {
        return None;
    }
    TerminalApprover::open(color).map(|a| std::sync::Arc::new(a) as std::sync::Arc<dyn Approver>)
}

/// What a typed answer means: `y` once, `a` for the session, `n` (or anything else) denies,
/// and the words after `n` are the reason.
pub(crate) fn parse_answer(line: &str) -> Option<Decision> {
    let t = line.trim();
    let (word, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" | "o" | "once" => Some(Decision::AllowOnce),
        "a" | "always" | "s" | "session" => Some(Decision::AllowSession),
        "n" | "no" | "d" | "deny" => Some(Decision::Deny(rest.trim().to_string())),
        _ => None,
    }
}

impl Approver for TerminalApprover {
    fn who(&self) -> String {
        "terminal".into()
    }

    fn decide(&self, ask: &Ask<'_>) -> Decision {
        let shown = format!("\n{}", describe(ask, self.color));
        let Ok(mut tty) = self.tty.lock() else {
            return Decision::Deny("the terminal could not be asked".into());
        };
        let (out, input) = &mut *tty;
        let _ = out.write_all(shown.as_bytes());
        loop {
            let _ = write!(
                out,
                "  [y] allow once  [a] allow {} for this session  [n REASON] deny: ",
                escape_controls(ask.tool, false)
            );
            let _ = out.flush();
            let mut line = String::new();
            match input.read_line(&mut line) {
                // The terminal went away: nobody said yes.
                Ok(0) | Err(_) => return Decision::Deny("no answer from the terminal".into()),
                Ok(_) => {}
            }
            if let Some(d) = parse_answer(&line) {
                if let Decision::Deny(r) = &d {
                    if r.is_empty() {
                        let _ = write!(out, "  reason for the model (Enter: none): ");
                        let _ = out.flush();
                        let mut reason = String::new();
                        let _ = input.read_line(&mut reason);
                        return Decision::Deny(reason.trim().to_string());
                    }
                }
                return d;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(parse_answer("y\n"), Some(Decision::AllowOnce));
        assert_eq!(parse_answer(" A "), Some(Decision::AllowSession));
        assert_eq!(
            parse_answer("n not in main\n"),
            Some(Decision::Deny("not in main".into()))
        );
        assert_eq!(parse_answer("no"), Some(Decision::Deny(String::new())));
        assert_eq!(parse_answer("maybe"), None);
        assert_eq!(parse_answer(""), None);
    }
}
