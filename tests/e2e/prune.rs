//! Pruning end to end on the fake provider: past the threshold, old tool results are cleared
//! first (a `system/prune` record, placeholders in the request that name the tool and the seq
//! `recall` fetches), and when that is enough the summarizer is never called; when it is not,
//! a compaction follows. `ag-log prune` does the same by hand.

use serde_json::{json, Value};

use crate::compaction::{answer, assert_valid, model_of, text_of, ANTHROPIC, OPENAI};
use crate::fake_provider::{FakeProvider, Recorded};
use crate::prompt::{env_with, system_kind};
use crate::recall::{calls, results_in};
use crate::support::{chunk, TestEnv};

/// A 20k window for both test models, compacting at half of it, keeping 2 tool results.
fn config() -> String {
    format!(
        "[context]\nkeep_tokens = 300\ncompact_at = 0.5\nkeep_tool_results = 2\n\
         [models.\"{ANTHROPIC}\"]\ncontext_window = 20000\n\
         [models.\"{OPENAI}\"]\ncontext_window = 20000\n"
    )
}

/// Six finished turns, each a `read` whose result is `result_bytes` long (it starts with
/// `RESULT-t`) and an answer `answer_bytes` long. Returns the session and its results' seqs.
fn seed(env: &TestEnv, result_bytes: usize, answer_bytes: usize) -> (String, Vec<i64>) {
    let id = env.new_session("pruned", "ask 0: read the six files");
    let mut lines = Vec::new();
    for t in 0..6 {
        let turn = format!("turn{t}");
        if t > 0 {
            lines.push(chunk::step(chunk::user(&format!("ask {t}")), &turn, 0));
        }
        lines.push(chunk::step(
            chunk::call(
                &format!("r{t}"),
                "read",
                json!({"path": format!("f{t}.txt")}),
            ),
            &turn,
            1,
        ));
        let body = format!("RESULT-{t} {}", "data ".repeat(result_bytes / 5));
        lines.push(chunk::step(
            chunk::result(&format!("r{t}"), "read", &body),
            &turn,
            1,
        ));
        let text = format!("answer {t}: {}", "words ".repeat(answer_bytes / 6));
        lines.push(chunk::step(chunk::assistant(&text), &turn, 2));
        lines.push(chunk::step(chunk::turn_end(0, 0), &turn, 2));
    }
    let stored = env.append(&id, &lines);
    let seqs = stored
        .iter()
        .filter(|c| c["type"] == "tool_result")
        .map(|c| c["seq"].as_i64().unwrap())
        .collect();
    (id, seqs)
}

fn no_summary_asked(reqs: &[Recorded]) -> bool {
    reqs.iter().all(|r| !text_of(r).contains("handoff summary"))
}

#[test]
fn a_prune_that_is_enough_avoids_the_summarizer_and_recall_fetches_a_cleared_result() {
    for dialect in ["anthropic", "openai"] {
        let fake = FakeProvider::start();
        let env = env_with(Some(&fake), &config());
        // Results of ~2,000 tokens, short answers: clearing four is plenty.
        let (id, seqs) = seed(&env, 8000, 60);
        fake.push(calls(
            dialect,
            &[("call_1", "recall", json!({"seq": seqs[0], "around": 0}))],
        ));
        fake.push(answer(dialect, "Read it again."));
        let run = env
            .run(
                "ag-prompt",
                &["-s", &id, "-m", model_of(dialect), "--json", "go on"],
            )
            .ok();
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 2, "{dialect}: two steps and no summary");
        assert!(no_summary_asked(&reqs), "{dialect}");

        // The first request: the four old results are placeholders, the two newest whole.
        let first = text_of(&reqs[0]);
        for (t, seq) in seqs.iter().take(4).enumerate() {
            assert!(
                !first.contains(&format!("RESULT-{t}")),
                "{dialect}: result {t}"
            );
            assert!(
                first.contains(&format!(
                    "the result of read was cleared to save context; call recall with {{\\\"seq\\\": {seq}}}"
                )),
                "{dialect}: placeholder {t}: {first}"
            );
        }
        assert!(
            first.contains("RESULT-4") && first.contains("RESULT-5"),
            "{dialect}"
        );
        assert_valid(&reqs[0], dialect);
        // recall brings the first result back whole.
        let got = results_in(&reqs[1]).pop().unwrap();
        assert!(got.contains("RESULT-0 data data"), "{dialect}: {got}");

        let chunks = env.chunks(&id);
        let prunes = system_kind(&chunks, "prune");
        assert_eq!(prunes.len(), 1, "{dialect}");
        assert_eq!(prunes[0]["data"]["cleared"].as_array().unwrap().len(), 4);
        assert_eq!(prunes[0]["data"]["through_seq"], seqs[3]);
        assert!(system_kind(&chunks, "compaction").is_empty(), "{dialect}");
        let ev = run
            .json_lines()
            .into_iter()
            .find(|e| e["type"] == "pruned")
            .expect("a pruned event");
        assert_eq!(ev["cleared"], 4);
        assert!(ev["tokens_after"].as_u64() < ev["tokens_before"].as_u64());
        // The log keeps every result whole.
        assert!(env.log(&["cat", &id]).ok().stdout.contains("RESULT-0 data"));

        // The next turn is under the threshold: no new prune, and the pruned prefix folds to
        // the same bytes (the cache hits again).
        fake.push(answer(dialect, "Still here."));
        let again = env
            .run(
                "ag-prompt",
                &["-s", &id, "-m", model_of(dialect), "and then?"],
            )
            .ok();
        assert!(!again.stderr.contains("pruned"), "{}", again.stderr);
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 3);
        let head = |r: &Recorded, n: usize| {
            let mut m = r.body["messages"].as_array().unwrap().clone();
            m.truncate(n);
            let mut v = Value::Array(m);
            crate::prompt::strip_cache_control(&mut v);
            v.to_string()
        };
        let n = reqs[1].body["messages"].as_array().unwrap().len() - 1;
        assert_eq!(
            head(&reqs[1], n),
            head(&reqs[2], n),
            "{dialect}: the prefix moved"
        );
        assert_eq!(system_kind(&env.chunks(&id), "prune").len(), 1);
    }
}

