//! The globs of file claims, matched without a regular expression.
//!
//! The syntax is the one `globset` reads with `literal_separator` on (as the `glob` and `grep`
//! tools do): `?` and `*` within one path component, `**` as a whole component for any number
//! of them (`**/x`, `x/**`, `a/**/b`; elsewhere it is `*`), `[…]` and `[!…]`/`[^…]` classes that
//! never match `/`, `{a,b}` alternatives (nested ones too; an empty alternative is dropped, as
//! globset drops it), and `\` taking the next character literally. A glob that does not parse (an
//! unclosed `[` or `{`, a `}` with no `{`, a range backwards, a `\` at the end) matches nothing,
//! as does one whose alternatives stand for more than 1,024 sequences. POSIX classes
//! (`[[:alpha:]]`) are not read. It works on characters rather than bytes, in time linear in the
//! glob times the path (backtracking could be made exponential by a glob a peer posts); the
//! property test beside it holds it to globset on ASCII paths.
//!
//! Why not globset itself: its compiled matcher brings the regex engine and its Unicode tables
//! into `ag-room`, whose every start the loader pays for by relocating them (docs/decisions.md,
//! "`ag-room` on files").

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Literal(char),
    /// `?`
    Any,
    /// `*`
    ZeroOrMore,
    /// `**/` at the start: nothing, `/`, or anything ending in `/`.
    RecursivePrefix,
    /// `/**` at the end: `/` and anything after it.
    RecursiveSuffix,
    /// `/**/` inside: `/`, or `/` … `/`.
    RecursiveZeroOrMore,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Alternates(Vec<Vec<Token>>),
}

/// Whether `path` matches `pattern`; a pattern that does not parse matches nothing.
pub(crate) fn matches(pattern: &str, path: &str) -> bool {
    let Some(tokens) = parse(pattern) else {
        return false;
    };
    // The whole glob `**` matches everything.
    if tokens == [Token::RecursivePrefix] {
        return true;
    }
    let path: Vec<char> = path.chars().collect();
    let mut flat = Vec::new();
    if !expand(&tokens, Vec::new(), &mut flat) {
        return false;
    }
    flat.iter().any(|f| matches_flat(f, &path))
}

/// At most this many sequences come out of a glob's alternatives; a glob with more matches
/// nothing.
const MAX_SEQUENCES: usize = 1024;

/// Every sequence without alternatives that `tokens` stands for, each after `prefix`, into
/// `out`; false past [`MAX_SEQUENCES`].
fn expand(tokens: &[Token], mut prefix: Vec<Token>, out: &mut Vec<Vec<Token>>) -> bool {
    for (i, t) in tokens.iter().enumerate() {
        let Token::Alternates(alts) = t else {
            prefix.push(t.clone());
            continue;
        };
        // Empty alternatives are dropped; when all are, the group stands for nothing.
        let given: Vec<&Vec<Token>> = alts.iter().filter(|a| !a.is_empty()).collect();
        if given.is_empty() {
            continue;
        }
        for a in given {
            let mut both = a.clone();
            both.extend_from_slice(&tokens[i + 1..]);
            if !expand(&both, prefix.clone(), out) {
                return false;
            }
        }
        return true;
    }
    out.push(prefix);
    out.len() <= MAX_SEQUENCES
}

/// Whether the sequence `tokens` (no alternatives) matches all of `s`: `at[j]` is whether the
/// tokens after the current one match `s[j..]`, filled from the last token back, so a glob
/// costs its length times the path's, however many stars it has.
fn matches_flat(tokens: &[Token], s: &[char]) -> bool {
    let n = s.len();
    let mut at: Vec<bool> = (0..=n).map(|j| j == n).collect();
    for t in tokens.iter().rev() {
        let mut here = vec![false; n + 1];
        // `after_slash[j]`: some k ≥ j has s[k] == '/' and `at[k + 1]`.
        let mut after_slash = vec![false; n + 1];
        // `later[j]`: some k ≥ j has `at[k]`.
        let mut later = vec![false; n + 1];
        later[n] = at[n];
        for j in (0..n).rev() {
            after_slash[j] = after_slash[j + 1] || (s[j] == '/' && at[j + 1]);
            later[j] = later[j + 1] || at[j];
        }
        for j in (0..=n).rev() {
            let c = s.get(j).copied();
            here[j] = match t {
                Token::Literal(l) => c == Some(*l) && at[j + 1],
                Token::Any => c.is_some_and(|c| c != '/') && at[j + 1],
                Token::Class { negated, ranges } => {
                    c.is_some_and(|c| {
                        c != '/' && ranges.iter().any(|(a, b)| (*a..=*b).contains(&c)) != *negated
                    }) && at[j + 1]
                }
                Token::ZeroOrMore => at[j] || (c.is_some_and(|c| c != '/') && here[j + 1]),
                Token::RecursivePrefix => at[j] || after_slash[j],
                Token::RecursiveSuffix => c == Some('/') && later[j + 1],
                Token::RecursiveZeroOrMore => c == Some('/') && after_slash[j],
                Token::Alternates(_) => unreachable!("expanded before matching"),
            };
        }
        at = here;
    }
    at[0]
}

