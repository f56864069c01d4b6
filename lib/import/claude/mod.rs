//! Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`, and the
//! `agent-*.jsonl` files of subagents).
//!
//! Each line is a node of a tree (`uuid`, `parentUuid`; a compaction restarts the tree and
//! points back through `logicalParentUuid`). The conversation is the branch of the last leaf:
//! a rewind leaves the abandoned branch behind, and that is not the conversation. Parallel
//! tool results hang off their calls as siblings of the branch, so they are taken too, as are
//! lines of an assistant message split across siblings. Sidechain lines (`isSidechain`)
//! form their own trees: each becomes a subagent session. Lines of one assistant
//! `message.id` are one step.

mod convert;

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{lines, object, ImportError, LineProblem, Parsed, PlannedSession, Source, SourceKind};
use crate::log::{ChunkData, NewChunk};

pub(super) type Obj = Map<String, Value>;

pub(super) struct Line {
    n: usize,
    obj: Obj,
}

impl Line {
    pub(super) fn s(&self, key: &str) -> Option<&str> {
        self.obj.get(key).and_then(Value::as_str)
    }
    pub(super) fn flag(&self, key: &str) -> bool {
        self.obj.get(key).and_then(Value::as_bool).unwrap_or(false)
    }
    pub(super) fn ty(&self) -> &str {
        self.s("type").unwrap_or("")
    }
    pub(super) fn uuid(&self) -> Option<&str> {
        self.s("uuid").filter(|u| !u.is_empty())
    }
    /// The node this one follows: its parent, or across a compaction its logical parent.
    fn parent(&self) -> Option<&str> {
        self.s("parentUuid").or_else(|| self.s("logicalParentUuid"))
    }
    pub(super) fn ts(&self) -> Option<i64> {
        self.s("timestamp").and_then(crate::clock::parse_iso)
    }
    pub(super) fn message(&self) -> Option<&Obj> {
        self.obj.get("message").and_then(Value::as_object)
    }
    pub(super) fn key(&self) -> String {
        self.uuid()
            .map(str::to_string)
            .unwrap_or_else(|| format!("line{}", self.n))
    }
}

pub(crate) fn parse(name: &str, bytes: &[u8]) -> Result<Parsed, ImportError> {
    let mut parsed = Parsed::default();
    let mut all = Vec::new();
    for (n, text) in lines(bytes) {
        match object(&text) {
            Ok(obj) => all.push(Line { n, obj }),
            Err(message) => parsed.problems.push(LineProblem { line: n, message }),
        }
    }
    if all.is_empty() {
        return Ok(parsed);
    }
    if !all.iter().any(is_claude) {
        return Err(ImportError::WrongFormat {
            expected: SourceKind::ClaudeCode,
            why: "no line has a sessionId, a uuid tree or a summary".into(),
        });
    }
    let file = FileInfo::read(name, &all);
    let groups = group(&all);
    for (i, (root, members)) in groups.iter().enumerate() {
        let primary = i == 0;
        let order = conversation(&all, members);
        let mut session = plan_session(&file, &all, root.as_deref(), &order);
        // Lines of this tree that are not part of its conversation.
        session.skipped += members.len() - order.len();
        if primary {
            let unowned = all.iter().filter(|l| l.uuid().is_none()).count();
            let titles = all.iter().filter(|l| is_title_line(l)).count();
            session.skipped += unowned - titles + parsed.problems.len();
        }
        parsed.sessions.push(session);
    }
    Ok(parsed)
}

fn is_claude(l: &Line) -> bool {
    l.obj.contains_key("sessionId")
        || l.obj.contains_key("parentUuid")
        || (l.ty() == "summary" && l.obj.contains_key("leafUuid"))
        || (l.ty() == "file-history-snapshot" && l.obj.contains_key("snapshot"))
}

fn is_title_line(l: &Line) -> bool {
    matches!(l.ty(), "summary" | "custom-title")
}

/// What the file says about itself as a whole.
struct FileInfo {
    session_id: String,
    version: Option<String>,
    /// `leafUuid` → summary text.
    summaries: HashMap<String, String>,
    custom_title: Option<String>,
}

