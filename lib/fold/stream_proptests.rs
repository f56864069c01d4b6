//! The streaming fold against the in-memory one: on random logs (any order of calls and
//! results, repeated and unsafe call ids, abandoned attempts, prunes, compactions, peers and
//! records anywhere), both dialects, compact and pretty, with and without `full`, the bytes
//! are the same.

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::json;

use super::compaction::{self, Compaction, Trigger};
use super::stream::{self, CallMark, Source};
use super::testkit::Log;
use super::*;
use crate::log::Role;

/// A log in memory as a streaming source: each pass walks the slice.
pub(crate) struct Slice<'a>(pub &'a [Chunk]);

impl Source for Slice<'_> {
    type Error = std::convert::Infallible;

    fn latest_compaction(&mut self) -> Result<Option<Compaction>, Self::Error> {
        Ok(compaction::latest(self.0).map(|(c, _)| c))
    }

    fn records(&mut self, after: i64, f: &mut dyn FnMut(Chunk)) -> Result<(), Self::Error> {
        // Every chunk, not only the records: the fold must ignore the rest.
        self.0
            .iter()
            .filter(|c| c.seq > after)
            .for_each(|c| f(c.clone()));
        Ok(())
    }

    fn calls(&mut self, after: i64, f: &mut dyn FnMut(CallMark)) -> Result<(), Self::Error> {
        for c in self.0.iter().filter(|c| c.seq > after) {
            if let ChunkData::ToolCall { call_id, .. } | ChunkData::ToolResult { call_id, .. } =
                &c.data
            {
                f(CallMark {
                    seq: c.seq,
                    id: c.id.clone(),
                    call_id: call_id.clone(),
                    is_call: matches!(c.data, ChunkData::ToolCall { .. }),
                });
            }
        }
        Ok(())
    }

    fn chunks(&mut self, after: i64, f: &mut dyn FnMut(Chunk) -> bool) -> Result<(), Self::Error> {
        for c in self.0.iter().filter(|c| c.seq > after) {
            if !f(c.clone()) {
                break;
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
enum Op {
    Turn(u8),
    Step(i64),
    User(bool),
    Text(bool),
    Thinking(u8),
    Call(usize),
    Result(usize, u8, bool),
    Peer(bool),
    /// Abandon every chunk whose position modulo the number is 0 (from the end).
    Abandon(usize),
    /// Prune every result whose position modulo the number is 0.
    Prune(usize),
    /// Compact with the kept suffix from this fraction (in hundredths) of the log.
    Compact(u8),
    Error,
    Notice,
    TurnEnd,
}

const IDS: [&str; 5] = [
    "a",
    "b",
    "call:1/bad id",
    "toolu_01FdQ8qTyVyZjE3Kw4dguQGx",
    "an-id-well-over-forty-characters-long-0123456789",
];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..3u8).prop_map(Op::Turn),
        3 => (0..3i64).prop_map(Op::Step),
        4 => prop::bool::weighted(0.1).prop_map(Op::User),
        4 => prop::bool::weighted(0.1).prop_map(Op::Text),
        2 => (0..4u8).prop_map(Op::Thinking),
        5 => (0..IDS.len()).prop_map(Op::Call),
        5 => (0..IDS.len(), 0..3u8, any::<bool>()).prop_map(|(i, k, e)| Op::Result(i, k, e)),
        1 => any::<bool>().prop_map(Op::Peer),
        1 => (1..5usize).prop_map(Op::Abandon),
        1 => (1..4usize).prop_map(Op::Prune),
        1 => (0..=100u8).prop_map(Op::Compact),
        1 => Just(Op::Error),
        1 => Just(Op::Notice),
        1 => Just(Op::TurnEnd),
    ]
}

fn build(ops: &[Op]) -> Log {
    let mut log = Log::new();
    for (n, op) in ops.iter().enumerate() {
        match *op {
            Op::Turn(t) => {
                log.turn(&format!("t{t}"));
            }
            Op::Step(s) => {
                log.step(s);
            }
            Op::User(empty) => {
                log.user(if empty { "" } else { "question" });
            }
            Op::Text(empty) => {
                log.text(if empty { "" } else { "answer" });
            }
            Op::Thinking(0) => {
                log.thinking("hmm", Some("sig"));
            }
            Op::Thinking(1) => {
                log.thinking("unsigned", None);
            }
            Op::Thinking(2) => {
                log.redacted("opaque");
            }
            Op::Thinking(_) => {
                log.thinking("", Some(""));
            }
            Op::Call(i) => {
                let args = match n % 3 {
                    0 => json!({"path": "x", "n": n}),
                    1 => json!("{\"q\": 1}"),
                    _ => json!(null),
                };
                log.call(IDS[i], "read", args);
            }
            Op::Result(i, kind, is_error) => {
                let result = match kind {
                    0 => json!(format!("out {n}")),
                    1 => json!(""),
                    _ => json!({"lines": n}),
                };
                log.result(IDS[i], result, is_error);
            }
            Op::Peer(empty) => {
                let msgs: &[(&str, &str, &str)] = if empty {
                    &[]
                } else {
                    &[("0190aaaabbbb", "bob", "ping </peer> pong")]
                };
                log.peer(msgs, u64::from(empty));
            }
            Op::Abandon(every) => {
                let ids: Vec<String> = log
                    .chunks
                    .iter()
                    .rev()
                    .step_by(every)
                    .map(|c| c.id.clone())
                    .collect();
                log.abandon(&ids);
            }
            Op::Prune(every) => {
                let results: Vec<&Chunk> = log
                    .chunks
                    .iter()
                    .filter(|c| matches!(c.data, ChunkData::ToolResult { .. }))
                    .collect();
                let cleared: Vec<String> = results
                    .iter()
                    .step_by(every)
                    .map(|c| c.id.clone())
                    .collect();
                let through = results.last().map_or(0, |c| c.seq);
                log.push(
                    Role::System,
                    prune::Prune {
                        through_seq: through,
                        cleared,
                    }
                    .to_data(),
                );
            }
            Op::Compact(at) => {
                let next = log.len() as i64 + 1;
                let kept_from_seq = 1 + (next - 1) * i64::from(at) / 100;
                let c = Compaction {
                    summary: format!("summary {n}"),
                    through_seq: kept_from_seq - 1,
                    kept_from_seq,
                    trigger: Trigger::Manual,
                    tokens_before: 10,
                    tokens_after: 5,
                    model: "manual".into(),
                    state: (n % 2 == 0).then(|| "Files: a.rs".to_string()),
                };
                log.push(Role::System, c.to_data());
            }
            Op::Error => {
                log.error("oops");
            }
            Op::Notice => {
                log.system("notice", json!({"text": "note"}));
            }
            Op::TurnEnd => {
                log.turn_end();
            }
        }
    }
    log
}

