//! Model windows: how many tokens a model reads and writes. A built-in table for current
//! Anthropic and OpenAI models, `[models."PROVIDER/NAME"]` in the config for the rest, a
//! conservative default for unknown models, and what a provider's "too long" error taught
//! (kept in the store, so it survives a restart).

use crate::config::Config;
use crate::fold::Dialect;
use crate::reduce::Usage;

/// The window assumed for a model nothing is known about: small enough that a session
/// compacts before most servers refuse it.
pub(crate) const DEFAULT_WINDOW: u64 = 32_000;
/// The max output assumed for a model nothing is known about.
pub(crate) const DEFAULT_MAX_OUTPUT: u64 = 4_096;

/// `(name prefix, context window, max output)`. The longest matching prefix wins, so dated
/// snapshots (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`) find their family.
const BUILTIN: &[(&str, u64, u64)] = &[
    ("claude-opus-4-5", 200_000, 64_000),
    ("claude-opus-4-1", 200_000, 32_000),
    ("claude-opus-4", 200_000, 32_000),
    ("claude-sonnet-4-5", 200_000, 64_000),
    ("claude-sonnet-4", 200_000, 64_000),
    ("claude-haiku-4-5", 200_000, 64_000),
    ("claude-3-7-sonnet", 200_000, 64_000),
    ("claude-3-5-sonnet", 200_000, 8_192),
    ("claude-3-5-haiku", 200_000, 8_192),
    ("claude-3-opus", 200_000, 4_096),
    ("claude-3-haiku", 200_000, 4_096),
    ("gpt-5", 400_000, 128_000),
    ("gpt-5-chat", 128_000, 16_384),
    ("gpt-4.1", 1_047_576, 32_768),
    ("gpt-4o", 128_000, 16_384),
    ("chatgpt-4o", 128_000, 16_384),
    ("gpt-4-turbo", 128_000, 4_096),
    ("gpt-4", 8_192, 8_192),
    ("gpt-3.5-turbo", 16_385, 4_096),
    ("o1", 200_000, 100_000),
    ("o1-mini", 128_000, 65_536),
    ("o3", 200_000, 100_000),
    ("o3-mini", 200_000, 100_000),
    ("o4-mini", 200_000, 100_000),
];

/// Where a window figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// `[models."P/NAME"]` in the config.
    Config,
    /// A provider's "too long" error stated it.
    Learned,
    /// The built-in table.
    Builtin,
    /// Nothing is known: the conservative default.
    Default,
    /// Given for this run (`--context-window`, or a script's `context_window`).
    Given,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Config => "config",
            Source::Learned => "learned",
            Source::Builtin => "built-in",
            Source::Default => "default",
            Source::Given => "given",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) context_window: u64,
    pub(crate) max_output: u64,
    pub(crate) source: Source,
}

/// The share of the window's free room (after the fixed part and the answer's reserve) that
/// a compaction keeps verbatim; the rest is for the summary and the turns that follow.
pub(crate) const KEEP_SHARE: f64 = 0.4;

/// The least a compaction keeps verbatim, however small the window (the latest prompt, at
/// least in part).
pub(crate) const MIN_KEEP: u64 = 256;

/// The kept part's budget on window `w`: at most `configured` (`[context] keep_tokens`), and
/// at most [`KEEP_SHARE`] of what is left after `fixed` (system prompt, instructions, tool
/// schemas) and the answer's reserve (`max_tokens`, at most a quarter of the window).
///
/// A 4,096-token window with 1,200 tokens of fixed part and an 8,192 `max_tokens`: the reserve
/// is 1,024, the free room 1,872, and the kept part at most 748 tokens.
pub(crate) fn keep_budget(w: &Window, fixed: u64, max_tokens: u64, configured: u64) -> u64 {
    let reserve = max_tokens.min(w.context_window / 4);
    let free = w.context_window.saturating_sub(fixed + reserve);
    let share = (free as f64 * KEEP_SHARE) as u64;
    configured.min(share.max(MIN_KEEP))
}

