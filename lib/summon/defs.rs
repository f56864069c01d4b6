//! Agent definitions: `SLUG.toml` files from `.ag/agents/` (project, found upward) over
//! `$XDG_CONFIG_HOME/ag/agents/` (user) over the built-ins, plus Claude Code's
//! `.claude/agents/*.md` read as subagent definitions (`claude`). A malformed file is
//! reported with its file and line and skipped; the rest load.
//!
//! A project's definitions are as untrusted as the rest of a cloned repository: until the
//! user trusts its folder, one may not replace a built-in or user definition of the same name
//! (it is skipped, with a warning), and its tools are cut to the read-only set (what it
//! withholds is kept, so the caller can say what trusting the folder would grant).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::policy::Policy;
use crate::sandbox::Mode;

use super::claude::parse_claude;

/// One agent definition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AgentDef {
    pub(crate) slug: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) is_subagent: bool,
    /// The tools it asks for (known names only).
    pub(crate) tools: Vec<String>,
    /// Models in order of preference; the first that resolves is used.
    pub(crate) models: Vec<String>,
    pub(crate) cwd: Option<String>,
    pub(crate) system_prompt: Option<String>,
    pub(crate) max_steps: Option<u32>,
    /// The sandbox it asks for `bash`: it can only tighten the user's (or the spawner's).
    pub(crate) sandbox: Option<Mode>,
    /// Where it came from.
    pub(crate) origin: Origin,
    /// Tools the file asks for that its untrusted folder cannot grant (see the module doc).
    pub(crate) withheld: Vec<String>,
    /// The built-in or user definition this project one replaces (in a trusted folder).
    pub(crate) replaces: Option<Origin>,
}

/// Where a definition comes from, which decides what it may replace and grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    BuiltIn,
    /// `$XDG_CONFIG_HOME/ag/agents/`, or Claude Code's `~/.claude/agents/`.
    User(PathBuf),
    /// A project's `.ag/agents/` or `.claude/agents/`; `trusted` when the user trusts the
    /// folder holding it.
    Project {
        path: PathBuf,
        trusted: bool,
    },
}

impl Origin {
    /// `built-in`, `user` or `project`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Origin::BuiltIn => "built-in",
            Origin::User(_) => "user",
            Origin::Project { .. } => "project",
        }
    }

    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            Origin::BuiltIn => None,
            Origin::User(p) | Origin::Project { path: p, .. } => Some(p),
        }
    }

    /// `built-in`, `user PATH` or `project PATH` (`untrusted project PATH` outside a trusted
    /// folder), for people.
    pub(crate) fn describe(&self) -> String {
        match self {
            Origin::BuiltIn => "built-in".into(),
            Origin::User(p) => format!("user {}", p.display()),
            Origin::Project { path, trusted } => format!(
                "{}project {}",
                if *trusted { "" } else { "untrusted " },
                path.display()
            ),
        }
    }
}

impl AgentDef {
    pub(crate) fn policy(&self) -> Policy {
        Policy::of(self.tools.iter().map(String::as_str))
    }

    /// What the user should know before running it: the tools its untrusted folder withheld.
    pub(crate) fn withheld_note(&self) -> Option<String> {
        if self.withheld.is_empty() {
            return None;
        }
        let folder = self
            .origin
            .path()
            .and_then(definition_folder)
            .map_or_else(|| "its folder".to_string(), |f| f.display().to_string());
        Some(format!(
            "agent {} comes from a folder you have not trusted ({}): it does not get {}; \
             `ag-prompt --trust` in {folder} grants them",
            self.slug,
            self.origin
                .path()
                .map_or_else(String::new, |p| p.display().to_string()),
            self.withheld.join(", ")
        ))
    }

    /// `Name — description` for catalogs.
    pub(crate) fn blurb(&self) -> String {
        if self.description.is_empty() {
            self.name.clone()
        } else {
            format!("{} — {}", self.name, self.description)
        }
    }
}

