//! The narrow parse of `ag-room`'s command line gives what the whole command gives, and leaves
//! to it everything it does not take.

use std::ffi::OsString;

use clap::Parser;

use super::{narrow, Cli};

fn argv(line: &[&str]) -> Vec<OsString> {
    std::iter::once("ag-room")
        .chain(line.iter().copied())
        .map(OsString::from)
        .collect()
}

#[test]
fn the_narrow_parse_reads_every_verb_as_the_whole_command_does() {
    let lines: &[&[&str]] = &[
        &["tell", "hello"],
        &["tell", "--from", "post-commit", "-q", "-"],
        &["--from", "cron", "tell", "nightly build failed"],
        &[
            "tell",
            "--to",
            "0192f3a1",
            "--wait=30",
            "done with schema.rs?",
        ],
        &[
            "tell",
            "--to",
            "0192f3a1",
            "--wait",
            "--",
            "--looks like a flag",
        ],
        &[
            "tell",
            "--reply-to",
            "01a2b3c4d5",
            "--device",
            "--json",
            "ok",
        ],
        &["--home", "/tmp/h", "--color", "never", "-v", "tell", "x"],
        &["tell", "x", "--any", "--from", "me"],
        &["who"],
        &["who", "--json"],
        &["peek", "0192f3a1", "-n", "5"],
        &["tail", "-f", "-n", "0", "--json"],
        &["tail", "--all"],
        &["inbox", "--peek", "--as", "reviewer"],
        &[
            "claim",
            "lib/store/**",
            "--intent",
            "schema migration",
            "--ttl",
            "45m",
        ],
        &["claim", "a", "b", "--shared", "--intent", "read"],
        &["release", "--all"],
        &["release", "lib/a.rs"],
        &["claims"],
        &["guard", "--staged", "--mode", "warn"],
        &["guard", "x.rs", "y.rs"],
        &["mcp", "--name", "reviewer"],
        &["doctor"],
    ];
    for line in lines {
        let whole = Cli::try_parse_from(argv(line))
            .unwrap_or_else(|e| panic!("ag-room {line:?} does not parse: {e}"));
        let narrowed = narrow(&argv(line)).unwrap_or_else(|| {
            panic!("the narrow parse left ag-room {line:?} to the whole command")
        });
        assert_eq!(
            format!("{narrowed:?}"),
            format!("{whole:?}"),
            "ag-room {line:?}"
        );
    }
}

#[test]
fn what_the_narrow_parse_does_not_take_goes_to_the_whole_command() {
    let lines: &[&[&str]] = &[
        // Help and versions are the whole command's.
        &["tell", "--help"],
        &["-V"],
        &["help", "tell"],
        &["tell", "-h"],
        // Verbs whose flags are their own enum variant's.
        &["status", "0192f3a1"],
        &["ack", "0192f3a1"],
        // Errors: the whole command says them.
        &["tell"],
        &["tell", "--bogus", "x"],
        &["claim", "a"],
        &["release", "a", "--all"],
        &["guard", "--mode", "sometimes"],
        &["nosuchverb"],
        &[],
    ];
    for line in lines {
        assert!(
            narrow(&argv(line)).is_none(),
            "the narrow parse took ag-room {line:?}"
        );
    }
}
