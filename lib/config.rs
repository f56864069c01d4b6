//! Configuration: `.ag/config.toml` found upward from the cwd over
//! `$XDG_CONFIG_HOME/ag/config.toml` (flags and environment variables sit above both, and
//! are applied by the caller), the MCP servers of a trusted folder's `.mcp.json`, and which
//! project folders the user trusts. Keys never live here: a provider names the environment
//! variable that holds its key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub(crate) mod aliases;
mod check;
pub(crate) mod mcp_approval;
mod mcp_json;
mod project;
pub(crate) mod rooms;
pub(crate) mod toml_error;
mod trust;
mod words;

pub(crate) use check::http_url;
use project::{project_sandbox_of, restrict_project, restrict_untrusted};
pub(crate) use trust::{is_trusted, project_root, trust};
pub(crate) use words::Grant;
pub use words::ProviderKind;

use crate::sandbox::SandboxConfig;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    /// A number or duration outside what the setting can take: a usage error.
    #[error("{}: {message}", path.display())]
    OutOfRange { path: PathBuf, message: String },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The default model, `PROVIDER/MODEL`.
    pub(crate) model: Option<String>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub(crate) permissions: Permissions,
    #[serde(default)]
    pub(crate) agent: AgentConfig,
    /// Context management: when and how sessions compact.
    #[serde(default)]
    pub(crate) context: ContextConfig,
    /// Model aliases (`[aliases] NAME = "PROVIDER/MODEL"`) over the built-in table.
    #[serde(default)]
    pub(crate) aliases: BTreeMap<String, String>,
    /// Per-model facts (`[models."PROVIDER/NAME"]`) for models the built-in table lacks.
    #[serde(default)]
    pub(crate) models: BTreeMap<String, ModelConfig>,
    /// The user's `[sandbox]` (a project file's is kept apart, in `project_sandbox`).
    #[serde(default)]
    pub(crate) sandbox: SandboxConfig,
    /// The project file's `[sandbox]`, which may only tighten the user's.
    #[serde(skip)]
    pub(crate) project_sandbox: Option<SandboxConfig>,
    /// MCP servers, by name (`[mcp.NAME]`); only the user file may name them.
    #[serde(default)]
    pub(crate) mcp: BTreeMap<String, McpServerConfig>,
    /// Where rooms live (`[rooms] url`); only the user file may say (see [`rooms`]);
    /// [`rooms::server`] resolves it with `room_url`.
    #[serde(default)]
    pub(crate) rooms: rooms::RoomsConfig,
    /// `AG_ROOM_URL`, which wins over `[rooms] url`.
    #[serde(skip)]
    pub(crate) room_url: Option<String>,
    /// The user config file, when there is one (the file names in `[rooms]` are relative to it).
    #[serde(skip)]
    pub(crate) user_file: Option<PathBuf>,
    /// A project's `.mcp.json` that was not read because its folder is not trusted: what to
    /// say about it, for the commands that start servers (not every command reads MCP).
    #[serde(skip)]
    pub(crate) mcp_json_ignored: Option<String>,
    /// The servers a trusted project's `.mcp.json` added, with that file.
    #[serde(skip)]
    pub(crate) mcp_from: BTreeMap<String, PathBuf>,
    /// A trusted project's servers that are new or changed since the user approved them: not
    /// in `mcp`; the commands that start servers ask about them or say they are left out.
    #[serde(skip)]
    pub(crate) mcp_unapproved: Vec<mcp_approval::Unapproved>,
    /// The files this was read from, lowest precedence first.
    #[serde(skip)]
    pub(crate) sources: Vec<PathBuf>,
    /// Settings a project file may not make, which were dropped (for the CLI to report).
    #[serde(skip)]
    pub(crate) warnings: Vec<String>,
    /// The file that set `model`, when one did.
    #[serde(skip)]
    pub(crate) model_from: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    /// The environment variable that holds the key; none for local servers.
    pub api_key_env: Option<String>,
}