/// [`keep_budget`] for a provider that counts `scale` tokens for each estimated one, in
/// estimated tokens (what the cut plans in): the window and `configured` are the provider's
/// tokens, `fixed` is estimated.
pub(crate) fn keep_budget_scaled(
    w: &Window,
    fixed: u64,
    scale: f64,
    max_tokens: u64,
    configured: u64,
) -> u64 {
    let scale = scale.max(f64::MIN_POSITIVE);
    let fixed = (fixed as f64 * scale).round() as u64;
    let real = keep_budget(w, fixed, max_tokens, configured);
    (real as f64 / scale).round() as u64
}

/// The built-in figures for a model name (without its provider), if the table knows it.
pub(crate) fn builtin(name: &str) -> Option<(u64, u64)> {
    let name = name.rsplit('/').next().unwrap_or(name);
    BUILTIN
        .iter()
        .filter(|(prefix, _, _)| {
            name.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.', ':', '@']))
        })
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|&(_, w, o)| (w, o))
}

/// The window of `model` (`PROVIDER/NAME` as the user wrote it). `learned` is what the store
/// remembers from a provider's error: it replaces the built-in figure or the default, and
/// caps a configured one (the provider's word is the truth about what it accepts).
/// The key a learned window is kept under: the model and the endpoint it was learned on
/// (`openai/gpt-4o-mini@127.0.0.1:4000`), so one server's small limit does not shrink the
/// same model on another. Offline models have no endpoint.
pub(crate) fn learned_key(provider: &dyn crate::provider::Provider) -> String {
    match provider.host() {
        Some(host) => format!("{}@{host}", provider.name()),
        None => provider.name().to_string(),
    }
}

/// [`learned_key`] for a model by name, as the configuration resolves it.
pub(crate) fn learned_key_of(model: &str, config: &Config) -> String {
    crate::provider::resolve(model, config)
        .map(|p| learned_key(p.as_ref()))
        .unwrap_or_else(|_| model.to_string())
}

pub(crate) fn lookup(model: &str, config: &Config, learned: Option<u64>) -> Window {
    let configured = config.models.get(model);
    let name = model.split_once('/').map_or(model, |(_, n)| n);
    let table = builtin(name);
    let max_output = configured
        .and_then(|m| m.max_output)
        .or(table.map(|t| t.1))
        .unwrap_or(DEFAULT_MAX_OUTPUT);
    // A window the user configured wins over one a provider's error stated.
    let (context_window, source) = match (configured.and_then(|m| m.context_window), learned) {
        (Some(c), _) => (c, Source::Config),
        (None, Some(l)) => (l, Source::Learned),
        (None, None) => match table {
            Some((w, _)) => (w, Source::Builtin),
            None => (DEFAULT_WINDOW, Source::Default),
        },
    };
    Window {
        context_window,
        max_output,
        source,
    }
}

/// Forget what providers taught about `model` (`ag-prompt models --forget`): its learned
/// windows and how its endpoints count prompts, on every endpoint; how many figures there were.
pub(crate) fn forget(
    store: &crate::store::Store,
    model: &str,
) -> Result<usize, crate::store::StoreError> {
    store.forget_windows(model)
}

/// Every model the config, the store and the built-in table know a window for, by name
/// (`PROVIDER/NAME`; a built-in family as `PROVIDER/PREFIX*`), with its figures.
pub(crate) fn known(config: &Config, learned: &[(String, u64)]) -> Vec<(String, Window)> {
    let mut out: Vec<(String, Window)> = Vec::new();
    let mut names: Vec<&String> = config.models.keys().collect();
    names.extend(
        learned
            .iter()
            .map(|(m, _)| m)
            .filter(|m| !config.models.contains_key(*m)),
    );
    for m in names {
        let l = learned.iter().find(|(n, _)| n == m).map(|(_, w)| *w);
        out.push((m.clone(), lookup(m, config, l)));
    }
    for &(prefix, w, o) in BUILTIN {
        let provider = if prefix.starts_with("claude") {
            "anthropic"
        } else {
            "openai"
        };
        out.push((
            format!("{provider}/{prefix}*"),
            Window {
                context_window: w,
                max_output: o,
                source: Source::Builtin,
            },
        ));
    }
    out
}

/// Whether a model runs offline (`echo`, `script:FILE`): those have no window unless the
/// config gives one.
pub(crate) fn is_offline(model: &str) -> bool {
    model == "echo" || model.starts_with("script:")
}

/// What a provider's "too long" error says: the tokens sent, and the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLong {
    pub(crate) sent: Option<u64>,
    pub(crate) window: Option<u64>,
}

