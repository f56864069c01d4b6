//! The sandbox `bash` runs in: its modes, the settings a session stores, the one function that
//! decides a session's effective settings from every place that may speak ([`resolve`]), and
//! the jail that enforces them ([`jail`]).
//!
//! Who may say what: the user (user config, then `--sandbox`/`--net`) chooses; a project file
//! and an agent definition may only tighten; a session's stored settings bind its follow-ups,
//! forks and children, which may tighten them but never loosen them.

pub(crate) mod jail;
mod nested;
mod protect;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

/// How far a command is confined, from least to most strict (the order is the derive's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Mode {
    /// No sandbox: the command runs with the user's full rights.
    Off,
    /// Reads anywhere; writes in the workspace, a private temp dir and the listed dirs.
    WorkspaceWrite,
    /// Reads anywhere; writes only in the private temp dir.
    ReadOnly,
}

impl Mode {
    pub(crate) const NAMES: &'static [&'static str] = &["workspace-write", "read-only", "off"];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "off" => Ok(Mode::Off),
            "workspace-write" => Ok(Mode::WorkspaceWrite),
            "read-only" => Ok(Mode::ReadOnly),
            other => Err(format!(
                "unknown sandbox mode {other:?} (modes: {})",
                Mode::NAMES.join(", ")
            )),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A session's effective sandbox, stored with its policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    /// Network allowed despite the sandbox (`[sandbox] network = true`, `--net`).
    pub(crate) network: bool,
    /// Extra writable directories (absolute, `~` expanded), for `workspace-write`.
    pub(crate) writable: Vec<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::WorkspaceWrite,
            network: false,
            writable: Vec::new(),
        }
    }
}

impl Settings {
    /// The strictest settings: what a damaged stored value is read as.
    pub(crate) fn strictest() -> Settings {
        Settings {
            mode: Mode::ReadOnly,
            network: false,
            writable: Vec::new(),
        }
    }

    /// The stored settings (the `sandbox` value of a session's settings); a damaged value is
    /// the strictest settings, never a looser one.
    pub(crate) fn from_stored(v: &Value) -> Settings {
        let parsed = (|| {
            let mode = Mode::parse(v.get("mode")?.as_str()?).ok()?;
            let network = v.get("network").map_or(Some(false), Value::as_bool)?;
            let writable = match v.get("writable") {
                None => Vec::new(),
                Some(w) => w
                    .as_array()?
                    .iter()
                    .map(|p| p.as_str().map(PathBuf::from))
                    .collect::<Option<Vec<_>>>()?,
            };
            Some(Settings {
                mode,
                network,
                writable,
            })
        })();
        parsed.unwrap_or_else(Settings::strictest)
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "mode": self.mode.as_str(),
            "network": self.network,
            "writable": self.writable.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
        })
    }

    /// One line for people: `workspace-write, no network`.
    pub(crate) fn summary(&self) -> String {
        match self.mode {
            Mode::Off => "off (commands run unconfined)".to_string(),
            m => format!(
                "{m}, {}",
                if self.network {
                    "network allowed"
                } else {
                    "no network"
                }
            ),
        }
    }

    /// What the model is told in the `bash` tool's description, so it does not retry what
    /// cannot work.
    pub(crate) fn describe_for_model(&self) -> String {
        let net = if self.network {
            "Network access is allowed."
        } else {
            "There is no network: connecting to or listening on other hosts fails (loopback \
             inside the command works)."
        };
        let writes = match self.mode {
            Mode::Off => return "Commands run without a sandbox.".to_string(),
            Mode::ReadOnly => "It may read any file but write only in $TMPDIR.".to_string(),
            Mode::WorkspaceWrite => {
                let mut s = "It may read any file and write only in the session's directory \
                             and $TMPDIR"
                    .to_string();
                if !self.writable.is_empty() {
                    let dirs: Vec<String> = self
                        .writable
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect();
                    s.push_str(&format!(" and {}", dirs.join(", ")));
                }
                s.push_str("; .git/hooks, .git/config, .ag/ and .claude/ stay read-only.");
                s
            }
        };
        format!(
            "The command runs in a sandbox ({}). {writes} {net} Processes it leaves behind \
             are killed when it ends, so start and use a server within one command. $TMPDIR \
             is private and removed afterwards.",
            self.mode
        )
    }
}