/// Every definition visible from a directory, and what could not be read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Catalog {
    pub(crate) defs: BTreeMap<String, AgentDef>,
    /// `FILE:LINE: message` for each skipped definition or dropped tool.
    pub(crate) problems: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlDef {
    name: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    is_subagent: bool,
    tools: Option<Vec<String>>,
    #[serde(default)]
    models: Vec<String>,
    cwd: Option<String>,
    system_prompt: Option<String>,
    max_steps: Option<u32>,
    sandbox: Option<Mode>,
}

/// The folder a project's `.ag/agents` or `.claude/agents` belongs to (the one trusted).
fn definition_folder(file_or_dir: &Path) -> Option<PathBuf> {
    let mut p = file_or_dir;
    while let Some(parent) = p.parent() {
        if p.file_name().is_some_and(|n| n == ".ag" || n == ".claude") {
            return Some(parent.to_path_buf());
        }
        p = parent;
    }
    None
}

/// Which layer a directory of definitions is: the user's, or a project's (and trusted?).
#[derive(Clone, Copy)]
enum Layer {
    User,
    Project { trusted: bool },
}

impl Layer {
    /// Claude Code's own user-level `~/.claude/agents` is the user's, not a project's.
    fn of_project_dir(dir: &Path) -> Layer {
        let Some(folder) = definition_folder(dir) else {
            return Layer::Project { trusted: false };
        };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if home.is_some_and(|h| canon(&h) == canon(&folder)) {
            return Layer::User;
        }
        Layer::Project {
            trusted: crate::config::is_trusted(&folder),
        }
    }

    fn origin(self, file: &Path) -> Origin {
        match self {
            Layer::User => Origin::User(file.to_path_buf()),
            Layer::Project { trusted } => Origin::Project {
                path: file.to_path_buf(),
                trusted,
            },
        }
    }
}

impl Catalog {
    /// Built-ins, then user files, then Claude Code agents, then project files: later wins,
    /// except that an untrusted project's cannot replace a built-in or user definition.
    pub(crate) fn load(cwd: &Path) -> Catalog {
        let mut cat = Catalog::default();
        for d in builtins() {
            cat.defs.insert(d.slug.clone(), d);
        }
        if let Some(dir) = crate::config::user_config_dir().map(|d| d.join("agents")) {
            cat.load_dir(&dir, "toml", Layer::User);
        }
        if let Some(dir) = crate::config::find_upward(cwd, ".claude/agents") {
            cat.load_dir(&dir, "md", Layer::of_project_dir(&dir));
        }
        if let Some(dir) = crate::config::find_upward(cwd, ".ag/agents") {
            cat.load_dir(&dir, "toml", Layer::of_project_dir(&dir));
        }
        cat
    }

    /// Add one parsed definition from `layer`, applying the project rules (module doc).
    fn admit(&mut self, mut d: AgentDef, layer: Layer) {
        let file = d.origin.path().map(Path::to_path_buf).unwrap_or_default();
        if let Layer::Project { trusted } = layer {
            let shadowed = self
                .defs
                .get(&d.slug)
                .map(|old| old.origin.clone())
                .filter(|o| !matches!(o, Origin::Project { .. }));
            match (shadowed, trusted) {
                (Some(o), false) => {
                    self.problems.push(format!(
                        "{}: agent {:?} would replace the {} definition; skipped: a project \
                         in a folder you have not trusted cannot replace it (`ag-prompt --trust` \
                         in {} allows it)",
                        file.display(),
                        d.slug,
                        o.describe(),
                        definition_folder(&file).unwrap_or_default().display()
                    ));
                    return;
                }
                (o, _) => d.replaces = o,
            }
            if !trusted {
                let (kept, withheld): (Vec<String>, Vec<String>) = d
                    .tools
                    .into_iter()
                    .partition(|t| Policy::read_only().allows(t));
                d.tools = kept;
                d.withheld = withheld;
            }
        }
        self.defs.insert(d.slug.clone(), d);
    }

