//! The claims' glob matcher against globset, the matcher the `glob` and `grep` tools use, with
//! the same option (`literal_separator`).

use proptest::prelude::*;

use super::matches;

fn globset(pattern: &str, path: &str) -> bool {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher().is_match(path))
        .unwrap_or(false)
}

/// Pieces of globs: literals, separators, every wildcard, classes, alternatives (nested, empty,
/// unclosed), escapes and the characters that are special only somewhere.
const PIECES: &[&str] = &[
    "a",
    "b",
    "c",
    ".",
    "/",
    "/",
    "*",
    "**",
    "?",
    "[ab]",
    "[!a]",
    "[^b]",
    "[a-c]",
    "[]a]",
    "[-a]",
    "[a-]",
    "[/]",
    "[!/]",
    "{",
    "}",
    ",",
    "{a,b}",
    "{a,}",
    "{,}",
    "{a/**,b}",
    "{**/a,b}",
    "{a,{b,c}}",
    "\\*",
    "\\",
    "[",
    "[c-a]",
    "-",
    "!",
];

/// Pieces of paths.
const PATH: &[&str] = &[
    "a", "b", "c", ".", "/", "ab", "*", "?", "[", "]", ",", "-", "{", "}",
];

fn joined(pieces: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces), 0..max).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    #[test]
    fn a_glob_matches_what_globset_matches(pattern in joined(PIECES, 7), path in joined(PATH, 8)) {
        prop_assert_eq!(
            matches(&pattern, &path),
            globset(&pattern, &path),
            "glob {:?}, path {:?}", pattern, path
        );
    }

    /// Paths built to fit the glob's shape, so that matches are frequent.
    #[test]
    fn a_glob_matches_what_globset_matches_on_paths_like_it(pattern in joined(PIECES, 6)) {
        let fill = |c: char| match c {
            '*' | '?' | '[' | ']' | '!' | '^' | '{' | '}' | ',' | '\\' => 'a',
            c => c,
        };
        let path: String = pattern.chars().map(fill).collect();
        for path in [path.clone(), format!("x/{path}"), format!("{path}/y"), path.replace('/', "/q/")] {
            prop_assert_eq!(
                matches(&pattern, &path),
                globset(&pattern, &path),
                "glob {:?}, path {:?}", pattern, path
            );
        }
    }
}

#[test]
fn claims_read_as_people_write_them() {
    for (glob, path, want) in [
        ("lib/store/**", "lib/store/schema.rs", true),
        ("lib/store/**", "lib/store/a/b.rs", true),
        ("lib/store/**", "lib/store", false),
        ("lib/*.rs", "lib/a.rs", true),
        ("lib/*.rs", "lib/a/b.rs", false),
        ("**/*.rs", "main.rs", true),
        ("**/*.rs", "a/b/c.rs", true),
        ("src/**/mod.rs", "src/mod.rs", true),
        ("src/**/mod.rs", "src/a/b/mod.rs", true),
        ("src/{a,b}/*.rs", "src/b/x.rs", true),
        ("src/{a,b}/*.rs", "src/c/x.rs", false),
        ("docs/[!x]*.md", "docs/rooms.md", true),
        ("docs/[!x]*.md", "docs/x.md", false),
        ("**", "any/thing/at/all", true),
        ("lib/[", "lib/[", false),
        ("lib/{a", "lib/a", false),
    ] {
        assert_eq!(matches(glob, path), want, "{glob} on {path}");
        assert_eq!(globset(glob, path), want, "globset: {glob} on {path}");
    }
}

/// A glob a peer posts cannot make a check take long: forty stars against a long path that
/// almost matches would take backtracking ages (and this test with it).
#[test]
fn many_stars_against_a_long_path() {
    let glob = "*a".repeat(40) + "b";
    let path = "a".repeat(4000);
    assert!(!matches(&glob, &path));
    assert!(matches(&glob, &(path.clone() + "b")));
    assert!(!matches(&glob, &("a".repeat(39) + "b")));
}
