//! One way to say where a TOML file is wrong: the 1-based line of the error (when the parser
//! knows it) and its message, for the configuration, agent definitions and scripts.

/// The line of `e` in `text`, when the parser gave a position.
pub(crate) fn line_of(text: &str, e: &toml::de::Error) -> Option<usize> {
    e.span()
        .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
}

/// `line N: message`, or the bare message when the parser gave no position.
pub(crate) fn describe(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim();
    match line_of(text, e) {
        Some(line) => format!("line {line}: {message}"),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_one_based_and_counts_newlines_before_the_error() {
        let text = "a = 1\nb = \n";
        let e = toml::from_str::<toml::Table>(text).unwrap_err();
        assert_eq!(line_of(text, &e), Some(2));
        assert!(
            describe(text, &e).starts_with("line 2: "),
            "{}",
            describe(text, &e)
        );
    }
}
