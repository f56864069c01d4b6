//! `--schema`: the answer is JSON valid against a schema, asked natively (OpenAI), through a
//! forced `final_answer` call (Anthropic), or read from the text (offline models); checked
//! before it is printed; sent back with the errors, then exit 1. Errors are printed once.

use serde_json::{json, Value};

use crate::fake_provider::sse::{self, Block};
use crate::fake_provider::{FakeProvider, Reply};
use crate::prompt::{env_for, of_type, script, session_id, user_texts};
use crate::support::TestEnv;

const SCHEMA: &str = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;

#[test]
fn a_valid_answer_is_printed_alone_and_recorded() {
    let env = TestEnv::new();
    let run = env
        .run(
            "ag-prompt",
            &["-m", "echo", "--schema", SCHEMA, "{\"n\": 3}"],
        )
        .ok();
    assert_eq!(run.stdout, "{\"n\":3}\n");
    let run = env
        .run(
            "ag-prompt",
            &[
                "-c",
                "-m",
                "echo",
                "--schema",
                SCHEMA,
                "--output",
                "json",
                "```json\n{\"n\": 4}\n```",
            ],
        )
        .ok();
    let v = run.json();
    assert_eq!(v["structured"], json!({"n": 4}));
    assert_eq!(v["answer"], "{\"n\":4}");
    let ends: Vec<Value> = env
        .chunks("last")
        .into_iter()
        .filter(|c| c["data"]["kind"] == "turn_end")
        .collect();
    assert_eq!(ends.last().unwrap()["data"]["structured"], json!({"n": 4}));
}

#[test]
fn an_invalid_answer_goes_back_to_the_model_then_exits_1_with_the_error() {
    let env = TestEnv::new();
    let file = env.write_file("schema.json", SCHEMA);
    let at = format!("@{}", file.display());
    let run = env.run(
        "ag-prompt",
        &["-m", "echo", "--schema", &at, "{\"n\": \"three\"}"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "", "nothing invalid is printed");
    // echo answers the retry prompt with itself: the last error is that it is not JSON.
    assert!(
        run.stderr
            .contains("does not satisfy the schema: the answer is not JSON"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("does not satisfy the schema").count(),
        1,
        "the error is printed once: {}",
        run.stderr
    );
    // The default two retries: the model was told twice what was wrong.
    let chunks = env.chunks("last");
    let retries: Vec<&str> = chunks
        .iter()
        .filter(|c| c["role"] == "user")
        .filter_map(|c| c["data"]["text"].as_str())
        .filter(|t| t.starts_with("Your answer does not satisfy"))
        .collect();
    assert_eq!(retries.len(), 2);
    assert!(retries[0].contains("at /n"), "{}", retries[0]);
    assert_eq!(of_type(&chunks, None, "error").len(), 1);
}

#[test]
fn a_corrected_answer_after_a_retry_is_the_one_printed() {
    let env = TestEnv::new();
    let model = script(
        &env,
        "fix.toml",
        "[[step]]\ntext = \"{\\\"n\\\": \\\"x\\\"}\"\n\n[[step]]\ntext = \"{\\\"n\\\": 7}\"\n",
    );
    let run = env
        .run("ag-prompt", &["-m", &model, "--schema", SCHEMA, "go"])
        .ok();
    assert_eq!(run.stdout, "{\"n\":7}\n");
}

#[test]
fn bad_schemas_are_usage_errors() {
    let env = TestEnv::new();
    for (schema, says) in [
        ("{", "not JSON"),
        ("[1]", "JSON object"),
        (r#"{"type": 5}"#, "not a valid JSON Schema"),
    ] {
        let run = env.run("ag-prompt", &["-m", "echo", "--schema", schema, "x"]);
        assert_eq!(run.code, 2, "{schema}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{schema}: {}", run.stderr);
    }
    assert_eq!(env.log(&["ls", "--json"]).stdout, "", "no session was made");
}

#[test]
fn anthropic_answers_through_a_forced_tool_call() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    fake.push(Reply::Sse(sse::anthropic(
        &[Block::Tool {
            id: "toolu_1".into(),
            name: "final_answer".into(),
            input: json!({"n": "bad"}),
        }],
        "tool_use",
        (10, 5, 0, 0),
    )));
    fake.push(Reply::Sse(sse::anthropic(
        &[Block::Tool {
            id: "toolu_2".into(),
            name: "final_answer".into(),
            input: json!({"n": 9}),
        }],
        "tool_use",
        (10, 5, 0, 0),
    )));
    let run = env
        .run(
            "ag-prompt",
            &[
                "-m",
                "anthropic/claude-sonnet-4-5",
                "--schema",
                SCHEMA,
                "count",
            ],
        )
        .ok();
    assert_eq!(run.stdout, "{\"n\":9}\n");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let body = &reqs[0].body;
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    let tool = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "final_answer")
        .expect("the answer tool is offered");
    assert_eq!(tool["input_schema"]["required"], json!(["n"]));
    // The first answer's errors went back as its tool result.
    let second = reqs[1].body["messages"].to_string();
    assert!(second.contains("at /n"), "{second}");
    let chunks = env.chunks(&session_id(&run));
    let results = of_type(&chunks, Some("tool"), "tool_result");
    assert_eq!(results.len(), 2);
    assert_eq!(results[1]["data"]["result"], "accepted");
}

#[test]
fn openai_gets_native_structured_output() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    fake.push(Reply::Sse(sse::openai(
        Some("{\"n\": 5}"),
        &[],
        "stop",
        (10, 5),
    )));
    let run = env
        .run(
            "ag-prompt",
            &["-m", "openai/gpt-4o", "--schema", SCHEMA, "count"],
        )
        .ok();
    assert_eq!(run.stdout, "{\"n\":5}\n");
    let body = &fake.requests()[0].body;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(
        body["response_format"]["json_schema"]["schema"],
        serde_json::from_str::<Value>(SCHEMA).unwrap()
    );
    assert!(body.get("tool_choice").is_none());
    assert!(user_texts(&env.chunks("last"), "count").len() == 1);
}

