//! `ag-log export` end to end: NDJSON round trips of every imported fixture session, Markdown,
//! and the HTML page rendered by a real headless Chromium (every turn shown, no console
//! errors, untrusted text never markup).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::import::fixtures;
use crate::support::TestEnv;

fn imported(env: &TestEnv) -> Vec<String> {
    let run = env
        .log(&["import", "-q", &fixtures().to_string_lossy()])
        .ok();
    assert_eq!(run.stdout, "");
    env.log(&["ls", "--json"])
        .ok()
        .json_lines()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ndjson_export_imports_back_into_an_identical_log() {
    let env = TestEnv::new();
    let ids = imported(&env);
    assert_eq!(ids.len(), 11);
    let other = TestEnv::new();
    for id in &ids {
        let file = env.cwd.join(format!("{id}.ndjson"));
        env.log(&[
            "export",
            id,
            "--format",
            "ndjson",
            "-o",
            &file.to_string_lossy(),
        ])
        .ok();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&file).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "an export is private");
        let run = other.log(&["import", &file.to_string_lossy()]).ok();
        let report = &run.json_lines()[0];
        assert_eq!(report["session"], id.as_str(), "the session keeps its id");
        assert_eq!(report["source"], "ag");
        assert_eq!(report["skipped"], 0);
        let before = env.log(&["cat", id, "--json"]).ok().stdout;
        let after = other.log(&["cat", id, "--json"]).ok().stdout;
        assert_eq!(before, after, "session {id}: the same log, byte for byte");
        let (a, b) = (
            env.log(&["show", id, "--json"]).ok().json(),
            other.log(&["show", id, "--json"]).ok().json(),
        );
        for k in [
            "title", "kind", "model", "created", "updated", "counts", "usage",
        ] {
            assert_eq!(a[k], b[k], "session {id}: {k}");
        }
        // An import runs where it was imported; the exported session's directory is shown as
        // its source's.
        assert_eq!(b["cwd"], other.cwd.to_string_lossy().as_ref());
        assert_eq!(b["source"]["cwd"], a["cwd"], "session {id}");
        // Again, and into the store it came from: nothing is duplicated.
        let again = other.log(&["import", &file.to_string_lossy()]).ok();
        assert_eq!(again.json_lines()[0]["chunks"], 0);
        let home = env.log(&["import", &file.to_string_lossy()]).ok();
        assert_eq!(home.json_lines()[0]["chunks"], 0);
        assert_eq!(home.json_lines()[0]["session"], id.as_str());
    }
    assert_eq!(
        env.sqlite_count("SELECT COUNT(*) FROM chunks"),
        other.sqlite_count("SELECT COUNT(*) FROM chunks")
    );
    // Subagents found their parents again.
    assert_eq!(
        other.sqlite_count(
            "SELECT COUNT(*) FROM sessions WHERE kind = 'subagent' AND parent_id IS NOT NULL"
        ),
        3
    );
}

#[test]
fn ndjson_round_trips_through_a_pipe_and_forks_export_their_whole_view() {
    let env = TestEnv::new();
    let id = env.new_session("parent", "first question");
    env.append(
        &id,
        &[
            crate::support::chunk::assistant("an answer"),
            crate::support::chunk::turn_end(1, 1),
        ],
    );
    let fork = env
        .run("ag-fork", &[&id, "-q"])
        .ok()
        .stdout
        .trim()
        .to_string();
    env.append(&fork, &[crate::support::chunk::user("in the fork")]);
    let text = env
        .log(&["export", &fork, "--format", "ndjson"])
        .ok()
        .stdout;
    let head: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(head["ag_export"], 1);
    assert_eq!(head["session"]["fork_of"], id.as_str());
    // Both into another store: the fork's inherited chunks are the parent's, whose ids are
    // taken by then, so they get ids of their own; the logs read the same.
    let other = TestEnv::new();
    let parent_text = env.log(&["export", &id, "--format", "ndjson"]).ok().stdout;
    other.log_stdin(&["import", "-"], &parent_text).ok();
    other.log_stdin(&["import", "-"], &text).ok();
    let strip = |v: Vec<Value>| -> Vec<Value> {
        v.into_iter()
            .map(|mut c| {
                let o = c.as_object_mut().unwrap();
                o.remove("session");
                o.remove("id");
                c
            })
            .collect()
    };
    assert_eq!(strip(env.chunks(&fork)), strip(other.chunks(&fork)));
    assert_eq!(
        env.chunks(&id),
        other.chunks(&id),
        "the parent is identical, ids too"
    );
    assert_eq!(other.chunks(&fork).len(), 4);
    // The same file again: nothing new.
    let again = other.log_stdin(&["import", "-"], &text).ok();
    assert_eq!(again.json_lines()[0]["chunks"], 0);
}

