//! What runs cost: `cost_usd` on a turn's record, its result and `ag-log show`, `ag-log usage`
//! by model and by day, each checked against costs computed by hand from the list prices,
//! with cache reads and writes in both dialects; and `--max-cost`, which stops a model that
//! would loop.

use serde_json::{json, Value};

use crate::fake_provider::sse::{self, Block};
use crate::fake_provider::{FakeProvider, Reply};
use crate::prompt::*;

/// An OpenAI stream whose usage says `cached` of the prompt tokens came from the cache.
fn openai_cached(text: &str, prompt: u64, cached: u64, completion: u64) -> String {
    let body = sse::openai(Some(text), &[], "stop", (prompt, completion));
    let total = format!("\"total_tokens\":{}}}", prompt + completion);
    assert!(body.contains(&total), "{body}");
    body.replace(
        &total,
        &format!(
            "\"total_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}}}}",
            prompt + completion
        ),
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn turns_record_what_they_cost_and_usage_sums_it_by_model_and_day() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    // Anthropic, claude-sonnet-4-5 at $3 / $15 / $0.30 / $3.75 per million tokens:
    // 1,000 input, 200 output, 3,000 read from the cache, 500 written to it.
    fake.push(Reply::Sse(sse::anthropic(
        &[Block::Text("hello".into())],
        "end_turn",
        (1000, 200, 3000, 500),
    )));
    let a = env
        .run(
            "ag-prompt",
            &[
                "-m",
                "anthropic/claude-sonnet-4-5",
                "--output",
                "json",
                "hi",
            ],
        )
        .ok()
        .json();
    let anthropic_cost = (1000.0 * 3.0 + 200.0 * 15.0 + 3000.0 * 0.30 + 500.0 * 3.75) / 1e6;
    assert!(
        close(a["cost_usd"].as_f64().unwrap(), anthropic_cost),
        "{a}"
    );
    // OpenAI, gpt-4o at $2.50 / $10 / $1.25: 5,000 prompt tokens of which 4,000 cached.
    fake.push(Reply::Sse(openai_cached("hello", 5000, 4000, 100)));
    let o = env
        .run(
            "ag-prompt",
            &["-m", "openai/gpt-4o", "--output", "json", "hi"],
        )
        .ok()
        .json();
    let openai_cost = (1000.0 * 2.5 + 100.0 * 10.0 + 4000.0 * 1.25) / 1e6;
    assert!(close(o["cost_usd"].as_f64().unwrap(), openai_cost), "{o}");

    let shown = env
        .log(&["show", a["session"].as_str().unwrap(), "--json"])
        .ok()
        .json();
    assert!(
        close(shown["usage"]["cost_usd"].as_f64().unwrap(), anthropic_cost),
        "{shown}"
    );

    // A record appended by hand without cost_usd is priced now, from its model's list price.
    let s = env.new_session("imported", "an old turn");
    env.append(
        &s,
        &[
            json!({"role": "system", "type": "system", "data": {"kind": "turn_end",
            "stop_reason": "end_turn", "model": "claude-haiku-4-5",
            "usage": {"input": 2000, "output": 1000, "cache_read": 0, "cache_write": 0}}}),
        ],
    );
    let haiku_cost = (2000.0 * 1.0 + 1000.0 * 5.0) / 1e6;

    let by_model: Vec<Value> = env
        .log(&["usage", "--by", "model", "--json"])
        .ok()
        .json_lines();
    let row = |model: &str| {
        by_model
            .iter()
            .find(|r| r["key"] == model)
            .unwrap_or_else(|| panic!("no row for {model}: {by_model:?}"))
            .clone()
    };
    // The models as the APIs answered: the fake's names.
    let claude = row("claude-fake-1");
    assert!(
        close(claude["cost_usd"].as_f64().unwrap(), anthropic_cost),
        "{claude}"
    );
    assert_eq!(claude["cache_read"], 3000);
    assert_eq!(claude["cache_write"], 500);
    let gpt = row("gpt-fake-1");
    assert!(
        close(gpt["cost_usd"].as_f64().unwrap(), openai_cost),
        "{gpt}"
    );
    assert_eq!(gpt["cache_read"], 4000);
    assert!(close(
        row("claude-haiku-4-5")["cost_usd"].as_f64().unwrap(),
        haiku_cost
    ));

    let by_day = env.log(&["usage", "--json"]).ok().json_lines();
    assert_eq!(by_day.len(), 1, "{by_day:?}");
    assert_eq!(by_day[0]["turns"], 3);
    assert!(close(
        by_day[0]["cost_usd"].as_f64().unwrap(),
        anthropic_cost + openai_cost + haiku_cost
    ));
    let table = env.log(&["usage", "--by", "session"]).ok().stdout;
    assert_eq!(table.lines().count(), 3, "{table}");
    // A model without a price counts tokens, not dollars, and says so.
    env.run("ag-prompt", &["-m", "echo", "hi"]).ok();
    let run = env.log(&["usage", "--by", "model"]).ok();
    assert!(run.stderr.contains("without a price"), "{}", run.stderr);
}

#[test]
fn max_cost_stops_a_looping_model_before_the_step_that_would_pass_it() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    std::fs::write(env.cwd.join("a.txt"), "a\n").unwrap();
    // Every step reads a file again and costs 100,000 input tokens: $0.30 at sonnet's price.
    for i in 0..10 {
        fake.push(Reply::Sse(sse::anthropic(
            &[Block::Tool {
                id: format!("toolu_{i:02}"),
                name: "read".into(),
                input: json!({"path": "a.txt"}),
            }],
            "tool_use",
            (100_000, 10, 0, 0),
        )));
    }
    let run = env.run(
        "ag-prompt",
        &[
            "-m",
            "anthropic/claude-sonnet-4-5",
            "--max-cost",
            "1",
            "--output",
            "json",
            "loop",
        ],
    );
    assert_eq!(run.code, 5, "{}", run.stderr);
    assert!(run.stderr.contains("--max-cost"), "{}", run.stderr);
    // $0.30, $0.60, $0.90 spent; a fourth step would make $1.20.
    assert_eq!(fake.requests().len(), 3);
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["stop_reason"], "max_cost");
    assert_eq!(result["subtype"], "error_max_cost");
    assert!(close(
        result["cost_usd"].as_f64().unwrap(),
        0.3 * 3.0 + 30.0 * 15.0 / 1e6
    ));
    let ends = system_kind(&env.chunks(result["session"].as_str().unwrap()), "turn_end")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(ends[0]["data"]["stop_reason"], "max_cost");
    // A model without a price cannot take a budget.
    let bad = env.run("ag-prompt", &["-m", "echo", "--max-cost", "1", "hi"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("has no price"), "{}", bad.stderr);
}
