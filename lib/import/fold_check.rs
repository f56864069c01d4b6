//! Every imported fixture session, cut anywhere (a fork may cut it there), folds into a
//! request each provider accepts: the rules the APIs enforce, checked on the folded body.

use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::Value;

use crate::fold::{fold, id_ok, Dialect, FoldOptions};
use crate::log::Chunk;

fn fixture_sessions() -> &'static [(String, Vec<Chunk>)] {
    static SESSIONS: std::sync::OnceLock<Vec<(String, Vec<Chunk>)>> = std::sync::OnceLock::new();
    SESSIONS.get_or_init(load_fixture_sessions)
}

fn load_fixture_sessions() -> Vec<(String, Vec<Chunk>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    let mut out = Vec::new();
    for sub in ["claude-code", "codex"] {
        let mut files: Vec<_> = std::fs::read_dir(dir.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        for f in files {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let parsed = super::parse(None, &name, &std::fs::read(&f).unwrap()).unwrap();
            for s in parsed.sessions {
                out.push((s.source.source_id.clone(), stored(s.chunks)));
            }
        }
    }
    out.push(("odd ids".into(), stored(odd_ids())));
    out
}

/// A log as the store would hold it.
fn stored(chunks: Vec<crate::log::NewChunk>) -> Vec<Chunk> {
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, c)| Chunk {
            id: c.id.unwrap(),
            session: "s".into(),
            seq: i as i64 + 1,
            turn: c.turn.unwrap(),
            step: c.step,
            role: c.role,
            data: c.data,
            ts: c.ts.unwrap_or(0),
        })
        .collect()
}

fn odd_ids() -> Vec<crate::log::NewChunk> {
    let text = r#"{"type":"user","uuid":"u","parentUuid":null,"sessionId":"odd","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"a","parentUuid":"u","sessionId":"odd","message":{"id":"m","content":[{"type":"tool_use","id":"call:1/bad id","name":"Read","input":{}},{"type":"tool_use","id":"call:1/bad_id","name":"Read","input":{}},{"type":"tool_use","id":"toolu_0123456789012345678901234567890123456789","name":"Read","input":{}}]}}
{"type":"user","uuid":"r","parentUuid":"a","sessionId":"odd","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"call:1/bad id","content":"one"},{"type":"tool_result","tool_use_id":"call:1/bad_id","content":"two"}]}}
"#;
    super::parse(None, "odd.jsonl", text.as_bytes())
        .unwrap()
        .sessions[0]
        .chunks
        .clone()
}

fn tool_name_ok(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 128
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What the Messages API enforces on a conversation.
fn anthropic_valid(body: &Value) -> Result<(), String> {
    let msgs = body["messages"].as_array().ok_or("no messages")?;
    if msgs.is_empty() || msgs[0]["role"] != "user" {
        return Err("the first message must be the user's".into());
    }
    let mut open: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().ok_or("no role")?;
        if i > 0 && msgs[i - 1]["role"] == role {
            return Err(format!("message {i}: two {role} messages in a row"));
        }
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) if !s.trim().is_empty() => vec![],
            Value::Array(a) if !a.is_empty() => a.clone(),
            other => return Err(format!("message {i}: empty content {other}")),
        };
        let mut results_done = false;
        for b in &blocks {
            match b["type"].as_str().unwrap_or("") {
                "text" if b["text"].as_str().is_some_and(|t| !t.trim().is_empty()) => {
                    results_done = true
                }
                "thinking" if b["signature"].as_str().is_some_and(|s| !s.is_empty()) => {}
                "redacted_thinking" => {}
                "tool_use" if role == "assistant" => {
                    let id = b["id"].as_str().unwrap_or("");
                    if !id_ok(id)
                        || !tool_name_ok(b["name"].as_str().unwrap_or(""))
                        || !b["input"].is_object()
                    {
                        return Err(format!("message {i}: bad tool_use {b}"));
                    }
                    open.insert(id.to_string());
                }
                "tool_result" if role == "user" && !results_done => {
                    let id = b["tool_use_id"].as_str().unwrap_or("");
                    if !open.remove(id) {
                        return Err(format!("message {i}: result for no open call {id:?}"));
                    }
                }
                _ => return Err(format!("message {i}: block not allowed here: {b}")),
            }
        }
        if role == "user" && !open.is_empty() {
            return Err(format!("message {i}: calls left unanswered: {open:?}"));
        }
    }
    if !open.is_empty() {
        return Err(format!("the request ends with unanswered calls {open:?}"));
    }
    Ok(())
}