/// One MCP server: a command to run on stdio, or the URL of a streamable HTTP endpoint.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpServerConfig {
    pub(crate) command: Option<String>,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    /// Variables set for the server, over this process's environment minus secrets (the
    /// `bash` rule): a provider key reaches a server only when written here.
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// Seconds the server may take to start and list its tools [default: 10].
    pub(crate) startup_timeout_s: Option<f64>,
    /// Seconds one tool call may take [default: 60].
    pub(crate) call_timeout_s: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Network {
    pub connect_timeout_s: f64,
    pub idle_timeout_s: f64,
    pub(crate) max_attempts: u32,
    pub(crate) retry_base_ms: u64,
    pub(crate) retry_max_ms: u64,
    /// The most one attempt may take, headers to stop event, however steadily it streams.
    pub attempt_timeout_s: f64,
    /// A PEM file of certificates to trust besides the platform's (a corporate CA).
    pub(crate) ca_file: Option<PathBuf>,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            connect_timeout_s: 10.0,
            idle_timeout_s: 120.0,
            max_attempts: 4,
            retry_base_ms: 500,
            retry_max_ms: 30_000,
            attempt_timeout_s: 600.0,
            ca_file: None,
        }
    }
}

impl Network {
    pub(crate) fn connect_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.connect_timeout_s.max(0.001))
    }
    pub(crate) fn idle_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.idle_timeout_s.max(0.001))
    }
    pub(crate) fn attempt_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.attempt_timeout_s.clamp(0.001, 1e9))
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Permissions {
    /// `allow` lets agents start top-level user agents.
    pub(crate) user_agents: Grant,
    /// `allow` lets `write` and `edit` change `.git/`, `.ag/` and `.claude/` in every session.
    pub(crate) protected_writes: Grant,
    /// Directories (and those inside them) where a user agent started by a session may work,
    /// besides the spawning session's own directory.
    pub(crate) user_agent_dirs: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct AgentConfig {
    pub(crate) max_steps: u32,
    pub(crate) bash_timeout_s: u64,
    pub(crate) output_cap: usize,
    pub(crate) max_tokens: u64,
    /// Extended thinking for Anthropic models: the budget in tokens (none: off).
    pub(crate) thinking_budget: Option<u64>,
    /// How deep subagents may nest: 0 (the default) means a subagent cannot summon.
    pub(crate) max_summon_depth: u32,
    /// `--schema`: how many times an answer that fails the schema goes back to the model.
    pub(crate) schema_retries: u32,
    /// A new session's approval mode: `auto` (the policy decides) or `ask` (a person decides
    /// each call that changes something).
    pub(crate) approval: crate::policy::approval::ApprovalMode,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_steps: 50,
            bash_timeout_s: 120,
            output_cap: 30_000,
            max_tokens: 8192,
            thinking_budget: None,
            max_summon_depth: 0,
            schema_retries: 2,
            approval: crate::policy::approval::ApprovalMode::Auto,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct ContextConfig {
    /// Compact before a step when the estimated input passes this share of the window.
    pub(crate) compact_at: f64,
    /// Tokens of recent conversation kept verbatim after a compaction (about).
    pub(crate) keep_tokens: u64,
    /// The model that writes summaries (`PROVIDER/NAME`); none: the session's own.
    pub(crate) compact_model: Option<String>,
    /// Tool results a prune leaves whole: the most recent ones.
    pub(crate) keep_tool_results: usize,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            compact_at: 0.8,
            keep_tokens: 8000,
            compact_model: None,
            keep_tool_results: 3,
        }
    }
}

/// `[models."PROVIDER/NAME"]`: what the built-in table does not know.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModelConfig {
    /// Tokens the model reads at most (prompt and answer together).
    pub(crate) context_window: Option<u64>,
    /// Tokens the model writes at most in one answer.
    pub(crate) max_output: Option<u64>,
    /// OpenAI dialect: send `max_completion_tokens` (true) or `max_tokens` (false); by
    /// default the o-series and gpt-5 family take the first, other models the second.
    pub(crate) max_completion_tokens: Option<bool>,
    /// A model that thinks: OpenAI dialect, sent `reasoning_effort` when thinking is asked
    /// for (by default the o-series and gpt-5 family); Anthropic dialect, sent `thinking` (by
    /// default every model but the Claude 3 and 3.5 families).
    pub(crate) reasoning: Option<bool>,
    /// US dollars per million tokens (`{ input, output, cache_read, cache_write }`), for
    /// models the built-in price list lacks or prices it has wrong.
    pub(crate) price: Option<crate::usage::Price>,
}

