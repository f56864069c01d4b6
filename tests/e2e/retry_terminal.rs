//! On a terminal, the text of an attempt whose stream broke stays on the screen, marked as
//! discarded, and the retried attempt's answer follows it (in a pipe nothing of it is
//! printed: `faults.rs`).

use std::process::{Command, Stdio};

use crate::fake_provider::{sse, FakeProvider, Reply};
use crate::support::{bin, Run};

#[test]
fn on_a_terminal_a_broken_attempts_text_is_marked_discarded_before_the_answer() {
    let fake = FakeProvider::start();
    let env = crate::prompt::env_for(&fake);
    fake.push(Reply::Truncate(crate::faults::cut_inside_second_block(
        "half an answer",
    )));
    fake.push(Reply::Sse(sse::anthropic_text("second try ok")));
    let cmd = format!(
        "{} -m {} hello",
        bin("ag-prompt").display(),
        crate::prompt::MODEL
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&env.cwd)
        .stdin(Stdio::null())
        .output()
        .expect("script(1) from util-linux");
    let run = Run::from_output(out);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let screen = run.stdout;
    let at = |needle: &str| {
        screen
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not on the terminal:\n{screen}"))
    };
    let half = at("half an answer");
    let mark = at("[discarded: the stream broke before the answer was complete]");
    let answer = at("second try ok");
    assert!(half < mark && mark < answer, "{screen}");
    // The log holds only the retried attempt's answer.
    let id = crate::prompt::session_of(&screen).expect("the session line");
    let folded = env.log(&["fold", &id]).ok();
    assert!(
        !folded.stdout.contains("half an answer"),
        "{}",
        folded.stdout
    );
    assert!(folded.stdout.contains("second try ok"), "{}", folded.stdout);
}
