//! One place decides what reaches the terminal: the program prefix, colour per stream, quiet
//! and verbose, warnings and the spinner, and escaping of untrusted text (model output, room
//! lines) so it cannot drive the terminal. Nothing else in `ag` prints; a failed write to
//! stderr is ignored, never a panic.

use std::io::{self, BufWriter, IsTerminal, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static PROGRAM: OnceLock<&'static str> = OnceLock::new();

/// Whether fd 1 was closed when the process started (`>&-`): the standard library would drop
/// every write to it silently, so the printer reports each one as failed instead.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Remember whether stdout was closed when the process started.
pub(super) fn guard_std_fds() {
    STDOUT_CLOSED.store(crate::proc::stdout_closed_at_start(), Ordering::Relaxed);
}

/// A write to stdout failed: the data a command was asked for did not all reach its reader.
/// Carried inside an `io::Error` of the same kind, so a broken pipe is still a broken pipe.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to stdout")]
pub(crate) struct StdoutFailed(#[source] pub io::Error);

fn stdout_failed(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), StdoutFailed(e))
}

/// Whether `e` is a failed write to stdout.
pub(crate) fn is_stdout_failure(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|r| r.is::<StdoutFailed>())
}

/// The program every message on stderr is prefixed with (`ag-log: `…); set once by
/// [`super::parse`].
pub(crate) fn program() -> &'static str {
    PROGRAM.get().copied().unwrap_or("ag")
}

pub(super) fn set_program(name: &'static str) {
    let _ = PROGRAM.set(name);
}

/// Write to stderr, ignoring failure: a closed or full stderr must never end a turn or a
/// command (the data on stdout, and the store, are what matter).
pub(crate) fn eprint_quiet(s: &str) {
    let write = || {
        let _ = io::stderr().lock().write_all(s.as_bytes());
    };
    // A line written while a progress bar shows goes above it, not through it.
    match PROGRESS.lock().ok().and_then(|p| p.clone()) {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

fn b_message(bar: &indicatif::ProgressBar, what: &str) {
    bar.set_message(escape_controls(what, false));
}

/// The progress bar or spinner on stderr now, if any: what stderr's lines are written around.
static PROGRESS: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);

/// A progress bar or spinner on stderr for long work: shown only on a terminal and without
/// `-q`; lines the command writes meanwhile go above it. Dropped, it clears itself.
pub(crate) struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    pub(crate) fn inc(&self, n: u64) {
        if let Some(b) = &self.0 {
            b.inc(n);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
            if let Ok(mut p) = PROGRESS.lock() {
                *p = None;
            }
        }
    }
}

/// The one printer: data on stdout (buffered), everything else on stderr through `note`,
/// `warn`, `detail` and `message`, colour decided per stream.
pub(crate) struct Out {
    /// Colour on stdout.
    pub(crate) color: bool,
    /// Colour on stderr.
    pub(crate) color_err: bool,
    pub(crate) quiet: bool,
    pub(crate) verbose: bool,
    stdout_tty: bool,
    stdout: BufWriter<Stdout>,
    done: Option<String>,
}

impl Out {
    /// `color`: `Some` forces it on or off (`--color always|never`); `None` leaves it to
    /// `anstream`'s reading of each stream and the environment: a terminal, unless
    /// `NO_COLOR` is set or `TERM=dumb` (`CLICOLOR_FORCE` forces it on).
    pub(crate) fn new(color: Option<bool>, quiet: bool, verbose: bool) -> Out {
        use anstream::{AutoStream, ColorChoice};
        let auto = |choice: ColorChoice| choice != ColorChoice::Never;
        Out {
            color: color.unwrap_or_else(|| auto(AutoStream::choice(&io::stdout()))),
            color_err: color.unwrap_or_else(|| auto(AutoStream::choice(&io::stderr()))),
            quiet,
            verbose,
            stdout_tty: io::stdout().is_terminal(),
            stdout: BufWriter::with_capacity(64 * 1024, io::stdout()),
            done: None,
        }
    }

    /// Whether stdout is a terminal (where untrusted text must not arrive raw even in a
    /// format that is otherwise data, such as Markdown).
    pub(crate) fn stdout_is_terminal(&self) -> bool {
        self.stdout_tty
    }

    /// A line of data on stdout.
    pub(crate) fn line(&mut self, s: &str) -> io::Result<()> {
        self.raw(s)?;
        self.raw("\n")
    }

    pub(crate) fn raw(&mut self, s: &str) -> io::Result<()> {
        self.raw_bytes(s.as_bytes())
    }

    /// Data bytes on stdout, as they come (a writer of JSON text hands over pieces).
    pub(crate) fn raw_bytes(&mut self, b: &[u8]) -> io::Result<()> {
        if STDOUT_CLOSED.load(Ordering::Relaxed) {
            return Err(stdout_failed(io::Error::from_raw_os_error(libc::EBADF)));
        }
        self.stdout.write_all(b).map_err(stdout_failed)
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.stdout.flush().map_err(stdout_failed)
    }

    /// Whether stdout is a pipe whose reader has gone away, checked without writing: a
    /// follower that has nothing new to print still notices and ends.
    pub(crate) fn reader_gone(&self) -> bool {
        crate::proc::reader_gone(libc::STDOUT_FILENO)
    }