#[test]
fn a_provider_error_is_printed_once() {
    let fake = FakeProvider::start();
    let env = env_for(&fake);
    fake.push(Reply::Status {
        code: 400,
        retry_after: None,
        body: json!({"type": "error", "error": {"type": "invalid_request_error",
                     "message": "a distinctive refusal"}})
        .to_string(),
    });
    let run = env.run("ag-prompt", &["-m", "anthropic/claude-sonnet-4-5", "hi"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("a distinctive refusal").count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn a_turn_that_stops_at_max_steps_without_an_answer_fails_the_script() {
    let env = TestEnv::new();
    let model = script(
        &env,
        "loop.toml",
        "[[step]]\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*\" } }]\n\
         [[step]]\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"*\" } }]\n\
         [[step]]\ntext = \"{\\\"n\\\": 1}\"\n",
    );
    let args = [
        "-m",
        &model,
        "--schema",
        SCHEMA,
        "--max-steps",
        "1",
        "--output",
        "json",
        "go",
    ];
    let run = env.run("ag-prompt", &args);
    assert_eq!(run.code, 1, "{run:?}");
    let v = run.json();
    assert_eq!(v["is_error"], true, "{v}");
    assert_eq!(v["subtype"], "error_max_steps", "{v}");
    assert_eq!(v["stop_reason"], "max_steps");
    assert!(
        run.stderr.contains("no answer satisfying --schema"),
        "{}",
        run.stderr
    );
    // Without --output json: nothing on stdout, and still a failure.
    let run = env.run(
        "ag-prompt",
        &["-m", &model, "--schema", SCHEMA, "--max-steps", "1", "go"],
    );
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
    // A good answer says so.
    let run = env
        .run(
            "ag-prompt",
            &[
                "-m",
                "echo",
                "--schema",
                SCHEMA,
                "--output",
                "json",
                "{\"n\": 2}",
            ],
        )
        .ok();
    let v = run.json();
    assert_eq!(
        (v["is_error"].clone(), v["subtype"].clone()),
        (json!(false), json!("success"))
    );
}
