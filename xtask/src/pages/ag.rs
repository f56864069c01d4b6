//! The hand-written parts of ag(1), the dispatcher.

use super::Block::{Example, Item, Para};
use super::{Page, Section};

pub const PAGE: Page = Page {
    name: "ag",
    command: ag::cli::dispatch::command,
    sections: &[
        Section {
            title: "COMMANDS",
            blocks: &[
                Para("`ag COMMAND ARGS…` runs `ag-COMMAND ARGS…`, found beside `ag` first, then on `PATH` (as git and cargo find their subcommands), so `ag foo` also runs an `ag-foo` written by someone else. Its exit status is the command's. `ag help` lists the commands; `ag help COMMAND [SUB…]` is `ag-COMMAND [SUB…] --help`."),
            ],
        },
        Section {
            title: "EXIT STATUS",
            blocks: &[
                Item("2", "No such command, or a flag before the command."),
                Item("other", "The command's own status (see its page)."),
            ],
        },
        Section {
            title: "EXAMPLES",
            blocks: &[
                Example("This directory's sessions of the last day:", "ag log ls --here --since 1d"),
                Example("The help of a subcommand:", "ag help log cat"),
            ],
        },
    ],
};
