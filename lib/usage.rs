//! What tokens cost: the list prices of the models `ag` knows, in US dollars per million
//! tokens, which `[models."PROVIDER/NAME"] price` in the configuration overrides or adds to,
//! and the cost of the usage a `turn_end` records.
//!
//! The two dialects count differently: Anthropic's input excludes the tokens read from and
//! written to the prompt cache (each has its own price), OpenAI's prompt tokens include the
//! cached ones, which are billed at the cache-read price instead of the input price.

use serde::Deserialize;
use serde_json::Value;

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Price {
    pub(crate) input: f64,
    pub(crate) output: f64,
    /// Reading from the prompt cache [default: the input price].
    #[serde(default)]
    pub(crate) cache_read: Option<f64>,
    /// Writing to the prompt cache [default: the input price].
    #[serde(default)]
    pub(crate) cache_write: Option<f64>,
}

const fn p(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
    Price {
        input,
        output,
        cache_read: Some(cache_read),
        cache_write: Some(cache_write),
    }
}

/// List prices by API model name; a name matches the longest entry it starts with
/// (`claude-sonnet-4-5-20250929` is `claude-sonnet-4-5`). OpenAI has no cache-write price.
const BUILT_IN: &[(&str, Price)] = &[
    ("claude-opus-4-5", p(5.0, 25.0, 0.50, 6.25)),
    ("claude-opus-4-1", p(15.0, 75.0, 1.50, 18.75)),
    ("claude-opus-4", p(15.0, 75.0, 1.50, 18.75)),
    ("claude-sonnet-4-5", p(3.0, 15.0, 0.30, 3.75)),
    ("claude-sonnet-4", p(3.0, 15.0, 0.30, 3.75)),
    ("claude-3-7-sonnet", p(3.0, 15.0, 0.30, 3.75)),
    ("claude-haiku-4-5", p(1.0, 5.0, 0.10, 1.25)),
    ("claude-3-5-haiku", p(0.80, 4.0, 0.08, 1.0)),
    ("gpt-5-nano", p(0.05, 0.40, 0.005, 0.05)),
    ("gpt-5-mini", p(0.25, 2.0, 0.025, 0.25)),
    ("gpt-5", p(1.25, 10.0, 0.125, 1.25)),
    ("gpt-4.1-nano", p(0.10, 0.40, 0.025, 0.10)),
    ("gpt-4.1-mini", p(0.40, 1.60, 0.10, 0.40)),
    ("gpt-4.1", p(2.0, 8.0, 0.50, 2.0)),
    ("gpt-4o-mini", p(0.15, 0.60, 0.075, 0.15)),
    ("gpt-4o", p(2.50, 10.0, 1.25, 2.50)),
    ("o4-mini", p(1.10, 4.40, 0.275, 1.10)),
    ("o3", p(2.0, 8.0, 0.50, 2.0)),
];

/// The name an API knows a model by: `anthropic/claude-…` is `claude-…`.
fn api_name(model: &str) -> &str {
    model.rsplit_once('/').map_or(model, |(_, n)| n)
}

/// The price of `model` (a model reference such as `openai/gpt-4o`, or the name an API
/// answered with): the configuration's `[models."REF"] price` first, else the built-in list
/// price of the longest name it starts with; none for offline and unknown models.
pub(crate) fn price(model: &str, config: &crate::config::Config) -> Option<Price> {
    let name = api_name(model);
    if let Some(p) = config
        .models
        .iter()
        .filter(|(k, _)| *k == model || api_name(k) == name)
        .find_map(|(_, m)| m.price)
    {
        return Some(p);
    }
    BUILT_IN
        .iter()
        .filter(|(k, _)| name.starts_with(k))
        .max_by_key(|(k, _)| k.len())
        .map(|(_, p)| *p)
}

/// Token counts as a `turn_end` records them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Tokens {
    pub(crate) input: u64,
    pub(crate) output: u64,
    pub(crate) cache_read: u64,
    pub(crate) cache_write: u64,
}

