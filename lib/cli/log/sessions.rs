//! Session verbs: `ls`, `show`, `title`, `rm`.

use serde_json::{json, Value};

use crate::cli::{escape_controls, CliError, CliResult, Ctx};
use crate::clock;
use crate::store::Session;

#[derive(Debug, clap::Args)]
pub struct LsArgs {
    /// At most N sessions, most recently updated first
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64))]
    limit: Option<u64>,
    /// Only this directory's sessions
    #[arg(long)]
    here: bool,
    /// Only sessions of this kind
    #[arg(long, value_name = "KIND", value_parser = ["chat", "side", "subagent", "user_agent"])]
    kind: Option<String>,
    /// Only sessions updated since then: a duration back from now (`2h`, `3 days`, `1w`) or a
    /// date or time (`2026-11-30`, `2026-11-30T09:00:00Z`)
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    since: Option<i64>,
}

/// `--since`: unix ms.
fn parse_since(s: &str) -> Result<i64, String> {
    crate::clock::parse_since(s, crate::clock::now_ms())
}

pub fn session_json(s: &Session, chunks: i64) -> Value {
    json!({
        "id": s.id,
        "handle": s.handle,
        "title": s.title,
        "kind": s.kind.as_str(),
        "parent_id": s.parent_id,
        "fork_of": s.fork_of,
        "fork_seq": s.fork_seq,
        "agent": s.agent,
        "model": s.model,
        "cwd": s.cwd,
        "policy": s.settings().map(|p| p.to_value()).unwrap_or_else(|_| s.settings_json.clone().into()),
        "status": s.status.as_str(),
        "pid": s.pid,
        "chunks": chunks,
        "created": clock::iso(s.created_at),
        "updated": clock::iso(s.updated_at),
    })
}

pub fn ls(ctx: &mut Ctx, args: LsArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let cwd = std::env::current_dir().and_then(std::fs::canonicalize)?;
    let sessions = store.list_sessions_where(&crate::store::Listing {
        limit: args.limit,
        cwd: args.here.then(|| cwd.to_string_lossy().into_owned()),
        kind: args.kind.as_deref().map(crate::store::SessionKind::parse),
        since_ms: args.since,
    })?;
    if ctx.global.quiet {
        for (s, _) in &sessions {
            ctx.out.line(&s.id)?;
        }
        return Ok(());
    }
    if ctx.global.json {
        for (s, n) in &sessions {
            ctx.out.line(&session_json(s, *n).to_string())?;
        }
        return Ok(());
    }
    if sessions.is_empty() {
        let filtered = args.here || args.kind.is_some() || args.since.is_some();
        ctx.out.note(if filtered {
            "no sessions match"
        } else {
            "no sessions yet; start one with: ag-log append --new 'hello'"
        });
        return Ok(());
    }
    let now = clock::now_ms();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let rows = sessions
        .iter()
        .map(|(s, n)| {
            vec![
                s.handle.clone(),
                s.title.clone(),
                s.kind.as_str().into(),
                n.to_string(),
                s.status.as_str().into(),
                format!("{} ago", clock::age(s.updated_at, now)),
                s.cwd
                    .as_deref()
                    .map_or("-".into(), |d| dir_label(d, &cwd, home.as_deref())),
            ]
        })
        .collect();
    let header = ["ID", "TITLE", "KIND", "CHUNKS", "STATUS", "UPDATED", "DIR"];
    crate::cli::table::print(&mut ctx.out, &header, rows)?;
    Ok(())
}

/// A session's directory for a table: `.` for this one, `./sub` below it, `~/…` under home.
fn dir_label(dir: &str, cwd: &std::path::Path, home: Option<&std::path::Path>) -> String {
    let d = std::path::Path::new(dir);
    if d == cwd {
        return ".".into();
    }
    if let Ok(rest) = d.strip_prefix(cwd) {
        return format!("./{}", rest.display());
    }
    match home.and_then(|h| d.strip_prefix(h).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => dir.to_string(),
    }
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION", default_value = "last")]
    session: String,
}

