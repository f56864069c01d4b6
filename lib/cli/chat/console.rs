//! Where the person types: a line editor (rustyline) with history kept per folder, multi-line
//! input (Alt-Enter, or a paste), and completion of slash commands and session handles; or,
//! where the terminal cannot be driven (`TERM=dumb`, stdin not a terminal), plain lines.
//! Lines the turn prints while the person types go above the line being edited.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::history::FileHistory;
use rustyline::{Cmd, Editor, EventHandler, KeyCode, KeyEvent, Modifiers};

use super::shared::Printer;

/// What the person did.
pub(super) enum Input {
    Line(String),
    /// Ctrl-C.
    Interrupt,
    /// Ctrl-D on an empty line, or the end of input.
    Leave,
}

/// The words completion offers: slash commands (with what they do) and session handles.
#[derive(Default)]
pub(super) struct Words {
    pub(super) commands: Vec<(String, String)>,
    pub(super) sessions: Vec<String>,
}

pub(super) enum Console {
    Editor {
        editor: Box<Editor<ChatHelper, FileHistory>>,
        history: Option<PathBuf>,
    },
    Plain(std::io::StdinLock<'static>),
}

const PROMPT: &str = "› ";

impl Console {
    /// The line editor on a terminal that can be driven, else plain lines; and the printer
    /// that goes with it.
    pub(super) fn open(
        editor: bool,
        history: Option<&Path>,
        color: bool,
        words: Arc<Mutex<Words>>,
    ) -> (Console, Printer) {
        let plain = || (Console::Plain(std::io::stdin().lock()), Printer::Plain);
        if !editor {
            return plain();
        }
        let config = rustyline::Config::builder()
            .auto_add_history(true)
            .bracketed_paste(true)
            .completion_type(rustyline::CompletionType::List)
            .color_mode(match color {
                true => rustyline::ColorMode::Enabled,
                false => rustyline::ColorMode::Disabled,
            })
            .max_history_size(2000)
            .map(|b| b.build());
        let Ok(config) = config else {
            return plain();
        };
        let Ok(mut ed) = Editor::<ChatHelper, FileHistory>::with_config(config) else {
            return plain();
        };
        ed.set_helper(Some(ChatHelper { words, color }));
        ed.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        if let Some(h) = history {
            let _ = ed.load_history(h);
        }
        let Ok(printer) = ed.create_external_printer() else {
            return plain();
        };
        let console = Console::Editor {
            editor: Box::new(ed),
            history: history.map(Path::to_path_buf),
        };
        (console, Printer::Editor(Mutex::new(Box::new(printer))))
    }

    /// Whether lines come from a pipe (or a terminal that cannot be driven).
    pub(super) fn is_plain(&self) -> bool {
        matches!(self, Console::Plain(_))
    }

    /// The next thing the person does.
    pub(super) fn read(&mut self) -> std::io::Result<Input> {
        match self {
            Console::Editor { editor, history } => match editor.readline(PROMPT) {
                Ok(line) => {
                    if let Some(h) = history {
                        let _ = editor.append_history(h);
                    }
                    Ok(Input::Line(line))
                }
                Err(ReadlineError::Interrupted) => Ok(Input::Interrupt),
                Err(ReadlineError::Eof) => Ok(Input::Leave),
                Err(ReadlineError::Io(e)) => Err(e),
                Err(e) => Err(std::io::Error::other(e.to_string())),
            },
            Console::Plain(stdin) => {
                let mut line = String::new();
                match stdin.read_line(&mut line)? {
                    0 => Ok(Input::Leave),
                    _ => Ok(Input::Line(line.trim_end_matches(['\n', '\r']).to_string())),
                }
            }
        }
    }
}

/// Completion of `/com…` and of a session after `/resume ` or `/tell `; the prompt in colour.
pub(super) struct ChatHelper {
    words: Arc<Mutex<Words>>,
    color: bool,
}

impl ChatHelper {
    fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<Pair>) {
        let before = &line[..pos.min(line.len())];
        let words = self.words.lock().unwrap_or_else(|e| e.into_inner());
        let start = before.rfind(' ').map_or(0, |i| i + 1);
        let word = &before[start..];
        if start == 0 && word.starts_with('/') {
            let found = words
                .commands
                .iter()
                .filter(|(name, _)| format!("/{name}").starts_with(word))
                .map(|(name, what)| Pair {
                    display: format!("/{name:<12} {what}"),
                    replacement: format!("/{name} "),
                })
                .collect();
            return (0, found);
        }
        let takes_session = ["/resume ", "/tell "]
            .iter()
            .any(|c| before.starts_with(c) && !before[c.len()..].trim_start().contains(' '));
        if takes_session {
            let found = words
                .sessions
                .iter()
                .filter(|h| h.starts_with(word))
                .map(|h| Pair {
                    display: h.clone(),
                    replacement: format!("{h} "),
                })
                .collect();
            return (start, found);
        }
        (pos, Vec::new())
    }
}

impl Completer for ChatHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok(self.candidates(line, pos))
    }
}

impl Highlighter for ChatHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        default: bool,
    ) -> std::borrow::Cow<'b, str> {
        match self.color && default {
            true => std::borrow::Cow::Owned(format!("\x1b[36m{prompt}\x1b[0m")),
            false => std::borrow::Cow::Borrowed(prompt),
        }
    }
}

impl rustyline::hint::Hinter for ChatHelper {
    type Hint = String;
}

impl rustyline::validate::Validator for ChatHelper {}

impl rustyline::Helper for ChatHelper {}

/// The history file of a folder: private, under the store's home.
pub(super) fn history_file(home: &crate::paths::Home, cwd: &Path) -> Option<PathBuf> {
    use sha2::Digest;
    let dir = home.dir.join("history");
    crate::paths::create_private_dir(&dir).ok()?;
    let key = sha2::Sha256::digest(cwd.to_string_lossy().as_bytes());
    let name: String = key.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let file = dir.join(format!("{name}.txt"));
    crate::paths::precreate_private(&file).ok()?;
    Some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_commands_and_sessions() {
        let words = Arc::new(Mutex::new(Words {
            commands: vec![
                ("btw".into(), "a side question".into()),
                ("fork".into(), "fork".into()),
            ],
            sessions: vec!["amber-fox".into(), "blue-owl".into()],
        }));
        let h = ChatHelper {
            words,
            color: false,
        };
        let (at, v) = h.candidates("/b", 2);
        assert_eq!(at, 0);
        assert_eq!(
            v.iter().map(|p| p.replacement.as_str()).collect::<Vec<_>>(),
            ["/btw "]
        );
        let (at, v) = h.candidates("/resume am", 10);
        assert_eq!(at, 8);
        assert_eq!(
            v.iter().map(|p| p.replacement.as_str()).collect::<Vec<_>>(),
            ["amber-fox "]
        );
        assert!(h.candidates("hello /b", 8).1.is_empty());
    }
}