    fn load_dir(&mut self, dir: &Path, ext: &str, layer: Layer) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == ext) && p.is_file())
            .collect();
        files.sort();
        for f in files {
            let text = match std::fs::read_to_string(&f) {
                Ok(t) => t,
                Err(e) => {
                    self.problems
                        .push(format!("{}: cannot read: {e}; skipped", f.display()));
                    continue;
                }
            };
            let parsed = if ext == "md" {
                parse_claude(&f, &text, &mut self.problems)
            } else {
                parse_toml(&f, &text, &mut self.problems)
            };
            match parsed {
                Ok(mut d) => {
                    d.origin = layer.origin(&f);
                    self.admit(d, layer);
                }
                Err((line, msg)) => self
                    .problems
                    .push(format!("{}:{line}: {msg}; skipped", f.display())),
            }
        }
    }

    pub(crate) fn get(&self, slug: &str) -> Option<&AgentDef> {
        self.defs.get(slug)
    }

    pub(crate) fn subagents(&self) -> impl Iterator<Item = &AgentDef> {
        self.defs.values().filter(|d| d.is_subagent)
    }

    pub(crate) fn user_agents(&self) -> impl Iterator<Item = &AgentDef> {
        self.defs.values().filter(|d| !d.is_subagent)
    }

    /// The catalog as the `summon` tool describes it: subagents only, or both groups when
    /// user agents are permitted.
    pub(crate) fn describe(&self, user_agents: bool) -> String {
        let list = |it: &mut dyn Iterator<Item = &AgentDef>| -> String {
            let lines: Vec<String> = it.map(|d| format!("- {}: {}", d.slug, d.blurb())).collect();
            if lines.is_empty() {
                "(none)".into()
            } else {
                lines.join("\n")
            }
        };
        if user_agents {
            format!(
                "Subagents (spawned as child sessions):\n{}\n\nUser agents (spawned as independent top-level sessions, requires top_level=true):\n{}",
                list(&mut self.subagents()),
                list(&mut self.user_agents())
            )
        } else {
            format!("Available agents:\n{}", list(&mut self.subagents()))
        }
    }
}

/// `script:REL` in a definition is relative to the definition's directory when the file is
/// there, so a definition and its script travel together.
pub(super) fn anchor_model(model: &str, file: &Path) -> String {
    if let Some(rel) = model.strip_prefix("script:") {
        if Path::new(rel).is_relative() {
            if let Some(dir) = file.parent() {
                let p = dir.join(rel);
                if p.is_file() {
                    let p = std::fs::canonicalize(&p).unwrap_or(p);
                    return format!("script:{}", p.display());
                }
            }
        }
    }
    model.to_string()
}

