//! Each OpenAI model family gets the request its API documents: the o-series and gpt-5 take
//! `max_completion_tokens` (they refuse `max_tokens` with a 400) and `reasoning_effort` when
//! thinking is asked for; gpt-4o and gpt-4.1 take `max_tokens` and refuse `reasoning_effort`.
//! Never both limits. Checked on the bodies LLMock recorded, against a copy of the relevant
//! parts of OpenAI's request schema (`tests/fixtures/schemas/openai-chat-completions.json`);
//! a model's config can override the family.

use serde_json::Value;

use crate::peers::Llmock;
use crate::prompt::env_with;

/// The request bodies LLMock recorded, in order.
fn bodies(mock: &Llmock) -> Vec<Value> {
    mock.requests()["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["body"].clone())
        .collect()
}

fn schema() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/schemas/openai-chat-completions.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn each_openai_family_gets_the_limit_and_thinking_fields_its_api_takes() {
    let Some(mock) = Llmock::start(&["--tool-mode", "off"]) else {
        return;
    };
    let schema = schema();
    let mut env = env_with(
        None,
        "[models.\"openai/my-reasoner\"]\nmax_completion_tokens = true\nreasoning = true\n",
    );
    env.set("OPENAI_BASE_URL", mock.openai_url())
        .set("OPENAI_API_KEY", "sk-llmock");
    let mut expected = Vec::new();
    for (family, f) in schema["families"].as_object().unwrap() {
        for model in f["models"].as_array().unwrap() {
            let model = model.as_str().unwrap();
            expected.push((
                family.clone(),
                model.to_string(),
                f["limit"].clone(),
                f["refuses"].clone(),
            ));
        }
    }
    expected.push((
        "configured".into(),
        "my-reasoner".into(),
        "max_completion_tokens".into(),
        serde_json::json!(["max_tokens"]),
    ));
    for (_, model, _, _) in &expected {
        env.run(
            "ag-prompt",
            &[
                "-m",
                &format!("openai/{model}"),
                "--thinking",
                "4000",
                "hello",
            ],
        )
        .ok();
    }
    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), expected.len());
    let known = schema["properties"].as_object().unwrap();
    for (body, (family, model, limit, refuses)) in bodies.iter().zip(&expected) {
        assert_eq!(body["model"], model.as_str());
        for key in body.as_object().unwrap().keys() {
            assert!(
                known.contains_key(key),
                "{model}: {key} is not in the schema"
            );
        }
        let limit = limit.as_str().unwrap();
        assert!(
            body[limit].as_u64().is_some(),
            "{family} {model}: no {limit}: {body}"
        );
        for refused in refuses.as_array().unwrap() {
            let refused = refused.as_str().unwrap();
            assert!(
                body.get(refused).is_none(),
                "{family} {model} sends {refused}: {body}"
            );
        }
        let both = body.get("max_tokens").is_some() && body.get("max_completion_tokens").is_some();
        assert!(!both, "{model}: both limits");
        if let Some(effort) = body.get("reasoning_effort") {
            let allowed = schema["properties"]["reasoning_effort"]["enum"]
                .as_array()
                .unwrap();
            assert!(allowed.contains(effort), "{model}: {effort}");
            assert_eq!(effort, "medium", "a 4000-token budget is medium effort");
        } else {
            assert!(
                !limit.starts_with("max_completion"),
                "{model}: thinking asked, no effort: {body}"
            );
        }
    }
}

/// Each Anthropic family gets the request its API documents: Claude 3 and 3.5 models refuse
/// `thinking` (so `--thinking` is dropped, with a warning) and `max_tokens` above their
/// maximum output (4,096 and 8,192; the default asks for 8,192); Claude 3.7 and 4 take
/// `thinking` with `budget_tokens` of at least 1,024 and below `max_tokens`. Checked on the
/// bodies LLMock recorded, against `tests/fixtures/schemas/anthropic-messages.json`.
#[test]
fn each_anthropic_family_gets_the_limit_and_thinking_fields_its_api_takes() {
    let Some(mock) = Llmock::start(&["--tool-mode", "off"]) else {
        return;
    };
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/schemas/anthropic-messages.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut env = env_with(None, "");
    env.set("ANTHROPIC_BASE_URL", mock.anthropic_url())
        .set("ANTHROPIC_API_KEY", "sk-ant-llmock");
    let mut expected = Vec::new();
    for (family, f) in schema["families"].as_object().unwrap() {
        for model in f["models"].as_array().unwrap() {
            let model = model.as_str().unwrap().to_string();
            let run = env
                .run(
                    "ag-prompt",
                    &[
                        "-m",
                        &format!("anthropic/{model}"),
                        "--thinking",
                        "4000",
                        "hello",
                    ],
                )
                .ok();
            let warned = run.stderr.contains("does not take extended thinking");
            assert_eq!(
                warned,
                f["thinking"] == false,
                "{family} {model}: {}",
                run.stderr
            );
            expected.push((family.clone(), model, f.clone()));
        }
    }
    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), expected.len());
    let known = schema["properties"].as_object().unwrap();
    for (body, (family, model, f)) in bodies.iter().zip(&expected) {
        assert_eq!(body["model"], model.as_str());
        for key in body.as_object().unwrap().keys() {
            assert!(
                known.contains_key(key),
                "{model}: {key} is not in the schema"
            );
        }
        let max = body["max_tokens"].as_u64().unwrap();
        assert!(
            max >= 1 && max <= f["max_output"].as_u64().unwrap(),
            "{family} {model}: max_tokens {max}"
        );
        if f["thinking"] == true {
            assert_eq!(body["thinking"]["type"], "enabled", "{model}: {body}");
            let budget = body["thinking"]["budget_tokens"].as_u64().unwrap();
            assert_eq!(budget, 4000);
            assert!(budget >= 1024 && budget < max, "{model}: {budget} of {max}");
        } else {
            assert!(
                body.get("thinking").is_none(),
                "{family} {model} thinks: {body}"
            );
        }
    }
}
