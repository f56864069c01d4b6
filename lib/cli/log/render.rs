//! How chunks look to people in a terminal: a compact transcript (Markdown is `export`'s).

use crate::cli::{escape_controls, Out};
pub(crate) use crate::export::{clip, markdown};
use crate::export::{result_text, system_line};
use crate::log::{Chunk, ChunkData};

/// Remembers the last turn printed, so a header appears when a new one starts.
#[derive(Default)]
pub(crate) struct Transcript {
    turn: Option<String>,
}

impl Transcript {
    pub(crate) fn chunk(&mut self, out: &mut Out, c: &Chunk) -> std::io::Result<()> {
        if self.turn.as_deref() != Some(c.turn.as_str()) {
            self.turn = Some(c.turn.clone());
            let header = format!(
                "── turn {} · {} ──",
                crate::ids::turn_handle(&c.turn),
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
                out.paint("33", &format!("→ {}", escape_controls(name, false))),
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
                    out.paint("33", &format!("← {}{mark}", escape_controls(name, false))),
                    escape_controls(&clip(&result_text(result), 200), true)
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
            ChunkData::System(m) => out.dim(&escape_controls(&system_line(m), false)),
            ChunkData::Image { media_type, data } => format!(
                "{}: {}",
                out.paint("1;36", "user"),
                escape_controls(&crate::log::image::label(media_type, data), false)
            ),
            ChunkData::Peer {
                messages,
                omitted,
                roster,
                ..
            } => {
                let lines = peer_lines(out, messages, *omitted);
                // A chunk that only says who is here now reads as that, not as a blank line.
                match roster {
                    Some(r) if lines.is_empty() => out.dim(&roster_line(r)),
                    _ => lines,
                }
            }
        };
        out.line(&format!("{tag} {body}"))
    }
}

/// `in the room now: NAME, NAME` (or `nobody else`).
fn roster_line(roster: &[crate::log::PeerPresent]) -> String {
    let names: Vec<String> = roster
        .iter()
        .map(|p| escape_controls(&format!("{} ({})", p.name, p.handle), false))
        .collect();
    if names.is_empty() {
        "in the room now: nobody else".into()
    } else {
        format!("in the room now: {}", names.join(", "))
    }
}

/// A peer chunk's lines: one per message, with how many more were held back.
fn peer_lines(out: &Out, messages: &[crate::log::PeerMessage], omitted: u64) -> String {
    let mut s = String::new();
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&format!(
            "{} {}",
            out.paint("35", &format!("peer {}:", escape_controls(&m.from, false))),
            escape_controls(&m.text, true)
        ));
    }
    if omitted > 0 {
        s.push_str(&format!("\n({omitted} more)"));
    }
    s
}
