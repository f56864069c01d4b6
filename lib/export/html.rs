//! The HTML page: one self-contained file (inline CSS, no script, nothing fetched: a
//! Content-Security-Policy forbids it), readable on a phone. Turns in order; thinking and tool
//! calls fold away under `<details>`; a call shows its result beneath it, edits as diffs,
//! code highlighted. Every piece of text from the log goes through [`esc`].

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::highlight::{code, diff, esc, esc_into, lang_of, patch};
use super::{metadata, Document};
use crate::log::{Chunk, ChunkData, Role};

/// Longest tool result shown in full; the rest is counted.
const MAX_RESULT: usize = 20_000;

const CSS: &str = "\
:root{color-scheme:light dark;--bg:#fff;--fg:#1d1f21;--mute:#6a737d;--line:#e1e4e8;--user:#eef6ff;\
--tool:#f6f8fa;--add:#e6ffed;--del:#ffeef0;--err:#d73a49;--k:#a626a4;--s:#50a14f;--c:#8a8f98;--n:#986801}\
@media (prefers-color-scheme:dark){:root{--bg:#16181c;--fg:#e6e6e6;--mute:#9aa0a6;--line:#30343a;\
--user:#1c2633;--tool:#1e2126;--add:#12361f;--del:#3d1a1f;--err:#ff7b72;--k:#d2a8ff;--s:#a5d6a7;--c:#8b949e;--n:#f2cc60}}\
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);\
font:16px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif}\
header,main,footer{max-width:52rem;margin:0 auto;padding:0 1rem}h1{font-size:1.4rem;margin:1rem 0 .5rem;overflow-wrap:anywhere}\
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .8rem;font-size:.85rem;color:var(--mute)}\
dl.meta dd{margin:0;overflow-wrap:anywhere}section.turn{border-top:1px solid var(--line);padding:.5rem 0}\
h2{font-size:.8rem;color:var(--mute);font-weight:normal;margin:.3rem 0}\
.msg{margin:.4rem 0;padding:.5rem .7rem;border-radius:8px}.msg.user{background:var(--user)}\
.who{font-size:.75rem;color:var(--mute);text-transform:uppercase;letter-spacing:.04em}\
.text{white-space:pre-wrap;overflow-wrap:anywhere}\
pre{background:var(--tool);padding:.5rem;border-radius:6px;overflow-x:auto;font-size:.8rem;line-height:1.4;\
white-space:pre-wrap;overflow-wrap:anywhere}code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}\
details{margin:.3rem 0;border:1px solid var(--line);border-radius:6px;padding:.2rem .6rem}\
summary{cursor:pointer;font-size:.85rem;color:var(--mute);overflow-wrap:anywhere}\
details.thinking{font-style:italic}.error,.is-error summary{color:var(--err)}\
.note{font-size:.78rem;color:var(--mute);margin:.2rem 0}\
.k{color:var(--k)}.s{color:var(--s)}.c{color:var(--c);font-style:italic}.n{color:var(--n)}\
.add{background:var(--add);display:block}.del{background:var(--del);display:block}.hunk{color:var(--mute);display:block}\
.ctx{display:block}footer{font-size:.75rem;color:var(--mute);padding:1rem}";

