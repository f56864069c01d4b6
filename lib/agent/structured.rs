//! The turn's answer: the text of its last step, and with `--schema` the judge that holds the
//! turn until the answer satisfies the schema (asking the model again a bounded number of
//! times) and records the validated value on the turn's `turn_end`.

use serde_json::Value;

use super::{Agent, AgentError, Event};
use crate::fold::Dialect;
use crate::log::{Chunk, ChunkData, NewChunk, Role};
use crate::store::{Page, Session, Store, StoreError};
use crate::structured::{retry_prompt, ANSWER_TOOL};

/// A step's tool calls: `(call_id, name, arguments)`.
pub(super) type Calls = Vec<(String, String, Value)>;

/// What the judge made of a step.
pub(super) enum Judged {
    /// Go on as without a schema: run these calls, or end the turn when there are none.
    /// `answer` is the validated answer when the step gave one.
    Proceed { calls: Calls, answer: Option<Value> },
    /// The answer failed and the model was asked again: run another step.
    Again,
    /// The answer failed and no retry is left: the turn fails with this message.
    Invalid(String),
}

impl Agent<'_> {
    /// The tools a request offers: the session's, and the answer tool when the turn has a
    /// schema and the provider has no native structured output.
    pub(super) fn offered_specs(&self) -> Vec<crate::fold::ToolSpec> {
        let mut specs = self.tool_specs();
        if let (Some(schema), Dialect::Anthropic) = (&self.opts.schema, self.provider.dialect()) {
            specs.push(schema.tool_spec());
        }
        specs
    }

    /// A request body with the schema's part: OpenAI's native `response_format`, or a
    /// `tool_choice` that makes the model call a tool (the answer tool at the end). With
    /// extended thinking the API refuses a forced choice; the answer tool is still offered.
    pub(super) fn with_schema(&self, mut body: Value) -> Value {
        let Some(schema) = &self.opts.schema else {
            return body;
        };
        match self.provider.dialect() {
            Dialect::OpenAi => body["response_format"] = schema.response_format(),
            Dialect::Anthropic if self.opts.thinking_budget.is_none() => {
                body["tool_choice"] = serde_json::json!({"type": "any"});
            }
            Dialect::Anthropic => {}
        }
        body
    }

    /// Judge a finished step against the turn's schema (when it has one). `retries` counts
    /// down the answers the model may still correct.
    pub(super) fn judge(
        &self,
        turn: &str,
        step: i64,
        calls: Calls,
        retries: &mut u32,
        on: &mut dyn FnMut(Event),
    ) -> Result<Judged, AgentError> {
        let Some(schema) = self.opts.schema.clone() else {
            return Ok(Judged::Proceed {
                calls,
                answer: None,
            });
        };
        let (answers, others): (Calls, Calls) = calls
            .into_iter()
            .partition(|(_, name, _)| name == ANSWER_TOOL);
        if answers.is_empty() && !others.is_empty() {
            return Ok(Judged::Proceed {
                calls: others,
                answer: None,
            });
        }
        let verdict = match answers.first() {
            Some((_, _, input)) => schema.check_call(input),
            None => schema.check_text(&last_step_text(self.store, &self.session, turn)?),
        };
        // Every answer call gets a result, so the log folds; an answer given beside other
        // calls waits for their results.
        let mut results = answer_results(&answers, &verdict, others.is_empty(), turn, step);
        if !others.is_empty() {
            self.append(results, on)?;
            return Ok(Judged::Proceed {
                calls: others,
                answer: None,
            });
        }
        match verdict {
            Ok(answer) => {
                self.append(results, on)?;
                Ok(Judged::Proceed {
                    calls: Vec::new(),
                    answer: Some(answer),
                })
            }
            Err(e) if *retries == 0 => {
                self.append(results, on)?;
                Ok(Judged::Invalid(format!(
                    "the answer does not satisfy the schema: {e}"
                )))
            }
            Err(e) => {
                *retries -= 1;
                // An answer call is told through its result; a text answer by a user message.
                if results.is_empty() {
                    results.push(
                        NewChunk::new(Role::User, ChunkData::text(retry_prompt(&e)))
                            .in_turn(turn, step),
                    );
                }
                self.append(results, on)?;
                Ok(Judged::Again)
            }
        }
    }
}

