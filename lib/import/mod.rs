//! Import: other tools' transcripts as planned `ag` sessions (DESIGN §9).
//!
//! Pure: bytes of one file in, [`Parsed`] out — the sessions it holds, each with its source
//! (which tool, which session id, which version), its metadata and its chunks, fully formed
//! (ids, turns, steps, timestamps). Chunk and turn ids are derived from the source (its session
//! id and the line or item they come from), so parsing a file again gives the same ids, and
//! parsing a file that has grown gives the old chunks first: the store appends only what it
//! does not have yet. Formats: Claude Code session files ([`claude`]), Codex rollouts
//! ([`codex`]) and `ag-log export --format ndjson` files ([`ndjson`]).

pub(crate) mod claude;
pub(crate) mod codex;
pub(crate) mod ndjson;
mod plan;

#[cfg(test)]
mod fold_check;

use std::fmt;

use serde_json::Value;

use crate::log::NewChunk;

pub(crate) use plan::stable_id;

/// Which tool wrote a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceKind {
    ClaudeCode,
    Codex,
    /// An `ag-log export --format ndjson` file.
    Ag,
}

impl SourceKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SourceKind::ClaudeCode => "claude-code",
            SourceKind::Codex => "codex",
            SourceKind::Ag => "ag",
        }
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a planned session comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Source {
    pub(crate) kind: SourceKind,
    /// The source's own session id (for sidechains: the parent's id and the sidechain's root).
    pub(crate) source_id: String,
    /// The version of the tool that wrote it, when the file says.
    pub(crate) tool_version: Option<String>,
    /// Claude Code: the leaf whose branch was taken as the conversation.
    pub(crate) leaf: Option<String>,
    /// The source id of the session this one is a subagent of.
    pub(crate) parent_source_id: Option<String>,
}

/// One session as the file holds it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedSession {
    pub(crate) source: Source,
    /// `subagent` for sidechains, `chat` otherwise (ag exports keep theirs).
    pub(crate) kind: String,
    pub(crate) title: String,
    /// `PROVIDER/MODEL` when the source names a model `ag` can reach.
    pub(crate) model: Option<String>,
    pub(crate) cwd: Option<String>,
    /// Unix ms of the first line, when known.
    pub(crate) created_at: Option<i64>,
    /// ag exports: the session id to keep, when the store does not have it yet.
    pub(crate) keep_id: Option<String>,
    /// ag exports: the rest of the session row (agent, policy).
    pub(crate) agent: Option<String>,
    pub(crate) policy: Option<Value>,
    /// Every chunk has `id`, `turn`, `step` and `ts` set.
    pub(crate) chunks: Vec<NewChunk>,
    /// Source lines that gave no chunk: bookkeeping, display events, other branches,
    /// malformed lines.
    pub(crate) skipped: usize,
}

/// A line that could not be read; the rest of the file still is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LineProblem {
    /// 1-based.
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// What one file holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Parsed {
    pub(crate) sessions: Vec<PlannedSession>,
    pub(crate) problems: Vec<LineProblem>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ImportError {
    #[error("not a Claude Code session file, a Codex rollout or an ag export ({0})")]
    UnknownFormat(String),
    #[error("not a {expected} file ({why})")]
    WrongFormat { expected: SourceKind, why: String },
}

/// Split a file into numbered lines (1-based), lossily decoded: a stray invalid byte costs a
/// replacement character, not the line. Blank lines are left out.
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, std::borrow::Cow<'_, str>)> {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix(b"\r").unwrap_or(l)))
        .filter(|(_, l)| l.iter().any(|b| !b.is_ascii_whitespace()))
        .map(|(i, l)| (i, String::from_utf8_lossy(l)))
}

/// Parse one line as a JSON object, or say why not.
pub(crate) fn object(line: &str) -> Result<serde_json::Map<String, Value>, String> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!(
            "expected a JSON object, found {}",
            crate::log::json_kind(&other)
        )),
        Err(e) => Err(format!("malformed JSON: {e}")),
    }
}

