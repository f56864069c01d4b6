//! Tool definitions in a small window. Every request carries each offered tool's name,
//! description and input schema; with the built-in tools, the room tools and an MCP server or
//! two, that is a few thousand tokens, most of a 4k local model's window. When the definitions
//! would take more than [`BRIEF_SHARE`] of the window, they are sent brief: each description
//! cut to its first sentence, and the schemas without their descriptions, titles and examples
//! (names, types, enums, defaults and what is required stay). The same window always gives the
//! same definitions, so a provider's cached prefix holds from request to request.

use serde_json::{Map, Value};

use super::cut::tokens_of_text;
use crate::fold::ToolSpec;

/// The share of the window above which tool definitions are sent brief.
pub(crate) const BRIEF_SHARE: f64 = 0.25;

/// Characters a brief description keeps at most.
const DESCRIPTION_CHARS: usize = 160;

/// What one tool's definition adds to a request, about.
pub(crate) fn spec_tokens(t: &ToolSpec) -> u64 {
    tokens_of_text(&t.name)
        + tokens_of_text(&t.description)
        + tokens_of_text(&t.input_schema.to_string())
        + 8
}

/// `specs` as a request in a window of `window` tokens carries them: brief when in full they
/// would take more than [`BRIEF_SHARE`] of it.
pub(crate) fn fit(specs: Vec<ToolSpec>, window: u64) -> Vec<ToolSpec> {
    let full: u64 = specs.iter().map(spec_tokens).sum();
    if (full as f64) <= window as f64 * BRIEF_SHARE {
        return specs;
    }
    specs.into_iter().map(brief).collect()
}

/// One definition, brief.
pub(crate) fn brief(t: ToolSpec) -> ToolSpec {
    ToolSpec {
        description: first_sentence(&t.description),
        input_schema: bare(t.input_schema),
        name: t.name,
    }
}

/// The description's first sentence (or line), at most [`DESCRIPTION_CHARS`] characters.
fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let line = text.lines().next().unwrap_or("");
    let end = line
        .match_indices(". ")
        .map(|(i, _)| i + 1)
        .next()
        .unwrap_or(line.len());
    crate::text::clip_chars(line[..end].trim(), DESCRIPTION_CHARS)
}

/// A schema without the words meant for people: `description`, `title`, `examples` and
/// `$comment` go, wherever they are but as the name of a property.
fn bare(schema: Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                match k.as_str() {
                    "description" | "title" | "examples" | "$comment" => {}
                    "properties" | "$defs" | "definitions" | "patternProperties" => {
                        let v = match v {
                            Value::Object(props) => Value::Object(
                                props.into_iter().map(|(name, s)| (name, bare(s))).collect(),
                            ),
                            other => other,
                        };
                        out.insert(k, v);
                    }
                    _ => {
                        out.insert(k, bare(v));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(bare).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(name: &str, description: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: schema,
        }
    }

    #[test]
    fn a_brief_definition_keeps_what_a_call_needs() {
        let s = spec(
            "note",
            "Write a note. It is kept for a week.\nMore on notes.",
            json!({
                "type": "object",
                "title": "Note",
                "properties": {
                    "description": {"type": "string", "description": "the note's text"},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a",
                             "examples": ["b"]},
                    "tags": {"type": "array", "items": {"type": "string", "title": "Tag"}}
                },
                "required": ["description"]
            }),
        );
        let b = brief(s);
        assert_eq!(b.name, "note");
        assert_eq!(b.description, "Write a note.");
        assert_eq!(
            b.input_schema,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["description"]
            })
        );
    }

    #[test]
    fn definitions_are_brief_only_when_they_crowd_the_window() {
        let long = "Read a file. ".to_string() + &"Details. ".repeat(200);
        let specs = vec![spec("read", &long, json!({"type": "object"}))];
        let total: u64 = specs.iter().map(spec_tokens).sum();
        let kept = fit(specs.clone(), total * 4);
        assert_eq!(kept[0].description, long);
        let cut = fit(specs, total * 4 - 4);
        assert_eq!(cut[0].description, "Read a file.");
        // A description without a sentence end is clipped.
        assert_eq!(
            first_sentence(&"x".repeat(500)).chars().count(),
            DESCRIPTION_CHARS
        );
    }
}
