//! How chunks look to people: a compact transcript, or Markdown.

use serde_json::Value;

use crate::cli::{escape_controls, Out};
use crate::log::{Chunk, ChunkData};

/// Shorten long text for one-line displays.
pub fn clip(s: &str, max: usize) -> String {
    let one_line = s.replace('\n', " ⏎ ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn result_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Remembers the last turn printed, so a header appears when a new one starts.
#[derive(Default)]
pub struct Transcript {
    turn: Option<String>,
}

impl Transcript {
    pub fn chunk(&mut self, out: &mut Out, c: &Chunk) -> std::io::Result<()> {
        if self.turn.as_deref() != Some(c.turn.as_str()) {
            self.turn = Some(c.turn.clone());
            let header = format!(
                "── turn {} · {} ──",
                crate::ids::short(&c.turn),
                crate::clock::iso(c.ts)
            );
            out.line(&out.dim(&header))?;
        }
        let tag = out.dim(&format!("#{} s{}", c.seq, c.step));
        let body = match &c.data {
            ChunkData::Text { text } => {
                let who = if c.role == crate::log::Role::User {
                    out.paint("1;36", "user")
                } else {
                    out.paint("1;32", "assistant")
                };
                format!("{who}: {}", escape_controls(text, true))
            }
            ChunkData::Thinking { text, redacted, .. } => {
                if redacted.is_some() {
                    out.dim("thinking: [redacted]")
                } else {
                    out.dim(&format!("thinking: {}", escape_controls(text, true)))
                }
            }
            ChunkData::ToolCall {
                name, arguments, ..
            } => format!(
                "{} {}",
                out.paint("33", &format!("→ {name}")),
                escape_controls(&clip(&arguments.to_string(), 200), false)
            ),
            ChunkData::ToolResult {
                name,
                result,
                is_error,
                synthetic,
                ..
            } => {
                let mark = match (is_error, synthetic) {
                    (_, true) => " (synthetic)",
                    (true, false) => " (error)",
                    _ => "",
                };
                format!(
                    "{} {}",
                    out.paint("33", &format!("← {name}{mark}")),
                    escape_controls(&clip(&result_text(result), 200), false)
                )
            }
            ChunkData::Error { message, status } => out.paint(
                "31",
                &format!(
                    "error{}: {}",
                    status.map(|s| format!(" {s}")).unwrap_or_default(),
                    escape_controls(message, true)
                ),
            ),
            ChunkData::System(m) => out.dim(&system_line(m)),
            ChunkData::Peer {
                messages, omitted, ..
            } => {
                let mut s = String::new();
                for (i, m) in messages.iter().enumerate() {
                    if i > 0 {
                        s.push('\n');
                    }
                    s.push_str(&format!(
                        "{} {}",
                        out.paint("35", &format!("peer {}:", m.from)),
                        escape_controls(&m.text, true)
                    ));
                }
                if *omitted > 0 {
                    s.push_str(&format!("\n({omitted} more)"));
                }
                s
            }
        };
        out.line(&format!("{tag} {body}"))
    }
}

fn system_line(m: &serde_json::Map<String, Value>) -> String {
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("system");
    match kind {
        "turn_end" => {
            let reason = m.get("stop_reason").and_then(Value::as_str).unwrap_or("?");
            let u = m.get("usage");
            let n = |k: &str| {
                u.and_then(|u| u.get(k))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            format!(
                "turn end: {reason} (in {} out {} cache read {} write {})",
                n("input"),
                n("output"),
                n("cache_read"),
                n("cache_write")
            )
        }
        "attempt_abandoned" => format!(
            "attempt abandoned: {}",
            m.get("reason").and_then(Value::as_str).unwrap_or("")
        ),
        _ => {
            let mut rest = m.clone();
            rest.remove("kind");
            format!("{kind}: {}", clip(&Value::Object(rest).to_string(), 200))
        }
    }
}

/// One chunk as Markdown.
pub fn markdown(c: &Chunk) -> String {
    let fence = |s: &str, lang: &str| {
        let ticks = if s.contains("```") { "~~~~" } else { "```" };
        format!("{ticks}{lang}\n{s}\n{ticks}")
    };
    match &c.data {
        ChunkData::Text { text } => format!("## {}\n\n{text}\n", c.role),
        ChunkData::Thinking { text, redacted, .. } => {
            if redacted.is_some() {
                "> *thinking redacted*\n".to_string()
            } else {
                let quoted: Vec<String> = text.lines().map(|l| format!("> {l}")).collect();
                format!("> *thinking*\n>\n{}\n", quoted.join("\n"))
            }
        }
        ChunkData::ToolCall {
            name, arguments, ..
        } => format!(
            "**tool call** `{name}`\n\n{}\n",
            fence(
                &serde_json::to_string_pretty(arguments).unwrap_or_default(),
                "json"
            )
        ),
        ChunkData::ToolResult {
            name,
            result,
            is_error,
            ..
        } => format!(
            "**tool result** `{name}`{}\n\n{}\n",
            if *is_error { " (error)" } else { "" },
            fence(&result_text(result), "")
        ),
        ChunkData::Error { message, .. } => format!("> **error:** {message}\n"),
        ChunkData::System(m) => format!("*{}*\n", system_line(m)),
        ChunkData::Peer { messages, .. } => {
            let lines: Vec<String> = messages
                .iter()
                .map(|m| format!("> **{}:** {}", m.from, m.text))
                .collect();
            format!("{}\n", lines.join("\n"))
        }
    }
}
