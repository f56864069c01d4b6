//! The HTML page's small helpers: escaping (every piece of untrusted text goes through
//! [`esc`]), a light syntax highlighter (strings, comments, numbers, keywords: enough to read
//! code, done at export time so the page needs no script), and line diffs of edits.

/// Text as HTML text or attribute value: `& < > " '` escaped.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    esc_into(&mut out, s);
    out
}

pub(crate) fn esc_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than newline and tab are shown, not obeyed.
            c if c.is_control() && c != '\n' && c != '\t' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
}

const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "def",
    "default",
    "defmodule",
    "defp",
    "do",
    "elif",
    "else",
    "end",
    "enum",
    "except",
    "export",
    "extends",
    "false",
    "fi",
    "finally",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "let",
    "match",
    "mod",
    "module",
    "mut",
    "new",
    "nil",
    "None",
    "null",
    "package",
    "pub",
    "raise",
    "return",
    "self",
    "static",
    "struct",
    "switch",
    "then",
    "this",
    "throw",
    "trait",
    "true",
    "True",
    "False",
    "try",
    "type",
    "typeof",
    "use",
    "var",
    "where",
    "while",
    "with",
    "yield",
];

/// Whether `#` starts a comment in this language (else `//` and `/* */` do).
fn hash_comments(lang: &str) -> bool {
    matches!(
        lang,
        "py" | "python"
            | "sh"
            | "bash"
            | "shell"
            | "zsh"
            | "console"
            | "toml"
            | "yaml"
            | "yml"
            | "rb"
            | "ruby"
            | "r"
            | "ex"
            | "exs"
            | "elixir"
            | "make"
            | "makefile"
            | "dockerfile"
            | "conf"
            | "ini"
            | "perl"
            | "pl"
    )
}

/// What a piece of code is, for highlighting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Comment,
    Str,
    Num,
    Keyword,
}

impl Class {
    fn css(self) -> &'static str {
        match self {
            Class::Comment => "c",
            Class::Str => "s",
            Class::Num => "n",
            Class::Keyword => "k",
        }
    }
}

/// Code cut into pieces, each with its class (`None`: plain). The HTML page and the chat's
/// terminal highlight from the same pieces.
pub(crate) fn tokens<'t>(text: &'t str, lang: &str) -> Vec<(Option<Class>, &'t str)> {
    let lang = lang.to_ascii_lowercase();
    let hash = hash_comments(&lang);
    let mut out: Vec<(Option<Class>, &'t str)> = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let rest = &text[i..];
        let (class, end) = if (hash && c == b'#') || (!hash && rest.starts_with("//")) {
            let e = rest.find('\n').map_or(b.len(), |n| i + n);
            (Some(Class::Comment), e)
        } else if !hash && rest.starts_with("/*") {
            let e = rest[2..].find("*/").map_or(b.len(), |n| i + n + 4);
            (Some(Class::Comment), e)
        } else if c == b'"' || c == b'\'' || c == b'`' {
            let mut j = i + 1;
            while j < b.len() && b[j] != c && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            (Some(Class::Str), (j + 1).min(b.len()))
        } else if c.is_ascii_digit() {
            let e = i + rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '_'))
                .unwrap_or(rest.len());
            (Some(Class::Num), e)
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let e = i + rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            let word = &text[i..e];
            (KEYWORDS.contains(&word).then_some(Class::Keyword), e)
        } else {
            let ch = rest.chars().next().expect("not at the end");
            (None, i + ch.len_utf8())
        };
        // A string cut inside a multi-byte character would not be a boundary: never happens,
        // since every class above ends on an ASCII byte or the end of the text.
        let end = end.max(i + 1).min(b.len());
        match out.last_mut() {
            // Plain pieces in a row are one piece.
            Some((None, prev)) if class.is_none() => {
                let start = prev.as_ptr() as usize - text.as_ptr() as usize;
                *prev = &text[start..end];
            }
            _ => out.push((class, &text[i..end])),
        }
        i = end;
    }
    out
}

