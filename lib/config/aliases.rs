//! Model aliases: short names (`sonnet`, `opus`, `haiku`, `gpt`, …) for full model
//! references, from a built-in table that `[aliases]` in the configuration extends or
//! overrides. An alias is expanded once, when the model is chosen, so sessions, notes and the
//! store always show the real name.

use std::collections::BTreeMap;

/// The built-in aliases, for the current models of each provider.
pub(crate) const BUILT_IN: &[(&str, &str)] = &[
    ("sonnet", "anthropic/claude-sonnet-4-5"),
    ("opus", "anthropic/claude-opus-4-5"),
    ("haiku", "anthropic/claude-haiku-4-5"),
    ("gpt", "openai/gpt-5"),
    ("gpt-mini", "openai/gpt-5-mini"),
    ("o3", "openai/o3"),
    ("o4-mini", "openai/o4-mini"),
];

/// Every alias in force: the built-in table, then the configuration's `[aliases]` over it.
pub(crate) fn all(configured: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut all: BTreeMap<String, String> = BUILT_IN
        .iter()
        .map(|(a, m)| (a.to_string(), m.to_string()))
        .collect();
    all.extend(configured.iter().map(|(a, m)| (a.clone(), m.clone())));
    all
}

/// The model `name` stands for: an alias's target, else `name` itself. Aliases do not chain
/// (a target is a model reference, never another alias).
pub(crate) fn expand<'a>(name: &'a str, configured: &'a BTreeMap<String, String>) -> &'a str {
    let name = name.trim();
    if let Some(m) = configured.get(name) {
        return m;
    }
    BUILT_IN
        .iter()
        .find(|(a, _)| *a == name)
        .map_or(name, |(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_extends_and_overrides_the_table() {
        let mut c = BTreeMap::new();
        assert_eq!(expand("sonnet", &c), "anthropic/claude-sonnet-4-5");
        assert_eq!(expand("echo", &c), "echo");
        assert_eq!(expand("openai/gpt-4o", &c), "openai/gpt-4o");
        c.insert(
            "sonnet".into(),
            "openrouter/anthropic/claude-sonnet-4.5".into(),
        );
        c.insert("local".into(), "ollama/qwen3".into());
        assert_eq!(
            expand("sonnet", &c),
            "openrouter/anthropic/claude-sonnet-4.5"
        );
        assert_eq!(expand("local", &c), "ollama/qwen3");
        assert_eq!(all(&c)["haiku"], "anthropic/claude-haiku-4-5");
    }
}
