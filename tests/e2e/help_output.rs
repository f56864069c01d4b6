//! Help and version are output like any other: a full or closed stdout is an error (exit 1,
//! the cause named), a reader that goes away early ends them quietly, and nothing panics.

use crate::faults::{dev_full, sh};
use crate::support::TestEnv;

const PROGRAMS: [&str; 6] = [
    "ag",
    "ag-log",
    "ag-prompt",
    "ag-fork",
    "ag-room",
    "ag-summon",
];

#[test]
fn help_and_version_on_a_full_stdout_fail_with_the_cause() {
    let env = TestEnv::new();
    for program in PROGRAMS {
        for flag in ["--help", "--version"] {
            let out = env
                .command(program)
                .arg(flag)
                .stdout(dev_full())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{program} {flag}: {stderr}");
            assert!(
                stderr.contains(&format!("{program}: error: cannot write to stdout"))
                    && stderr.contains("No space left on device"),
                "{program} {flag}: {stderr}"
            );
        }
    }
}

#[test]
fn help_and_version_on_a_closed_stdout_fail_and_a_closed_pipe_ends_quietly() {
    let env = TestEnv::new();
    for program in PROGRAMS {
        for flag in ["--help", "--version", "help"] {
            let closed = sh(&env, &format!("{program} {flag} >&-"));
            assert_eq!(closed.code, 1, "{program} {flag}: {}", closed.stderr);
            assert!(
                closed.stderr.contains("cannot write to stdout"),
                "{program} {flag}: {}",
                closed.stderr
            );
            // A reader that is already gone: the first write meets a broken pipe.
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            let mut cmd = env.command(program);
            if flag == "help" {
                cmd.arg("help");
            } else {
                cmd.arg(flag);
            }
            let out = cmd.stdout(writer).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{program} {flag}: {stderr}");
            assert!(stderr.is_empty(), "{program} {flag}: {stderr}");
        }
    }
}
