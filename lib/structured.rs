//! Structured answers (`ag-prompt --schema`): the JSON Schema a turn's final answer must
//! satisfy, how the answer is read (from the model's text, or from its call of the
//! [`ANSWER_TOOL`] that stands in for native structured output), and the error that is sent
//! back to the model, or to the person, when it does not satisfy it. Pure: no I/O.

use serde_json::{json, Value};

use crate::fold::ToolSpec;

/// The tool a model without native structured output answers through (its input schema is
/// the answer's schema); the loop takes its call as the answer and never runs it.
pub(crate) const ANSWER_TOOL: &str = "final_answer";

/// How many validation errors a message names before it says "and N more".
const SHOWN_ERRORS: usize = 5;

/// A compiled answer schema.
pub(crate) struct AnswerSchema {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for AnswerSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerSchema")
            .field("schema", &self.schema)
            .finish()
    }
}

impl AnswerSchema {
    /// A schema from its JSON text; an error says what is wrong with it.
    pub(crate) fn parse(text: &str) -> Result<AnswerSchema, String> {
        let schema: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        AnswerSchema::new(schema)
    }

    pub(crate) fn new(schema: Value) -> Result<AnswerSchema, String> {
        if !schema.is_object() {
            return Err(format!(
                "a schema is a JSON object, not {}",
                crate::log::json_kind(&schema)
            ));
        }
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("not a valid JSON Schema: {e}"))?;
        Ok(AnswerSchema { schema, validator })
    }

    /// Whether the answer tool's input carries the answer itself (an object schema) or
    /// wraps it as `{"answer": …}` (tool inputs must be objects).
    fn wraps(&self) -> bool {
        self.schema.get("type").and_then(Value::as_str) != Some("object")
    }

    /// The answer tool for providers without native structured output.
    pub(crate) fn tool_spec(&self) -> ToolSpec {
        let input_schema = if self.wraps() {
            json!({"type": "object", "properties": {"answer": self.schema},
                   "required": ["answer"]})
        } else {
            self.schema.clone()
        };
        ToolSpec {
            name: ANSWER_TOOL.into(),
            description: "Give your final answer: call this once, when you are done, with the \
                          answer as its input. Nothing else you write is shown."
                .into(),
            input_schema,
        }
    }

    /// OpenAI's native structured output (`response_format`). Not `strict`: strict mode
    /// accepts only a subset of JSON Schema, and the answer is validated here anyway.
    pub(crate) fn response_format(&self) -> Value {
        json!({"type": "json_schema",
               "json_schema": {"name": "answer", "schema": self.schema, "strict": false}})
    }

    /// The answer carried by a call of [`ANSWER_TOOL`], validated.
    pub(crate) fn check_call(&self, input: &Value) -> Result<Value, String> {
        let answer = if self.wraps() {
            input
                .get("answer")
                .cloned()
                .ok_or("the input has no \"answer\" field")?
        } else {
            input.clone()
        };
        self.check(&answer)?;
        Ok(answer)
    }

    /// The answer in a text reply: JSON, alone or as one fenced code block, validated.
    pub(crate) fn check_text(&self, text: &str) -> Result<Value, String> {
        let body = unfence(text.trim());
        if body.is_empty() {
            return Err("the answer is empty; it must be JSON".into());
        }
        let answer: Value =
            serde_json::from_str(body).map_err(|e| format!("the answer is not JSON: {e}"))?;
        self.check(&answer)?;
        Ok(answer)
    }

    /// Whether `answer` satisfies the schema; the error names each failing place.
    pub(crate) fn check(&self, answer: &Value) -> Result<(), String> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(answer)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                format!("at {at}: {e}")
            })
            .collect();
        match errors.len() {
            0 => Ok(()),
            n if n <= SHOWN_ERRORS => Err(errors.join("; ")),
            n => Err(format!(
                "{}; and {} more",
                errors[..SHOWN_ERRORS].join("; "),
                n - SHOWN_ERRORS
            )),
        }
    }
}

/// The body of a reply that is one fenced code block (```json … ```), else the reply.
fn unfence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    match body.split_once('\n') {
        Some((lang, inner)) if !lang.contains(['{', '[', '"']) => inner.trim(),
        _ => body.trim(),
    }
}

/// What the model is told when its answer fails the schema and it may try again.
pub(crate) fn retry_prompt(error: &str) -> String {
    format!(
        "Your answer does not satisfy the required JSON Schema: {error}. Answer again with \
         only the corrected JSON."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> AnswerSchema {
        AnswerSchema::parse(
            r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#,
        )
        .unwrap()
    }

    #[test]
    fn text_answers_are_json_alone_or_in_one_fence() {
        let s = schema();
        assert_eq!(s.check_text(" {\"n\": 3}\n").unwrap(), json!({"n": 3}));
        assert_eq!(
            s.check_text("```json\n{\"n\": 4}\n```").unwrap(),
            json!({"n": 4})
        );
        assert!(s
            .check_text("Sure! {\"n\": 3}")
            .unwrap_err()
            .contains("not JSON"));
        let e = s.check_text("{\"n\": \"three\"}").unwrap_err();
        assert!(e.contains("at /n") && e.contains("integer"), "{e}");
        let e = s.check_text("{}").unwrap_err();
        assert!(e.contains("at /:") && e.contains("\"n\""), "{e}");
    }

    #[test]
    fn a_non_object_schema_is_wrapped_for_the_answer_tool() {
        let s = AnswerSchema::parse(r#"{"type":"array","items":{"type":"string"}}"#).unwrap();
        assert_eq!(s.tool_spec().input_schema["required"], json!(["answer"]));
        assert_eq!(
            s.check_call(&json!({"answer": ["a"]})).unwrap(),
            json!(["a"])
        );
        assert!(s.check_call(&json!({"answer": [1]})).is_err());
        assert!(s.check_call(&json!(["a"])).is_err());
        let o = schema();
        assert_eq!(o.tool_spec().input_schema, o.schema);
        assert_eq!(o.check_call(&json!({"n": 1})).unwrap(), json!({"n": 1}));
    }

    #[test]
    fn bad_schemas_are_refused_with_the_reason() {
        assert!(AnswerSchema::parse("{").unwrap_err().contains("not JSON"));
        assert!(AnswerSchema::parse("[1]")
            .unwrap_err()
            .contains("JSON object"));
        let e = AnswerSchema::parse(r#"{"type": 12}"#).unwrap_err();
        assert!(e.contains("not a valid JSON Schema"), "{e}");
    }
}