impl Config {
    /// Load the user file and the nearest project file above `cwd`, project winning per key.
    pub(crate) fn load(cwd: &Path) -> Result<Config, ConfigError> {
        let user = user_config_dir()
            .map(|d| d.join("config.toml"))
            .filter(|p| p.is_file());
        let project = find_upward(cwd, ".ag/config.toml").filter(|p| Some(p) != user.as_ref());
        let mut merged = toml::Table::new();
        let mut files = Vec::new();
        let mut warnings = Vec::new();
        if let Some(f) = &user {
            merge(&mut merged, read_table(f)?);
            files.push(f.clone());
        }
        let mut project_sandbox = None;
        let mut model_from = user
            .as_ref()
            .filter(|_| merged.contains_key("model"))
            .cloned();
        if let Some(f) = &project {
            let mut table = read_table(f)?;
            warnings.extend(restrict_project(&mut table, &merged, f));
            project_sandbox = project_sandbox_of(&mut table, f, &mut warnings)?;
            if !project_root(f).is_some_and(|root| is_trusted(&root)) {
                warnings.extend(restrict_untrusted(&mut table, f));
            }
            if table.contains_key("model") {
                model_from = Some(f.clone());
            }
            merge(&mut merged, table);
            files.push(f.clone());
        }
        let mut config: Config =
            toml::Value::Table(merged)
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Parse {
                    path: files.last().cloned().unwrap_or_default(),
                    message: e.message().to_string(),
                })?;
        check::check(&config, files.last().cloned().unwrap_or_default())?;
        config.sources = files;
        config.warnings = warnings;
        config.project_sandbox = project_sandbox;
        config.model_from = model_from;
        config.user_file = user;
        config.room_url = std::env::var("AG_ROOM_URL")
            .ok()
            .filter(|u| !u.trim().is_empty());
        config.add_project_mcp(cwd)?;
        Ok(config)
    }

    /// The servers of the nearest `.mcp.json`, when its folder is trusted and the user approved
    /// each server's entry as it now reads; a name the user config defines stays the user's. (An untrusted file is reported by the commands that
    /// start servers, not by every command.)
    fn add_project_mcp(&mut self, cwd: &Path) -> Result<(), ConfigError> {
        let Some(file) = find_upward(cwd, ".mcp.json") else {
            return Ok(());
        };
        let Some(root) = project_root(&file) else {
            return Ok(());
        };
        if !is_trusted(&root) {
            self.mcp_json_ignored = Some(format!(
                "{} is ignored: the folder {} is not trusted (`ag-prompt --trust` there trusts \
                 it; or add the servers as [mcp.NAME] to the user config)",
                file.display(),
                root.display()
            ));
            return Ok(());
        }
        let secrets = crate::secrets::Secrets::from_config(self);
        let (servers, warnings) =
            mcp_json::read(&file, &|v| secrets.names_key(v), &|v| std::env::var(v).ok())?;
        self.warnings.extend(warnings);
        for (name, (server, fingerprint)) in servers {
            if self.mcp.contains_key(&name) {
                self.warnings.push(format!(
                    "{}: the MCP server {name:?} is ignored: the user config defines one of that name",
                    file.display()
                ));
            } else if !mcp_approval::is_approved(&root, &name, &fingerprint) {
                self.mcp_unapproved.push(mcp_approval::Unapproved {
                    name,
                    server,
                    fingerprint,
                    file: file.clone(),
                    folder: root.clone(),
                });
            } else {
                self.mcp.insert(name.clone(), server);
                self.mcp_from.insert(name, file.clone());
            }
        }
        Ok(())
    }

    /// The say the configuration has in a session's sandbox (the user's and the project's
    /// `[sandbox]`); the caller adds the definition, the flags and the stored settings.
    pub(crate) fn sandbox_sources(&self) -> crate::sandbox::Sources<'_> {
        crate::sandbox::Sources {
            user: Some(&self.sandbox),
            project: self.project_sandbox.as_ref(),
            ..Default::default()
        }
    }

    pub(crate) fn protected_writes_allowed(&self) -> bool {
        self.permissions.protected_writes == Grant::Allow
    }

    pub(crate) fn user_agents_allowed(&self) -> bool {
        self.permissions.user_agents == Grant::Allow
    }
}

