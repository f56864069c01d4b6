//! Custom commands: Markdown prompt files a person runs by name — `/NAME ARGS` in the chat,
//! `ag-prompt --command NAME ARGS` from a script, a slash command in an editor over ACP.
//!
//! They come from the user's `~/.config/ag/commands/NAME.md`, the project's
//! `.ag/commands/NAME.md` (the nearest one up from the directory) and, in a folder the user
//! trusts, Claude Code's `.claude/commands/NAME.md`. The body is the prompt; `$ARGUMENTS` in it
//! becomes what follows the name (without it, the arguments go after the body). An optional
//! front matter gives a `description` and an `argument-hint`; other keys (Claude Code's
//! `allowed-tools`, `model`) are ignored: a file is a prompt and grants nothing. A project's
//! command never replaces one of the user's, and no file replaces a built-in slash command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    User,
    Project,
    Claude,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Project => "project",
            Source::Claude => "project, .claude",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) argument_hint: Option<String>,
    pub(crate) body: String,
    pub(crate) file: PathBuf,
    pub(crate) source: Source,
}

impl Command {
    /// The prompt for `args`: `$ARGUMENTS` replaced, or the arguments after the body.
    pub(crate) fn expand(&self, args: &str) -> String {
        let args = args.trim();
        if self.body.contains("$ARGUMENTS") {
            self.body.replace("$ARGUMENTS", args)
        } else if args.is_empty() {
            self.body.clone()
        } else {
            format!("{}\n\n{args}", self.body)
        }
    }

    /// One line for a list: the description, else the body's first line.
    pub(crate) fn summary(&self) -> String {
        let d = self
            .description
            .clone()
            .unwrap_or_else(|| self.body.lines().next().unwrap_or("").to_string());
        crate::text::headline(&d, 70)
    }
}

/// The commands found, by name, and what could not be read.
#[derive(Debug, Default)]
pub(crate) struct Commands {
    pub(crate) by_name: BTreeMap<String, Command>,
    pub(crate) problems: Vec<String>,
}

impl Commands {
    /// The commands for a session in `cwd`, none of them named like one of `reserved` (the
    /// front end's own slash commands).
    pub(crate) fn load(cwd: &Path, reserved: &[&str]) -> Commands {
        let mut c = Commands::default();
        if let Some(dir) = crate::config::user_config_dir().map(|d| d.join("commands")) {
            c.load_dir(&dir, Source::User, reserved);
        }
        if let Some(dir) = crate::config::find_upward(cwd, ".claude/commands") {
            let root = dir.parent().and_then(Path::parent).unwrap_or(&dir);
            if crate::config::is_trusted(root) {
                c.load_dir(&dir, Source::Claude, reserved);
            }
        }
        if let Some(dir) = crate::config::find_upward(cwd, ".ag/commands") {
            c.load_dir(&dir, Source::Project, reserved);
        }
        c
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Command> {
        self.by_name.get(name)
    }

    fn load_dir(&mut self, dir: &Path, source: Source, reserved: &[&str]) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
            .collect();
        files.sort();
        for file in files {
            let name = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !valid_name(&name) {
                self.problems.push(format!(
                    "{}: skipped: a command's name is letters, digits, `-` and `_`",
                    file.display()
                ));
                continue;
            }
            if reserved.contains(&name.as_str()) {
                self.problems.push(format!(
                    "{}: skipped: /{name} is a built-in command",
                    file.display()
                ));
                continue;
            }
            if let Some(old) = self.by_name.get(&name) {
                if old.source == Source::User && source != Source::User {
                    self.problems.push(format!(
                        "{}: skipped: the user's command /{name} ({}) comes first",
                        file.display(),
                        old.file.display()
                    ));
                    continue;
                }
            }
            match read_command(&file, &name, source) {
                Ok(cmd) => {
                    self.by_name.insert(name, cmd);
                }
                Err(e) => self.problems.push(e),
            }
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// One command file: an optional front matter, then the prompt.
fn read_command(file: &Path, name: &str, source: Source) -> Result<Command, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    let (fields, body) = if text.trim_start().starts_with("---") {
        crate::summon::claude::front_matter(text.trim_start())
            .map_err(|(line, msg)| format!("{}:{line}: {msg}", file.display()))?
    } else {
        (Default::default(), text.trim().to_string())
    };
    if body.trim().is_empty() {
        return Err(format!("{}: skipped: the prompt is empty", file.display()));
    }
    let field = |k: &str| {
        fields
            .get(k)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    Ok(Command {
        name: name.to_string(),
        description: field("description"),
        argument_hint: field("argument-hint"),
        body,
        file: file.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(body: &str) -> Command {
        Command {
            name: "x".into(),
            description: None,
            argument_hint: None,
            body: body.into(),
            file: PathBuf::from("/x.md"),
            source: Source::Project,
        }
    }

    #[test]
    fn arguments_go_where_the_body_says_or_after_it() {
        assert_eq!(
            cmd("Review $ARGUMENTS for bugs; then $ARGUMENTS again.").expand(" src/a.rs "),
            "Review src/a.rs for bugs; then src/a.rs again."
        );
        assert_eq!(
            cmd("Summarize.").expand("the diff"),
            "Summarize.\n\nthe diff"
        );
        assert_eq!(cmd("Summarize.").expand(""), "Summarize.");
    }

    #[test]
    fn files_are_read_with_their_front_matter_and_checked() {
        let dir = std::env::temp_dir().join(format!("ag-commands-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("review.md"),
            "---\ndescription: Review a file\nargument-hint: FILE\nallowed-tools: Bash\n---\nReview $ARGUMENTS.\n",
        )
        .unwrap();
        std::fs::write(dir.join("btw.md"), "shadow\n").unwrap();
        std::fs::write(dir.join("bad name.md"), "x\n").unwrap();
        std::fs::write(dir.join("empty.md"), "---\ndescription: e\n---\n\n").unwrap();
        let mut c = Commands::default();
        c.load_dir(&dir, Source::Project, &["btw"]);
        let r = c.get("review").unwrap();
        assert_eq!(r.description.as_deref(), Some("Review a file"));
        assert_eq!(r.argument_hint.as_deref(), Some("FILE"));
        assert_eq!(r.expand("lib.rs"), "Review lib.rs.");
        assert_eq!(c.by_name.len(), 1, "{:?}", c.by_name.keys());
        assert_eq!(c.problems.len(), 3, "{:?}", c.problems);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