/// One result per answer call: the first is judged (when no other call is pending), the
/// rest are not taken.
fn answer_results(
    answers: &Calls,
    verdict: &Result<Value, String>,
    alone: bool,
    turn: &str,
    step: i64,
) -> Vec<NewChunk> {
    let mut results = Vec::new();
    for (i, (id, _, _)) in answers.iter().enumerate() {
        let (text, is_error) = match (verdict, i, alone) {
            (_, _, false) => (
                "not taken: give the final answer once your other tool calls have returned"
                    .to_string(),
                true,
            ),
            (Ok(_), 0, true) => ("accepted".to_string(), false),
            (Err(e), 0, true) => (e.clone(), true),
            _ => (
                "not taken: only the first final answer counts".to_string(),
                true,
            ),
        };
        results.push(answer_result(id, text, is_error).in_turn(turn, step));
    }
    results
}

fn answer_result(call_id: &str, text: String, is_error: bool) -> NewChunk {
    NewChunk::new(
        Role::Tool,
        ChunkData::ToolResult {
            call_id: call_id.to_string(),
            name: ANSWER_TOOL.to_string(),
            result: Value::String(text),
            is_error,
            synthetic: false,
        },
    )
}

/// The chunks of one turn of `session`.
fn turn_chunks(store: &Store, session: &Session, turn: &str) -> Result<Vec<Chunk>, StoreError> {
    let mut chunks = Vec::new();
    let page = Page {
        turn: Some(turn.to_string()),
        ..Default::default()
    };
    store.for_each_chunk(session, &page, |c| {
        chunks.push(c);
        Ok::<(), StoreError>(())
    })?;
    Ok(chunks)
}

/// The text of a turn's last step with text, leaving out abandoned attempts: the answer, not
/// the narration of earlier steps ("Let me look first").
pub(crate) fn last_step_text(
    store: &Store,
    session: &Session,
    turn: &str,
) -> Result<String, StoreError> {
    let chunks = turn_chunks(store, session, turn)?;
    Ok(text_of_last_step(&chunks))
}

fn text_of_last_step(chunks: &[Chunk]) -> String {
    let abandoned = crate::fold::abandoned_ids(chunks);
    let texts: Vec<(i64, &str)> = chunks
        .iter()
        .filter(|c| c.role == Role::Assistant && !abandoned.contains(c.id.as_str()))
        .filter_map(|c| match &c.data {
            ChunkData::Text { text } => Some((c.step, text.as_str())),
            _ => None,
        })
        .collect();
    let last = texts.iter().map(|(s, _)| *s).max();
    texts
        .iter()
        .filter(|(s, _)| Some(*s) == last)
        .map(|(_, t)| *t)
        .collect()
}

/// A turn's answer: the validated structured answer its `turn_end` records (as compact JSON
/// text, and the value), else the text of its last step.
pub(crate) fn turn_answer(
    store: &Store,
    session: &Session,
    turn: &str,
) -> Result<(String, Option<Value>), StoreError> {
    let chunks = turn_chunks(store, session, turn)?;
    let structured = chunks
        .iter()
        .rev()
        .find(|c| c.data.is_turn_end())
        .and_then(|c| match &c.data {
            ChunkData::System(m) => m.get("structured").cloned(),
            _ => None,
        });
    match structured {
        Some(v) => Ok((v.to_string(), Some(v))),
        None => Ok((text_of_last_step(&chunks), None)),
    }
}

/// A validated answer goes on the turn's `turn_end` record as `structured`.
pub(super) fn record(end: &mut NewChunk, answer: Option<Value>) {
    if let (ChunkData::System(m), Some(a)) = (&mut end.data, answer) {
        m.insert("structured".into(), a);
    }
}