/// `[sandbox]` in a config file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SandboxConfig {
    pub(crate) mode: Option<Mode>,
    pub(crate) network: Option<bool>,
    #[serde(default)]
    pub(crate) writable: Vec<String>,
}

/// Everything that may have a say in a session's sandbox.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sources<'a> {
    /// The user config's `[sandbox]`.
    pub(crate) user: Option<&'a SandboxConfig>,
    /// The project config's `[sandbox]`: may only tighten.
    pub(crate) project: Option<&'a SandboxConfig>,
    /// The agent definition's `sandbox`: may only tighten.
    pub(crate) definition: Option<Mode>,
    /// `--sandbox MODE`.
    pub(crate) flag_mode: Option<Mode>,
    /// `--net`.
    pub(crate) flag_net: bool,
    /// The stored settings that bind this session: its own (a follow-up), its source's (a
    /// fork) or its parent's (a child agent). Flags may tighten them, never loosen them.
    pub(crate) stored: Option<&'a Settings>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ResolveError {
    #[error("this session's sandbox is {stored}; --sandbox {asked} would loosen it")]
    LoosenMode { stored: Mode, asked: Mode },
    #[error("this session's sandbox has no network; --net would loosen it")]
    LoosenNetwork,
    #[error("sandbox.writable: {0:?} is not an absolute path (nor starts with ~/)")]
    RelativeWritable(String),
}

/// The effective sandbox settings, and notes on what was tightened or ignored (for stderr).
pub(crate) fn resolve(src: &Sources<'_>) -> Result<(Settings, Vec<String>), ResolveError> {
    let mut notes = Vec::new();
    let mut s = match src.stored {
        Some(stored) => {
            let mut s = stored.clone();
            if let Some(asked) = src.flag_mode {
                if asked < s.mode {
                    return Err(ResolveError::LoosenMode {
                        stored: s.mode,
                        asked,
                    });
                }
                s.mode = asked;
            }
            if src.flag_net && !s.network && s.mode != Mode::Off {
                return Err(ResolveError::LoosenNetwork);
            }
            s
        }
        None => {
            let user = src.user.cloned().unwrap_or_default();
            let writable = user
                .writable
                .iter()
                .map(|w| expand_home(w).ok_or_else(|| ResolveError::RelativeWritable(w.clone())))
                .collect::<Result<Vec<_>, _>>()?;
            Settings {
                mode: src.flag_mode.or(user.mode).unwrap_or(Mode::WorkspaceWrite),
                network: src.flag_net || user.network.unwrap_or(false),
                writable,
            }
        }
    };
    if let Some(p) = src.project {
        if let Some(m) = p.mode {
            if m > s.mode {
                notes.push(format!("the project config tightens the sandbox to {m}"));
                s.mode = m;
            } else if m < s.mode {
                notes.push(format!(
                    "the project config's sandbox mode {m} is ignored: a project cannot loosen the sandbox ({})",
                    s.mode
                ));
            }
        }
        if p.network == Some(false) && s.network {
            notes.push("the project config turns the sandbox's network off".to_string());
            s.network = false;
        }
    }
    if let Some(m) = src.definition {
        if m > s.mode {
            s.mode = m;
        }
    }
    Ok((s, notes))
}