#[test]
fn markdown_export_has_the_metadata_and_every_chunk() {
    let env = TestEnv::new();
    imported(&env);
    let id = env
        .log(&["ls", "--json"])
        .ok()
        .json_lines()
        .into_iter()
        .find(|s| s["title"] == "Start")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let md = env.log(&["export", &id]).ok().stdout;
    assert!(md.starts_with("# Start\n"), "{md}");
    assert!(
        md.contains("- **source**: claude-code 2.1.0 session s1"),
        "{md}"
    );
    assert!(
        md.contains("- **branch taken**: the one ending at p1a"),
        "{md}"
    );
    assert!(
        md.contains("*compaction (auto): This session is being continued"),
        "{md}"
    );
    for text in [
        "Start",
        "Ready",
        "Second attempt",
        "Kept going",
        "Final answer",
    ] {
        assert!(md.contains(&format!("\n{text}\n")), "{text} in {md}");
    }
    assert_eq!(
        env.log(&["cat", &id, "--format", "md"]).ok().stdout.trim(),
        md.split_once("\n\n## user")
            .map(|(_, r)| format!("## user{r}"))
            .unwrap()
            .trim()
    );
}

#[test]
fn export_many_needs_a_directory_and_writes_one_file_per_session() {
    let env = TestEnv::new();
    let ids = imported(&env);
    let run = env.log(&["export", "--all"]).code(2);
    assert!(run.stderr.contains("-o DIR"), "{}", run.stderr);
    env.log(&["export"]).code(2);
    let dir = env.cwd.join("out");
    let run = env
        .log(&[
            "export",
            "--all",
            "--format",
            "html",
            "-o",
            &dir.to_string_lossy(),
        ])
        .ok();
    assert_eq!(run.stdout.lines().count(), ids.len());
    for id in &ids {
        assert!(dir.join(format!("{id}.html")).exists());
    }
    // --here: only the sessions of this directory: the imported ones (an import belongs
    // where it ran) and a new one, not one made elsewhere.
    let mine = env.new_session("here", "hello");
    let elsewhere = env.cwd.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let mut cmd = env.command("ag-log");
    cmd.args(["append", "--new", "--title", "elsewhere", "hi"])
        .current_dir(&elsewhere);
    let other = crate::support::Run::from_output(cmd.output().unwrap()).ok();
    let other = other.json_lines()[0]["session"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = env.cwd.join("here");
    let run = env
        .log(&["export", "--here", "-o", &dir.to_string_lossy()])
        .ok();
    assert_eq!(run.stdout.lines().count(), ids.len() + 1, "{}", run.stdout);
    assert!(run.stdout.contains(&format!("{mine}.md")));
    assert!(!run.stdout.contains(&other), "{other}");
}

/// Chromium, when installed; under CI it must be.
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("chromium is not installed; CI needs it to check the HTML export (apt-get install chromium)");
    }
    eprintln!("skipping: chromium is not installed (apt-get install chromium); CI runs this test");
    None
}

/// Load a page in headless Chromium: the DOM it ends with, and its console messages.
fn render(chromium: &Path, page: &Path) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            // The page that frames the exported pages reads their documents (all file://).
            "--allow-file-access-from-files",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Refused to"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

