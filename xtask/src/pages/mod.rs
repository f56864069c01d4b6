//! The commands that get a man page and completions, and the parts of each page that clap
//! cannot know: exit statuses, environment, files, examples. One file per command holds its
//! text; adding a command is one file here and one entry in [`PAGES`].

mod ag;
mod fork;
mod log;
mod prompt;
mod room;
mod summon;

/// A command to document.
pub struct Page {
    /// The binary's name: `man/<name>.1`, `completions/<name>.bash`, …
    pub name: &'static str,
    /// The command's clap definition, from the library.
    pub command: fn() -> clap::Command,
    /// Hand-written sections, printed after the generated ones in this order.
    pub sections: &'static [Section],
}

/// A top-level man page section (`.SH`).
pub struct Section {
    pub title: &'static str,
    pub blocks: &'static [Block],
}

/// Text is plain: the renderer escapes it for roff. Spans in backticks are set in bold
/// (flags, file names, literal values).
pub enum Block {
    /// A filled paragraph.
    Para(&'static str),
    /// A tagged paragraph: the term in bold, its description indented below.
    Item(&'static str, &'static str),
    /// A sentence saying what the example does, then the command line, unfilled.
    Example(&'static str, &'static str),
}

pub const PAGES: &[Page] = &[
    ag::PAGE,
    log::PAGE,
    prompt::PAGE,
    fork::PAGE,
    room::PAGE,
    summon::PAGE,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// An unclosed backtick would set the rest of the paragraph in bold.
    #[test]
    fn every_code_span_is_closed() {
        for page in PAGES {
            for section in page.sections {
                for block in section.blocks {
                    let texts = match block {
                        Block::Para(text) => [*text, ""],
                        Block::Item(term, text) => [*term, *text],
                        Block::Example(lead, _) => [*lead, ""],
                    };
                    for text in texts {
                        assert!(
                            text.matches('`').count() % 2 == 0,
                            "{} {}: unclosed ` in {text:?}",
                            page.name,
                            section.title
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn every_page_names_a_command_of_that_name() {
        for page in PAGES {
            assert_eq!((page.command)().get_name(), page.name);
        }
    }
}