/// The tokens of `glob`, as globset's parser makes them; `None` where it reports an error.
fn parse(glob: &str) -> Option<Vec<Token>> {
    let mut p = Parser {
        chars: glob.chars().peekable(),
        prev: None,
        cur: None,
        branches: vec![Vec::new()],
        open: Vec::new(),
    };
    while let Some(c) = p.bump() {
        match c {
            '?' => p.push(Token::Any),
            '*' => p.star(),
            '[' => p.class()?,
            '{' => {
                p.open.push(p.branches.len());
                p.branches.push(Vec::new());
            }
            '}' => {
                let start = p.open.pop()?;
                let alts = p.branches.split_off(start);
                p.push(Token::Alternates(alts));
            }
            ',' if !p.open.is_empty() => p.branches.push(Vec::new()),
            '\\' => {
                let c = p.bump()?;
                p.push(Token::Literal(c));
            }
            c => p.push(Token::Literal(c)),
        }
    }
    if p.branches.len() != 1 {
        return None;
    }
    p.branches.pop()
}

struct Parser<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    prev: Option<char>,
    cur: Option<char>,
    /// The sequence being read is the last; an open `{` adds one per alternative.
    branches: Vec<Vec<Token>>,
    /// Where each open `{`'s alternatives start in `branches`.
    open: Vec<usize>,
}

impl Parser<'_> {
    fn bump(&mut self) -> Option<char> {
        self.prev = self.cur;
        self.cur = self.chars.next();
        self.cur
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    fn branch(&mut self) -> &mut Vec<Token> {
        self.branches.last_mut().expect("a glob has a sequence")
    }

    fn push(&mut self, t: Token) {
        self.branch().push(t);
    }

    fn star(&mut self) {
        let prev = self.prev;
        if self.peek() != Some('*') {
            self.push(Token::ZeroOrMore);
            return;
        }
        self.bump();
        let twice = |p: &mut Self| {
            p.push(Token::ZeroOrMore);
            p.push(Token::ZeroOrMore);
        };
        if self.branch().is_empty() {
            if self.peek().is_some_and(|c| c != '/') {
                twice(self);
            } else {
                self.push(Token::RecursivePrefix);
                self.bump();
            }
            return;
        }
        let in_alternates = self.branches.len() >= 2;
        if prev != Some('/') && (!in_alternates || (prev != Some(',') && prev != Some('{'))) {
            twice(self);
            return;
        }
        let suffix = match self.peek() {
            None => true,
            Some(',' | '}') if in_alternates => true,
            Some('/') => {
                self.bump();
                false
            }
            _ => {
                twice(self);
                return;
            }
        };
        let last = self.branch().pop().expect("a token before `**`");
        self.push(match last {
            Token::RecursivePrefix | Token::RecursiveSuffix => last,
            _ if suffix => Token::RecursiveSuffix,
            _ => Token::RecursiveZeroOrMore,
        });
    }

    fn class(&mut self) -> Option<()> {
        let negated = matches!(self.peek(), Some('!' | '^'));
        if negated {
            self.bump();
        }
        let mut ranges: Vec<(char, char)> = Vec::new();
        let (mut first, mut in_range) = (true, false);
        loop {
            let c = self.bump()?;
            match c {
                ']' if !first => break,
                '-' if !first && !in_range => in_range = true,
                c => {
                    if in_range {
                        let r = ranges.last_mut().expect("a range has a start");
                        if c < r.0 {
                            return None;
                        }
                        r.1 = c;
                    } else {
                        ranges.push((c, c));
                    }
                    in_range = false;
                }
            }
            first = false;
        }
        if in_range {
            ranges.push(('-', '-'));
        }
        self.push(Token::Class { negated, ranges });
        Some(())
    }
}

#[cfg(test)]
mod tests;