/// The pages in `pages` loaded in frames of one page, in one browser: each frame's document
/// as Chromium ends with it (copied into the framing page when everything has loaded), and the
/// console messages of all of them.
fn render_framed(chromium: &Path, env: &TestEnv, pages: &[&Path]) -> (Vec<String>, Vec<String>) {
    let mut html = String::from("<!doctype html><title>pages</title>\n");
    for (i, p) in pages.iter().enumerate() {
        html.push_str(&format!(
            "<iframe id=\"f{i}\" src=\"{}\"></iframe>\n",
            p.display()
        ));
    }
    html.push_str(
        "<script>addEventListener('load', () => { for (const f of document.querySelectorAll('iframe')) { \
         const pre = document.createElement('pre'); pre.id = 'dom-' + f.id; \
         pre.textContent = f.contentDocument.documentElement.outerHTML; document.body.append(pre); } });</script>\n",
    );
    let frame = env.write_file("frames.html", &html);
    let (dom, console) = render(chromium, &frame);
    let doms = (0..pages.len())
        .map(|i| {
            let open = format!("<pre id=\"dom-f{i}\">");
            let at = dom
                .find(&open)
                .unwrap_or_else(|| panic!("frame {i} was not read: {dom}"));
            let text = &dom[at + open.len()..];
            let text = &text[..text.find("</pre>").unwrap()];
            text.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&nbsp;", "\u{a0}")
                .replace("&amp;", "&")
        })
        .collect();
    (doms, console)
}

#[test]
fn html_export_renders_every_turn_in_chromium_without_console_errors() {
    let Some(chromium) = chromium() else { return };
    let env = TestEnv::new();
    let ids = imported(&env);
    // The check can fail: a page that logs an error is caught, framed with the others.
    let control = env.write_file(
        "control.html",
        "<!doctype html><title>c</title><script>console.error('control')</script>",
    );
    let pages: Vec<(String, PathBuf, usize)> = ids
        .iter()
        .map(|id| {
            let page = env.cwd.join(format!("{id}.html"));
            env.log(&[
                "export",
                id,
                "--format",
                "html",
                "-o",
                &page.to_string_lossy(),
            ])
            .ok();
            let turns: BTreeSet<String> = env
                .chunks(id)
                .iter()
                .map(|c| c["turn"].as_str().unwrap().to_string())
                .collect();
            (id.clone(), page, turns.len())
        })
        .collect();
    // One browser for all the pages: each launch costs more than the pages themselves.
    let mut paths: Vec<&Path> = vec![&control];
    paths.extend(pages.iter().map(|(_, p, _)| p.as_path()));
    let (doms, console) = render_framed(&chromium, &env, &paths);
    assert!(
        console.iter().any(|l| l.contains("control")),
        "console messages are seen: {console:?}"
    );
    assert!(
        console.iter().all(|l| l.contains("control.html")),
        "console: {console:?}"
    );
    for ((id, _, turns), dom) in pages.iter().zip(&doms[1..]) {
        assert!(
            dom.contains("name=\"viewport\""),
            "{id}: readable on a phone"
        );
        for n in 1..=*turns {
            assert!(
                dom.contains(&format!("<section class=\"turn\" id=\"turn-{n}\">")),
                "{id}: turn {n} of {turns}"
            );
        }
        assert!(!dom.contains(&format!("id=\"turn-{}\"", turns + 1)), "{id}");
        assert!(!dom.contains("<script"), "{id}: no script in the page");
    }
}