/// What Chat Completions enforces on a conversation.
fn openai_valid(body: &Value) -> Result<(), String> {
    let msgs = body["messages"].as_array().ok_or("no messages")?;
    let mut expect: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().ok_or("no role")?;
        if role != "tool" && !expect.is_empty() {
            return Err(format!("message {i}: calls left unanswered: {expect:?}"));
        }
        match role {
            "user" | "system" if m["content"].as_str().is_some_and(|c| !c.is_empty()) => {}
            "assistant" => {
                let calls = m["tool_calls"].as_array();
                if m["content"].is_null() && calls.is_none() {
                    return Err(format!(
                        "message {i}: an assistant message with nothing in it"
                    ));
                }
                for c in calls.into_iter().flatten() {
                    let id = c["id"].as_str().unwrap_or("");
                    if !id_ok(id)
                        || c["type"] != "function"
                        || !c["function"]["arguments"].is_string()
                        || !tool_name_ok(c["function"]["name"].as_str().unwrap_or(""))
                    {
                        return Err(format!("message {i}: bad tool call {c}"));
                    }
                    if !expect.insert(id.to_string()) {
                        return Err(format!("message {i}: call id {id} twice"));
                    }
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or("");
                if !expect.remove(id) || !m["content"].is_string() {
                    return Err(format!("message {i}: tool message for no open call {id:?}"));
                }
            }
            _ => return Err(format!("message {i}: bad message {m}")),
        }
    }
    if !expect.is_empty() {
        return Err(format!("the request ends with unanswered calls {expect:?}"));
    }
    Ok(())
}

#[test]
fn odd_ids_are_sent_sanitised_and_paired() {
    let log = stored(odd_ids());
    let body = fold(&log, Dialect::OpenAi, &FoldOptions::default());
    let ids: Vec<&str> = body["messages"][1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|i| id_ok(i)), "{ids:?}");
    assert_eq!(body["messages"][2]["tool_call_id"], ids[0]);
    assert_eq!(body["messages"][3]["tool_call_id"], ids[1]);
    assert_ne!(ids[0], ids[1], "ids that differ stay different");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_imported_fixture_session_folds_into_a_valid_request_in_both_dialects(
        pick in 0usize..1000,
        frac in 0.0f64..=1.0,
    ) {
        let sessions = fixture_sessions();
        let (name, log) = &sessions[pick % sessions.len()];
        let cut = ((log.len() as f64 * frac).ceil() as usize).clamp(1, log.len());
        let log = &log[..cut];
        let opts = FoldOptions::default();
        if let Err(e) = anthropic_valid(&fold(log, Dialect::Anthropic, &opts)) {
            prop_assert!(false, "{} cut at {}: anthropic: {}", name, cut, e);
        }
        if let Err(e) = openai_valid(&fold(log, Dialect::OpenAi, &opts)) {
            prop_assert!(false, "{} cut at {}: openai: {}", name, cut, e);
        }
    }
}

#[test]
fn every_imported_fixture_session_folds_whole_into_valid_requests() {
    for (name, log) in fixture_sessions() {
        let opts = FoldOptions::default();
        anthropic_valid(&fold(log, Dialect::Anthropic, &opts))
            .unwrap_or_else(|e| panic!("{name}: anthropic: {e}"));
        openai_valid(&fold(log, Dialect::OpenAi, &opts))
            .unwrap_or_else(|e| panic!("{name}: openai: {e}"));
    }
}

#[test]
fn the_checks_catch_what_providers_refuse() {
    use serde_json::json;
    let starts_with_assistant = json!({"messages": [{"role": "assistant", "content": "x"}]});
    assert!(anthropic_valid(&starts_with_assistant).is_err());
    let unanswered = json!({"messages": [{"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "r", "input": {}}]}]});
    assert!(anthropic_valid(&unanswered).is_err());
    let bad_id = json!({"messages": [{"role": "user", "content": "q"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call:1/bad id", "type": "function",
          "function": {"name": "r", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call:1/bad id", "content": "x"}]});
    assert!(openai_valid(&bad_id).is_err());
}