pub fn show(ctx: &mut Ctx, args: ShowArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let s = store.reaped(store.resolve(&args.session)?);
    let len = store.view_len(&s)?;
    let lineage = store.lineage(&s)?;
    let counts = store.type_counts(&s)?;
    let usage = store.usage(&s)?;
    let source = store.import_source(&s.id)?;
    let config = crate::cli::load_config(&ctx.out, &std::env::current_dir()?)?;
    let context = context_use(&store, &s, &config)?;
    if ctx.global.json {
        let mut v = session_json(&s, len);
        if let Some(src) = &source {
            v["source"] = crate::export::source_json(src);
        }
        v["lineage"] = lineage
            .iter()
            .zip(lineage.iter().skip(1))
            .map(|(src, child)| json!({"session": src.id, "title": src.title, "through_seq": child.fork_seq}))
            .collect::<Vec<_>>()
            .into();
        v["counts"] = counts
            .iter()
            .map(|c| json!({"role": c.role.as_str(), "type": c.ty.as_str(), "count": c.count}))
            .collect::<Vec<_>>()
            .into();
        v["usage"] = json!({
            "turns": usage.turns, "input": usage.input, "output": usage.output,
            "cache_read": usage.cache_read, "cache_write": usage.cache_write,
        });
        v["context"] = context.as_ref().map_or(Value::Null, |c| {
            json!({"last_input": c.last_input, "window": c.window, "share": c.share(),
                   "window_source": c.source, "compactions": c.compactions})
        });
        if let Some(sb) = s.settings().ok().and_then(|p| p.sandbox()) {
            v["sandbox"] = sb.to_json();
        }
        ctx.out.line(&v.to_string())?;
        return Ok(());
    }
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let mut lines = vec![
        format!("session   {}", s.id),
        format!("title     {}", escape_controls(&s.title, false)),
        format!("kind      {}", s.kind.as_str()),
        format!("status    {}", s.status.as_str()),
        format!("model     {}", opt(&s.model)),
        format!("agent     {}", opt(&s.agent)),
        format!("cwd       {}", opt(&s.cwd)),
        format!("created   {}", clock::iso(s.created_at)),
        format!("updated   {}", clock::iso(s.updated_at)),
        format!("chunks    {len}"),
    ];
    if let Some(p) = &s.parent_id {
        lines.push(format!("parent    {p}"));
    }
    if let Some(src) = &source {
        lines.push(format!(
            "source    {} {} ({}{})",
            src.source,
            escape_controls(&src.source_id, false),
            escape_controls(&src.path, false),
            src.tool_version
                .as_ref()
                .map(|v| format!(", version {}", escape_controls(v, false)))
                .unwrap_or_default()
        ));
    }
    match s.settings() {
        Ok(settings) => {
            if let Some(tools) = &settings.tools {
                lines.push(format!("tools     {}", tools.join(", ")));
            }
        }
        Err(e) => lines.push(format!(
            "settings  {}",
            escape_controls(&e.to_string(), false)
        )),
    }
    if let Some(sb) = s.settings().ok().and_then(|p| p.sandbox()) {
        lines.push(format!("sandbox   {}", sb.summary()));
        for w in &sb.writable {
            lines.push(format!(
                "  writable {}",
                escape_controls(&w.to_string_lossy(), false)
            ));
        }
    }
    if lineage.len() > 1 {
        lines.push("lineage".into());
        for (src, child) in lineage.iter().zip(lineage.iter().skip(1)) {
            lines.push(format!(
                "  {} {:?} through seq {}",
                src.id,
                escape_controls(&src.title, false),
                child.fork_seq.unwrap_or(0)
            ));
        }
        lines.push(format!("  {} (this session)", s.id));
    }
    if !counts.is_empty() {
        lines.push("counts".into());
        for c in &counts {
            lines.push(format!(
                "  {:<10} {:<12} {}",
                c.role.as_str(),
                c.ty.as_str(),
                c.count
            ));
        }
    }
    lines.push(format!(
        "usage     {} turns · input {} · output {} · cache read {} · cache write {}",
        usage.turns, usage.input, usage.output, usage.cache_read, usage.cache_write
    ));
    if let Some(c) = &context {
        let used = match (c.last_input, c.share()) {
            (Some(n), Some(share)) => format!("{n} of {} tokens ({:.0}%)", c.window, share * 100.0),
            _ => format!("- of {} tokens (no request measured yet)", c.window),
        };
        lines.push(format!(
            "context   {used} · window from {} · {} compaction{}",
            c.source,
            c.compactions,
            if c.compactions == 1 { "" } else { "s" }
        ));
    }
    // Title, model, agent, cwd and the source come from whoever wrote the row (an import, a
    // directory name): every line is escaped at the edge, whatever its parts did before.
    for l in lines {
        ctx.out.line(&escape_controls(&l, false))?;
    }
    Ok(())
}

/// A session's context use: the last request's prompt tokens against its model's window.
struct ContextUse {
    last_input: Option<u64>,
    window: u64,
    source: &'static str,
    compactions: i64,
}

impl ContextUse {
    fn share(&self) -> Option<f64> {
        self.last_input
            .filter(|_| self.window > 0)
            .map(|n| n as f64 / self.window as f64)
    }
}

