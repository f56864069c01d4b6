//! Export: a session as a file to share (DESIGN §9). Markdown for reading, a self-contained
//! HTML page for the browser, and NDJSON that `ag-log import` reads back into an identical
//! log. Pure: a [`Document`] (the session, its lineage, where it came from, its chunks) in,
//! text out.

pub(crate) mod highlight;
mod html;
mod md;

use serde_json::{json, Value};

use crate::log::Chunk;
use crate::store::{ImportSource, Session};

pub(crate) use html::html;
pub(crate) use md::{clip, markdown, result_text, system_line};

/// Everything an export shows.
pub(crate) struct Document<'a> {
    pub(crate) session: &'a Session,
    /// Oldest ancestor first, ending with the session itself.
    pub(crate) lineage: &'a [Session],
    pub(crate) source: Option<&'a ImportSource>,
    /// The session's whole view, in seq order.
    pub(crate) chunks: &'a [Chunk],
}

/// The first line of an NDJSON export: `{"ag_export":1,"session":{…}}`.
pub(crate) fn ndjson_header(doc: &Document) -> String {
    let s = doc.session;
    let mut session = s.json_fields();
    session["created_at"] = s.created_at.into();
    session["updated_at"] = s.updated_at.into();
    if let Some(src) = doc.source {
        session["source"] = source_json(src);
    }
    json!({"ag_export": crate::import::ndjson::EXPORT_VERSION, "session": session}).to_string()
}

/// Where an imported session came from, as `show --json` and exports print it.
pub(crate) fn source_json(src: &ImportSource) -> Value {
    json!({
        "source": src.source,
        "source_id": src.source_id,
        "path": src.path,
        "tool_version": src.tool_version,
        "leaf": src.leaf,
        "parent_source_id": src.parent_source_id,
        "cwd": src.cwd,
        "model": src.model,
    })
}

/// The whole session as Markdown: a title, its metadata, then every chunk.
pub(crate) fn markdown_document(doc: &Document) -> String {
    let s = doc.session;
    let mut out = format!(
        "# {}\n\n",
        if s.title.is_empty() {
            "(untitled session)"
        } else {
            &s.title
        }
    );
    for (k, v) in metadata(doc) {
        out.push_str(&format!("- **{k}**: {v}\n"));
    }
    out.push('\n');
    for c in doc.chunks {
        out.push_str(&markdown(c));
        out.push('\n');
    }
    out
}

/// The session's metadata as (label, value) pairs, in display order.
pub(crate) fn metadata(doc: &Document) -> Vec<(&'static str, String)> {
    let s = doc.session;
    let mut m = vec![
        ("session", s.id.clone()),
        ("kind", s.kind.as_str().to_string()),
        ("status", s.status.as_str().to_string()),
    ];
    let mut opt = |k: &'static str, v: &Option<String>| {
        if let Some(v) = v {
            m.push((k, v.clone()));
        }
    };
    opt("model", &s.model);
    opt("agent", &s.agent);
    opt("cwd", &s.cwd);
    opt("parent", &s.parent_id);
    m.push(("created", crate::clock::iso(s.created_at)));
    m.push(("updated", crate::clock::iso(s.updated_at)));
    m.push(("chunks", doc.chunks.len().to_string()));
    let (turns, usage) = usage(doc.chunks);
    m.push(("turns", turns.to_string()));
    m.push((
        "tokens",
        format!(
            "in {} · out {} · cache read {} · cache write {}",
            usage[0], usage[1], usage[2], usage[3]
        ),
    ));
    if let Some(src) = doc.source {
        let version = src
            .tool_version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        m.push((
            "source",
            format!("{}{version} session {}", src.source, src.source_id),
        ));
        m.push(("source file", src.path.clone()));
        if let Some(leaf) = &src.leaf {
            m.push(("branch taken", format!("the one ending at {leaf}")));
        }
    }
    for (anc, child) in doc.lineage.iter().zip(doc.lineage.iter().skip(1)) {
        m.push((
            "forked from",
            format!(
                "{} ({}) through seq {}",
                anc.id,
                anc.title,
                child.fork_seq.unwrap_or(0)
            ),
        ));
    }
    m
}

/// Distinct turns, and usage summed from `turn_end` records: input, output, cache read, write.
fn usage(chunks: &[Chunk]) -> (usize, [i64; 4]) {
    let mut turns = std::collections::HashSet::new();
    let mut sum = [0i64; 4];
    for c in chunks {
        turns.insert(c.turn.as_str());
        if c.data.is_turn_end() {
            let v = c.data.to_value();
            for (i, k) in ["input", "output", "cache_read", "cache_write"]
                .iter()
                .enumerate()
            {
                sum[i] += v["usage"][k].as_i64().unwrap_or(0);
            }
        }
    }
    (turns.len(), sum)
}
