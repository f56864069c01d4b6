//! Markdown: a session's transcript as text people read and paste (`ag-log cat --format md`
//! and `ag-log export --format md`), and the one-line forms of records shared with the
//! terminal transcript.

use serde_json::Value;

use crate::log::{Chunk, ChunkData};

/// Shorten long text for one-line displays; line breaks show as `⏎`.
pub(crate) fn clip(s: &str, max: usize) -> String {
    crate::text::clip_chars(&s.replace('\n', " ⏎ "), max)
}
/// A tool result as text: a string as it is, anything else as its JSON.
pub(crate) fn result_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
/// A system record on one line: `turn end: …`, `attempt abandoned: …`, `KIND: {…}`.
pub(crate) fn system_line(m: &serde_json::Map<String, Value>) -> String {
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("system");
    match kind {
        crate::log::TURN_END => {
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
        "reasoning" => format!(
            "reasoning: encrypted by the provider ({} bytes, kept in the log)",
            m.get("encrypted_content")
                .and_then(Value::as_str)
                .map_or(0, str::len)
        ),
        "web_search" => format!(
            "web search: {}",
            clip(
                &m.get("action")
                    .map(|a| a.get("query").unwrap_or(a).to_string())
                    .unwrap_or_default(),
                200
            )
        ),
        "compaction" => format!(
            "compaction ({}): {}",
            m.get("trigger").and_then(Value::as_str).unwrap_or("?"),
            clip(m.get("summary").and_then(Value::as_str).unwrap_or(""), 200)
        ),
        "approval" => {
            let f = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("?");
            let reason = match m.get("reason").and_then(Value::as_str) {
                Some(r) if !r.is_empty() => format!(": {}", clip(r, 200)),
                _ => String::new(),
            };
            let what = match f("decision") {
                "allow-once" => "allowed once",
                "allow-session" => "allowed for the session",
                "deny" => "denied",
                other => other,
            };
            format!("approval: {} {what} by {}{reason}", f("tool"), f("by"))
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
pub(crate) fn markdown(c: &Chunk) -> String {
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
        ChunkData::Image { media_type, data } => {
            format!("**user** {}\n", crate::log::image::label(media_type, data))
        }
        ChunkData::Peer { messages, .. } => {
            let lines: Vec<String> = messages
                .iter()
                .map(|m| format!("> **{}:** {}", m.from, m.text))
                .collect();
            format!("{}\n", lines.join("\n"))
        }
    }
}
