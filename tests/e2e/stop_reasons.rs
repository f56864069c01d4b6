//! Stop reasons are a closed vocabulary: the loop writes known ones, `ag-log append` refuses a
//! `turn_end` with a reason nobody knows, and a damaged stored row is an error that names the
//! chunk, never a turn that ended in some unheard-of way.

use serde_json::json;

use crate::support::{chunk, TestEnv};

#[test]
fn a_turn_end_with_an_unknown_stop_reason_is_refused_on_append() {
    let env = TestEnv::new();
    let s = env.new_session("typo", "start");
    let before = env.chunks(&s);
    let mut end = chunk::turn_end(1, 1);
    end["data"]["stop_reason"] = json!("end-turn");
    let run = env
        .log_stdin(&["append", "-s", &s], format!("{end}\n"))
        .code(1);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("line 1: field `data`")
            && run.stderr.contains("unknown stop_reason \"end-turn\"")
            && run.stderr.contains("end_turn, tool_use"),
        "{}",
        run.stderr
    );
    let mut missing = chunk::turn_end(1, 1);
    missing["data"]
        .as_object_mut()
        .unwrap()
        .remove("stop_reason");
    let run = env
        .log_stdin(&["append", "-s", &s], format!("{missing}\n"))
        .code(1);
    assert!(
        run.stderr.contains("turn_end: missing field `stop_reason`"),
        "{}",
        run.stderr
    );
    assert_eq!(env.chunks(&s), before, "nothing was appended");
}

#[test]
fn a_stored_turn_end_with_an_unknown_stop_reason_is_an_error_naming_the_chunk() {
    let env = TestEnv::new();
    let s = env.new_session("damaged", "hello");
    let stored = env.append(&s, &[chunk::assistant("hi"), chunk::turn_end(1, 1)]);
    let id = stored[1]["id"].as_str().unwrap().to_string();
    rusqlite::Connection::open(env.db())
        .unwrap()
        .execute(
            "UPDATE chunks SET data_json = json_set(data_json, '$.stop_reason', 'finished') WHERE id = ?1",
            [&id],
        )
        .unwrap();
    let run = env.log(&["cat", &s]).code(1);
    assert!(
        run.stderr.starts_with(&format!(
            "ag-log: error: the stored chunk {id} is damaged: turn_end: unknown stop_reason \"finished\""
        )),
        "{}",
        run.stderr
    );
}
