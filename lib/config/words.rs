//! The closed words of the configuration: a provider's wire protocol and a permission. Each
//! is an enum, so a typo fails when the configuration loads instead of meaning something else.

use serde::Deserialize;

/// The wire protocol of a `[providers.NAME]` entry; any other word fails when the
/// configuration loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ProviderKind {
    /// Chat Completions (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter).
    #[serde(rename = "openai")]
    OpenAi,
    /// Messages.
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl ProviderKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

/// A `[permissions]` value: `allow` or `deny` (the default). Any other word fails when the
/// configuration loads, so a typo never reads as a quiet "deny".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Grant {
    Allow,
    #[default]
    Deny,
}
