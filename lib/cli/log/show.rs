//! `ag-log show`: one session's row, lineage, chunk counts, usage, settings and context use,
//! gathered once ([`Shown`]) and rendered as one JSON object or as aligned lines.

use serde_json::{json, Value};

use super::sessions::session_json;
use crate::cli::{escape_controls, CliResult, Ctx};
use crate::clock;
use crate::store::{ImportSource, Session, Store, TypeCount, UsageTotals};

#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The session: a handle, an id or prefix, a title, `last` (this directory's latest chat) or `last~N`
    #[arg(value_name = "SESSION", default_value = "last")]
    session: String,
}

/// Everything `show` prints about a session.
struct Shown {
    session: Session,
    len: i64,
    lineage: Vec<Session>,
    counts: Vec<TypeCount>,
    usage: UsageTotals,
    source: Option<ImportSource>,
    context: Option<ContextUse>,
}

pub(crate) fn show(ctx: &mut Ctx, args: ShowArgs) -> CliResult<()> {
    let store = ctx.read_store()?;
    let session = store.reaped(store.resolve(&args.session)?);
    let config = ctx.config()?.clone();
    let shown = Shown {
        len: store.view_len(&session)?,
        lineage: store.lineage(&session)?,
        counts: store.type_counts(&session)?,
        usage: store.usage(&session)?,
        source: store.import_source(&session.id)?,
        context: context_use(&store, &session, &config)?,
        session,
    };
    if ctx.global.json {
        return Ok(ctx.out.line(&shown.json().to_string())?);
    }
    // Title, model, agent, cwd and the source come from whoever wrote the row (an import, a
    // directory name): every line is escaped at the edge, whatever its parts did before.
    for l in shown.lines(&store) {
        ctx.out.line(&escape_controls(&l, false))?;
    }
    Ok(())
}

impl Shown {
    fn json(&self) -> Value {
        let s = &self.session;
        let mut v = session_json(s, self.len);
        if let Some(src) = &self.source {
            v["source"] = crate::export::source_json(src);
        }
        v["lineage"] = self
            .forks()
            .map(|(src, child)| json!({"session": src.id, "title": src.title, "through_seq": child.fork_seq}))
            .collect::<Vec<_>>()
            .into();
        v["counts"] = self
            .counts
            .iter()
            .map(|c| json!({"role": c.role.as_str(), "type": c.ty.as_str(), "count": c.count}))
            .collect::<Vec<_>>()
            .into();
        let u = &self.usage;
        v["usage"] = json!({
            "turns": u.turns, "input": u.input, "output": u.output,
            "cache_read": u.cache_read, "cache_write": u.cache_write,
            "cost_usd": crate::usage::round(u.cost_usd),
        });
        v["context"] = self.context.as_ref().map_or(Value::Null, |c| {
            json!({"last_input": c.last_input, "window": c.window, "share": c.share(),
                   "window_source": c.source, "compactions": c.compactions})
        });
        if let Some(sb) = s.settings().ok().and_then(|p| p.sandbox()) {
            v["sandbox"] = sb.to_json();
        }
        v
    }

    /// Each fork source with the session forked from it.
    fn forks(&self) -> impl Iterator<Item = (&Session, &Session)> {
        self.lineage.iter().zip(self.lineage.iter().skip(1))
    }

    fn lines(&self, store: &Store) -> Vec<String> {
        let s = &self.session;
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        let mut lines = vec![
            format!("session   {}", s.id),
            format!("handle    {}", s.handle),
            format!("title     {}", escape_controls(&s.title, false)),
            format!("kind      {}", s.kind.as_str()),
            format!("status    {}", s.status.as_str()),
            format!("model     {}", opt(&s.model)),
            format!("agent     {}", opt(&s.agent)),
            format!("cwd       {}", opt(&s.cwd)),
            format!("created   {}", clock::iso(s.created_at)),
            format!("updated   {}", clock::iso(s.updated_at)),
            format!("chunks    {}", self.len),
        ];
        if let Some(p) = &s.parent_id {
            lines.push(format!("parent    {}", store.shown(p)));
        }
        if let Some(src) = &self.source {
            lines.push(source_line(src));
        }
        self.settings_lines(&mut lines);
        if self.lineage.len() > 1 {
            lines.push("lineage".into());
            for (src, child) in self.forks() {
                lines.push(format!(
                    "  {} {:?} through seq {}",
                    src.id,
                    escape_controls(&src.title, false),
                    child.fork_seq.unwrap_or(0)
                ));
            }
            lines.push(format!("  {} (this session)", s.id));
        }
        if !self.counts.is_empty() {
            lines.push("counts".into());
            for c in &self.counts {
                lines.push(format!(
                    "  {:<10} {:<12} {}",
                    c.role.as_str(),
                    c.ty.as_str(),
                    c.count
                ));
            }
        }
        let u = &self.usage;
        lines.push(format!(
            "usage     {} turns · input {} · output {} · cache read {} · cache write {}{}",
            u.turns,
            u.input,
            u.output,
            u.cache_read,
            u.cache_write,
            if u.cost_usd > 0.0 {
                format!(" · ${:.4}", u.cost_usd)
            } else {
                String::new()
            }
        ));
        if let Some(c) = &self.context {
            lines.push(c.line());
        }
        lines
    }

    /// The stored settings: the tools and the sandbox (or why the settings do not read).
    fn settings_lines(&self, lines: &mut Vec<String>) {
        match self.session.settings() {
            Ok(settings) => {
                if let Some(tools) = &settings.tools {
                    lines.push(format!("tools     {}", tools.join(", ")));
                }
                if let Some(sb) = settings.sandbox() {
                    lines.push(format!("sandbox   {}", sb.summary()));
                    for w in &sb.writable {
                        lines.push(format!(
                            "  writable {}",
                            escape_controls(&w.to_string_lossy(), false)
                        ));
                    }
                }
            }
            Err(e) => lines.push(format!(
                "settings  {}",
                escape_controls(&e.to_string(), false)
            )),
        }
    }
}

fn source_line(src: &ImportSource) -> String {
    let extra = |label: &str, v: &Option<String>| {
        v.as_ref()
            .map(|v| format!(", {label} {}", escape_controls(v, false)))
            .unwrap_or_default()
    };
    format!(
        "source    {} {} ({}{}{}{})",
        src.source,
        escape_controls(&src.source_id, false),
        escape_controls(&src.path, false),
        extra("version", &src.tool_version),
        extra("its cwd", &src.cwd),
        extra("its model", &src.model),
    )
}

/// A session's context use: the last request's prompt tokens against its model's window.
pub(crate) struct ContextUse {
    pub(crate) last_input: Option<u64>,
    pub(crate) window: u64,
    source: &'static str,
    compactions: i64,
}

impl ContextUse {
    fn share(&self) -> Option<f64> {
        self.last_input
            .filter(|_| self.window > 0)
            .map(|n| n as f64 / self.window as f64)
    }

    fn line(&self) -> String {
        let used = match (self.last_input, self.share()) {
            (Some(n), Some(share)) => {
                format!("{n} of {} tokens ({:.0}%)", self.window, share * 100.0)
            }
            _ => format!("- of {} tokens (no request measured yet)", self.window),
        };
        format!(
            "context   {used} · window from {} · {} compaction{}",
            self.source,
            self.compactions,
            if self.compactions == 1 { "" } else { "s" }
        )
    }
}

pub(crate) fn context_use(
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
    let key = crate::context::window::learned_key_of(model, config);
    let w = crate::context::lookup(model, config, store.learned_window(&key)?);
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
