//! Provider keys as the tools must never see them: the variables that hold keys (the built-in
//! providers' and every `api_key_env` the configuration names), which are taken out of this
//! process's own environment once read ([`withdraw`]) so no child inherits them, and kept
//! out of tool environments; and the keys' exact values, which are cut out of tool results
//! before they are stored or sent; and the files that hold credentials of the user's (the room
//! server's), which a sandboxed command finds empty.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::config::Config;

/// The key variables of the built-in providers.
pub(crate) const BUILT_IN: [&str; 2] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// Key variables taken out of the environment, by name.
static WITHDRAWN: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

fn withdrawn_map() -> std::sync::MutexGuard<'static, BTreeMap<String, String>> {
    WITHDRAWN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Take the key variables `names` out of this process's environment, keeping their values
/// here for [`var`], so that no child — a tool, an MCP server, git run by a hook — inherits
/// them. Only while the process has one thread: changing the environment while another
/// thread may read it is unsound, so a multi-threaded caller leaves it as it is (the tools'
/// own environments are still scrubbed by name). Returns whether the environment was changed.
pub(crate) fn withdraw<'a>(names: impl IntoIterator<Item = &'a str>) -> bool {
    let present: Vec<&str> = names
        .into_iter()
        .filter(|n| !n.is_empty() && !n.contains(['=', '\0']))
        .filter(|n| std::env::var_os(n).is_some())
        .collect();
    // Nothing to take out: no need to ask the kernel how many threads there are (at every
    // start of every command).
    if present.is_empty() {
        return true;
    }
    if !crate::proc::single_threaded() {
        return false;
    }
    let mut map = withdrawn_map();
    for name in present {
        if let Some(v) = std::env::var_os(name) {
            if let Ok(v) = v.into_string() {
                map.insert(name.to_string(), v);
            }
            std::env::remove_var(name);
        }
    }
    true
}

/// A key variable: withdrawn, else still in the environment; empty counts as unset.
pub(crate) fn var(name: &str) -> Option<String> {
    withdrawn_map()
        .get(name)
        .cloned()
        .or_else(|| std::env::var(name).ok())
        .filter(|v| !v.trim().is_empty())
}

/// [`withdraw`] the key variables `config` names (`api_key_env` of its providers).
pub(crate) fn withdraw_configured(config: &Config) -> bool {
    withdraw(
        config
            .providers
            .values()
            .filter_map(|p| p.api_key_env.as_deref()),
    )
}

/// The withdrawn keys, for the one kind of child that needs them explicitly: a summoned
/// `ag-prompt`, which talks to the provider itself (and withdraws them in turn).
pub(crate) fn withdrawn() -> Vec<(String, String)> {
    withdrawn_map()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Shorter values are not scrubbed: a one-letter "key" would blank out every result.
pub(crate) const MIN_SCRUBBED_LEN: usize = 8;

/// What a key looks like in a tool result after the scrub.
pub(crate) const REDACTED: &str = "[redacted key]";

#[derive(Debug, Clone, Default)]
pub(crate) struct Secrets {
    names: Vec<String>,
    values: Vec<String>,
    files: Vec<std::path::PathBuf>,
}

impl Secrets {
    /// The key variables `config` names and the values they hold in this environment.
    pub(crate) fn from_config(config: &Config) -> Secrets {
        let names: Vec<String> = BUILT_IN
            .iter()
            .map(|s| s.to_string())
            .chain(
                config
                    .providers
                    .values()
                    .filter_map(|p| p.api_key_env.clone()),
            )
            .collect();
        let values = names.iter().filter_map(|n| var(n)).collect();
        Secrets {
            files: crate::config::rooms::credential_file(config)
                .into_iter()
                .collect(),
            ..Secrets::new(names, values)
        }
    }

    pub(crate) fn new(names: Vec<String>, values: Vec<String>) -> Secrets {
        let mut values: Vec<String> = values
            .into_iter()
            .map(|v| v.trim().to_string())
            .filter(|v| v.len() >= MIN_SCRUBBED_LEN)
            .collect();
        // Longest first, so a key that contains another is cut whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Secrets {
            names,
            values,
            files: Vec::new(),
        }
    }

    /// The credential files a sandboxed command must not read.
    pub(crate) fn files(&self) -> &[std::path::PathBuf] {
        &self.files
    }

    /// Whether `var` holds a key named by the configuration.
    pub(crate) fn names_key(&self, var: &str) -> bool {
        self.names.iter().any(|n| n == var)
    }

    /// `text` with every key value replaced by [`REDACTED`].
    pub(crate) fn scrub(&self, text: String) -> String {
        if !self.values.iter().any(|v| text.contains(v.as_str())) {
            return text;
        }
        self.values
            .iter()
            .fold(text, |t, v| t.replace(v.as_str(), REDACTED))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_are_cut_whole_and_short_ones_left() {
        let s = Secrets::new(
            vec!["MY_ROUTER_CRED".into()],
            vec![
                "abc".into(),
                "sk-1234567890".into(),
                "sk-1234567890-long".into(),
            ],
        );
        assert_eq!(
            s.scrub("a sk-1234567890-long b sk-1234567890 abc".into()),
            format!("a {REDACTED} b {REDACTED} abc")
        );
        assert!(s.names_key("MY_ROUTER_CRED"));
        assert!(!s.names_key("PATH"));
    }
}
