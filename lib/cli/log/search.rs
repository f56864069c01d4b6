//! `ag-log search`: full-text hits across sessions (or one), each with its session's handle,
//! title and date, and what kind of chunk it is; matches in colour on a terminal.

use std::collections::HashMap;

use crate::cli::{escape_controls, CliError, CliResult, Ctx, Exit};
use crate::log::{ChunkData, Role};
use crate::store::{SearchHit, SearchSort, Session};

#[derive(Debug, clap::Args)]
pub(crate) struct SearchArgs {
    /// Words to find, all of which must occur; `"two words"` (quoted inside the argument) is
    /// a phrase, `word*` a prefix
    #[arg(value_name = "QUERY", required = true, num_args = 1..)]
    query: Vec<String>,
    /// Only this session (and what it inherits from forks)
    #[arg(short, long, value_name = "SESSION")]
    session: Option<String>,
    /// The order of the hits: `newest` (the default) stops at the limit however many chunks
    /// match; `rank` puts the best match first and ranks every match to do it
    #[arg(long, value_enum, value_name = "ORDER", default_value = "newest")]
    sort: Sort,
    /// At most N hits
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64))]
    limit: u64,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Sort {
    /// The newest match first
    Newest,
    /// The best match first
    Rank,
}

impl From<Sort> for SearchSort {
    fn from(s: Sort) -> Self {
        match s {
            Sort::Newest => SearchSort::Newest,
            Sort::Rank => SearchSort::Rank,
        }
    }
}

pub(crate) fn search(ctx: &mut Ctx, args: SearchArgs) -> CliResult<()> {
    let store = ctx.read_store()?;
    let session = match &args.session {
        Some(r) => Some(store.resolve(r)?),
        None => None,
    };
    let query = args.query.join(" ");
    if query.trim().is_empty() {
        return Err(CliError::usage("the search query is empty"));
    }
    // The first search after a large import indexes what came in: say so on a terminal.
    let backlog = store.index_backlog()?;
    let working = match backlog {
        n if n >= 20_000 => ctx.out.progress(
            0,
            &format!("bringing the search index up to date ({n} chunks, once)"),
        ),
        _ => ctx.out.progress_none(),
    };
    let hits = store.search(&query, session.as_ref(), args.sort.into(), args.limit)?;
    drop(working);
    let mut sessions: HashMap<String, Session> = HashMap::new();
    for h in &hits {
        if !sessions.contains_key(&h.chunk.session) {
            let s = store.session(&h.chunk.session)?;
            sessions.insert(s.id.clone(), s);
        }
        let s = &sessions[&h.chunk.session];
        if ctx.global.json {
            let mut v = h.chunk.to_value();
            v["snippet"] = h.plain().into();
            v["handle"] = s.handle.clone().into();
            v["title"] = s.title.clone().into();
            ctx.out.line(&v.to_string())?;
        } else {
            let line = hit_line(ctx, s, h);
            ctx.out.line(&line)?;
        }
    }
    if hits.is_empty() {
        // Like grep: nothing matched is status 1, with no error line.
        ctx.out.note("no matches");
        return Err(CliError::new(Exit::Error, ""));
    }
    Ok(())
}

/// `HANDLE #SEQ · DATE · TITLE  KIND: …excerpt…`, the matches painted. Every piece of the
/// excerpt and the title is escaped before it reaches the terminal.
fn hit_line(ctx: &Ctx, s: &Session, h: &SearchHit) -> String {
    let title = if s.title.trim().is_empty() {
        "(untitled)".to_string()
    } else {
        crate::text::clip_chars(&crate::text::one_line(&s.title), 40)
    };
    let tag = ctx.out.dim(&format!(
        "{} #{} · {} · {}",
        s.handle,
        h.chunk.seq,
        date(h.chunk.ts),
        escape_controls(&title, false)
    ));
    let kind = match &h.chunk.data {
        ChunkData::Text { .. } if h.chunk.role == Role::User => "user".to_string(),
        ChunkData::Text { .. } => "assistant".to_string(),
        ChunkData::ToolCall { name, .. } => format!("→ {}", escape_controls(name, false)),
        ChunkData::ToolResult { name, .. } => format!("← {}", escape_controls(name, false)),
        other => other.chunk_type().as_str().to_string(),
    };
    let excerpt: String = h
        .parts()
        .into_iter()
        .map(|(text, matched)| {
            let text = escape_controls(&text.replace(['\n', '\t'], " "), false);
            if matched {
                ctx.out.paint("1;31", &text)
            } else {
                text
            }
        })
        .collect();
    format!("{tag}  {kind}: {excerpt}")
}

/// `2026-11-30 09:15` (UTC).
fn date(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|_| ms.to_string())
}