/// Read a provider's refusal of a request that does not fit the window, in either dialect:
/// Anthropic's `prompt is too long: 215000 tokens > 200000 maximum`, OpenAI's `This model's
/// maximum context length is 128000 tokens. However, your messages resulted in 130000
/// tokens…` (code `context_length_exceeded`), and the wordings of compatible servers.
pub(crate) fn too_long(message: &str) -> Option<TooLong> {
    let lower = message.to_ascii_lowercase();
    if let Some(at) = lower.find("prompt is too long") {
        // `X tokens > Y maximum`
        let rest = &lower[at..];
        let nums = numbers(rest);
        return Some(match rest.find('>') {
            Some(gt) => TooLong {
                sent: numbers(&rest[..gt]).first().copied(),
                window: numbers(&rest[gt..]).first().copied(),
            },
            None => TooLong {
                sent: nums.first().copied(),
                window: None,
            },
        });
    }
    if let Some(at) = lower.find("maximum context length is") {
        let window = numbers(&lower[at..]).first().copied();
        let sent = lower[at..]
            .find("resulted in")
            .or_else(|| lower[at..].find("requested"))
            .and_then(|r| numbers(&lower[at + r..]).first().copied());
        return Some(TooLong { sent, window });
    }
    let known = [
        "context_length_exceeded",
        "context length exceeded",
        "exceeds the context window",
        "input is too long",
        "too many tokens",
    ];
    known.iter().any(|k| lower.contains(k)).then_some(TooLong {
        sent: None,
        window: None,
    })
}

/// The decimal numbers in `s`, in order (`128,000` reads as 128000).
fn numbers(s: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut cur: Option<u64> = None;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(d) = c.to_digit(10) {
            cur = Some(cur.unwrap_or(0).saturating_mul(10).saturating_add(d as u64));
        } else if c == ',' && cur.is_some() && chars.peek().is_some_and(char::is_ascii_digit) {
            continue;
        } else if let Some(n) = cur.take() {
            out.push(n);
        }
    }
    out.extend(cur);
    out
}

/// The tokens a request's prompt took, from the provider's usage: Anthropic counts cached
/// tokens apart from `input_tokens`; OpenAI's `prompt_tokens` already includes them.
pub(crate) fn prompt_tokens(dialect: Dialect, usage: &Usage) -> u64 {
    match dialect {
        Dialect::Anthropic => usage.input + usage.cache_read + usage.cache_write,
        Dialect::OpenAi => usage.input,
    }
}

