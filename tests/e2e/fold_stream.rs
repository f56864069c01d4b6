//! `ag-log fold` reads the log as it writes the request: the bytes it prints are those of
//! the in-memory fold of the same view, whatever the log holds (a result that comes after
//! later conversation, unsafe and repeated call ids, an abandoned attempt, a prune, a
//! compaction, a fork's lineage), in both dialects, compact and pretty, with and without
//! `--full`.

use ag::fold::{compaction, fold_to_writer, prune, Dialect, FoldOptions};
use ag::paths::Home;
use ag::store::Store;
use serde_json::{json, Value};

use crate::support::chunk::{assistant, call, result, step, user};
use crate::support::TestEnv;

fn system(kind: &str, fields: Value) -> Value {
    let mut data = fields;
    data["kind"] = kind.into();
    json!({"role": "system", "type": "system", "data": data})
}

/// A session whose log holds every shape the fold treats specially; its id.
fn tricky(env: &TestEnv) -> String {
    let s = env.new_session("tricky", "list the files");
    let first = env.append(
        &s,
        &[
            step(assistant("Looking."), "t1", 1),
            step(call("c:1 bad", "glob", json!({"pattern": "*"})), "t1", 1),
            step(call("c2", "read", json!("{\"path\": \"a\"}")), "t1", 1),
            step(result("c:1 bad", "glob", "a\nb"), "t1", 1),
            step(user("meanwhile"), "t2", 0),
            step(assistant("still here"), "t2", 1),
            // c2's result, after the conversation moved on.
            step(result("c2", "read", "late contents"), "t2", 1),
            step(call("c2", "read", json!({})), "t2", 2),
            step(assistant("HALF AN ANSWER"), "t2", 3),
        ],
    );
    let half = first.last().unwrap()["id"].as_str().unwrap().to_string();
    let glob_result = first[3]["id"].as_str().unwrap().to_string();
    env.append(
        &s,
        &[
            step(
                system("attempt_abandoned", json!({"chunk_ids": [half]})),
                "t2",
                3,
            ),
            step(assistant("whole answer"), "t2", 3),
            step(
                system("prune", json!({"through_seq": 5, "cleared": [glob_result]})),
                "t2",
                3,
            ),
            step(user("and the tests?"), "t3", 0),
            step(assistant("None yet."), "t3", 1),
        ],
    );
    s
}

/// The in-memory fold of the whole view, as `ag-log fold` prints it.
fn reference(env: &TestEnv, id: &str, dialect: Dialect, full: bool, pretty: bool) -> String {
    let store = Store::open(&Home::resolve(Some(&env.home)).unwrap()).unwrap();
    let session = store.session(id).unwrap();
    let mut view = store.load_fold_view(&session).unwrap();
    if full {
        view.retain(|c| compaction::of_chunk(c).is_none() && prune::of_chunk(c).is_none());
    }
    let opts = FoldOptions {
        model: Some("m".into()),
        system: Some("be brief".into()),
        stream: true,
        ..FoldOptions::default()
    };
    let mut out = Vec::new();
    fold_to_writer(&view, dialect, &opts, pretty, &mut out).unwrap();
    out.push(b'\n');
    String::from_utf8(out).unwrap()
}

fn check_all(env: &TestEnv, id: &str) {
    for dialect in Dialect::ALL {
        for full in [false, true] {
            for pretty in [false, true] {
                let mut args = vec!["fold", id, "--dialect", dialect.as_str()];
                args.extend(["--model", "m", "--system", "be brief", "--stream"]);
                if full {
                    args.push("--full");
                }
                if pretty {
                    args.push("--pretty");
                }
                let got = env.log(&args).ok().stdout;
                let want = reference(env, id, dialect, full, pretty);
                assert_eq!(got, want, "{dialect} full={full} pretty={pretty}");
            }
        }
    }
}

#[test]
fn the_printed_fold_is_the_in_memory_fold_of_the_view() {
    let env = TestEnv::new();
    let s = tricky(&env);
    check_all(&env, &s);
    let body = env.log(&["fold", &s, "--dialect", "openai"]).ok().json();
    let text = body.to_string();
    assert!(text.contains("late contents"), "{text}");
    assert!(!text.contains("HALF AN ANSWER"), "{text}");
    assert!(
        text.contains("call recall with"),
        "the pruned result: {text}"
    );

    // A compaction: the fold starts from its handoff and kept suffix.
    let len = env.chunks(&s).len() as i64;
    env.append(
        &s,
        &[system(
            "compaction",
            json!({"summary": "They listed files.", "through_seq": len - 2, "kept_from_seq": len - 1}),
        )],
    );
    check_all(&env, &s);
    let body = env.log(&["fold", &s]).ok().json();
    let text = body.to_string();
    assert!(text.contains("They listed files."), "{text}");
    assert!(!text.contains("meanwhile"), "{text}");

    // A fork: the view is the source up to the cut, then the fork's own chunks.
    let fork = env.run("ag-fork", &[&s, "--at", "8", "-q"]).ok();
    let f = fork.stdout.trim().to_string();
    env.append(&f, &[user("in the fork"), assistant("forked answer")]);
    check_all(&env, &f);
}