pub(super) fn slug_of(file: &Path) -> String {
    file.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub(super) fn valid_slug(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

/// Known tool names out of `names`; the unknown ones are reported and dropped.
fn known_tools(
    names: &[String],
    file: &Path,
    line: usize,
    problems: &mut Vec<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for n in names {
        match Policy::parse_list(n) {
            Ok(p) => {
                for t in p.names() {
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
            }
            Err(_) => problems.push(format!(
                "{}:{line}: unknown tool {n:?} dropped",
                file.display()
            )),
        }
    }
    out
}

pub(super) type ParseResult = Result<AgentDef, (usize, String)>;

fn parse_toml(file: &Path, text: &str, problems: &mut Vec<String>) -> ParseResult {
    let slug = slug_of(file);
    if !valid_slug(&slug) {
        return Err((
            1,
            format!("{slug:?} is not a usable agent name (letters, digits, - _ .)"),
        ));
    }
    let def: TomlDef = toml::from_str(text).map_err(|e| {
        let line = crate::config::toml_error::line_of(text, &e).unwrap_or(1);
        (line, e.message().trim().to_string())
    })?;
    let tools_line = text
        .lines()
        .position(|l| l.trim_start().starts_with("tools"))
        .map_or(1, |i| i + 1);
    let tools = match &def.tools {
        Some(t) => known_tools(t, file, tools_line, problems),
        None => Policy::read_only().names(),
    };
    Ok(AgentDef {
        name: def.name.unwrap_or_else(|| slug.clone()),
        slug,
        description: def.description,
        is_subagent: def.is_subagent,
        tools,
        models: def.models.iter().map(|m| anchor_model(m, file)).collect(),
        cwd: def.cwd,
        system_prompt: def.system_prompt,
        max_steps: def.max_steps,
        sandbox: def.sandbox,
        origin: Origin::User(file.to_path_buf()),
        withheld: Vec::new(),
        replaces: None,
    })
}

fn builtins() -> Vec<AgentDef> {
    let def =
        |slug: &str, name: &str, desc: &str, sub: bool, tools: &[&str], prompt: &str| AgentDef {
            slug: slug.into(),
            name: name.into(),
            description: desc.into(),
            is_subagent: sub,
            tools: tools.iter().map(|s| s.to_string()).collect(),
            models: Vec::new(),
            cwd: None,
            system_prompt: Some(prompt.into()),
            max_steps: None,
            sandbox: None,
            origin: Origin::BuiltIn,
            withheld: Vec::new(),
            replaces: None,
        };
    vec![
        def(
            "explorer",
            "Explorer",
            "Read-only codebase explorer: finds files, reads code, answers where and how",
            true,
            &["read", "glob", "grep", "recall"],
            "You explore a codebase to answer a question. Use glob, grep and read; change nothing. \
             Answer with the facts found, citing file paths and line numbers, as briefly as the \
             question allows.",
        ),
        def(
            "reviewer",
            "Reviewer",
            "Read-only code reviewer: reports bugs, risks and missing tests",
            true,
            &["read", "glob", "grep", "recall"],
            "You review code. Read what you are pointed at and report concrete problems (bugs, \
             unsafe edge cases, missing tests), most serious first, each with its file and line. \
             Change nothing.",
        ),
        def(
            "worker",
            "Worker",
            "Implements a well-defined change: reads, writes, edits and runs commands",
            true,
            &["read", "glob", "grep", "recall", "write", "edit", "bash"],
            "You carry out one well-defined task in the working directory. Make the change, run \
             what checks the project has, and finish with a short summary of what you changed \
             and how you verified it.",
        ),
        def(
            "default",
            "Default",
            "A general agent with the file tools",
            false,
            &["read", "glob", "grep", "recall", "write", "edit", "bash"],
            "You are a capable software agent working in the given directory.",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_definitions_name_the_line() {
        let mut p = Vec::new();
        let e = parse_toml(
            Path::new("/x/bad.toml"),
            "name = \"x\"\ntools = [\"read\"\n",
            &mut p,
        )
        .unwrap_err();
        assert_eq!(e.0, 2, "{e:?}");
        let e = parse_claude(
            Path::new("/x/b.md"),
            "---\nname: x\nno colon here\n---\n",
            &mut p,
        )
        .unwrap_err();
        assert_eq!(e.0, 3);
        let e = parse_toml(Path::new("/x/c.toml"), "nmae = \"x\"\n", &mut p).unwrap_err();
        assert_eq!(e.0, 1);
    }

    #[test]
    fn a_definition_names_its_sandbox_and_a_bad_one_is_reported() {
        let mut p = Vec::new();
        let d = parse_toml(
            Path::new("/x/tight.toml"),
            "sandbox = \"read-only\"\n",
            &mut p,
        )
        .unwrap();
        assert_eq!(d.sandbox, Some(Mode::ReadOnly));
        let e = parse_toml(
            Path::new("/x/t.toml"),
            "tools = []\nsandbox = \"none\"\n",
            &mut p,
        )
        .unwrap_err();
        assert_eq!(e.0, 2, "{e:?}");
        let d = parse_claude(Path::new("/x/c.md"), "---\nsandbox: off\n---\nHi\n", &mut p).unwrap();
        assert_eq!(d.sandbox, Some(Mode::Off));
        let e = parse_claude(
            Path::new("/x/c.md"),
            "---\nname: c\nsandbox: open\n---\n",
            &mut p,
        )
        .unwrap_err();
        assert_eq!(e.0, 3, "{e:?}");
        assert!(e.1.contains("unknown sandbox mode"), "{e:?}");
    }

    #[test]
    fn catalog_groups() {
        let mut c = Catalog::default();
        for d in builtins() {
            c.defs.insert(d.slug.clone(), d);
        }
        let sub = c.describe(false);
        assert!(sub.contains("- explorer:") && !sub.contains("- default:"));
        let both = c.describe(true);
        assert!(both.contains("User agents") && both.contains("- default:"));
    }
}
