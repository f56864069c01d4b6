//! The checks a summon passes before anything is created, one function per rule of DESIGN §7:
//! the definition exists and is of the right kind, the spawner may summon (it holds `summon`,
//! nesting allows it), the child's tools narrow the spawner's, its directory lies inside the
//! parent's, and a model can be found.

use std::path::{Path, PathBuf};

use super::defs::{AgentDef, Catalog};
use super::error::{SummonError, SummonErrorKind};
use super::spawn::{Request, Spawner};
use crate::config::Config;
use crate::policy::{Effect, Policy, Tool};
use crate::provider::{ChooseError, ModelSources};
use crate::store::{Session, SessionKind, Store};

/// The named definition; the error lists the ones this spawner may use.
pub(super) fn find_def<'c>(
    catalog: &'c Catalog,
    config: &Config,
    req: &Request,
) -> Result<&'c AgentDef, SummonError> {
    catalog.get(&req.agent).ok_or_else(|| {
        let known: Vec<&str> = catalog
            .defs
            .values()
            .filter(|d| d.is_subagent || config.user_agents_allowed())
            .map(|d| d.slug.as_str())
            .collect();
        SummonError::new(
            SummonErrorKind::NotFound,
            format!(
                "no agent named {:?} (known: {})",
                req.agent,
                known.join(", ")
            ),
        )
        .hint("`ag-summon agents` lists the definitions")
    })
}

/// A user agent needs the permission and a non-subagent definition; a subagent needs a
/// subagent definition.
pub(super) fn check_kind(
    def: &AgentDef,
    req: &Request,
    config: &Config,
) -> Result<(), SummonError> {
    if req.top_level {
        if !config.user_agents_allowed() {
            return Err(SummonError::new(
                SummonErrorKind::Refused,
                "user agents are not permitted: top_level needs `[permissions] user_agents = \"allow\"`",
            )
            .hint("set it in your user config, $XDG_CONFIG_HOME/ag/config.toml (a project's .ag/config.toml cannot grant it)"));
        }
        if def.is_subagent {
            return Err(SummonError::new(
                SummonErrorKind::Usage,
                format!("agent {} is a subagent definition; a user agent needs one with is_subagent = false", def.slug),
            ));
        }
    } else if !def.is_subagent {
        return Err(SummonError::new(
            SummonErrorKind::Usage,
            format!("agent {} is not a subagent definition (is_subagent = false)", def.slug),
        )
        .hint("start it as a user agent with --top-level (top_level=true), if user agents are permitted"));
    }
    Ok(())
}

/// How many summons lie above (and including) `session`: its subagent hops, plus the depth
/// recorded on the user agent at their top when a session started it.
pub(crate) fn depth(store: &Store, session: &Session) -> usize {
    let mut d = 0;
    let mut cur = session.clone();
    while cur.kind == SessionKind::Subagent && d < 64 {
        d += 1;
        match cur.parent_id.as_deref().map(|p| store.session(p)) {
            Some(Ok(p)) => cur = p,
            _ => break,
        }
    }
    let above = match cur.kind {
        SessionKind::UserAgent => cur.settings().ok().and_then(|s| s.summon_depth),
        _ => None,
    };
    d + above.unwrap_or(0) as usize
}

/// Whether the spawner may summon at all: nesting allows it, and a spawning session holds
/// `summon` itself (its tools only narrowing the child's would let a session without it start
/// agents from its `bash` tool). A person at a shell is not restricted. Returns the spawner's
/// subagent depth.
pub(super) fn check_may_summon(
    store: &Store,
    spawner: &Spawner,
    config: &Config,
) -> Result<usize, SummonError> {
    let spawner_depth = spawner.session.as_ref().map_or(0, |s| depth(store, s));
    let max = config.agent.max_summon_depth as usize;
    if spawner_depth > max {
        let who = spawner
            .session
            .as_ref()
            .map_or("this session".to_string(), |s| {
                format!("session {}", s.handle)
            });
        let limit = if max == 0 {
            "nesting is off".to_string()
        } else {
            format!("`agent.max_summon_depth` is {max}")
        };
        return Err(SummonError::new(
            SummonErrorKind::Refused,
            format!("{who} cannot summon: it is {spawner_depth} summon(s) deep and {limit}"),
        )
        .hint("raise `[agent] max_summon_depth` in the configuration to allow nested subagents"));
    }
    if let (Some(s), Some(t)) = (&spawner.session, &spawner.tools) {
        if !t.allows(Tool::Summon.name()) {
            let short = s.handle.clone();
            let names = t.names();
            let have = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            return Err(SummonError::new(
                SummonErrorKind::Refused,
                format!("session {short} may not summon: its tools ({have}) lack `summon`"),
            )
            .hint("only a session started with the summon tool (e.g. `ag-prompt --tools read,summon`) may spawn agents"));
        }
    }
    Ok(spawner_depth)
}

/// The child's tools: (requested, else the definition's) ∩ the spawner's effective tools,
/// without `summon`/`retrieve` when the child would be too deep to use them.
pub(super) struct Narrowed {
    pub(crate) tools: Policy,
    pub(crate) dropped: Vec<String>,
    pub(crate) why: String,
}