/// `142000` → `142k`, `1500` → `1.5k`, `900` → `900`.
pub(crate) fn short_tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => {
            let t = format!("{:.1}", n as f64 / 1000.0);
            format!("{}k", t.trim_end_matches(".0"))
        }
        _ => format!("{}k", (n + 500) / 1000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelConfig;

    #[test]
    fn the_kept_part_is_bounded_by_the_window() {
        let w = |context_window| Window {
            context_window,
            max_output: 4096,
            source: Source::Config,
        };
        // The README's example: a 4k window, 1,200 tokens of fixed part, max_tokens 8,192.
        assert_eq!(keep_budget(&w(4096), 1200, 8192, 8000), 748);
        // A large window: keep_tokens is the bound.
        assert_eq!(keep_budget(&w(200_000), 3000, 8192, 8000), 8000);
        // A window the fixed part fills: still the least a compaction keeps.
        assert_eq!(keep_budget(&w(2048), 3000, 8192, 8000), MIN_KEEP);
    }

    #[test]
    fn a_provider_that_counts_more_shrinks_the_kept_part_in_estimated_tokens() {
        let w = Window {
            context_window: 4096,
            max_output: 4096,
            source: Source::Config,
        };
        // Counted as estimated: the plain budget.
        assert_eq!(keep_budget_scaled(&w, 1200, 1.0, 8192, 8000), 748);
        // Counted twice over: the fixed part is 2,400 real tokens, the free room 672, the
        // kept part 268 real tokens, 134 estimated ones.
        assert_eq!(keep_budget_scaled(&w, 1200, 2.0, 8192, 8000), 134);
        // `keep_tokens` is the provider's tokens too.
        let big = Window {
            context_window: 200_000,
            ..w
        };
        assert_eq!(keep_budget_scaled(&big, 1200, 2.0, 8192, 8000), 4000);
    }

    #[test]
    fn the_table_matches_families_and_dated_snapshots() {
        assert_eq!(
            builtin("claude-sonnet-4-5-20250929"),
            Some((200_000, 64_000))
        );
        assert_eq!(builtin("claude-opus-4-1-20250805"), Some((200_000, 32_000)));
        assert_eq!(builtin("gpt-4o-mini"), Some((128_000, 16_384)));
        assert_eq!(builtin("gpt-4o-2024-08-06"), Some((128_000, 16_384)));
        assert_eq!(builtin("gpt-4.1-mini"), Some((1_047_576, 32_768)));
        assert_eq!(builtin("gpt-4"), Some((8_192, 8_192)));
        assert_eq!(builtin("gpt-4-turbo"), Some((128_000, 4_096)));
        assert_eq!(builtin("o3-mini"), Some((200_000, 100_000)));
        assert_eq!(builtin("openai/gpt-5-mini"), Some((400_000, 128_000)));
        // A prefix must end at a word boundary.
        assert_eq!(builtin("o30"), None);
        assert_eq!(builtin("llama3.1:8b"), None);
    }

    #[test]
    fn config_beats_the_table_learned_replaces_the_default_and_caps_config() {
        let mut config = Config::default();
        config.models.insert(
            "ollama/llama3".into(),
            ModelConfig {
                context_window: Some(8192),
                max_output: Some(2048),
                ..Default::default()
            },
        );
        let w = lookup("ollama/llama3", &config, None);
        assert_eq!(
            (w.context_window, w.max_output, w.source),
            (8192, 2048, Source::Config)
        );
        // A configured window wins over a learned one.
        let w = lookup("ollama/llama3", &config, Some(4096));
        assert_eq!((w.context_window, w.source), (8192, Source::Config));
        let w = lookup("ollama/llama3", &config, Some(100_000));
        assert_eq!((w.context_window, w.source), (8192, Source::Config));
        let w = lookup("anthropic/claude-haiku-4-5", &config, None);
        assert_eq!((w.context_window, w.source), (200_000, Source::Builtin));
        let w = lookup("router/mystery-7b", &config, None);
        assert_eq!(
            (w.context_window, w.max_output, w.source),
            (DEFAULT_WINDOW, DEFAULT_MAX_OUTPUT, Source::Default)
        );
        let w = lookup("router/mystery-7b", &config, Some(65_536));
        assert_eq!((w.context_window, w.source), (65_536, Source::Learned));
    }

    #[test]
    fn too_long_reads_both_dialects_real_messages() {
        assert_eq!(
            too_long("prompt is too long: 215337 tokens > 200000 maximum"),
            Some(TooLong {
                sent: Some(215_337),
                window: Some(200_000)
            })
        );
        assert_eq!(
            too_long(
                "This model's maximum context length is 128000 tokens. However, your messages \
                 resulted in 130512 tokens (129000 in the messages, 1512 in the functions). \
                 Please reduce the length of the messages or functions."
            ),
            Some(TooLong {
                sent: Some(130_512),
                window: Some(128_000)
            })
        );
        assert_eq!(
            too_long("This model's maximum context length is 16,385 tokens. However, you requested 17,001 tokens"),
            Some(TooLong {
                sent: Some(17_001),
                window: Some(16_385)
            })
        );
        assert_eq!(
            too_long("HTTP 400: context_length_exceeded"),
            Some(TooLong {
                sent: None,
                window: None
            })
        );
        assert_eq!(too_long("Overloaded"), None);
        assert_eq!(
            too_long("max_tokens: 100000 > 64000, which is the maximum"),
            None
        );
    }

    #[test]
    fn prompt_tokens_by_dialect_and_short_forms() {
        let u = Usage {
            input: 100,
            output: 5,
            cache_read: 1000,
            cache_write: 10,
        };
        assert_eq!(prompt_tokens(Dialect::Anthropic, &u), 1110);
        assert_eq!(prompt_tokens(Dialect::OpenAi, &u), 100);
        assert_eq!(short_tokens(142_300), "142k");
        assert_eq!(short_tokens(9_000), "9k");
        assert_eq!(short_tokens(1_500), "1.5k");
        assert_eq!(short_tokens(640), "640");
    }
}
