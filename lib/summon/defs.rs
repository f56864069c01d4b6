//! Agent definitions: `SLUG.toml` files from `.ag/agents/` (project, found upward) over
//! `$XDG_CONFIG_HOME/ag/agents/` (user) over the built-ins, plus Claude Code's
//! `.claude/agents/*.md` read as subagent definitions. A malformed file is reported with its
//! file and line and skipped; the rest load.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::policy::{Effect, Policy, Tool};
use crate::sandbox::Mode;

/// One agent definition.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDef {
    pub slug: String,
    pub name: String,
    pub description: String,
    pub is_subagent: bool,
    /// The tools it asks for (known names only).
    pub tools: Vec<String>,
    /// Models in order of preference; the first that resolves is used.
    pub models: Vec<String>,
    pub cwd: Option<String>,
    pub system_prompt: Option<String>,
    pub max_steps: Option<u32>,
    /// The sandbox it asks for `bash`: it can only tighten the user's (or the spawner's).
    pub sandbox: Option<Mode>,
    /// Where it came from: `built-in` or a file path.
    pub source: String,
}

impl AgentDef {
    pub fn policy(&self) -> Policy {
        Policy::of(self.tools.iter().map(String::as_str))
    }

    /// `Name — description` for catalogs.
    pub fn blurb(&self) -> String {
        if self.description.is_empty() {
            self.name.clone()
        } else {
            format!("{} — {}", self.name, self.description)
        }
    }
}

/// Every definition visible from a directory, and what could not be read.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub defs: BTreeMap<String, AgentDef>,
    /// `FILE:LINE: message` for each skipped definition or dropped tool.
    pub problems: Vec<String>,
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

impl Catalog {
    /// Built-ins, then user files, then Claude Code agents, then project files: later wins.
    pub fn load(cwd: &Path) -> Catalog {
        let mut cat = Catalog::default();
        for d in builtins() {
            cat.defs.insert(d.slug.clone(), d);
        }
        if let Some(dir) = crate::config::user_config_dir().map(|d| d.join("agents")) {
            cat.load_dir(&dir, "toml");
        }
        if let Some(dir) = crate::config::find_upward(cwd, ".claude/agents") {
            cat.load_dir(&dir, "md");
        }
        if let Some(dir) = crate::config::find_upward(cwd, ".ag/agents") {
            cat.load_dir(&dir, "toml");
        }
        cat
    }

    fn load_dir(&mut self, dir: &Path, ext: &str) {
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
                Ok(d) => {
                    self.defs.insert(d.slug.clone(), d);
                }
                Err((line, msg)) => self
                    .problems
                    .push(format!("{}:{line}: {msg}; skipped", f.display())),
            }
        }
    }

    pub fn get(&self, slug: &str) -> Option<&AgentDef> {
        self.defs.get(slug)
    }

    pub fn subagents(&self) -> impl Iterator<Item = &AgentDef> {
        self.defs.values().filter(|d| d.is_subagent)
    }

    pub fn user_agents(&self) -> impl Iterator<Item = &AgentDef> {
        self.defs.values().filter(|d| !d.is_subagent)
    }

    /// The catalog as the `summon` tool describes it: subagents only, or both groups when
    /// user agents are permitted.
    pub fn describe(&self, user_agents: bool) -> String {
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
fn anchor_model(model: &str, file: &Path) -> String {
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

fn slug_of(file: &Path) -> String {
    file.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn valid_slug(s: &str) -> bool {
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

type ParseResult = Result<AgentDef, (usize, String)>;

fn parse_toml(file: &Path, text: &str, problems: &mut Vec<String>) -> ParseResult {
    let slug = slug_of(file);
    if !valid_slug(&slug) {
        return Err((
            1,
            format!("{slug:?} is not a usable agent name (letters, digits, - _ .)"),
        ));
    }
    let def: TomlDef = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(1);
        (line, e.message().trim().to_string())
    })?;
    let tools_line = text
        .lines()
        .position(|l| l.trim_start().starts_with("tools"))
        .map_or(1, |i| i + 1);
    let tools = match &def.tools {
        Some(t) => known_tools(t, file, tools_line, problems),
        None => crate::policy::Policy::read_only().names(),
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
        source: file.display().to_string(),
    })
}

/// Claude Code's tool names, mapped to ours.
fn claude_tool(name: &str) -> Option<&'static str> {
    let tool = match name {
        "Read" | "NotebookRead" => Tool::Read,
        "Glob" | "LS" => Tool::Glob,
        "Grep" => Tool::Grep,
        "Write" => Tool::Write,
        "Edit" | "MultiEdit" | "NotebookEdit" => Tool::Edit,
        "Bash" => Tool::Bash,
        _ => return None,
    };
    Some(tool.name())
}