fn context_use(
    store: &crate::store::Store,
    s: &Session,
    config: &crate::config::Config,
) -> crate::cli::CliResult<Option<ContextUse>> {
    let Some(model) = s.model.as_deref() else {
        return Ok(None);
    };
    // Offline models have no window unless the config gives one.
    if crate::context::window::is_offline(model) && !config.models.contains_key(model) {
        return Ok(None);
    }
    let w = crate::context::lookup(model, config, store.learned_window(model)?);
    // A measurement from before the latest compaction no longer describes the session.
    let since = store.latest_compaction(s)?.map_or(0, |(c, _)| c.seq);
    let last_input = store
        .last_context_input(s)?
        .filter(|(seq, _)| *seq > since)
        .map(|(_, n)| n);
    let compactions = store.compaction_count(s)?;
    Ok(Some(ContextUse {
        last_input,
        window: w.context_window,
        source: w.source.as_str(),
        compactions,
    }))
}

#[derive(Debug, clap::Args)]
pub struct TitleArgs {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION")]
    session: String,
    /// The new title
    #[arg(value_name = "TITLE")]
    title: String,
}

pub fn title(ctx: &mut Ctx, args: TitleArgs) -> CliResult<()> {
    let store = ctx.store()?;
    let s = store.resolve(&args.session)?;
    store.set_title(&s.id, &args.title)?;
    ctx.out.note(&format!("{}: {}", s.id, args.title));
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// Sessions to remove: handles, ids or prefixes, titles, `last`
    #[arg(value_name = "SESSION", required = true, num_args = 1..)]
    sessions: Vec<String>,
    /// Also remove the sessions forked from these (recursively), and cancel their running
    /// subagents first
    #[arg(long)]
    cascade: bool,
    /// Do not ask (on a terminal, rm asks before it removes anything; a script is never asked)
    #[arg(short, long)]
    force: bool,
}

pub fn rm(ctx: &mut Ctx, args: RmArgs) -> CliResult<()> {
    let store = ctx.store()?;
    // Resolve everything first so a typo removes nothing.
    let targets: Vec<Session> = args
        .sessions
        .iter()
        .map(|r| store.resolve(r))
        .collect::<Result<_, _>>()?;
    for s in &targets {
        let s = store.reaped(s.clone());
        if let (crate::store::SessionStatus::Running, Some(owner)) = (s.status, s.pid) {
            return Err(crate::store::StoreError::Running { id: s.id, owner }.into());
        }
    }
    let orphans = running_subagents(&store, &targets, args.cascade)?;
    if !args.force && !confirm(ctx, &targets, args.cascade)? {
        return Err(CliError::msg("nothing was removed").with_hint("-f removes without asking"));
    }
    for k in orphans {
        let st = crate::summon::spawn::cancel(&store, &k, std::time::Duration::from_secs(3))?;
        ctx.out
            .note(&format!("cancelled {} ({})", k.id, st.as_str()));
    }
    for s in targets {
        let removed = match store.remove_session(&s.id, args.cascade) {
            Ok(r) => r,
            Err(crate::store::StoreError::SessionNotFound(_)) => continue, // taken by a cascade
            Err(e) => return Err(e.into()),
        };
        for id in removed {
            ctx.out.note(&format!("removed {id}"));
        }
    }
    Ok(())
}

/// On a terminal (stdin and stderr both), ask before removing; anywhere else, never ask.
fn confirm(ctx: &Ctx, targets: &[Session], cascade: bool) -> CliResult<bool> {
    use std::io::{BufRead, IsTerminal};
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Ok(true);
    }
    let names: Vec<String> = targets
        .iter()
        .map(|s| {
            format!(
                "{} ({})",
                s.handle,
                escape_controls(&super::render::clip(&s.title, 40), false)
            )
        })
        .collect();
    let forks = if cascade { " and their forks" } else { "" };
    ctx.out
        .ask(&format!("remove {}{forks}? [y/N] ", names.join(", ")));
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// The running subagents of `targets`, to cancel before removing them (`cascade`); without
/// it a session whose subagents still run is refused: removing it would leave them working
/// for nobody.
fn running_subagents(
    store: &crate::store::Store,
    targets: &[Session],
    cascade: bool,
) -> CliResult<Vec<Session>> {
    let mut out = Vec::new();
    for s in targets {
        let running: Vec<Session> = store
            .spawned(Some(&s.id))?
            .into_iter()
            .filter(|k| {
                crate::summon::spawn::effective_status(store, k)
                    .is_ok_and(|st| st == crate::store::SessionStatus::Running)
            })
            .collect();
        if !running.is_empty() && !cascade {
            let names: Vec<String> = running.iter().map(|k| k.handle.clone()).collect();
            return Err(CliError::new(
                crate::cli::Exit::Conflict,
                format!(
                    "{} has running subagents: {}; nothing was removed",
                    s.handle,
                    names.join(", ")
                ),
            )
            .with_hint("wait for them (`ag-summon retrieve`), or `--cascade` cancels them first"));
        }
        out.extend(running);
    }
    Ok(out)
}