impl Tokens {
    /// The counts of a `usage` object (missing fields are 0).
    pub(crate) fn of(usage: &Value) -> Tokens {
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        Tokens {
            input: n("input"),
            output: n("output"),
            cache_read: n("cache_read"),
            cache_write: n("cache_write"),
        }
    }

    pub(crate) fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
    }
}

/// Whether a model's input count includes its cache reads: OpenAI's does, Anthropic's does
/// not. Told by the dialect when it is known, else by the model's name.
pub(crate) fn input_includes_cache(model: &str, dialect: Option<crate::fold::Dialect>) -> bool {
    match dialect {
        Some(crate::fold::Dialect::Anthropic) => false,
        Some(crate::fold::Dialect::OpenAi) => true,
        None => !api_name(model).starts_with("claude"),
    }
}

/// What `t` cost at `price`, in US dollars.
pub(crate) fn cost(t: &Tokens, price: &Price, input_includes_cache: bool) -> f64 {
    let fresh = if input_includes_cache {
        t.input.saturating_sub(t.cache_read)
    } else {
        t.input
    };
    let per = |n: u64, usd: f64| n as f64 * usd / 1_000_000.0;
    per(fresh, price.input)
        + per(t.output, price.output)
        + per(t.cache_read, price.cache_read.unwrap_or(price.input))
        + per(t.cache_write, price.cache_write.unwrap_or(price.input))
}

/// What a turn cost: the price of `model` (the reference the session runs on, which the
/// configuration prices by), else of `answered` (the name the API answered with), counted as
/// `dialect` counts (told by the name when unknown). None when neither has a price.
pub(crate) fn turn_cost(
    model: &str,
    answered: Option<&str>,
    tokens: &Tokens,
    dialect: Option<crate::fold::Dialect>,
    config: &crate::config::Config,
) -> Option<f64> {
    let priced = price(model, config).or_else(|| price(answered?, config))?;
    let named = if model.is_empty() {
        answered.unwrap_or_default()
    } else {
        model
    };
    Some(cost(tokens, &priced, input_includes_cache(named, dialect)))
}

/// Dollars rounded to a millionth, as they are recorded.
pub(crate) fn round(usd: f64) -> f64 {
    (usd * 1_000_000.0).round() / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_match_the_longest_name_and_the_configuration_wins() {
        let mut config = crate::config::Config::default();
        let sonnet = price("anthropic/claude-sonnet-4-5", &config).unwrap();
        assert_eq!(sonnet.input, 3.0);
        assert_eq!(price("claude-sonnet-4-5-20250929", &config), Some(sonnet));
        assert_eq!(
            price("gpt-4o-mini-2024-07-18", &config).unwrap().input,
            0.15
        );
        assert_eq!(price("openai/gpt-4o", &config).unwrap().input, 2.5);
        assert_eq!(price("echo", &config), None);
        assert_eq!(price("local/llama3", &config), None);
        config.models.insert(
            "local/llama3".into(),
            crate::config::ModelConfig {
                price: Some(Price {
                    input: 0.1,
                    output: 0.2,
                    cache_read: None,
                    cache_write: None,
                }),
                ..Default::default()
            },
        );
        assert_eq!(price("local/llama3", &config).unwrap().output, 0.2);
    }

    #[test]
    fn costs_count_cache_tokens_as_each_dialect_does() {
        let t = Tokens {
            input: 1_000_000,
            output: 100_000,
            cache_read: 400_000,
            cache_write: 200_000,
        };
        let sonnet = p(3.0, 15.0, 0.30, 3.75);
        // Anthropic: 3 + 1.5 + 0.12 + 0.75.
        assert!((cost(&t, &sonnet, false) - 5.37).abs() < 1e-9);
        // OpenAI: (1M − 0.4M) × 2.5 + 0.1M × 10 + 0.4M × 1.25 + 0.2M × 2.5.
        let gpt4o = p(2.5, 10.0, 1.25, 2.5);
        assert!((cost(&t, &gpt4o, true) - (1.5 + 1.0 + 0.5 + 0.5)).abs() < 1e-9);
    }
}
