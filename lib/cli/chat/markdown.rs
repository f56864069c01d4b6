//! Markdown for people, a line at a time, as the answer streams: headings bold, list bullets,
//! quotes with a bar, code blocks highlighted by the HTML export's highlighter, `code`,
//! **bold** and *emphasis* inline. Every character the model wrote is escaped before a colour
//! is added; without colour (`NO_COLOR`, `TERM=dumb`, `--color never`) a line is the model's
//! text as it wrote it.

use crate::cli::{escape_controls, paint as sgr};
use crate::export::highlight::{tokens, Class};

/// Renders lines in order, remembering whether it is inside a fenced code block.
#[derive(Debug, Default)]
pub(super) struct Markdown {
    color: bool,
    /// The open fence (its marker and language), inside a code block.
    fence: Option<(String, String)>,
}

impl Markdown {
    pub(super) fn new(color: bool) -> Markdown {
        Markdown { color, fence: None }
    }

    /// One line of the answer (without its newline), as the terminal shows it.
    pub(super) fn line(&mut self, raw: &str) -> String {
        let text = escape_controls(raw, false);
        if !self.color {
            return text;
        }
        let trimmed = text.trim_start();
        if let Some((marker, lang)) = &self.fence {
            if trimmed.starts_with(marker.as_str()) && trimmed.trim_end() == marker {
                self.fence = None;
                return sgr(true, "2", &text);
            }
            let painted = self.code(&text, lang);
            return format!("  {painted}");
        }
        for marker in ["```", "~~~"] {
            if let Some(lang) = trimmed.strip_prefix(marker) {
                let lang = lang.trim().trim_start_matches(['`', '~']).to_string();
                let fence = trimmed[..trimmed.len() - lang.len()].trim_end().to_string();
                self.fence = Some((fence, lang));
                return sgr(true, "2", &text);
            }
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            let title = inline(&trimmed[hashes + 1..], true);
            return match hashes {
                1 => sgr(true, "1;4", &title),
                _ => sgr(true, "1", &title),
            };
        }
        let indent = &text[..text.len() - trimmed.len()];
        if let Some(rest) = ["- ", "* ", "+ "]
            .iter()
            .find_map(|b| trimmed.strip_prefix(b))
        {
            return format!("{indent}• {}", inline(rest, true));
        }
        if let Some(rest) = trimmed.strip_prefix("> ").or(trimmed.strip_prefix(">")) {
            return format!("{indent}{} {}", sgr(true, "2", "│"), sgr(true, "3", rest));
        }
        if trimmed.len() >= 3 && trimmed.chars().all(|c| c == '-' || c == '*' || c == '_') {
            return sgr(true, "2", &"─".repeat(40));
        }
        inline(&text, true)
    }

    /// Whether a code block is open (its closing fence has not come).
    #[cfg(test)]
    fn in_code(&self) -> bool {
        self.fence.is_some()
    }

    fn code(&self, line: &str, lang: &str) -> String {
        let mut out = String::new();
        for (class, piece) in tokens(line, lang) {
            let code = match class {
                Some(Class::Comment) => "2",
                Some(Class::Str) => "32",
                Some(Class::Num) => "35",
                Some(Class::Keyword) => "34",
                None => "",
            };
            match code {
                "" => out.push_str(piece),
                c => out.push_str(&sgr(true, c, piece)),
            }
        }
        out
    }
}

/// `code`, **bold** and *emphasis* (or _emphasis_) inside a line; a marker that is not closed
/// on the line stays as it is.
fn inline(s: &str, color: bool) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while !rest.is_empty() {
        let next = rest.find(['`', '*', '_']);
        let Some(at) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let (marker, code) = if rest.starts_with('`') {
            ("`", "36")
        } else if rest.starts_with("**") {
            ("**", "1")
        } else if rest.starts_with("__") {
            ("__", "1")
        } else if rest.starts_with('*') {
            ("*", "3")
        } else {
            ("_", "3")
        };
        let body = &rest[marker.len()..];
        // An emphasis marker inside a word (snake_case) or before a space is text.
        let inside_word = marker == "_" && out.chars().last().is_some_and(char::is_alphanumeric);
        let opens = !(body.starts_with(' ') || inside_word);
        match body.find(marker).filter(|&e| e > 0 && opens) {
            Some(end) => {
                out.push_str(&sgr(color, code, &body[..end]));
                rest = &body[end + marker.len()..];
            }
            None => {
                out.push_str(marker);
                rest = body;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_without_colour_and_escaped_always() {
        let mut m = Markdown::new(false);
        assert_eq!(m.line("# Title with **bold**"), "# Title with **bold**");
        assert_eq!(
            m.line("evil \x1b]2;x\x07 text"),
            "evil \\u{1b}]2;x\\u{7} text"
        );
        let mut m = Markdown::new(true);
        assert!(!m.line("evil \x1b[31m").contains("\x1b[31m"));
    }

    #[test]
    fn blocks_and_inline_marks() {
        let mut m = Markdown::new(true);
        assert_eq!(m.line("## Plan"), "\x1b[1mPlan\x1b[0m");
        assert_eq!(m.line("- use `ag`"), "• use \x1b[36mag\x1b[0m");
        assert_eq!(
            m.line("a **b** and *c*"),
            "a \x1b[1mb\x1b[0m and \x1b[3mc\x1b[0m"
        );
        assert_eq!(
            m.line("snake_case_name and 2 * 3"),
            "snake_case_name and 2 * 3"
        );
        assert_eq!(m.line("```rust"), "\x1b[2m```rust\x1b[0m");
        assert!(m.in_code());
        assert_eq!(
            m.line("let x = 1;"),
            "  \x1b[34mlet\x1b[0m x = \x1b[35m1\x1b[0m;"
        );
        assert_eq!(m.line("# not a heading"), "  # not a heading");
        assert_eq!(m.line("```"), "\x1b[2m```\x1b[0m");
        assert!(!m.in_code());
    }
}
