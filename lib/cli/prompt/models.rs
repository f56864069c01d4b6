//! `ag-prompt models`: the providers this machine can use, the known context windows, and
//! the model aliases.

use serde_json::json;

use crate::cli::{escape_controls, CliResult, Ctx};

/// One provider line: how to name its models, its kind, and what it needs.
type Row = (String, String, String);

/// What `ag-prompt models` lists.
struct Listing {
    providers: Vec<Row>,
    default: Option<String>,
    windows: Vec<(String, crate::context::window::Window)>,
    /// How each model at each endpoint counted prompts against the estimate.
    scales: Vec<(String, f64)>,
    aliases: std::collections::BTreeMap<String, String>,
}

/// `ag-prompt models`.
/// `ag-prompt models --forget MODEL`: drop what providers taught about its window and how
/// they count.
pub(super) fn forget(ctx: &mut Ctx, model: &str) -> CliResult<()> {
    let n = crate::context::window::forget(&ctx.store()?, model)?;
    if n == 0 {
        ctx.out
            .note(&format!("nothing learned for {model}; nothing to forget"));
    } else {
        ctx.out.note(&format!(
            "forgot {n} learned figure{} for {model} (windows and token counts)",
            if n == 1 { "" } else { "s" }
        ));
    }
    Ok(())
}

pub(super) fn list(ctx: &mut Ctx) -> CliResult<()> {
    let config = ctx.config()?.clone();
    let learned = ctx.store()?.learned_windows()?;
    let scales = ctx.store()?.model_scales()?;
    let listing = Listing {
        providers: providers(&config),
        default: std::env::var("AG_MODEL")
            .ok()
            .filter(|s| !s.is_empty())
            .or(config.model.clone()),
        windows: crate::context::window::known(&config, &learned),
        scales,
        aliases: crate::config::aliases::all(&config.aliases),
    };
    if ctx.global.json {
        json_lines(ctx, &listing)
    } else {
        text(ctx, &listing)
    }
}

/// The built-in offline models and providers, then the configured providers, each with
/// whether its key variable is set (never the key).
fn providers(config: &crate::config::Config) -> Vec<Row> {
    let key = |v: &str| {
        let set = if crate::secrets::var(v).is_some() {
            "set"
        } else {
            "not set"
        };
        format!("{v} {set}")
    };
    let mut rows: Vec<Row> = vec![
        (
            "echo".into(),
            "offline".into(),
            "answers with the last user text".into(),
        ),
        (
            "script:FILE".into(),
            "offline".into(),
            "plays a TOML script of steps".into(),
        ),
        (
            "anthropic/MODEL".into(),
            "anthropic".into(),
            key("ANTHROPIC_API_KEY"),
        ),
        (
            "openai/MODEL".into(),
            "openai".into(),
            key("OPENAI_API_KEY"),
        ),
    ];
    for (name, p) in &config.providers {
        let k = p.api_key_env.as_deref().map_or("no key".into(), key);
        rows.push((
            format!("{name}/MODEL"),
            p.kind.as_str().to_string(),
            format!("{} · {k}", p.base_url),
        ));
    }
    rows
}

fn json_lines(ctx: &mut Ctx, l: &Listing) -> CliResult<()> {
    for (m, kind, note) in &l.providers {
        ctx.out
            .line(&json!({"model": m, "kind": kind, "note": note}).to_string())?;
    }
    for (m, w) in &l.windows {
        ctx.out.line(
            &json!({"model": m, "context_window": w.context_window,
                    "max_output": w.max_output, "source": w.source.as_str()})
            .to_string(),
        )?;
    }
    for (m, scale) in &l.scales {
        ctx.out
            .line(&json!({"model": m, "count_scale": scale}).to_string())?;
    }
    for (alias, model) in &l.aliases {
        ctx.out
            .line(&json!({"alias": alias, "model": model}).to_string())?;
    }
    ctx.out.line(&json!({"default": l.default}).to_string())?;
    Ok(())
}

/// Three aligned tables: providers, context windows, aliases. Names come from config files:
/// each line is escaped.
fn text(ctx: &mut Ctx, l: &Listing) -> CliResult<()> {
    let mut lines = Vec::new();
    for (m, kind, note) in &l.providers {
        lines.push(format!("{m:<20} {kind:<10} {note}"));
    }
    lines.push(format!(
        "default: {}",
        l.default.as_deref().unwrap_or("(none)")
    ));
    lines.push(String::new());
    lines.push(format!(
        "{:<32} {:>9} {:>10}  SOURCE",
        "CONTEXT WINDOW", "TOKENS", "MAX OUTPUT"
    ));
    for (m, w) in &l.windows {
        lines.push(format!(
            "{:<32} {:>9} {:>10}  {}",
            m,
            w.context_window,
            w.max_output,
            w.source.as_str()
        ));
    }
    lines.push(format!(
        "{:<32} {:>9} {:>10}  default, until a provider states the window",
        "any other model",
        crate::context::window::DEFAULT_WINDOW,
        crate::context::window::DEFAULT_MAX_OUTPUT
    ));
    if !l.scales.is_empty() {
        lines.push(String::new());
        lines.push(format!("{:<32} {:>9}", "TOKEN COUNTS", "× ESTIMATE"));
        for (m, scale) in &l.scales {
            lines.push(format!("{m:<32} {scale:>9.2}"));
        }
    }
    lines.push(String::new());
    lines.push(format!("{:<12} MODEL", "ALIAS"));
    for (alias, model) in &l.aliases {
        lines.push(format!("{alias:<12} {model}"));
    }
    // On a terminal each line fits its width (cut with …), rather than wrapping.
    let width = ctx.out.stdout_is_terminal().then(crate::cli::table::width);
    for line in lines {
        let line = match width {
            Some(w) => crate::text::clip_chars(&line, w.saturating_sub(1).max(20)),
            None => line,
        };
        ctx.out.line(&escape_controls(&line, false))?;
    }
    Ok(())
}