fn streamed(
    chunks: &[Chunk],
    full: bool,
    dialect: Dialect,
    opts: &FoldOptions,
    pretty: bool,
) -> String {
    let mut out = Vec::new();
    stream::fold_to_writer(&mut Slice(chunks), full, dialect, opts, pretty, &mut out)
        .expect("a fold of a slice");
    String::from_utf8(out).unwrap()
}

fn in_memory(
    chunks: &[Chunk],
    full: bool,
    dialect: Dialect,
    opts: &FoldOptions,
    pretty: bool,
) -> String {
    let kept: Vec<Chunk>;
    let chunks = if full {
        kept = chunks
            .iter()
            .filter(|c| compaction::of_chunk(c).is_none() && prune::of_chunk(c).is_none())
            .cloned()
            .collect();
        &kept[..]
    } else {
        chunks
    };
    let mut out = Vec::new();
    fold_to_writer(chunks, dialect, opts, pretty, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn options() -> [FoldOptions; 2] {
    [
        FoldOptions::default(),
        FoldOptions {
            model: Some("m".into()),
            system: Some("be brief".into()),
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "r".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: Some(100),
            thinking_budget: Some(1024),
            stream: true,
            openai: Default::default(),
        },
    ]
}

proptest! {
    #![proptest_config(Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn the_streaming_fold_writes_the_bytes_of_the_in_memory_fold(
        ops in prop::collection::vec(op(), 0..60),
        full in any::<bool>(),
        pretty in any::<bool>(),
        with_options in any::<bool>(),
    ) {
        let log = build(&ops);
        let opts = &options()[usize::from(with_options)];
        for dialect in Dialect::ALL {
            let want = in_memory(&log.chunks, full, dialect, opts, pretty);
            let got = streamed(&log.chunks, full, dialect, opts, pretty);
            prop_assert_eq!(got, want, "{}", dialect);
        }
    }
}

#[test]
fn a_result_after_later_conversation_still_answers_its_call() {
    let mut log = Log::new();
    log.user("go");
    log.step(1);
    log.call("a", "read", json!({}));
    log.call("b", "read", json!({}));
    log.turn("t2");
    log.user("meanwhile");
    log.step(1);
    log.text("still here");
    log.result("b", json!("B, late"), false);
    log.user("and then");
    for dialect in Dialect::ALL {
        let opts = FoldOptions::default();
        let got = streamed(&log.chunks, false, dialect, &opts, false);
        assert_eq!(got, in_memory(&log.chunks, false, dialect, &opts, false));
        assert!(got.contains("B, late"), "{got}");
        assert!(got.contains(SYNTHETIC_RESULT), "{got}");
        let late = got.find("B, late").unwrap();
        assert!(late < got.find("meanwhile").unwrap(), "{got}");
    }
}

#[test]
fn a_writer_that_fails_stops_the_read() {
    /// Takes 200 bytes, then fails.
    struct Full(usize);
    impl std::io::Write for Full {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0 + b.len() > 200 {
                return Err(std::io::Error::from(std::io::ErrorKind::StorageFull));
            }
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    struct Counting<'a>(Slice<'a>, usize);
    impl Source for Counting<'_> {
        type Error = std::convert::Infallible;
        fn latest_compaction(&mut self) -> Result<Option<Compaction>, Self::Error> {
            self.0.latest_compaction()
        }
        fn records(&mut self, after: i64, f: &mut dyn FnMut(Chunk)) -> Result<(), Self::Error> {
            self.0.records(after, f)
        }
        fn calls(&mut self, after: i64, f: &mut dyn FnMut(CallMark)) -> Result<(), Self::Error> {
            self.0.calls(after, f)
        }
        fn chunks(
            &mut self,
            after: i64,
            f: &mut dyn FnMut(Chunk) -> bool,
        ) -> Result<(), Self::Error> {
            let n = &mut self.1;
            self.0.chunks(after, &mut |c| {
                *n += 1;
                f(c)
            })
        }
    }
    let mut log = Log::new();
    for i in 0..100 {
        log.user(&format!("q{i}"));
        log.text(&format!("a{i}"));
    }
    let mut src = Counting(Slice(&log.chunks), 0);
    let err = stream::fold_to_writer(
        &mut src,
        false,
        Dialect::Anthropic,
        &FoldOptions::default(),
        false,
        Full(0),
    )
    .unwrap_err();
    assert!(matches!(err, stream::StreamError::Write(_)), "{err:?}");
    // 200 bytes hold a few messages: the read stops soon after them, not at the 200th chunk.
    assert!(
        (1..20).contains(&src.1),
        "read {} chunks for 200 bytes",
        src.1
    );
}