#[test]
fn untrusted_text_in_the_html_page_is_text_never_markup() {
    let env = TestEnv::new();
    let attack = "<script>document.title='PWNED'</script></textarea></pre></details><img src=x onerror=\"document.title='PWNED'\"><!--";
    let id = env.new_session(
        "<i>title</i><script>document.title='PWNED'</script>",
        attack,
    );
    env.append(&id, &[
        json!({"role": "assistant", "type": "text", "data": {"text": format!("```\"><script>x</script>\n{attack}\n```\nafter {attack}")}}),
        json!({"role": "assistant", "type": "thinking", "data": {"text": attack}}),
        json!({"role": "assistant", "type": "tool_call", "data": {"call_id": "c1", "name": "<b>Edit</b>", "arguments": {"file_path": attack, "command": attack}}}),
        json!({"role": "assistant", "type": "tool_call", "data": {"call_id": "c2", "name": "Edit", "arguments": {"file_path": "a.rs", "old_string": attack, "new_string": "</pre><script>document.title='PWNED'</script>"}}}),
        json!({"role": "tool", "type": "tool_result", "data": {"call_id": "c1", "name": "x", "result": attack, "is_error": true}}),
        json!({"role": "system", "type": "error", "data": {"message": attack}}),
        json!({"role": "system", "type": "system", "data": {"kind": attack, "x": attack}}),
    ]);
    let page = env.cwd.join("attack.html");
    env.log(&[
        "export",
        &id,
        "--format",
        "html",
        "-o",
        &page.to_string_lossy(),
    ])
    .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    for bad in ["<script", "<img", "<i>", "<b>", "onerror=\"", "<!--"] {
        assert!(!html.contains(bad), "{bad} reached the page as markup");
    }
    assert!(html.contains("&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;"));
    let md = env.log(&["export", &id, "--format", "md"]).ok().stdout;
    assert!(md.contains(attack), "Markdown is text: kept as written");
    let Some(chromium) = chromium() else { return };
    let (dom, console) = render(&chromium, &page);
    assert!(console.is_empty(), "console: {console:?}");
    assert!(!dom.contains("<script") && !dom.contains("<img"), "{dom}");
    let title = dom
        .split("<title>")
        .nth(1)
        .unwrap()
        .split("</title>")
        .next()
        .unwrap();
    assert_eq!(
        title,
        "&lt;i&gt;title&lt;/i&gt;&lt;script&gt;document.title='PWNED'&lt;/script&gt; · ag"
    );
    assert!(dom.contains("<section class=\"turn\" id=\"turn-1\">"));
}

/// The one-line summaries of tools the HTML page shows: what a todo list stands at, the URL
/// fetched, the shell followed or killed, a Codex command given as argv, a spawned agent.
#[test]
fn html_tool_summaries_say_what_each_call_did() {
    let env = TestEnv::new();
    let id = env.new_session("tools", "go");
    let call = |n: u32, name: &str, args: Value| json!({"role": "assistant", "type": "tool_call", "data": {"call_id": format!("c{n}"), "name": name, "arguments": args}});
    env.append(
        &id,
        &[
            call(1, "TodoWrite", json!({"todos": [
                {"content": "read the parser", "status": "completed", "activeForm": "Reading the parser"},
                {"content": "fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
                {"content": "add a test", "status": "pending", "activeForm": "Adding a test"}]})),
            call(2, "WebFetch", json!({"url": "https://example.com/spec", "prompt": "summarize"})),
            call(3, "BashOutput", json!({"bash_id": "shell-7"})),
            call(4, "KillBash", json!({"shell_id": "shell-7"})),
            call(5, "shell", json!({"command": ["cargo", "test", "-q"]})),
            call(6, "spawn_agent", json!({"agent_type": "explorer", "message": "review code"})),
        ],
    );
    let page = env.cwd.join("tools.html");
    env.log(&[
        "export",
        &id,
        "--format",
        "html",
        "-o",
        &page.to_string_lossy(),
    ])
    .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    let summary = |name: &str, what: &str| {
        let want = format!("→ {name} <code>{what}</code></summary>");
        assert!(html.contains(&want), "no {want:?} in the page");
    };
    summary("TodoWrite", "1/3 done · Fixing the bug");
    summary("WebFetch", "https://example.com/spec");
    summary("BashOutput", "shell-7");
    summary("KillBash", "shell-7");
    summary("shell", "cargo test -q");
    summary("spawn_agent", "explorer: review code");
}
