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