/// Which format a file is in, from its first readable lines.
/// A person's text as they typed it, where Claude Code recorded a slash command
/// (`<command-name>/model</command-name><command-args>…</command-args>`) or what a local
/// command printed (`<local-command-stdout>…</local-command-stdout>`): `/model ARGS`, and
/// `output of the command: …` with its terminal colours taken out. Other text is kept.
pub(crate) fn typed_text(text: &str) -> String {
    let tag = |name: &str| -> Option<&str> {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let start = text.find(&open)? + open.len();
        let end = start + text[start..].find(&close)?;
        Some(text[start..end].trim())
    };
    if let Some(cmd) = tag("command-name") {
        return match tag("command-args").filter(|a| !a.is_empty()) {
            Some(args) => format!("{cmd} {args}"),
            None => cmd.to_string(),
        };
    }
    if let Some(out) = tag("local-command-stdout") {
        return format!("output of the command: {}", without_sgr(out));
    }
    text.to_string()
}

/// `s` without ANSI colour sequences (`ESC [ … m`).
fn without_sgr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("\u{1b}[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find(|c: char| !(c.is_ascii_digit() || c == ';')) {
            Some(j) if after[j..].starts_with('m') => rest = &after[j + 1..],
            _ => {
                out.push_str(&rest[i..i + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

pub(crate) fn detect(bytes: &[u8]) -> Result<SourceKind, ImportError> {
    let mut seen = 0;
    let mut first_problem = None;
    for (n, line) in lines(bytes).take(64) {
        let obj = match object(&line) {
            Ok(o) => o,
            Err(e) => {
                first_problem.get_or_insert(format!("line {n}: {e}"));
                continue;
            }
        };
        seen += 1;
        if let Some(kind) = kind_of(&obj) {
            return Ok(kind);
        }
    }
    Err(ImportError::UnknownFormat(match (seen, first_problem) {
        (_, Some(p)) => p,
        (0, None) => "the file is empty".into(),
        _ => format!("none of its first {seen} lines looks like either"),
    }))
}

fn kind_of(obj: &serde_json::Map<String, Value>) -> Option<SourceKind> {
    let ty = obj.get("type").and_then(Value::as_str);
    if obj.contains_key("ag_export") {
        return Some(SourceKind::Ag);
    }
    if obj.get("payload").is_some_and(Value::is_object)
        && matches!(
            ty,
            Some("session_meta" | "response_item" | "turn_context" | "event_msg" | "compacted")
        )
    {
        return Some(SourceKind::Codex);
    }
    if obj.contains_key("sessionId")
        || (matches!(ty, Some("user" | "assistant")) && obj.contains_key("parentUuid"))
        || (ty == Some("summary") && obj.contains_key("leafUuid"))
        || (ty == Some("file-history-snapshot") && obj.contains_key("snapshot"))
    {
        return Some(SourceKind::ClaudeCode);
    }
    None
}

/// Parse a file as `kind` (`None`: detect it). `name` is what problems and ids call it when
/// the file does not name its session (a file name, not a path, so a moved file is the same
/// source).
pub(crate) fn parse(
    kind: Option<SourceKind>,
    name: &str,
    bytes: &[u8],
) -> Result<Parsed, ImportError> {
    let kind = match kind {
        Some(k) => k,
        None => detect(bytes)?,
    };
    match kind {
        SourceKind::ClaudeCode => claude::parse(name, bytes),
        SourceKind::Codex => codex::parse(name, bytes),
        SourceKind::Ag => ndjson::parse(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_commands_read_as_typed_and_their_output_without_colours() {
        assert_eq!(
            typed_text("<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>"),
            "/model"
        );
        assert_eq!(
            typed_text("<command-message>x is running…</command-message>\n<command-name>/orchestrator</command-name>\n<command-args>update CLAUDE.md</command-args>"),
            "/orchestrator update CLAUDE.md"
        );
        assert_eq!(
            typed_text("<local-command-stdout>Kept model as \u{1b}[1mDefault\u{1b}[22m</local-command-stdout>"),
            "output of the command: Kept model as Default"
        );
        assert_eq!(typed_text("plain <b>text</b>"), "plain <b>text</b>");
    }

    #[test]
    fn detects_each_format_and_refuses_others() {
        let claude = br#"{"type":"user","parentUuid":null,"uuid":"u1","sessionId":"s","message":{"role":"user","content":"hi"}}"#;
        assert_eq!(detect(claude), Ok(SourceKind::ClaudeCode));
        let codex =
            br#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}"#;
        assert_eq!(detect(codex), Ok(SourceKind::Codex));
        let ag = br#"{"ag_export":1,"session":{"id":"x"}}"#;
        assert_eq!(detect(ag), Ok(SourceKind::Ag));
        let e = detect(b"{\"hello\":1}\n").unwrap_err();
        assert!(e.to_string().contains("first 1 lines"), "{e}");
        let e = detect(b"\x89PNG\r\n\x1a\n\0\0").unwrap_err();
        assert!(e.to_string().contains("line 1: malformed JSON"), "{e}");
        assert!(detect(b"").unwrap_err().to_string().contains("empty"));
    }

    fn fixture(rel: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/transcripts")
            .join(rel);
        std::fs::read(p).unwrap()
    }

    /// Fixtures whose history only grows (no rewind): any prefix of the file parses into a
    /// prefix of the whole file's chunks, which is what incremental import relies on.
    const GROWING: &[&str] = &[
        "claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        "claude-code/3fb74381-1bf4-475e-8c6f-442d872b1bcf.jsonl",
        "claude-code/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
        "claude-code/55604662-cf2a-4331-851a-ec234028f8ca.jsonl",
        "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
        "codex/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
        "codex/codemie-turn-spawn-skill.jsonl",
    ];

    /// A file being followed can stop at any line end: every one in the first 200 KiB, and
    /// every eighth beyond (re-parsing a large file at each of its lines is slow in a debug
    /// build).
    #[test]
    fn every_prefix_of_a_file_parses_into_a_prefix_of_its_chunks() {
        for name in GROWING {
            let bytes = fixture(name);
            let file = name.rsplit('/').next().unwrap();
            let whole = parse(None, file, &bytes).unwrap();
            let ends = bytes.iter().enumerate().filter(|(_, &b)| b == b'\n');
            let cuts = ends
                .map(|(i, _)| i + 1)
                .enumerate()
                .filter(|&(n, cut)| cut <= 200 << 10 || n % 8 == 0);
            for (_, cut) in cuts {
                // A prefix of bookkeeping lines alone may not say which tool wrote it yet.
                let part = parse(None, file, &bytes[..cut]).unwrap_or_default();
                for p in &part.sessions {
                    let w = whole
                        .sessions
                        .iter()
                        .find(|w| w.source.source_id == p.source.source_id)
                        .expect("every session of the prefix is in the whole");
                    assert!(p.chunks.len() <= w.chunks.len(), "{name} cut at {cut}");
                    assert!(
                        p.chunks[..] == w.chunks[..p.chunks.len()],
                        "{name} cut at {cut}: the prefix's chunks differ from the whole's"
                    );
                }
            }
        }
    }

    #[test]
    fn lines_are_numbered_from_one_and_survive_bad_bytes() {
        let got: Vec<(usize, String)> = lines(b"a\n\n\xffb\r\n  \nc")
            .map(|(n, l)| (n, l.into_owned()))
            .collect();
        assert_eq!(
            got,
            vec![(1, "a".into()), (3, "\u{fffd}b".into()), (5, "c".into())]
        );
    }
}
