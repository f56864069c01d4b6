//! Scale limits: a fork chain thousands deep reads, searches, folds and forks like a short
//! one (the lineage is one query, the view's filter one parameter).

use ag::fork::{fork, ChildTools, ForkSpec, Side};
use ag::log::{ChunkData, NewChunk, Role};
use ag::paths::Home;
use ag::store::{SessionKind, Store};

use crate::support::TestEnv;

#[test]
fn a_fork_chain_2000_deep_reads_searches_folds_and_forks() {
    const DEPTH: usize = 2000;
    let env = TestEnv::new();
    let root = env.new_session("root of the chain", "root words");
    // The chain is built through the library (the same code `ag-fork` runs): 2,000 forks,
    // each adding one chunk of its own, would take minutes as processes.
    let store = Store::open(&Home::resolve(Some(&env.home)).unwrap()).unwrap();
    let mut cur = store.session(&root).unwrap();
    for level in 1..=DEPTH {
        let at = store.view_len(&cur).unwrap();
        let (child, _) = fork(
            &store,
            ForkSpec {
                source: cur,
                at: Some(at),
                title: Some(format!("level {level}")),
                kind: SessionKind::Chat,
                tools: ChildTools::Inherit,
                side: Side::No,
                model: None,
            },
        )
        .unwrap();
        // Each level is a completed turn, as a real chain of forks is.
        let text = format!("words of level{level}");
        let end = ChunkData::system("turn_end", serde_json::json!({"stop_reason": "end_turn"}));
        store
            .append(
                &child.id,
                vec![
                    NewChunk::new(Role::User, ChunkData::text(text)),
                    NewChunk::new(Role::System, end),
                ],
            )
            .unwrap();
        cur = child;
    }
    drop(store);
    let deep = cur.id.clone();

    let len = 2 * DEPTH + 1;
    let show = env.log(&["show", &deep, "--json"]).ok().json();
    assert_eq!(show["lineage"].as_array().unwrap().len(), DEPTH);
    assert_eq!(show["chunks"], len as i64);

    let chunks = env.chunks(&deep);
    assert_eq!(chunks.len(), len);
    assert_eq!(chunks[0]["data"]["text"], "root words");
    assert_eq!(
        chunks[len - 2]["data"]["text"],
        format!("words of level{DEPTH}")
    );
    assert!(chunks
        .iter()
        .enumerate()
        .all(|(i, c)| c["seq"] == i as i64 + 1));

    for (word, session) in [("root", &root), ("level1000", &deep), ("level2000", &deep)] {
        let hits = env
            .log(&["search", "-s", &deep, word, "--json"])
            .ok()
            .json_lines();
        assert_eq!(hits.len(), 1, "{word}: {hits:?}");
        let from = hits[0]["session"].as_str().unwrap();
        if word == "root" {
            assert_eq!(from, session.as_str());
        }
    }
    let fold = env.log(&["fold", &deep]).ok();
    assert!(fold.stdout.contains("words of level1999"));
    let child = env.run("ag-fork", &[&deep, "-q"]).ok();
    assert_eq!(env.chunks(child.stdout.trim()).len(), len);
}

/// `show`'s counts and usage, taken from the tallies kept as the log is written, match what
/// the view holds: for a session, and for a fork cut at every seq of a source that went on.
#[test]
fn show_counts_and_usage_match_the_view_at_every_cut() {
    use crate::support::chunk;
    use std::collections::BTreeMap;

    let env = TestEnv::new();
    let src = env.new_session("tallied", "first");
    env.append(
        &src,
        &[
            chunk::assistant("one"),
            chunk::turn_end(3, 4),
            chunk::user("second"),
        ],
    );
    env.append(&src, &[chunk::assistant("two"), chunk::turn_end(5, 6)]);
    let tally_of = |session: &str| {
        let mut counts = BTreeMap::new();
        let (mut turns, mut input, mut output) = (0, 0, 0);
        for c in env.chunks(session) {
            let key = format!(
                "{}/{}",
                c["role"].as_str().unwrap(),
                c["type"].as_str().unwrap()
            );
            *counts.entry(key).or_insert(0) += 1;
            if c["data"]["kind"] == "turn_end" {
                turns += 1;
                input += c["data"]["usage"]["input"].as_i64().unwrap();
                output += c["data"]["usage"]["output"].as_i64().unwrap();
            }
        }
        (counts, (turns, input, output))
    };
    let shown = |session: &str| {
        let v = env.log(&["show", session, "--json"]).ok().json();
        let counts: BTreeMap<String, i64> = v["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let key = format!(
                    "{}/{}",
                    c["role"].as_str().unwrap(),
                    c["type"].as_str().unwrap()
                );
                (key, c["count"].as_i64().unwrap())
            })
            .collect();
        let u = &v["usage"];
        let usage = (
            u["turns"].as_i64().unwrap(),
            u["input"].as_i64().unwrap(),
            u["output"].as_i64().unwrap(),
        );
        (counts, usage)
    };
    assert_eq!(shown(&src), tally_of(&src));
    assert_eq!(shown(&src).1, (2, 8, 10));
    for at in 1..=6 {
        let fork = env
            .run("ag-fork", &[&src, "--at", &at.to_string(), "-q"])
            .ok();
        let fork = fork.stdout.trim().to_string();
        env.append(&fork, &[chunk::user("own words")]);
        assert_eq!(shown(&fork), tally_of(&fork), "fork at {at}");
    }
    // Removing a session takes its tallies with it.
    let gone = env.new_session("gone", "bye");
    env.log(&["rm", &gone]).ok();
    assert_eq!(
        env.sqlite_count(&format!(
            "SELECT COUNT(*) FROM chunk_counts WHERE session_id = '{gone}'"
        )),
        0
    );
}
