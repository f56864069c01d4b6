//! Claude Code's agent files (`.claude/agents/*.md`): `---` front matter of `key: value`
//! lines, then the system prompt. Read as subagent definitions; their tool names are mapped to
//! ours, and one without a `tools:` line gets the read-only set.

use std::collections::BTreeMap;
use std::path::Path;

use super::defs::{anchor_model, slug_of, valid_slug, AgentDef, Origin, ParseResult};
use crate::policy::{Policy, Tool};
use crate::sandbox::Mode;

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

/// Front-matter fields by key, each with the line it was on.
pub(crate) type Fields = BTreeMap<String, (usize, String)>;

/// A Claude Code agent: `---` front matter of `key: value` lines, then the system prompt.
pub(super) fn parse_claude(file: &Path, text: &str, problems: &mut Vec<String>) -> ParseResult {
    let (fields, body) = front_matter(text)?;
    let slug = match fields.get("name") {
        Some((_, n)) if valid_slug(n) => n.clone(),
        Some((line, n)) => return Err((*line, format!("name {n:?} is not a usable agent name"))),
        None => slug_of(file),
    };
    let tools = match fields.get("tools") {
        Some((line, list)) => claude_tools(file, *line, list, problems),
        // Claude Code gives an agent without a tools line every tool. Here a definition has
        // to ask for what changes files or runs commands: without the line it can look, not
        // touch, like a TOML definition without `tools`.
        None => Policy::read_only().names(),
    };
    let sandbox = match fields.get("sandbox") {
        Some((line, m)) => Some(Mode::parse(m).map_err(|e| (*line, e))?),
        None => None,
    };
    // Claude's aliases (sonnet, opus, inherit) name no provider here: the spawner's model is
    // used then.
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
        origin: Origin::User(file.to_path_buf()),
        withheld: Vec::new(),
        replaces: None,
    })
}

/// Split a file into its front-matter fields and its body (the system prompt); an error
/// names the line.
pub(crate) fn front_matter(text: &str) -> Result<(Fields, String), (usize, String)> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, l)) if l.trim() == "---" => {}
        _ => return Err((1, "expected front matter starting with `---`".into())),
    }
    let mut fields = Fields::new();
    for (i, l) in lines.by_ref() {
        if l.trim() == "---" {
            let body: Vec<&str> = text.lines().skip(i + 1).collect();
            return Ok((fields, body.join("\n").trim().to_string()));
        }
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        let (k, v) = key_value(l).ok_or_else(|| {
            (
                i + 1,
                format!("expected `key: value`, found {:?}", l.trim()),
            )
        })?;
        let v = front_matter_value(v).map_err(|msg| (i + 1, format!("{k}: {msg}")))?;
        fields.insert(k.to_string(), (i + 1, v));
    }
    Err((
        text.lines().count().max(1),
        "the front matter is not closed with `---`".into(),
    ))
}

/// `key: value` at the start of a line, the key made of letters, digits, `_` and `-`.
fn key_value(l: &str) -> Option<(&str, &str)> {
    let (k, v) = l.split_once(':')?;
    let k = k.trim();
    let usable = !k.is_empty()
        && !l.starts_with(char::is_whitespace)
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    usable.then_some((k, v))
}

/// A `tools:` list in Claude's names, as ours; a name with no equivalent is dropped with a
/// problem naming the file and line.
fn claude_tools(file: &Path, line: usize, list: &str, problems: &mut Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match claude_tool(t) {
            Some(ours) if out.iter().any(|o| o == ours) => {}
            Some(ours) => out.push(ours.to_string()),
            None => problems.push(format!(
                "{}:{line}: Claude tool {t:?} has no ag equivalent; dropped",
                file.display()
            )),
        }
    }
    Policy::of(out.iter().map(String::as_str)).names()
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
    fn no_tools_line_is_read_only() {
        let mut p = Vec::new();
        let d = parse_claude(
            Path::new("/x/any.md"),
            "---\nname: any\n---\nDo it.\n",
            &mut p,
        )
        .unwrap();
        assert!(
            d.tools.iter().all(|t| Policy::read_only().allows(t)),
            "{:?}",
            d.tools
        );
        assert!(d.tools.contains(&"read".to_string()));
    }
}