/// The page for a document.
pub(crate) fn html(doc: &Document) -> String {
    let mut out = String::with_capacity(4096 + doc.chunks.len() * 400);
    let title = if doc.session.title.is_empty() {
        "(untitled session)"
    } else {
        &doc.session.title
    };
    out.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:; script-src 'none'; base-uri 'none'; \
         form-action 'none'\">\n",
    );
    let _ = write!(
        out,
        "<title>{} · ag</title>\n<style>{CSS}</style></head>\n<body>\n",
        esc(title)
    );
    let _ = write!(
        out,
        "<header><h1>{}</h1>\n<dl class=\"meta\">\n",
        esc(title)
    );
    for (k, v) in metadata(doc) {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    }
    out.push_str("</dl></header>\n<main>\n");
    let results: HashMap<&str, &Chunk> = doc
        .chunks
        .iter()
        .filter_map(|c| match &c.data {
            ChunkData::ToolResult { call_id, .. } => Some((call_id.as_str(), c)),
            _ => None,
        })
        .collect();
    let calls: std::collections::HashSet<&str> = doc
        .chunks
        .iter()
        .filter_map(|c| match &c.data {
            ChunkData::ToolCall { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut turn: Option<&str> = None;
    let mut n = 0;
    for c in doc.chunks {
        if turn != Some(c.turn.as_str()) {
            if turn.is_some() {
                out.push_str("</section>\n");
            }
            n += 1;
            turn = Some(&c.turn);
            let _ = writeln!(
                out,
                "<section class=\"turn\" id=\"turn-{n}\"><h2>Turn {n} · <time>{}</time></h2>",
                esc(&crate::clock::iso(c.ts))
            );
        }
        chunk(&mut out, c, &results, &calls);
    }
    if turn.is_some() {
        out.push_str("</section>\n");
    }
    let _ = write!(
        out,
        "</main>\n<footer>{} turns · exported by ag-log {}</footer>\n</body></html>\n",
        n,
        env!("CARGO_PKG_VERSION")
    );
    out
}

fn chunk(
    out: &mut String,
    c: &Chunk,
    results: &HashMap<&str, &Chunk>,
    calls: &std::collections::HashSet<&str>,
) {
    match &c.data {
        ChunkData::Text { text } => {
            let who = if c.role == Role::User {
                "user"
            } else {
                "assistant"
            };
            let _ = write!(
                out,
                "<div class=\"msg {who}\"><div class=\"who\">{who}</div>"
            );
            prose(out, text);
            out.push_str("</div>\n");
        }
        ChunkData::Thinking { text, redacted, .. } => {
            out.push_str("<details class=\"thinking\"><summary>thinking</summary>");
            if redacted.is_some() {
                out.push_str("<p class=\"note\">redacted by the provider</p>");
            } else {
                prose(out, text);
            }
            out.push_str("</details>\n");
        }
        ChunkData::ToolCall {
            call_id,
            name,
            arguments,
        } => tool_call(out, name, arguments, results.get(call_id.as_str()).copied()),
        // Results are shown under their call; one without a call stands alone.
        ChunkData::ToolResult { call_id, .. } if calls.contains(call_id.as_str()) => {}
        ChunkData::ToolResult { name, .. } => {
            let _ = write!(
                out,
                "<details class=\"tool\"><summary>← {}</summary>",
                esc(name)
            );
            tool_result(out, c);
            out.push_str("</details>\n");
        }
        ChunkData::Error { message, .. } => {
            out.push_str(
                "<div class=\"msg error\"><div class=\"who\">error</div><div class=\"text\">",
            );
            esc_into(out, message);
            out.push_str("</div></div>\n");
        }
        ChunkData::System(m) => system(out, m),
        ChunkData::Image { media_type, data } => {
            out.push_str(
                "<div class=\"msg user\"><div class=\"who\">user</div><div class=\"text\">",
            );
            esc_into(out, &crate::log::image::label(media_type, data));
            out.push_str("</div></div>\n");
        }
        ChunkData::Peer { messages, .. } => {
            for m in messages {
                let _ = write!(
                    out,
                    "<div class=\"msg peer\"><div class=\"who\">peer · {}</div>",
                    esc(&m.from)
                );
                prose(out, &m.text);
                out.push_str("</div>\n");
            }
        }
    }
}

fn system(out: &mut String, m: &serde_json::Map<String, Value>) {
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("system");
    match kind {
        "compaction" => {
            out.push_str("<details class=\"compaction\"><summary>compaction: the context was summarized</summary>");
            prose(out, m.get("summary").and_then(Value::as_str).unwrap_or(""));
            out.push_str("</details>\n");
        }
        crate::log::TURN_END => {
            let u = m.get("usage");
            let n = |k: &str| {
                u.and_then(|u| u.get(k))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            let secs = m.get("duration_ms").and_then(Value::as_i64).unwrap_or(0) as f64 / 1000.0;
            let _ = writeln!(
                out,
                "<p class=\"note\">{} · {} · in {} out {} cache {} · {secs:.1} s</p>",
                esc(m
                    .get("stop_reason")
                    .and_then(Value::as_str)
                    .unwrap_or("end")),
                esc(m.get("model").and_then(Value::as_str).unwrap_or("")),
                n("input"),
                n("output"),
                n("cache_read"),
            );
        }
        _ => {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&super::system_line(m)));
        }
    }
}

/// Text with fenced code blocks highlighted.
fn prose(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(start) = fence_start(rest) {
        let (before, after) = rest.split_at(start);
        plain(out, before);
        let ticks = after.len() - after.trim_start_matches('`').len();
        let info_end = after.find('\n').unwrap_or(after.len());
        let lang: String = after[ticks..info_end]
            .trim()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let body = &after[(info_end + 1).min(after.len())..];
        let close = "`".repeat(ticks);
        let (code_text, next) = match body.find(&format!("\n{close}")) {
            Some(e) => (&body[..e], &body[(e + 1 + ticks).min(body.len())..]),
            None => (body, ""),
        };
        let _ = write!(out, "<pre><code>{}</code></pre>", code(code_text, &lang));
        rest = next.strip_prefix('\n').unwrap_or(next);
    }
    plain(out, rest);
}

/// Where a line starting with three or more backticks begins, if any.
fn fence_start(text: &str) -> Option<usize> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("```") {
            return Some(at);
        }
        at += line.len();
    }
    None
}

fn plain(out: &mut String, text: &str) {
    if text.trim().is_empty() {
        return;
    }
    out.push_str("<div class=\"text\">");
    esc_into(out, text.trim_end_matches('\n'));
    out.push_str("</div>");
}