impl FileInfo {
    fn read(name: &str, all: &[Line]) -> FileInfo {
        let stem = name.strip_suffix(".jsonl").unwrap_or(name);
        let mut info = FileInfo {
            session_id: stem.to_string(),
            version: None,
            summaries: HashMap::new(),
            custom_title: None,
        };
        if let Some(s) = all.iter().find_map(|l| l.s("sessionId")) {
            info.session_id = s.to_string();
        }
        for l in all {
            if let Some(v) = l.s("version") {
                info.version = Some(v.to_string());
            }
            match l.ty() {
                "summary" => {
                    if let (Some(leaf), Some(text)) = (l.s("leafUuid"), l.s("summary")) {
                        info.summaries.insert(leaf.to_string(), text.to_string());
                    }
                }
                "custom-title" => {
                    info.custom_title = l.s("customTitle").map(str::to_string);
                }
                _ => {}
            }
        }
        info
    }
}

/// The trees of the file: the main conversation first (root `None`), then each sidechain by
/// its root, in file order. Each member list holds line indexes in file order.
fn group(all: &[Line]) -> Vec<(Option<String>, Vec<usize>)> {
    let by_uuid: HashMap<&str, usize> = all
        .iter()
        .enumerate()
        .rev()
        .filter_map(|(i, l)| l.uuid().map(|u| (u, i)))
        .collect();
    let mut groups: Vec<(Option<String>, Vec<usize>)> = vec![(None, Vec::new())];
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, l) in all.iter().enumerate() {
        if l.uuid().is_none() {
            continue;
        }
        if !l.flag("isSidechain") {
            groups[0].1.push(i);
            continue;
        }
        // The sidechain's root: climb while the parent is a sidechain line of this file.
        let mut root = i;
        let mut seen = HashSet::new();
        while let Some(&p) = all[root].parent().and_then(|p| by_uuid.get(p)) {
            if !all[p].flag("isSidechain") || !seen.insert(p) {
                break;
            }
            root = p;
        }
        let key = all[root].key();
        let g = *index.entry(key.clone()).or_insert_with(|| {
            groups.push((Some(key), Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    if groups[0].1.is_empty() && groups.len() > 1 {
        groups.remove(0);
    }
    groups
}

/// A compaction that kept the end of the conversation verbatim (`compactMetadata.
/// preservedSegment`): the kept lines, `head` to `tail`, sit before the boundary in the file
/// and still point back into the summarized part; Claude Code relinks `head` to `anchor` (the
/// boundary or its summary) when it loads the file, and so does the import.
struct Preserved {
    /// The boundary line.
    boundary: usize,
    head: usize,
    /// The boundary or its summary line: what the kept part follows.
    anchor: usize,
    /// The kept lines, tail to head.
    lines: Vec<usize>,
}

fn preserved(all: &[Line], members: &[usize], by_uuid: &HashMap<&str, usize>) -> Vec<Preserved> {
    let mut out = Vec::new();
    for &b in members {
        let l = &all[b];
        if l.ty() != "system" || l.s("subtype") != Some("compact_boundary") {
            continue;
        }
        let seg = l
            .obj
            .get("compactMetadata")
            .and_then(|m| m.get("preservedSegment"))
            .and_then(Value::as_object);
        let get = |k: &str| {
            seg.and_then(|s| s.get(k))
                .and_then(Value::as_str)
                .and_then(|u| by_uuid.get(u).copied())
        };
        let (Some(head), Some(tail)) = (get("headUuid"), get("tailUuid")) else {
            continue;
        };
        let anchor = get("anchorUuid").unwrap_or(b);
        // Tail back to head along the original parents; a segment that does not reach its
        // head is not one (nothing is relinked).
        let mut lines = vec![tail];
        let mut cur = tail;
        while cur != head {
            match all[cur].parent().and_then(|p| by_uuid.get(p).copied()) {
                Some(p) if !lines.contains(&p) => {
                    lines.push(p);
                    cur = p;
                }
                _ => break,
            }
        }
        if cur == head {
            out.push(Preserved {
                boundary: b,
                head,
                anchor,
                lines,
            });
        }
    }
    out
}

/// The lines of one tree that make its conversation, in file order: the branch of the last
/// leaf, plus tool results and split message parts that hang off it as siblings. A preserved
/// segment of a compaction is moved after its summary, where the conversation has it.
fn conversation(all: &[Line], members: &[usize]) -> Vec<usize> {
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    for &i in members {
        if let Some(u) = all[i].uuid() {
            by_uuid.entry(u).or_insert(i);
        }
    }
    let segments = preserved(all, members, &by_uuid);
    // The node each line follows, with the segments relinked: the head follows its anchor,
    // and the boundary the head's original parent (its logical parent is the tail, which
    // would make a loop).
    let parent = |i: usize| -> Option<usize> {
        if let Some(s) = segments.iter().find(|s| s.head == i) {
            return Some(s.anchor);
        }
        if let Some(s) = segments.iter().find(|s| s.boundary == i) {
            return all[s.head].parent().and_then(|p| by_uuid.get(p).copied());
        }
        all[i].parent().and_then(|p| by_uuid.get(p).copied())
    };
    let has_child: HashSet<usize> = members.iter().filter_map(|&i| parent(i)).collect();
    let Some(&leaf) = members
        .iter()
        .rev()
        .find(|&&i| all[i].uuid().is_some() && !has_child.contains(&i))
    else {
        return Vec::new();
    };
    let mut branch = HashSet::new();
    let mut cur = Some(leaf);
    while let Some(i) = cur {
        if !branch.insert(i) {
            break;
        }
        cur = parent(i);
    }
    // A compaction on the branch keeps its segment, even when nothing came after it.
    for s in &segments {
        if branch.contains(&s.boundary) || branch.contains(&s.anchor) {
            branch.extend(s.lines.iter().copied());
        }
    }
    // The API messages of the branch: every line of each (a parallel call's `tool_use` lines
    // may sit off the branch, each result hanging off its own call), and every call on them.
    let msg_id = |i: usize| {
        (all[i].ty() == "assistant")
            .then(|| all[i].message())
            .flatten()
            .and_then(|m| m.get("id").and_then(Value::as_str))
    };
    let msg_ids: HashSet<&str> = branch.iter().filter_map(|&i| msg_id(i)).collect();
    let mut calls = HashSet::new();
    for &i in members {
        if !branch.contains(&i) && !msg_id(i).is_some_and(|id| msg_ids.contains(id)) {
            continue;
        }
        for b in all[i].message().map(blocks).unwrap_or_default() {
            if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                if let Some(id) = b.get("id").and_then(Value::as_str) {
                    calls.insert(id);
                }
            }
        }
    }
    let hangs_off = |l: &Line| -> bool {
        let Some(m) = l.message() else { return false };
        match l.ty() {
            "assistant" => m
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| msg_ids.contains(id)),
            "user" => {
                let bs = blocks(m);
                !bs.is_empty()
                    && bs.iter().all(|b| {
                        b.get("type").and_then(Value::as_str) == Some("tool_result")
                            && b.get("tool_use_id")
                                .and_then(Value::as_str)
                                .is_some_and(|id| calls.contains(id))
                    })
            }
            _ => false,
        }
    };
    let mut order: Vec<usize> = members
        .iter()
        .copied()
        .filter(|i| branch.contains(i) || hangs_off(&all[*i]))
        .collect();
    for s in &segments {
        if branch.contains(&s.boundary) {
            order = after_summary(all, order, s);
        }
    }
    order
}

/// `order` with the segment's lines (and what hangs off them: every line from its head to the
/// boundary in the file) moved after the boundary's summary line, or after the boundary.
fn after_summary(all: &[Line], order: Vec<usize>, s: &Preserved) -> Vec<usize> {
    let head_at = s.lines.iter().copied().min().unwrap_or(s.head);
    let (moved, rest): (Vec<usize>, Vec<usize>) = order
        .into_iter()
        .partition(|&i| i >= head_at && i < s.boundary);
    let at = rest
        .iter()
        .position(|&i| i > s.boundary && all[i].flag("isCompactSummary"))
        .or_else(|| rest.iter().position(|&i| i == s.boundary))
        .map_or(rest.len(), |p| p + 1);
    let mut out = rest;
    out.splice(at..at, moved);
    out
}

pub(super) fn blocks(m: &Obj) -> Vec<&Obj> {
    match m.get("content") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_object).collect(),
        _ => Vec::new(),
    }
}

