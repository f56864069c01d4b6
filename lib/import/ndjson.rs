//! `ag-log export --format ndjson` files read back: a first line `{"ag_export":1,"session":
//! {…}}` with the session's row, then its chunks as `ag-log cat --json` prints them. The
//! chunks keep their ids, turns, steps, times and data, so the log comes back identical.

use serde_json::Value;

use super::SourceKind;
use super::{lines, object, stable_id, ImportError, LineProblem, Parsed, PlannedSession, Source};

/// The version of the export format this build writes and reads.
pub(crate) const EXPORT_VERSION: u64 = 1;

pub(crate) fn parse(bytes: &[u8]) -> Result<Parsed, ImportError> {
    let mut parsed = Parsed::default();
    let mut it = lines(bytes);
    let Some((n, head)) = it.next() else {
        return Ok(parsed);
    };
    let wrong = |why: String| ImportError::WrongFormat {
        expected: SourceKind::Ag,
        why,
    };
    let head = object(&head).map_err(|e| wrong(format!("line {n}: {e}")))?;
    match head.get("ag_export").and_then(Value::as_u64) {
        Some(v) if v <= EXPORT_VERSION => {}
        Some(v) => {
            return Err(wrong(format!(
                "line {n}: export version {v} is newer than this ag reads ({EXPORT_VERSION})"
            )))
        }
        None => return Err(wrong(format!("line {n}: no `ag_export` header"))),
    }
    let meta = head
        .get("session")
        .and_then(Value::as_object)
        .ok_or_else(|| wrong(format!("line {n}: the header has no `session` object")))?;
    let s = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_string);
    let id = s("id")
        .filter(|i| !i.is_empty())
        .ok_or_else(|| wrong(format!("line {n}: the session has no id")))?;
    let mut chunks = Vec::new();
    let mut last_ts = 0;
    for (n, line) in it {
        match crate::log::decode_line(n, &line) {
            Ok(mut c) => {
                c.session = None;
                c.seq = None;
                c.id.get_or_insert_with(|| stable_id(&["ag", &id, &format!("line{n}")]));
                c.turn
                    .get_or_insert_with(|| stable_id(&["ag", &id, "turn"]));
                last_ts = c.ts.unwrap_or(last_ts);
                c.ts = Some(last_ts);
                chunks.push(c);
            }
            Err(e) => parsed.problems.push(LineProblem {
                line: n,
                message: match &e.field {
                    Some(f) => format!("field `{f}`: {}", e.message),
                    None => e.message,
                },
            }),
        }
    }
    let src = meta.get("source").and_then(Value::as_object);
    let version = src
        .and_then(|s| s.get("tool_version"))
        .and_then(Value::as_str)
        .map(str::to_string);
    parsed.sessions.push(PlannedSession {
        source: Source {
            kind: SourceKind::Ag,
            source_id: id.clone(),
            tool_version: version,
            leaf: None,
            parent_source_id: s("parent_id"),
        },
        kind: s("kind").unwrap_or_else(|| "chat".into()),
        title: s("title").unwrap_or_default(),
        model: s("model"),
        cwd: s("cwd"),
        created_at: meta.get("created_at").and_then(Value::as_i64),
        keep_id: Some(id),
        agent: s("agent"),
        policy: meta.get("policy").cloned(),
        chunks,
        skipped: parsed.problems.len(),
    });
    Ok(parsed)
}