fn tool_call(out: &mut String, name: &str, args: &Value, result: Option<&Chunk>) {
    let is_error = matches!(
        result.map(|c| &c.data),
        Some(ChunkData::ToolResult { is_error: true, .. })
    );
    let preview = super::clip(&preview(name, args), 90);
    let _ = write!(
        out,
        "<details class=\"tool{}\"><summary>→ {} <code>{}</code></summary>",
        if is_error { " is-error" } else { "" },
        esc(name),
        esc(&preview)
    );
    tool_arguments(out, name, args);
    if let Some(r) = result {
        tool_result(out, r);
    } else {
        out.push_str("<p class=\"note\">no result in this log</p>");
    }
    out.push_str("</details>\n");
}

/// A call in one line, for its summary: what it ran, read, fetched or started.
fn preview(name: &str, args: &Value) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    match name {
        "TodoWrite" => {
            let todos = args.get("todos").and_then(Value::as_array);
            let n = todos.map_or(0, |t| t.len());
            let doing = todos
                .into_iter()
                .flatten()
                .find(|t| t["status"] == "in_progress")
                .and_then(|t| t["activeForm"].as_str().or(t["content"].as_str()));
            let done = todos
                .into_iter()
                .flatten()
                .filter(|t| t["status"] == "completed")
                .count();
            match doing {
                Some(d) => format!("{done}/{n} done · {d}"),
                None => format!("{done}/{n} done"),
            }
        }
        "WebFetch" => s("url").unwrap_or_default(),
        "BashOutput" => s("bash_id").or(s("shell_id")).unwrap_or_default(),
        "KillBash" | "KillShell" => s("shell_id").or(s("bash_id")).unwrap_or_default(),
        "spawn_agent" => match (s("agent_type"), s("message").or(s("task")).or(s("prompt"))) {
            (Some(a), Some(m)) => format!("{a}: {m}"),
            (a, m) => a.or(m).unwrap_or_default(),
        },
        _ => command_line(args)
            .or_else(|| {
                [
                    "file_path",
                    "path",
                    "pattern",
                    "description",
                    "query",
                    "url",
                ]
                .iter()
                .find_map(|k| s(k))
            })
            .unwrap_or_default(),
    }
}

/// A call's arguments as the reader wants them: edits as diffs, a written file as code, a
/// patch as a patch, a command as shell, anything else as JSON.
fn tool_arguments(out: &mut String, name: &str, args: &Value) {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let path = s("file_path").or(s("path")).unwrap_or("");
    match name.to_ascii_lowercase().as_str() {
        "edit" if s("old_string").is_some() => {
            let _ = write!(
                out,
                "<pre class=\"diff\">{}</pre>",
                diff(s("old_string").unwrap_or(""), s("new_string").unwrap_or(""))
            );
        }
        "multiedit" => {
            for e in args
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let g = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
                let _ = write!(
                    out,
                    "<pre class=\"diff\">{}</pre>",
                    diff(g("old_string"), g("new_string"))
                );
            }
        }
        "write" if s("content").is_some() => {
            let _ = write!(
                out,
                "<pre><code>{}</code></pre>",
                code(s("content").unwrap_or(""), lang_of(path))
            );
        }
        "apply_patch" => {
            let text = s("input").or(s("patch")).unwrap_or("");
            let _ = write!(out, "<pre class=\"diff\">{}</pre>", patch(text));
        }
        _ => {
            let (text, lang) = match command_line(args) {
                Some(c) => (c, "sh"),
                None => (
                    serde_json::to_string_pretty(args).unwrap_or_default(),
                    "json",
                ),
            };
            let _ = write!(out, "<pre><code>{}</code></pre>", code(&text, lang));
        }
    }
}

/// `command` (or `cmd`) as one line, whether given as a string or an argv array.
fn command_line(args: &Value) -> Option<String> {
    match args.get("command").or(args.get("cmd")) {
        Some(Value::String(c)) => Some(c.clone()),
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|v| v.as_str().map(str::to_string).unwrap_or(v.to_string()))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

fn tool_result(out: &mut String, c: &Chunk) {
    let ChunkData::ToolResult {
        result, is_error, ..
    } = &c.data
    else {
        return;
    };
    let text = super::result_text(result);
    let cut = text
        .char_indices()
        .nth(MAX_RESULT)
        .map_or(text.len(), |(i, _)| i);
    let label = if *is_error { "error" } else { "result" };
    let _ = write!(
        out,
        "<div class=\"who{}\">{label}</div><pre>",
        if *is_error { " error" } else { "" }
    );
    esc_into(out, &text[..cut]);
    out.push_str("</pre>");
    if cut < text.len() {
        let _ = write!(
            out,
            "<p class=\"note\">… {} more characters in the log</p>",
            text[cut..].chars().count()
        );
    }
}