fn plan_session(
    file: &FileInfo,
    all: &[Line],
    root: Option<&str>,
    order: &[usize],
) -> PlannedSession {
    let (source_id, parent, kind) = match root {
        None => (file.session_id.clone(), None, "chat"),
        Some(root) => {
            let agent = order
                .iter()
                .find_map(|&i| all[i].s("agentId"))
                .unwrap_or("sidechain");
            (
                format!("{}:{agent}:{root}", file.session_id),
                Some(file.session_id.clone()),
                "subagent",
            )
        }
    };
    let mut conv = convert::Conversion::new(&source_id);
    for &i in order {
        if !conv.line(&all[i]) {
            conv.skipped += 1;
        }
    }
    // A sidechain's last answer carries no stop reason; the parent going on past it says
    // the subagent was done.
    let parent_went_on = root.is_some()
        && order.last().is_some_and(|&last| {
            all[last + 1..]
                .iter()
                .any(|l| l.uuid().is_some() && !l.flag("isSidechain"))
        });
    if conv.b.turn_finished() || (parent_went_on && conv.b.calls_answered()) {
        conv.b.end_turn(None);
    }
    let leaf = order
        .last()
        .and_then(|&i| all[i].uuid())
        .map(str::to_string);
    let title = title_of(file, all, root, order, &conv.b.chunks);
    let model = conv
        .b
        .model
        .as_deref()
        .filter(|m| m.starts_with("claude-"))
        .map(|m| format!("anthropic/{m}"));
    PlannedSession {
        source: Source {
            kind: SourceKind::ClaudeCode,
            source_id,
            tool_version: file.version.clone(),
            leaf,
            parent_source_id: parent,
        },
        kind: kind.into(),
        title,
        model,
        cwd: order
            .iter()
            .find_map(|&i| all[i].s("cwd"))
            .map(str::to_string),
        created_at: order.first().and_then(|&i| all[i].ts()),
        keep_id: None,
        agent: None,
        policy: None,
        chunks: conv.b.chunks,
        skipped: conv.skipped,
    }
}