pub(super) fn narrow_tools(
    def: &AgentDef,
    spawner: &Spawner,
    req: &Request,
    may_nest: bool,
) -> Narrowed {
    let def_tools = def.policy();
    // Signed words (`+edit`, `-bash`) change the definition's tools.
    let (asked, limit) = match (&spawner.tools, &req.tools) {
        (Some(parent), Some(ask)) => (ask.resolve(&def_tools), parent.clone()),
        (Some(parent), None) => (def_tools.clone(), parent.clone()),
        (None, Some(ask)) => (ask.resolve(&def_tools), def_tools.clone()),
        (None, None) => (def_tools.clone(), def_tools.clone()),
    };
    let mut tools = asked.intersect(&limit);
    let mut dropped = asked.dropped_by(&limit);
    let mut why = if spawner.tools.is_some() {
        "the spawning session lacks them".to_string()
    } else {
        format!("agent {} does not have them", def.slug)
    };
    if !may_nest {
        let nest: Vec<String> = Tool::names_of(&[Effect::Spawn])
            .filter(|t| tools.allows(t))
            .map(|s| s.to_string())
            .collect();
        if !nest.is_empty() {
            tools = tools.intersect(&Policy::of(
                tools
                    .names()
                    .iter()
                    .map(String::as_str)
                    .filter(|t| !nest.iter().any(|n| n == t)),
            ));
            why.push_str("; summon/retrieve: nesting is off");
            dropped.extend(nest);
        }
    }
    Narrowed {
        tools,
        dropped,
        why,
    }
}

/// The child's directory. A subagent's lies inside its parent's (default: the parent's). A
/// user agent a person starts goes anywhere (default: the current directory); one a session
/// starts (a model, or a command of its `bash`) lies inside the spawner's directory or one the
/// user config lists in `permissions.user_agent_dirs` (default: the spawner's).
pub(super) fn child_dir(
    def: &AgentDef,
    spawner: &Spawner,
    req: &Request,
    config: &Config,
) -> Result<PathBuf, SummonError> {
    let asked = req.cwd.as_deref().or(def.cwd.as_deref());
    if req.top_level && spawner.session.is_none() {
        let default = std::env::current_dir().unwrap_or_else(|_| spawner.cwd.clone());
        return match asked {
            Some(asked) => resolve_dir(&default, asked),
            None => Ok(std::fs::canonicalize(&default).unwrap_or(default)),
        };
    }
    let parent = std::fs::canonicalize(&spawner.cwd).map_err(|e| {
        SummonError::new(
            SummonErrorKind::Other,
            format!(
                "the parent's directory {} cannot be used: {e}",
                spawner.cwd.display()
            ),
        )
    })?;
    let Some(asked) = asked else {
        return Ok(parent);
    };
    let resolved = resolve_dir(&parent, asked)?;
    if resolved.starts_with(&parent) {
        return Ok(resolved);
    }
    let listed = || {
        config
            .permissions
            .user_agent_dirs
            .iter()
            .filter_map(|d| crate::sandbox::expand_home(d))
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .any(|d| resolved.starts_with(d))
    };
    if req.top_level && listed() {
        return Ok(resolved);
    }
    let (whose, hint) = if req.top_level {
        (
            "the spawning session's directory",
            "a user agent a session starts works inside its directory, or in one listed in \
             `[permissions] user_agent_dirs` in your user config",
        )
    } else {
        (
            "the parent's directory",
            "a subagent's directory must lie inside its parent's",
        )
    };
    Err(SummonError::new(
        SummonErrorKind::Refused,
        format!(
            "working directory {asked:?} resolves to {}, outside {whose} {}",
            resolved.display(),
            parent.display()
        ),
    )
    .hint(hint))
}

fn resolve_dir(base: &Path, asked: &str) -> Result<PathBuf, SummonError> {
    let expanded = match asked.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(rest))
            .unwrap_or_else(|| PathBuf::from(asked)),
        None => PathBuf::from(asked),
    };
    let joined = base.join(expanded);
    std::fs::canonicalize(&joined).map_err(|e| {
        SummonError::new(
            SummonErrorKind::Usage,
            format!("working directory {} cannot be used: {e}", joined.display()),
        )
    })
}

/// The model a child runs on, in the one order every command uses
/// ([`crate::provider::choose`]): the definition's first usable model, else `AG_MODEL`, else
/// the spawner's, else the configuration's.
pub(super) fn pick_model(
    def: &AgentDef,
    spawner: &Spawner,
    config: &Config,
) -> Result<String, SummonError> {
    let sources = ModelSources {
        definition: Some((def.slug.as_str(), def.models.as_slice())),
        session: spawner.session.as_ref().and_then(|s| s.model.as_deref()),
        ..ModelSources::with_env()
    };
    match crate::provider::choose(&sources, config) {
        Ok(c) => Ok(c.model),
        Err(ChooseError::NoModel) => Err(SummonError::new(
            SummonErrorKind::Usage,
            format!("agent {} names no model and none is configured", def.slug),
        )
        .hint(format!(
            "add `models = [\"…\"]` to the definition, set AG_MODEL, or {}",
            crate::config::MODEL_SETTING_HINT
        ))),
        Err(e) => Err(SummonError::new(SummonErrorKind::Usage, e.to_string())),
    }
}
