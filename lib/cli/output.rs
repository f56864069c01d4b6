//! One place decides what reaches the terminal: colour, quiet and verbose, and escaping of
//! untrusted text (model output, room lines) so it cannot drive the terminal.

use std::io::{self, BufWriter, Stdout, Write};

pub struct Out {
    pub color: bool,
    pub quiet: bool,
    pub verbose: bool,
    stdout: BufWriter<Stdout>,
}

impl Out {
    pub fn new(color: bool, quiet: bool, verbose: bool) -> Out {
        Out {
            color,
            quiet,
            verbose,
            stdout: BufWriter::with_capacity(64 * 1024, io::stdout()),
        }
    }

    /// A line of data on stdout.
    pub fn line(&mut self, s: &str) -> io::Result<()> {
        self.stdout.write_all(s.as_bytes())?;
        self.stdout.write_all(b"\n")
    }

    pub fn raw(&mut self, s: &str) -> io::Result<()> {
        self.stdout.write_all(s.as_bytes())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.stdout.flush()
    }

    /// A notice on stderr, unless quiet.
    pub fn note(&self, s: &str) {
        if !self.quiet {
            eprintln!("{}", escape_controls(s, true));
        }
    }

    /// Detail on stderr, only with -v.
    pub fn detail(&self, s: &str) {
        if self.verbose && !self.quiet {
            eprintln!("{}", escape_controls(s, true));
        }
    }

    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    pub fn paint(&self, sgr: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{sgr}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        let _ = self.stdout.flush();
    }
}

/// Escape control characters (ESC, CR, BEL, …) so untrusted text prints as text. Newlines and
/// tabs stay when `keep_newlines`.
pub fn escape_controls(s: &str, keep_newlines: bool) -> String {
    if !s.chars().any(|c| c.is_control()) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\t' if keep_newlines => out.push(c),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}