/// `~` and `~/x` with `$HOME`; an absolute path as it is; anything else is `None`.
pub(crate) fn expand_home(p: &str) -> Option<PathBuf> {
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
    };
    if p == "~" {
        return home();
    }
    if let Some(rest) = p.strip_prefix("~/") {
        return home().map(|h| h.join(rest));
    }
    Path::new(p).is_absolute().then(|| PathBuf::from(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(mode: Option<Mode>, network: Option<bool>) -> SandboxConfig {
        SandboxConfig {
            mode,
            network,
            writable: vec![],
        }
    }

    #[test]
    fn the_default_is_workspace_write_without_network() {
        let (s, notes) = resolve(&Sources::default()).unwrap();
        assert_eq!(s, Settings::default());
        assert!(notes.is_empty());
    }

    #[test]
    fn the_user_chooses_and_flags_override_the_user_config() {
        let u = user(Some(Mode::ReadOnly), Some(true));
        let (s, _) = resolve(&Sources {
            user: Some(&u),
            ..Default::default()
        })
        .unwrap();
        assert_eq!((s.mode, s.network), (Mode::ReadOnly, true));
        let (s, _) = resolve(&Sources {
            user: Some(&u),
            flag_mode: Some(Mode::Off),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.mode, Mode::Off);
    }

    #[test]
    fn a_project_or_a_definition_only_tightens() {
        let u = user(Some(Mode::Off), Some(true));
        let p = user(Some(Mode::WorkspaceWrite), Some(false));
        let (s, notes) = resolve(&Sources {
            user: Some(&u),
            project: Some(&p),
            ..Default::default()
        })
        .unwrap();
        assert_eq!((s.mode, s.network), (Mode::WorkspaceWrite, false));
        assert_eq!(notes.len(), 2, "{notes:?}");

        let loose = user(Some(Mode::Off), Some(true));
        let (s, notes) = resolve(&Sources {
            project: Some(&loose),
            definition: Some(Mode::Off),
            ..Default::default()
        })
        .unwrap();
        assert_eq!((s.mode, s.network), (Mode::WorkspaceWrite, false));
        assert!(notes[0].contains("cannot loosen"), "{notes:?}");

        let (s, _) = resolve(&Sources {
            definition: Some(Mode::ReadOnly),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.mode, Mode::ReadOnly);
    }

    #[test]
    fn stored_settings_bind_follow_ups_and_children() {
        let stored = Settings {
            mode: Mode::WorkspaceWrite,
            network: false,
            writable: vec!["/w".into()],
        };
        let u = user(Some(Mode::Off), Some(true));
        let (s, _) = resolve(&Sources {
            user: Some(&u),
            stored: Some(&stored),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            s, stored,
            "the user config does not reopen a stored session"
        );
        let e = resolve(&Sources {
            stored: Some(&stored),
            flag_mode: Some(Mode::Off),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(
            e,
            ResolveError::LoosenMode {
                stored: Mode::WorkspaceWrite,
                asked: Mode::Off
            }
        );
        assert_eq!(
            resolve(&Sources {
                stored: Some(&stored),
                flag_net: true,
                ..Default::default()
            })
            .unwrap_err(),
            ResolveError::LoosenNetwork
        );
        let (s, _) = resolve(&Sources {
            stored: Some(&stored),
            flag_mode: Some(Mode::ReadOnly),
            definition: Some(Mode::Off),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.mode, Mode::ReadOnly);
    }

    #[test]
    fn stored_form_round_trips_and_damage_is_strictest() {
        let s = Settings {
            mode: Mode::Off,
            network: true,
            writable: vec!["/a".into()],
        };
        let mut stored = crate::settings::Settings::default();
        stored.set_sandbox(&s);
        let stored = crate::settings::Settings::from_json(&stored.to_json()).unwrap();
        assert_eq!(stored.sandbox(), Some(s));
        assert_eq!(crate::settings::Settings::default().sandbox(), None);
        for bad in [
            json!("off"),
            json!({"mode": "wide-open"}),
            json!({"mode": "off", "network": "yes"}),
            json!({"mode": "off", "writable": [1]}),
        ] {
            assert_eq!(Settings::from_stored(&bad), Settings::strictest(), "{bad}");
        }
    }

    #[test]
    fn writable_dirs_expand_home_and_must_be_absolute() {
        let home = std::env::var("HOME").unwrap_or_default();
        if !home.is_empty() {
            assert_eq!(
                expand_home("~/.cargo"),
                Some(Path::new(&home).join(".cargo"))
            );
        }
        assert_eq!(expand_home("/opt/x"), Some(PathBuf::from("/opt/x")));
        assert_eq!(expand_home("rel/x"), None);
        let u = SandboxConfig {
            writable: vec!["target".into()],
            ..Default::default()
        };
        assert!(matches!(
            resolve(&Sources {
                user: Some(&u),
                ..Default::default()
            }),
            Err(ResolveError::RelativeWritable(_))
        ));
    }
}
