//! Provider keys as the tools must never see them: the variables that hold keys (the built-in
//! providers' and every `api_key_env` the configuration names), which are kept out of tool
//! environments, and the keys' exact values, which are cut out of tool results before they
//! are stored or sent.

use crate::config::Config;

/// The key variables of the built-in providers.
const BUILT_IN: [&str; 2] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// Shorter values are not scrubbed: a one-letter "key" would blank out every result.
const MIN_SCRUBBED_LEN: usize = 8;

/// What a key looks like in a tool result after the scrub.
pub const REDACTED: &str = "[redacted key]";

#[derive(Debug, Clone, Default)]
pub struct Secrets {
    names: Vec<String>,
    values: Vec<String>,
}

impl Secrets {
    /// The key variables `config` names and the values they hold in this environment.
    pub fn from_config(config: &Config) -> Secrets {
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
        let values = names.iter().filter_map(|n| std::env::var(n).ok()).collect();
        Secrets::new(names, values)
    }

    pub fn new(names: Vec<String>, values: Vec<String>) -> Secrets {
        let mut values: Vec<String> = values
            .into_iter()
            .map(|v| v.trim().to_string())
            .filter(|v| v.len() >= MIN_SCRUBBED_LEN)
            .collect();
        // Longest first, so a key that contains another is cut whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Secrets { names, values }
    }

    /// Whether `var` holds a key named by the configuration.
    pub fn names_key(&self, var: &str) -> bool {
        self.names.iter().any(|n| n == var)
    }

    /// `text` with every key value replaced by [`REDACTED`].
    pub fn scrub(&self, text: String) -> String {
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
