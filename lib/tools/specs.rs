//! The specs offered to the model for the file tools and `bash`: a description that says
//! what the tool does and when to use it, and the JSON schema of its arguments.

use serde_json::{json, Value};

pub(super) fn read() -> (&'static str, Value) {
    (
        "Read a text file in the session's directory; lines come numbered like `cat -n`. \
         Use offset (the 1-based first line) and limit to page through long files.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to read, relative to the session's directory."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based, default 1)."},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show (default 2000)."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn glob() -> (&'static str, Value) {
    (
        "List the files whose path relative to the search directory matches a glob such as \
         `**/*.rs` (`*` does not cross `/`). Files ignored by .gitignore or .ignore are skipped.",
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob matched against paths relative to the search directory, e.g. `src/**/*.rs`."},
                "path": {"type": "string", "description": "Directory to search (default: the session's directory)."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn grep() -> (&'static str, Value) {
    (
        "Search file contents for a regular expression and print `path:line:text` for each \
         matching line, skipping files ignored by .gitignore or .ignore.",
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)."},
                "path": {"type": "string", "description": "File or directory to search (default: the session's directory)."},
                "glob": {"type": "string", "description": "Only search files matching this glob; without a `/` it matches file names, e.g. `*.rs`."},
                "ignore_case": {"type": "boolean", "description": "Match case-insensitively (default false)."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn write() -> (&'static str, Value) {
    (
        "Create or overwrite a file in the session's directory with the given content, \
         creating missing parent directories.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to write, relative to the session's directory."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn edit() -> (&'static str, Value) {
    (
        "Replace an exact string in a file. old_string must occur exactly once unless \
         replace_all is set; include surrounding lines to make it unique.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to edit, relative to the session's directory."},
                "old_string": {"type": "string", "description": "Exact text to replace, including whitespace."},
                "new_string": {"type": "string", "description": "Text to put in its place."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn bash() -> (&'static str, Value) {
    (
        "Run a shell command in the session's directory and return its combined stdout and \
         stderr and its exit status. It gets no stdin and is killed when the timeout passes.",
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line, run with `bash -c` (or `sh -c`)."},
                "timeout_s": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds before the command is killed (default 120)."}
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    )
}