/// One front-matter value: plain text, a quoted string, or a `[a, b]` flow list (given back
/// as `a, b`, the comma-separated form Claude Code's `tools:` also takes). Anything only half
/// written (an unclosed quote or list, a block value on following lines) is an error, never
/// read as text.
fn front_matter_value(v: &str) -> Result<String, String> {
    let v = v.trim();
    let unquote = |s: &str| -> Result<String, String> {
        let s = s.trim();
        match s.chars().next() {
            Some(q @ ('"' | '\'')) => {
                if s.len() >= 2 && s.ends_with(q) {
                    Ok(s[1..s.len() - 1].to_string())
                } else {
                    Err(format!("unclosed quote in {s:?}"))
                }
            }
            _ => Ok(s.to_string()),
        }
    };
    if let Some(rest) = v.strip_prefix('[') {
        let Some(inner) = rest.strip_suffix(']') else {
            return Err(format!("unclosed `[` list in {v:?}"));
        };
        let items = inner
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(unquote)
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(items.join(", "));
    }
    if v.starts_with('{') {
        return Err(format!("a map value is not supported: {v:?}"));
    }
    if matches!(v, "|" | ">" | "|-" | ">-" | "|+" | ">+") {
        return Err("a multi-line value is not supported; write it on one line".into());
    }
    unquote(v)
}