/// The title Claude Code shows: a custom title, else the summary of the branch's leaf, else
/// the first thing the person typed (a subagent always takes its first prompt).
fn title_of(
    file: &FileInfo,
    all: &[Line],
    root: Option<&str>,
    order: &[usize],
    chunks: &[NewChunk],
) -> String {
    let first_text = chunks.iter().find_map(|c| match &c.data {
        ChunkData::Text { text } if c.role == crate::log::Role::User => Some(text.as_str()),
        _ => None,
    });
    let branch_summary = order
        .iter()
        .rev()
        .find_map(|&i| all[i].uuid().and_then(|u| file.summaries.get(u)));
    match (root, &file.custom_title, branch_summary) {
        (None, Some(t), _) => t.clone(),
        (None, None, Some(s)) => s.clone(),
        _ => crate::text::headline(&command_line(first_text.unwrap_or("")), 80),
    }
}

/// A slash command as the person typed it (`/name args`), from the tags Claude Code wraps it
/// in; other text as it is.
fn command_line(text: &str) -> String {
    let tag = |t: &str| {
        let open = format!("<{t}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find(&format!("</{t}>"))? + start;
        Some(text[start..end].trim())
    };
    match tag("command-name") {
        Some(name) => {
            let args = tag("command-args").unwrap_or("");
            format!("{name} {args}").trim().to_string()
        }
        None => text.to_string(),
    }
}
