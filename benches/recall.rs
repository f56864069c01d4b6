//! `recall` on the 1,000,000-chunk session once the full-text index is current: the tool as
//! the agent loop runs it (`ag::tools::recall::run`, in this process, on the store), for a
//! word in nearly every chunk, a word in about one chunk in a thousand, two common words that
//! must both occur, a word that is nowhere, and the `seq` form. Target: ≤ 50 ms each.
//!
//! Baseline, in the same run and on the same store: a minimal rusqlite FTS5 query over the
//! same index (`MATCH`, newest rowids first, the same `LIMIT`, the indexed text read back),
//! with no lineage filter, no chunk decoding and no rendering. For the `seq` form it is a
//! plain `SELECT` of the same rows by `(session_id, seq)`. The index is brought up to date
//! first (untimed; its time is printed: the first search after a million appends pays it).

use std::path::Path;
use std::time::Instant;

use rusqlite::Connection;
use serde_json::{json, Value};

use super::{count, die, median_f, ms, progress, secs, verdict, Config, Row};

const TARGET_S: f64 = 0.050;

pub fn run(
    cfg: &Config,
    home: &Path,
    id: &str,
    n: u64,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) {
    let db = home.join("ag.db");
    let store = ag::store::Store::open_path(&db).unwrap_or_else(|e| die(&e.to_string()));
    let session = store
        .session(id)
        .unwrap_or_else(|e| die(&format!("session {id}: {e}")));
    let start = Instant::now();
    if let Err(e) = store.recall(&session, "session", 1) {
        die(&format!("indexing failed: {e}"));
    }
    let indexed = secs(start.elapsed());
    progress(&format!("index brought up to date in {}", ms(indexed)));
    let base = Connection::open(&db).unwrap_or_else(|e| die(&e.to_string()));
    let reps = cfg.reps * 2 + 1;
    let cases: [(&str, Value, &str); 5] = [
        (
            "a word in nearly every chunk",
            json!({"query": "session"}),
            "session",
        ),
        (
            "a word in ~1 chunk in 1,000",
            json!({"query": "mod42"}),
            "mod42",
        ),
        (
            "two common words, both required",
            json!({"query": "fork index"}),
            "fork index",
        ),
        (
            "a word that is nowhere",
            json!({"query": "zebrafish"}),
            "zebrafish",
        ),
        (
            "the seq form, around 2",
            json!({"seq": n / 2, "around": 2}),
            "",
        ),
    ];
    for (what, args, words) in cases {
        let mut ours = Vec::with_capacity(reps);
        let mut theirs = Vec::with_capacity(reps);
        let mut shown = 0;
        for _ in 0..reps {
            let t = Instant::now();
            let out = ag::tools::recall::run(&store, &session, &args, 30_000);
            ours.push(secs(t.elapsed()));
            if out.is_error {
                die(&format!("recall {args}: {}", out.text));
            }
            shown = out.text.len();
            let t = Instant::now();
            let got = if words.is_empty() {
                base_around(&base, id, (n / 2) as i64)
            } else {
                base_match(&base, words)
            };
            theirs.push(secs(t.elapsed()));
            if got == 0 && words != "zebrafish" {
                die(&format!("the baseline found nothing for {what}"));
            }
        }
        let (a, b) = (median_f(ours), median_f(theirs));
        rows.push(Row {
            figure: format!("recall on a {}-chunk session: {what}", count(n)),
            measured: ms(a),
            baseline: ms(b),
            ratio: format!("{:.1}", a / b.max(1e-9)),
            target: "≤ 50 ms".into(),
            verdict: verdict(a <= TARGET_S),
        });
        progress(&format!(
            "{what}: recall {} ({shown} bytes), FTS5 alone {}",
            ms(a),
            ms(b)
        ));
    }
    notes.push(format!(
        "recall: in-process `ag::tools::recall::run` on the {}-chunk session, limit 10, after \
         the index was brought up to date ({} for the whole store, untimed); baseline = a bare \
         rusqlite FTS5 MATCH, newest first, LIMIT 10 (the seq form: a SELECT of the same rows)",
        count(n),
        ms(indexed)
    ));
}

/// The bare index query: the newest 10 matches' rowids and indexed text.
fn base_match(conn: &Connection, words: &str) -> usize {
    let q: Vec<String> = words
        .split_whitespace()
        .map(|w| format!("\"{w}\""))
        .collect();
    let mut stmt = conn
        .prepare_cached(
            "SELECT rowid, text FROM chunks_fts WHERE chunks_fts MATCH ?1 \
             ORDER BY rowid DESC LIMIT 10",
        )
        .unwrap();
    let rows = stmt
        .query_map([q.join(" ")], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .unwrap();
    rows.map(|r| r.unwrap()).collect::<Vec<_>>().len()
}

/// The five rows around `seq`, read as stored.
fn base_around(conn: &Connection, id: &str, seq: i64) -> usize {
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, role, type, data_json FROM chunks WHERE session_id = ?1 \
             AND seq BETWEEN ?2 AND ?3 ORDER BY seq",
        )
        .unwrap();
    let rows = stmt
        .query_map(rusqlite::params![id, seq - 2, seq + 2], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(3)?))
        })
        .unwrap();
    rows.map(|r| r.unwrap()).collect::<Vec<_>>().len()
}
