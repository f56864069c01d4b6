//! `ag-prompt models`: the providers this machine can use, the known context windows, and
//! the model aliases.

use serde_json::json;

use crate::cli::{escape_controls, CliResult, Ctx};

/// `ag-prompt models`.
pub(super) fn list(ctx: &mut Ctx) -> CliResult<()> {
    let cwd = std::env::current_dir()?;
    let config = crate::cli::load_config(&ctx.out, &cwd)?;
    let key = |v: &str| crate::secrets::var(v).is_some();
    let mut rows: Vec<(String, String, String)> = vec![
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
            format!(
                "ANTHROPIC_API_KEY {}",
                if key("ANTHROPIC_API_KEY") {
                    "set"
                } else {
                    "not set"
                }
            ),
        ),
        (
            "openai/MODEL".into(),
            "openai".into(),
            format!(
                "OPENAI_API_KEY {}",
                if key("OPENAI_API_KEY") {
                    "set"
                } else {
                    "not set"
                }
            ),
        ),
    ];
    for (name, p) in &config.providers {
        let k = match &p.api_key_env {
            Some(v) => format!("{v} {}", if key(v) { "set" } else { "not set" }),
            None => "no key".into(),
        };
        rows.push((
            format!("{name}/MODEL"),
            p.kind.as_str().to_string(),
            format!("{} · {k}", p.base_url),
        ));
    }
    let default = std::env::var("AG_MODEL")
        .ok()
        .filter(|s| !s.is_empty())
        .or(config.model.clone());
    let learned = ctx.store()?.learned_windows()?;
    let windows = crate::context::window::known(&config, &learned);
    let aliases = crate::config::aliases::all(&config.aliases);
    if ctx.global.json {
        for (m, kind, note) in &rows {
            ctx.out
                .line(&json!({"model": m, "kind": kind, "note": note}).to_string())?;
        }
        for (m, w) in &windows {
            ctx.out.line(
                &json!({"model": m, "context_window": w.context_window,
                        "max_output": w.max_output, "source": w.source.as_str()})
                .to_string(),
            )?;
        }
        for (alias, model) in &aliases {
            ctx.out
                .line(&json!({"alias": alias, "model": model}).to_string())?;
        }
        ctx.out.line(&json!({"default": default}).to_string())?;
        return Ok(());
    }
    for (m, kind, note) in &rows {
        ctx.out.line(&format!("{m:<20} {kind:<10} {note}"))?;
    }
    ctx.out.line(&format!(
        "default: {}",
        default.as_deref().unwrap_or("(none)")
    ))?;
    ctx.out.line("")?;
    ctx.out.line(&format!(
        "{:<32} {:>9} {:>10}  SOURCE",
        "CONTEXT WINDOW", "TOKENS", "MAX OUTPUT"
    ))?;
    for (m, w) in &windows {
        ctx.out.line(&format!(
            "{:<32} {:>9} {:>10}  {}",
            escape_controls(m, false),
            w.context_window,
            w.max_output,
            w.source.as_str()
        ))?;
    }
    ctx.out.line(&format!(
        "{:<32} {:>9} {:>10}  default, until a provider states the window",
        "any other model",
        crate::context::window::DEFAULT_WINDOW,
        crate::context::window::DEFAULT_MAX_OUTPUT
    ))?;
    ctx.out.line("")?;
    ctx.out.line(&format!("{:<12} MODEL", "ALIAS"))?;
    for (alias, model) in &aliases {
        ctx.out.line(&format!(
            "{:<12} {}",
            escape_controls(alias, false),
            escape_controls(model, false)
        ))?;
    }
    Ok(())
}
