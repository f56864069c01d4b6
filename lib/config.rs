//! Configuration: `.ag/config.toml` found upward from the cwd over
//! `$XDG_CONFIG_HOME/ag/config.toml` (flags and environment variables sit above both, and
//! are applied by the caller). Keys never live here: a provider names the environment
//! variable that holds its key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The default model, `PROVIDER/MODEL`.
    pub model: Option<String>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub permissions: Permissions,
    #[serde(default)]
    pub agent: AgentConfig,
    /// The files this was read from, lowest precedence first.
    #[serde(skip)]
    pub sources: Vec<PathBuf>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The wire protocol: `openai` (Chat Completions) or `anthropic` (Messages).
    pub kind: String,
    pub base_url: String,
    /// The environment variable that holds the key; none for local servers.
    pub api_key_env: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Network {
    pub connect_timeout_s: f64,
    pub idle_timeout_s: f64,
    pub max_attempts: u32,
    pub retry_base_ms: u64,
    pub retry_max_ms: u64,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            connect_timeout_s: 10.0,
            idle_timeout_s: 120.0,
            max_attempts: 4,
            retry_base_ms: 500,
            retry_max_ms: 30_000,
        }
    }
}

impl Network {
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.connect_timeout_s.max(0.001))
    }
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.idle_timeout_s.max(0.001))
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Permissions {
    /// `allow` lets agents start top-level user agents; anything else denies.
    pub user_agents: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    pub max_steps: u32,
    pub bash_timeout_s: u64,
    pub output_cap: usize,
    pub max_tokens: u64,
    /// How deep subagents may nest: 0 (the default) means a subagent cannot summon.
    pub max_summon_depth: u32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_steps: 50,
            bash_timeout_s: 120,
            output_cap: 30_000,
            max_tokens: 8192,
            max_summon_depth: 0,
        }
    }
}

impl Config {
    /// Load the user file and the nearest project file above `cwd`, project winning per key.
    pub fn load(cwd: &Path) -> Result<Config, ConfigError> {
        let mut files = Vec::new();
        if let Some(user) = user_config_dir().map(|d| d.join("config.toml")) {
            if user.is_file() {
                files.push(user);
            }
        }
        if let Some(project) = find_upward(cwd, ".ag/config.toml") {
            if !files.contains(&project) {
                files.push(project);
            }
        }
        let mut merged = toml::Table::new();
        for f in &files {
            let text = std::fs::read_to_string(f).map_err(|source| ConfigError::Read {
                path: f.clone(),
                source,
            })?;
            let table: toml::Table =
                text.parse()
                    .map_err(|e: toml::de::Error| ConfigError::Parse {
                        path: f.clone(),
                        message: describe_toml_error(&text, &e),
                    })?;
            merge(&mut merged, table);
        }
        let mut config: Config =
            toml::Value::Table(merged)
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Parse {
                    path: files.last().cloned().unwrap_or_default(),
                    message: e.message().to_string(),
                })?;
        config.sources = files;
        Ok(config)
    }

    pub fn user_agents_allowed(&self) -> bool {
        self.permissions.user_agents.as_deref() == Some("allow")
    }
}

fn describe_toml_error(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {}", e.message())
        }
        None => e.message().to_string(),
    }
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// `$XDG_CONFIG_HOME/ag`, else `~/.config/ag`.
pub fn user_config_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("XDG_CONFIG_HOME")
        .map(|d| d.join("ag"))
        .or_else(|| env("HOME").map(|h| h.join(".config/ag")))
}

/// The nearest `rel` at or above `start`.
pub fn find_upward(start: &Path, rel: &str) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        let candidate = d.join(rel);
        if candidate.exists() {
            return Some(candidate);
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_overrides_user_per_key() {
        let mut a: toml::Table =
            "model = \"echo\"\n[network]\nmax_attempts = 2\nidle_timeout_s = 5.0\n"
                .parse()
                .unwrap();
        let b: toml::Table = "[network]\nmax_attempts = 7\n".parse().unwrap();
        merge(&mut a, b);
        let c: Config = toml::Value::Table(a).try_into().unwrap();
        assert_eq!(c.model.as_deref(), Some("echo"));
        assert_eq!(c.network.max_attempts, 7);
        assert_eq!(c.network.idle_timeout_s, 5.0);
    }

    #[test]
    fn parse_errors_name_the_line() {
        let text = "model = \"echo\"\n[network\n";
        let e = text.parse::<toml::Table>().unwrap_err();
        assert!(
            describe_toml_error(text, &e).starts_with("line 2"),
            "{}",
            describe_toml_error(text, &e)
        );
    }
}