#[test]
fn a_prune_that_is_not_enough_is_followed_by_a_compaction() {
    let fake = FakeProvider::start();
    let env = env_with(Some(&fake), &config());
    // Long answers, small results: the placeholders save little.
    let (id, _) = seed(&env, 1200, 6000);
    fake.push(answer("anthropic", "SUMMARY-AFTER-PRUNE"));
    fake.push(answer("anthropic", "Carrying on."));
    let run = env
        .run("ag-prompt", &["-s", &id, "-m", ANTHROPIC, "go on"])
        .ok();
    assert!(
        run.stderr.contains("pruned 4 old tool results"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("compacted "), "{}", run.stderr);
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "a summary, then the step");
    assert!(text_of(&reqs[0]).contains("handoff summary"));
    assert!(text_of(&reqs[1]).contains("SUMMARY-AFTER-PRUNE"));
    let chunks = env.chunks(&id);
    let prune = system_kind(&chunks, "prune")[0]["seq"].as_i64().unwrap();
    let compaction = system_kind(&chunks, "compaction")[0]["seq"]
        .as_i64()
        .unwrap();
    assert!(prune < compaction, "the prune came first");
}

#[test]
fn ag_log_prune_clears_by_hand_and_fold_full_ignores_it() {
    let env = env_with(None, "[context]\nkeep_tool_results = 5\n");
    let (id, seqs) = seed(&env, 2000, 60);
    // The config keeps 5: only the first result goes.
    let run = env.log(&["prune", &id, "--json"]).ok();
    let rec: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(rec["data"]["kind"], "prune");
    assert_eq!(rec["data"]["cleared"].as_array().unwrap().len(), 1);
    assert!(
        run.stderr.contains("pruned 1 tool result"),
        "{}",
        run.stderr
    );
    // --keep overrides it.
    let run = env.log(&["prune", &id, "--keep", "1"]).ok();
    assert!(
        run.stderr.contains("pruned 4 tool results"),
        "{}",
        run.stderr
    );
    let again = env.log(&["prune", &id, "--keep", "1"]).ok();
    assert!(
        again.stderr.contains("nothing to prune"),
        "{}",
        again.stderr
    );

    for dialect in ["anthropic", "openai"] {
        let fold = env.log(&["fold", &id, "--dialect", dialect]).ok().stdout;
        assert!(
            !fold.contains("RESULT-0") && !fold.contains("RESULT-4"),
            "{dialect}"
        );
        assert!(fold.contains("RESULT-5"), "{dialect}");
        assert!(
            fold.contains(&format!("{{\\\"seq\\\": {}}}", seqs[4])),
            "{dialect}"
        );
        let full = env
            .log(&["fold", &id, "--dialect", dialect, "--full"])
            .ok()
            .stdout;
        assert!(
            full.contains("RESULT-0") && full.contains("RESULT-4"),
            "{dialect}"
        );
    }
    env.log(&["prune", "ffffffff"]).code(4);
    env.log(&["prune", &id, "--keep", "many"]).code(2);
    assert_eq!(system_kind(&env.chunks(&id), "prune").len(), 2);
}