    /// Record that the command's change is stored (`what` says which): from here on, a
    /// failure to print is reported with exit status 74, so a caller does not retry a write
    /// that was made.
    pub(crate) fn done(&mut self, what: impl Into<String>) {
        self.done = Some(what.into());
    }

    /// What [`Out::done`] recorded.
    pub(crate) fn done_what(&self) -> Option<&str> {
        self.done.as_deref()
    }

    /// A notice on stderr, unless quiet.
    pub(crate) fn note(&self, s: &str) {
        if !self.quiet {
            eprint_quiet(&format!("{}\n", escape_controls(s, true)));
        }
    }

    /// `PROG: warning: …` on stderr, unless quiet.
    pub(crate) fn warn(&self, s: &str) {
        if !self.quiet {
            let w = self.paint_err("33", "warning:");
            eprint_quiet(&format!(
                "{}: {w} {}\n",
                program(),
                escape_controls(s, true)
            ));
        }
    }

    /// `PROG: …` on stderr, even when quiet: what a hook or a script must see.
    pub(crate) fn message(&self, s: &str) {
        eprint_quiet(&format!("{}: {}\n", program(), escape_controls(s, true)));
    }

    /// A question on stderr, without a newline; asked even when quiet (the answer is needed).
    pub(crate) fn ask(&self, s: &str) {
        eprint_quiet(&format!("{}: {}", program(), escape_controls(s, false)));
    }

    /// Detail on stderr, only with -v.
    pub(crate) fn detail(&self, s: &str) {
        if self.verbose && !self.quiet {
            eprint_quiet(&format!("{}\n", escape_controls(s, true)));
        }
    }

    /// Text for stderr as it streams (thinking), dimmed where stderr takes colour.
    pub(crate) fn stream_err(&self, s: &str) {
        if !self.quiet {
            eprint_quiet(&self.paint_err("2", &escape_controls(s, true)));
        }
    }

    /// A bar of `len` steps (`len` 0: a spinner) saying `what`, on stderr when it is a
    /// terminal and not quiet; see [`Progress`].
    pub(crate) fn progress(&self, len: u64, what: &str) -> Progress {
        if !io::stderr().is_terminal() || self.quiet {
            return Progress(None);
        }
        let bar = if len == 0 {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b.enable_steady_tick(std::time::Duration::from_millis(120));
            b
        } else {
            let b = indicatif::ProgressBar::new(len);
            b.set_style(
                indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {eta}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b
        };
        b_message(&bar, what);
        // Drawn now, not at the first tick: short work still says what it did.
        bar.tick();
        if let Ok(mut p) = PROGRESS.lock() {
            *p = Some(bar.clone());
        }
        Progress(Some(bar))
    }

    /// No progress to show (the work is short, or a pipe reads it).
    pub(crate) fn progress_none(&self) -> Progress {
        Progress(None)
    }

    /// A spinner on stderr, only when it is a terminal and not quiet.
    pub(crate) fn spinner(&self) -> Option<indicatif::ProgressBar> {
        (io::stderr().is_terminal() && !self.quiet).then(indicatif::ProgressBar::new_spinner)
    }

    pub(crate) fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }

    pub(crate) fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    /// `s` in SGR colour `sgr` for stdout.
    pub(crate) fn paint(&self, sgr: &str, s: &str) -> String {
        paint(self.color, sgr, s)
    }

    /// `s` in SGR colour `sgr` for stderr.
    pub(crate) fn paint_err(&self, sgr: &str, s: &str) -> String {
        paint(self.color_err, sgr, s)
    }
}

/// `s` in SGR colour `sgr` when `on`, else as it is.
pub(crate) fn paint(on: bool, sgr: &str, s: &str) -> String {
    if on {
        format!("\x1b[{sgr}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        let _ = self.stdout.flush();
    }
}

/// Escape what could drive a terminal or disguise text, so untrusted text prints as text: C0
/// and C1 controls (so every ESC, CSI and OSC sequence, OSC 52 and OSC 8 included) and the
/// bidi controls that reorder what is shown (U+202A–U+202E, U+2066–U+2069, and the marks
/// U+061C, U+200E, U+200F). Newlines and tabs stay when `keep_newlines`.
pub(crate) fn escape_controls(s: &str, keep_newlines: bool) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\t' if keep_newlines => out.push(c),
            c if needs_escape(c) => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{200E}' | '\u{200F}')
}

#[cfg(test)]
mod tests {
    use super::escape_controls;

    #[test]
    fn nothing_that_drives_or_reorders_a_terminal_survives() {
        let attacks = [
            "\x1b]52;c;cm0gLXJmIH4=\x07", // OSC 52: write the clipboard
            "\x1b]8;;https://evil\x1b\\click\x1b]8;;\x1b\\", // OSC 8: a disguised link
            "\u{9b}31m",                  // C1 CSI
            "\u{9d}52;c;x\u{9c}",         // C1 OSC
            "safe\u{202E}txt.exe",        // right-to-left override
            "\u{2066}isolate\u{2069}",
            "a\rb",
        ];
        for a in attacks {
            let e = escape_controls(a, true);
            assert!(
                !e.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
                    && !e.contains(['\u{202E}', '\u{2066}', '\u{2069}']),
                "{a:?} -> {e:?}"
            );
        }
        assert_eq!(escape_controls("a\nb\tc", true), "a\nb\tc");
        assert_eq!(escape_controls("a\nb", false), "a\\nb");
        assert_eq!(escape_controls("héllo → ok", false), "héllo → ok");
    }
}
