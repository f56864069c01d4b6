//! What a project's `.ag/config.toml` may set. It sits in the tree agents work in (an agent
//! with `write` can change it) and arrives with every cloned repository, so it can tighten the
//! user's settings but never grant, redirect keys, or (in an untrusted folder) choose where
//! conversations go. What it tries is dropped and reported as a warning.

use std::path::Path;

use super::{project_root, ConfigError, SandboxConfig};

/// A project file sits in the tree agents work in, and an agent with `write` can change it.
/// So it may not grant permissions, raise the summon depth, name a key variable, or redefine
/// a provider of the user's (which could send the user's key elsewhere). What it tries is
/// dropped and reported.
pub(super) fn restrict_project(
    table: &mut toml::Table,
    user: &toml::Table,
    path: &Path,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let at = path.display();
    if table.remove("permissions").is_some() {
        warnings.push(format!(
            "{at}: [permissions] is ignored in a project file; set it in the user config"
        ));
    }
    if table.remove("rooms").is_some() {
        warnings.push(format!(
            "{at}: [rooms] is ignored in a project file; where rooms live (and which \
             credentials reach them) is set in the user config"
        ));
    }
    if table.remove("mcp").is_some() {
        warnings.push(format!(
            "{at}: [mcp] is ignored in a project file; MCP servers run commands, so they \
             belong in the user config"
        ));
    }
    if let Some(toml::Value::Table(network)) = table.get_mut("network") {
        if network.remove("ca_file").is_some() {
            warnings.push(format!(
                "{at}: network.ca_file is ignored in a project file; set it in the user config"
            ));
        }
    }
    if let Some(toml::Value::Table(agent)) = table.get_mut("agent") {
        if agent.remove("max_summon_depth").is_some() {
            warnings.push(format!(
                "{at}: agent.max_summon_depth is ignored in a project file; set it in the user config"
            ));
        }
    }
    if let Some(toml::Value::Table(context)) = table.get_mut("context") {
        // Summaries carry the whole conversation: where they go is the user's choice.
        if context.remove("compact_model").is_some() {
            warnings.push(format!(
                "{at}: context.compact_model is ignored in a project file; set it in the user config"
            ));
        }
    }
    if let Some(toml::Value::Table(providers)) = table.get_mut("providers") {
        let user_providers = user.get("providers").and_then(toml::Value::as_table);
        let names: Vec<String> = providers.keys().cloned().collect();
        for name in names {
            if user_providers.is_some_and(|u| u.contains_key(&name)) {
                providers.remove(&name);
                warnings.push(format!(
                    "{at}: [providers.{name}] is ignored: the user config defines that provider"
                ));
            } else if let Some(toml::Value::Table(p)) = providers.get_mut(&name) {
                if p.remove("api_key_env").is_some() {
                    warnings.push(format!(
                        "{at}: providers.{name}.api_key_env is ignored in a project file; \
                         keyed providers belong in the user config"
                    ));
                }
            }
        }
    }
    warnings
}

/// Take a project file's `[sandbox]` out of the merge: it may tighten the user's sandbox (a
/// stricter mode, `network = false`) and nothing else, so it never replaces the user's keys.
pub(super) fn project_sandbox_of(
    table: &mut toml::Table,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<Option<SandboxConfig>, ConfigError> {
    let Some(v) = table.remove("sandbox") else {
        return Ok(None);
    };
    let mut s: SandboxConfig = v
        .try_into()
        .map_err(|e: toml::de::Error| ConfigError::Parse {
            path: path.to_path_buf(),
            message: format!("[sandbox]: {}", e.message()),
        })?;
    let at = path.display();
    if !s.writable.is_empty() {
        warnings.push(format!(
            "{at}: sandbox.writable is ignored in a project file; set it in the user config"
        ));
        s.writable.clear();
    }
    if s.network == Some(true) {
        warnings.push(format!(
            "{at}: sandbox.network = true is ignored in a project file; a project can only turn the network off"
        ));
        s.network = None;
    }
    Ok(Some(s))
}

/// What chooses where conversations go: the model, the hosts, and (with MCP) the servers that
/// run. A cloned repository's file may set them only once the user has trusted its folder.
const TRUST_ONLY: [&str; 5] = ["model", "aliases", "providers", "models", "mcp"];

pub(super) fn restrict_untrusted(table: &mut toml::Table, path: &Path) -> Vec<String> {
    let at = path.display();
    let root = project_root(path).unwrap_or_default();
    TRUST_ONLY
        .iter()
        .filter(|key| table.remove(**key).is_some())
        .map(|key| {
            let what = if *key == "model" {
                "model".to_string()
            } else {
                format!("[{key}.*]")
            };
            format!(
                "{at}: {what} is ignored: the folder {} is not trusted \
                 (`ag-prompt --trust` there trusts it)",
                root.display()
            )
        })
        .collect()
}