fn read_table(f: &Path) -> Result<toml::Table, ConfigError> {
    let text = std::fs::read_to_string(f).map_err(|source| ConfigError::Read {
        path: f.to_path_buf(),
        source,
    })?;
    let bad = |e: toml::de::Error| ConfigError::Parse {
        path: f.to_path_buf(),
        message: toml_error::describe(&text, &e),
    };
    // Each file is checked against the whole schema on its own first, so a wrong word (a
    // provider kind, a permission) is reported with its line; the merged table has none.
    toml::from_str::<Config>(&text).map_err(bad)?;
    text.parse().map_err(bad)
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

/// Where a default model can be set, for hints: the user config always, a project's
/// `.ag/config.toml` only in a trusted folder.
pub(crate) const MODEL_SETTING_HINT: &str =
    "set `model = \"…\"` in ~/.config/ag/config.toml (or in .ag/config.toml of a trusted folder)";

/// `$XDG_CONFIG_HOME/ag`, else `~/.config/ag`.
pub(crate) fn user_config_dir() -> Option<PathBuf> {
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
pub(crate) fn find_upward(start: &Path, rel: &str) -> Option<PathBuf> {
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
    fn a_project_file_cannot_grant_permissions_or_redirect_keys() {
        let user: toml::Table = "[providers.router]\nkind = \"openai\"\nbase_url = \"https://good\"\napi_key_env = \"ROUTER_KEY\"\n"
            .parse()
            .unwrap();
        let mut project: toml::Table = r#"
            [permissions]
            user_agents = "allow"
            [agent]
            max_summon_depth = 5
            max_steps = 7
            [context]
            compact_model = "router/cheap"
            compact_at = 0.5
            [providers.router]
            kind = "openai"
            base_url = "http://evil"
            [providers.local]
            kind = "openai"
            base_url = "http://127.0.0.1:11434/v1"
            api_key_env = "ANTHROPIC_API_KEY"
            [network]
            ca_file = "evil-ca.pem"
            idle_timeout_s = 9
            [mcp.shell]
            command = "sh"
        "#
        .parse()
        .unwrap();
        let warnings = restrict_project(&mut project, &user, Path::new("p/.ag/config.toml"));
        assert_eq!(warnings.len(), 7, "{warnings:?}");
        let mut merged = user.clone();
        merge(&mut merged, project);
        let c: Config = toml::Value::Table(merged).try_into().unwrap();
        assert!(!c.user_agents_allowed());
        assert_eq!(c.agent.max_summon_depth, 0);
        assert_eq!(c.agent.max_steps, 7);
        assert_eq!(c.context.compact_model, None);
        assert_eq!(c.context.compact_at, 0.5);
        assert_eq!(c.providers["router"].base_url, "https://good");
        assert_eq!(c.providers["local"].api_key_env, None);
        assert_eq!(c.network.ca_file, None);
        assert!(c.mcp.is_empty());
        assert_eq!(c.network.idle_timeout_s, 9.0);
    }

    #[test]
    fn a_project_sandbox_only_tightens_and_stays_apart() {
        let mut project: toml::Table = r#"
            model = "echo"
            [sandbox]
            mode = "off"
            network = true
            writable = ["/"]
        "#
        .parse()
        .unwrap();
        let mut warnings = Vec::new();
        let s = project_sandbox_of(&mut project, Path::new("p/.ag/config.toml"), &mut warnings)
            .unwrap()
            .unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert_eq!(
            s.mode,
            Some(crate::sandbox::Mode::Off),
            "resolve ignores a looser mode"
        );
        assert_eq!((s.network, s.writable.len()), (None, 0));
        assert!(
            !project.contains_key("sandbox"),
            "never merged over the user's"
        );
        let mut bad: toml::Table = "[sandbox]
mode = \"wide\"
"
        .parse()
        .unwrap();
        let e = project_sandbox_of(&mut bad, Path::new("p.toml"), &mut warnings).unwrap_err();
        assert!(e.to_string().contains("[sandbox]"), "{e}");
    }

    #[test]
    fn an_untrusted_project_cannot_choose_the_model_or_hosts() {
        let mut project: toml::Table = r#"
            model = "evil/m"
            [providers.evil]
            kind = "openai"
            base_url = "http://evil.example"
            [models."evil/m"]
            context_window = 1000
            [agent]
            max_steps = 3
        "#
        .parse()
        .unwrap();
        let warnings = restrict_untrusted(&mut project, Path::new("/p/.ag/config.toml"));
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("not trusted"), "{warnings:?}");
        assert_eq!(project.keys().collect::<Vec<_>>(), ["agent"]);
    }

    #[test]
    fn parse_errors_name_the_line() {
        let text = "model = \"echo\"\n[network\n";
        let e = text.parse::<toml::Table>().unwrap_err();
        assert!(
            toml_error::describe(text, &e).starts_with("line 2"),
            "{}",
            toml_error::describe(text, &e)
        );
    }
}