/// Code as highlighted, escaped HTML (without the `<pre>`).
pub(crate) fn code(text: &str, lang: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for (class, piece) in tokens(text, lang) {
        match class {
            Some(class) => {
                out.push_str("<span class=\"");
                out.push_str(class.css());
                out.push_str("\">");
                esc_into(&mut out, piece);
                out.push_str("</span>");
            }
            None => esc_into(&mut out, piece),
        }
    }
    out
}

/// The language of a file, from its extension, for highlighting.
pub(crate) fn lang_of(path: &str) -> &str {
    path.rsplit('.')
        .next()
        .filter(|e| e.len() <= 10 && *e != path)
        .unwrap_or("")
}

/// A line diff of `old` → `new` as escaped HTML lines (`-`, `+`, ` ` prefixes in spans).
pub(crate) fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut out = String::new();
    let line = |out: &mut String, class: &str, mark: char, l: &str| {
        out.push_str(&format!("<span class=\"{class}\">{mark} "));
        esc_into(out, l);
        out.push_str("</span>\n");
    };
    // LCS table; edits beyond a size get the plain "all removed, all added" form.
    if a.len() * b.len() > 250_000 {
        a.iter().for_each(|l| line(&mut out, "del", '-', l));
        b.iter().for_each(|l| line(&mut out, "add", '+', l));
        return out;
    }
    let mut t = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            t[i][j] = if a[i] == b[j] {
                t[i + 1][j + 1] + 1
            } else {
                t[i + 1][j].max(t[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            line(&mut out, "ctx", ' ', a[i]);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || t[i + 1][j] >= t[i][j + 1]) {
            line(&mut out, "del", '-', a[i]);
            i += 1;
        } else {
            line(&mut out, "add", '+', b[j]);
            j += 1;
        }
    }
    out
}

/// A patch (unified diff, or Codex's `*** Begin Patch`) with its lines coloured by prefix.
pub(crate) fn patch(text: &str) -> String {
    let mut out = String::new();
    for l in text.lines() {
        let class = match l.as_bytes().first() {
            Some(b'+') if !l.starts_with("+++") => "add",
            Some(b'-') if !l.starts_with("---") => "del",
            Some(b'@') | Some(b'*') => "hunk",
            _ => "ctx",
        };
        out.push_str(&format!("<span class=\"{class}\">"));
        esc_into(&mut out, l);
        out.push_str("</span>\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup() {
        let s = esc("<script>alert('x')</script></textarea>\"&\u{1b}[1m");
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('"') && !s.contains('\''));
        assert!(s.contains("&lt;script&gt;") && s.contains("\\u{1b}"), "{s}");
    }

    #[test]
    fn highlighting_marks_tokens_and_escapes_them() {
        let h = code("let x = \"<b>\"; // 1 < 2\nfn f() {}", "rust");
        assert!(h.contains("<span class=\"k\">let</span>"), "{h}");
        assert!(
            h.contains("<span class=\"s\">&quot;&lt;b&gt;&quot;</span>"),
            "{h}"
        );
        assert!(h.contains("<span class=\"c\">// 1 &lt; 2</span>"), "{h}");
        assert!(code("# note\nx = 1", "py").contains("<span class=\"c\"># note</span>"));
        // Unterminated strings and comments, multi-byte text: no panic, nothing lost.
        let odd = "\"never closed /* 日本語 ✓";
        assert!(code(odd, "js").contains("日本語 ✓"));
    }

    #[test]
    fn diffs_show_what_changed() {
        let d = diff("a\nb\nc", "a\nB\nc");
        assert_eq!(
            d,
            "<span class=\"ctx\">  a</span>\n<span class=\"del\">- b</span>\n<span class=\"add\">+ B</span>\n<span class=\"ctx\">  c</span>\n"
        );
        assert!(
            patch("*** Begin Patch\n+<x>\n-y").contains("<span class=\"add\">+&lt;x&gt;</span>")
        );
    }
}
