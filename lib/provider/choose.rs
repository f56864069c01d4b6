//! Which model a turn runs on, in one order for every command (`ag-prompt`, `ag-fork --btw`,
//! `ag-summon` and the `summon` tool): the `-m` flag, else the agent definition's first usable
//! model, else `AG_MODEL`, else the session's own model (for a fork or a child: its source's or
//! spawner's), else the configuration's `model`.

use super::{resolve, ModelError, Provider};
use crate::config::Config;

/// Where a model may come from; the first that names one wins.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelSources<'a> {
    /// `-m MODEL`.
    pub(crate) flag: Option<&'a str>,
    /// An agent definition: its slug and its models in order of preference.
    pub(crate) definition: Option<(&'a str, &'a [String])>,
    /// `AG_MODEL`.
    pub(crate) env: Option<String>,
    /// The session's stored model (a source's, a spawner's).
    pub(crate) session: Option<&'a str>,
}

impl<'a> ModelSources<'a> {
    /// The sources with `AG_MODEL` read from the environment.
    pub(crate) fn with_env() -> ModelSources<'a> {
        ModelSources {
            env: std::env::var("AG_MODEL")
                .ok()
                .filter(|m| !m.trim().is_empty()),
            ..ModelSources::default()
        }
    }
}

/// The model chosen, its provider, and what chose it.
pub(crate) struct Chosen {
    pub(crate) model: String,
    pub(crate) provider: Box<dyn Provider>,
    pub(crate) origin: Origin,
}

/// What chose a model, for the person to read: a cloned repository must not be able to send
/// a conversation somewhere unnoticed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Origin {
    Flag,
    Definition(String),
    Env,
    Session,
    /// The configuration file that set `model`.
    Config(Option<std::path::PathBuf>),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag => f.write_str("-m"),
            Origin::Definition(slug) => write!(f, "agent {slug}"),
            Origin::Env => f.write_str("AG_MODEL"),
            Origin::Session => f.write_str("the session"),
            Origin::Config(Some(file)) => write!(f, "{}", file.display()),
            Origin::Config(None) => f.write_str("the configuration"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ChooseError {
    #[error("no model given")]
    NoModel,
    #[error("none of agent {slug}'s models can be used: {}", tried.join("; "))]
    Definition { slug: String, tried: Vec<String> },
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// Choose the model (see the module comment) and resolve its provider.
pub(crate) fn choose(src: &ModelSources<'_>, config: &Config) -> Result<Chosen, ChooseError> {
    let pick = |model: &str, origin: Origin| -> Result<Chosen, ChooseError> {
        let model = crate::config::aliases::expand(model, &config.aliases);
        Ok(Chosen {
            model: model.to_string(),
            provider: resolve(model, config)?,
            origin,
        })
    };
    if let Some(m) = src.flag {
        return pick(m, Origin::Flag);
    }
    if let Some((slug, models)) = src.definition.filter(|(_, ms)| !ms.is_empty()) {
        let mut tried = Vec::new();
        for m in models {
            let m = crate::config::aliases::expand(m, &config.aliases);
            match resolve(m, config) {
                Ok(provider) => {
                    return Ok(Chosen {
                        model: m.to_string(),
                        provider,
                        origin: Origin::Definition(slug.to_string()),
                    })
                }
                Err(e) => tried.push(format!("{m}: {e}")),
            }
        }
        return Err(ChooseError::Definition {
            slug: slug.to_string(),
            tried,
        });
    }
    if let Some(m) = src.env.as_deref() {
        return pick(m, Origin::Env);
    }
    if let Some(m) = src.session {
        return pick(m, Origin::Session);
    }
    match config.model.as_deref() {
        Some(m) => pick(m, Origin::Config(config.model_from.clone())),
        None => Err(ChooseError::NoModel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(src: &ModelSources<'_>, config: &Config) -> String {
        choose(src, config)
            .map(|c| c.model)
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn one_order_flag_definition_env_session_config() {
        let config = Config {
            model: Some("echo".into()),
            ..Config::default()
        };
        let defs = vec![
            "bogus/x".to_string(),
            "script:none.toml".to_string(),
            "echo".to_string(),
        ];
        let mut src = ModelSources::default();
        assert_eq!(chosen(&src, &config), "echo", "the config's comes last");
        src.session = Some("session-model");
        assert!(
            chosen(&src, &config).contains("session-model"),
            "the session's beats the config's"
        );
        src.env = Some("env-model".into());
        assert!(
            chosen(&src, &config).contains("env-model"),
            "AG_MODEL beats the session's"
        );
        src.definition = Some(("finder", &defs));
        assert_eq!(
            chosen(&src, &config),
            "echo",
            "the definition's first usable beats AG_MODEL"
        );
        src.flag = Some("flag-model");
        assert!(
            chosen(&src, &config).contains("flag-model"),
            "-m beats everything"
        );
    }

    #[test]
    fn the_origin_names_what_chose_the_model() {
        let config = Config {
            model: Some("echo".into()),
            model_from: Some("/p/.ag/config.toml".into()),
            ..Config::default()
        };
        let origin = |src: &ModelSources<'_>| choose(src, &config).unwrap().origin.to_string();
        let mut src = ModelSources::default();
        assert_eq!(origin(&src), "/p/.ag/config.toml");
        src.env = Some("echo".into());
        assert_eq!(origin(&src), "AG_MODEL");
        let defs = vec!["echo".to_string()];
        src.definition = Some(("finder", &defs));
        assert_eq!(origin(&src), "agent finder");
        src.flag = Some("echo");
        assert_eq!(origin(&src), "-m");
    }

    #[test]
    fn a_definition_with_no_usable_model_says_what_was_tried() {
        let defs = vec!["bogus/x".to_string()];
        let src = ModelSources {
            definition: Some(("finder", &defs)),
            ..ModelSources::default()
        };
        let e = chosen(&src, &Config::default());
        assert!(e.contains("finder") && e.contains("bogus/x"), "{e}");
        assert_eq!(
            chosen(&ModelSources::default(), &Config::default()),
            "no model given"
        );
    }
}