/// A Claude Code agent: `---` front matter of `key: value` lines, then the system prompt.
fn parse_claude(file: &Path, text: &str, problems: &mut Vec<String>) -> ParseResult {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, l)) if l.trim() == "---" => {}
        _ => return Err((1, "expected front matter starting with `---`".into())),
    }
    let mut fields: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut body_start = None;
    for (i, l) in lines.by_ref() {
        if l.trim() == "---" {
            body_start = Some(i + 1);
            break;
        }
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        let not_key_value = || {
            (
                i + 1,
                format!("expected `key: value`, found {:?}", l.trim()),
            )
        };
        let Some((k, v)) = l.split_once(':') else {
            return Err(not_key_value());
        };
        let k = k.trim();
        if k.is_empty()
            || l.starts_with(char::is_whitespace)
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(not_key_value());
        }
        let v = front_matter_value(v).map_err(|msg| (i + 1, format!("{k}: {msg}")))?;
        fields.insert(k.to_string(), (i + 1, v));
    }
    let Some(body_start) = body_start else {
        return Err((
            text.lines().count().max(1),
            "the front matter is not closed with `---`".into(),
        ));
    };
    let body: Vec<&str> = text.lines().skip(body_start).collect();
    let body = body.join("\n").trim().to_string();
    let slug = match fields.get("name") {
        Some((_, n)) if valid_slug(n) => n.clone(),
        Some((line, n)) => return Err((*line, format!("name {n:?} is not a usable agent name"))),
        None => slug_of(file),
    };
    let tools = match fields.get("tools") {
        Some((line, list)) => {
            let mut out: Vec<String> = Vec::new();
            for t in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                match claude_tool(t) {
                    Some(ours) => {
                        if !out.iter().any(|o| o == ours) {
                            out.push(ours.to_string());
                        }
                    }
                    None => problems.push(format!(
                        "{}:{line}: Claude tool {t:?} has no ag equivalent; dropped",
                        file.display()
                    )),
                }
            }
            Policy::of(out.iter().map(String::as_str)).names()
        }
        // Claude Code gives an agent without a tools line every tool: here that is every
        // file tool, still cut down to the spawner's.
        None => Tool::names_of(&[Effect::Look, Effect::Change])
            .map(str::to_string)
            .collect(),
    };
    // Claude's aliases (sonnet, opus, inherit) name no provider here: the spawner's model is
    // used then.
    let sandbox = match fields.get("sandbox") {
        Some((line, m)) => Some(Mode::parse(m).map_err(|e| (*line, e))?),
        None => None,
    };
    let models = match fields.get("model") {
        Some((_, m)) if m.contains('/') || m == "echo" || m.starts_with("script:") => {
            vec![anchor_model(m, file)]
        }
        _ => Vec::new(),
    };
    Ok(AgentDef {
        name: slug.clone(),
        slug,
        description: fields
            .get("description")
            .map(|(_, d)| d.clone())
            .unwrap_or_default(),
        is_subagent: true,
        tools,
        models,
        cwd: None,
        system_prompt: (!body.is_empty()).then_some(body),
        max_steps: None,
        sandbox,
        source: file.display().to_string(),
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
            source: "built-in".into(),
        };
    vec![
        def(
            "explorer",
            "Explorer",
            "Read-only codebase explorer: finds files, reads code, answers where and how",
            true,
            &["read", "glob", "grep"],
            "You explore a codebase to answer a question. Use glob, grep and read; change nothing. \
             Answer with the facts found, citing file paths and line numbers, as briefly as the \
             question allows.",
        ),
        def(
            "reviewer",
            "Reviewer",
            "Read-only code reviewer: reports bugs, risks and missing tests",
            true,
            &["read", "glob", "grep"],
            "You review code. Read what you are pointed at and report concrete problems (bugs, \
             unsafe edge cases, missing tests), most serious first, each with its file and line. \
             Change nothing.",
        ),
        def(
            "worker",
            "Worker",
            "Implements a well-defined change: reads, writes, edits and runs commands",
            true,
            &["read", "glob", "grep", "write", "edit", "bash"],
            "You carry out one well-defined task in the working directory. Make the change, run \
             what checks the project has, and finish with a short summary of what you changed \
             and how you verified it.",
        ),
        def(
            "default",
            "Default",
            "A general agent with the file tools",
            false,
            &["read", "glob", "grep", "write", "edit", "bash"],
            "You are a capable software agent working in the given directory.",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_front_matter_maps_tools_and_reports_unknown() {
        let text = "---\nname: code-reviewer\ndescription: Reviews code\ntools: Read, Grep, WebFetch, Bash\nmodel: sonnet\n---\nYou review.\n";
        let mut problems = Vec::new();
        let d = parse_claude(Path::new("/x/a.md"), text, &mut problems).unwrap();
        assert_eq!(d.slug, "code-reviewer");
        assert_eq!(d.tools, ["read", "grep", "bash"]);
        assert!(d.models.is_empty());
        assert_eq!(d.system_prompt.as_deref(), Some("You review."));
        assert!(
            problems[0].contains("a.md:4") && problems[0].contains("WebFetch"),
            "{problems:?}"
        );
    }

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
    fn summon_claude_front_matter_is_validated() {
        let bad = |fm: &str| {
            let mut p = Vec::new();
            parse_claude(Path::new("/x/broken.md"), fm, &mut p).unwrap_err()
        };
        let e = bad("---\nname: x\ndescription: [oops\n---\nbody\n");
        assert_eq!(e.0, 3, "{e:?}");
        assert!(e.1.contains("unclosed `[`"), "{e:?}");
        let e = bad("---\ndescription: \"half quoted\n---\n");
        assert_eq!(e.0, 2, "{e:?}");
        assert!(e.1.contains("unclosed quote"), "{e:?}");
        let e = bad("---\ndescription: 'half\n---\n");
        assert!(e.1.contains("unclosed quote"), "{e:?}");
        let e = bad("---\ntools: [Read, \"Grep]\n---\n");
        assert!(e.1.contains("unclosed quote"), "{e:?}");
        let e = bad("---\nname: x\ndescription: fine\n");
        assert!(e.1.contains("not closed"), "{e:?}");
        assert_eq!(e.0, 3, "{e:?}");
        // Without the `---`, the body is read as front matter and its first line is reported.
        let e = bad("---\nname: x\nYou review.\n");
        assert_eq!(e.0, 3, "{e:?}");
        let e = bad("---\ntools:\n  - Read\n---\n");
        assert_eq!(e.0, 3, "{e:?}");
        let e = bad("---\nsome key: v\n---\n");
        assert!(e.1.contains("key: value"), "{e:?}");
        let e = bad("---\ndescription: |\n---\n");
        assert!(e.1.contains("multi-line"), "{e:?}");

        // Well-formed values: quotes stripped, a flow list read like a comma list, and a colon
        // or quote inside a plain value kept.
        let mut p = Vec::new();
        let d = parse_claude(
            Path::new("/x/ok.md"),
            "---\nname: \"ok\"\ndescription: Reviews: it's careful\ntools: [Read, 'Grep']\n---\nHi\n",
            &mut p,
        )
        .unwrap();
        assert_eq!(d.slug, "ok");
        assert_eq!(d.description, "Reviews: it's careful");
        assert_eq!(d.tools, ["read", "grep"]);
        assert!(p.is_empty(), "{p:?}");
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
