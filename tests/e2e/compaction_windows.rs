//! Compaction holds on small real windows with the default settings: LLMock refuses prompts
//! over its `--context-window` with the providers' own error texts, and fifteen turns of about
//! 500 words each must all succeed on windows of 2,048, 4,096 and 8,192 tokens, in both
//! dialects, with the default tools offered. Turn 1 leaves the fold once summarized (but for
//! the start the handoff quotes as the goal), and `ag-log fold --full` still has it.

use serde_json::Value;

use crate::peers::{program, Llmock};
use crate::prompt::{env_with, session_id, system_kind};
use crate::support::{Run, TestEnv};

/// About 500 words, marked with the turn's number.
fn long_prompt(turn: usize) -> String {
    let words: Vec<String> = (0..500)
        .map(|i| format!("w{}", (i * 7 + turn) % 97))
        .collect();
    format!(
        "TURN-MARKER-{turn} please consider these notes: {} END-OF-TURN-{turn}.",
        words.join(" ")
    )
}

/// One turn of `model`: a new session when `id` is empty (then set), else a follow-up.
fn turn(env: &TestEnv, model: &str, id: &mut String, prompt: &str) -> Run {
    let mut args = vec!["-m", model];
    if id.is_empty() {
        // The default tools and the ten of the MCP server, as the session's own from then on.
        args.extend(["--tools", "+mcp__ten__*"]);
    } else {
        args.extend(["-s", id.as_str()]);
    }
    args.push(prompt);
    let run = env.run("ag-prompt", &args);
    if id.is_empty() {
        *id = session_id(&run);
    }
    run
}

fn run_window(window: u32, model: &str) {
    let w = window.to_string();
    let (Some(mock), Some(python)) = (
        Llmock::start(&["--tool-mode", "off", "--context-window", &w]),
        program("python"),
    ) else {
        return;
    };
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/peers/ten_tools_server.py"
    );
    let mut env = env_with(
        None,
        &format!("[mcp.ten]\ncommand = {python:?}\nargs = [{server:?}]\n"),
    );
    mock.point(&mut env);
    // The window LLMock enforces, as the user would configure a local model's.
    let cfg = env.dir.path().join("config/ag/config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        format!("{text}\n[models.{model:?}]\ncontext_window = {window}\n"),
    )
    .unwrap();
    let mut id = String::new();
    for n in 1..=15 {
        let run = turn(&env, model, &mut id, &long_prompt(n));
        assert_eq!(
            run.code, 0,
            "window {window}, {model}, turn {n}:\n{}",
            run.stderr
        );
        // Nothing to compact before a turn is no failure: no warning for it.
        assert!(
            !run.stderr.contains("nothing before the kept suffix"),
            "window {window}, {model}, turn {n}:\n{}",
            run.stderr
        );
    }
    let fold = env.log(&["fold", &id]).ok().stdout;
    // The handoff quotes the first request's start as the goal; its end is gone.
    if let Some(at) = fold.find("END-OF-TURN-1.") {
        let from = (0..=at.saturating_sub(300))
            .rev()
            .find(|&i| fold.is_char_boundary(i))
            .unwrap_or(0);
        panic!(
            "window {window}, {model}: turn 1 is still verbatim: …{}",
            &fold[from..at + 14]
        );
    }
    let full = env.log(&["fold", &id, "--full"]).ok().stdout;
    assert!(full.contains("END-OF-TURN-1.") && full.contains("END-OF-TURN-15."));
    // Every request offered the ten MCP tools beside the built-in ones, brief: in full they
    // would take more than a quarter of these windows.
    let log = mock.requests();
    for r in log["requests"].as_array().unwrap() {
        let tools: Vec<&Value> = r["body"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let name = |t: &Value| {
            t["name"]
                .as_str()
                .or(t["function"]["name"].as_str())
                .unwrap_or_default()
                .to_string()
        };
        // The answer is never asked for more than the quarter of the window the plans keep
        // for it (a local server refuses `max_tokens` past its window).
        let asked = r["body"]["max_tokens"]
            .as_u64()
            .or(r["body"]["max_completion_tokens"].as_u64())
            .unwrap();
        assert!(
            asked <= u64::from(window) / 4,
            "window {window}: max_tokens {asked}"
        );
        let mcp = tools
            .iter()
            .filter(|t| name(t).starts_with("mcp__ten__"))
            .count();
        assert_eq!(
            mcp,
            10,
            "window {window}, {model}: {:?}",
            tools.iter().map(|t| name(t)).collect::<Vec<_>>()
        );
        assert!(tools.len() > 10, "the built-in tools are offered too");
        for t in tools {
            let d = t["description"]
                .as_str()
                .or(t["function"]["description"].as_str())
                .unwrap_or_default();
            assert!(d.chars().count() <= 160, "window {window}: {d}");
            assert!(!t.to_string().contains("\"title\""), "{t}");
        }
    }
}

#[test]
fn fifteen_long_turns_fit_a_2048_token_window() {
    for model in ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"] {
        run_window(2048, model);
    }
}

#[test]
fn fifteen_long_turns_fit_a_4096_token_window() {
    for model in ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"] {
        run_window(4096, model);
    }
}

#[test]
fn fifteen_long_turns_fit_an_8192_token_window() {
    for model in ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"] {
        run_window(8192, model);
    }
}

#[test]
fn ag_log_compact_summarizes_everything_before_the_latest_turn() {
    let Some(mock) = Llmock::start(&["--tool-mode", "off"]) else {
        return;
    };
    let mut env = env_with(None, "");
    env.set("OPENAI_BASE_URL", mock.openai_url())
        .set("OPENAI_API_KEY", "sk-llmock");
    let model = "openai/gpt-4o-mini";
    let first = env
        .run(
            "ag-prompt",
            &["-m", model, "first: the parser is slow ONE-END"],
        )
        .ok();
    let id = session_id(&first);
    env.run(
        "ag-prompt",
        &["-m", model, "-s", &id, "second: now the lexer TWO-END"],
    )
    .ok();
    // Two turns fit any window: by tokens there is nothing to compact, by hand there is.
    let run = env.log(&["compact", &id, "--keep-turns", "2"]).ok();
    assert!(run.stderr.contains("nothing to compact"), "{}", run.stderr);
    env.log(&["compact", &id, "--instructions", "focus on the parser"])
        .ok();
    let fold = env.log(&["fold", &id]).ok().stdout;
    let handoff_end = fold.find("TWO-END").expect("turn 2 is kept");
    // Turn 1 is in the summary's durable state (the goal) only, not as a message of its own.
    let messages: Vec<serde_json::Value> = serde_json::from_str::<serde_json::Value>(&fold)
        .unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(messages[0]
        .to_string()
        .contains("This conversation was compacted"));
    assert!(
        messages[1..]
            .iter()
            .all(|m| !m.to_string().contains("ONE-END")),
        "{fold}"
    );
    assert!(handoff_end > 0);
    let log = mock.requests();
    let last = log["requests"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        last.contains("focus on the parser"),
        "the summarizer was told: {last}"
    );
}

#[test]
fn a_window_learned_on_one_endpoint_stays_there_and_can_be_forgotten() {
    let (Some(small), Some(big)) = (
        Llmock::start(&["--tool-mode", "off", "--context-window", "2048"]),
        Llmock::start(&["--tool-mode", "off"]),
    ) else {
        return;
    };
    let mut env = env_with(None, "");
    env.set("OPENAI_BASE_URL", small.openai_url())
        .set("OPENAI_API_KEY", "sk-llmock");
    let model = "openai/gpt-4o-mini";
    let learned = |env: &TestEnv| -> Vec<String> {
        env.run("ag-prompt", &["models", "--json"])
            .ok()
            .json_lines()
            .iter()
            .filter(|m| m["source"] == "learned")
            .map(|m| format!("{} {}", m["model"].as_str().unwrap(), m["context_window"]))
            .collect()
    };
    let small_host = small
        .openai_url()
        .split("//")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    // Turns until one is too long for the small server: its error teaches the window, and the
    // turn goes on (each prompt alone fits; together they do not).
    let mut id = String::new();
    for turn in 1..=8 {
        let mut args = vec!["-m", model];
        if !id.is_empty() {
            args.extend(["-s", id.as_str()]);
        }
        let prompt = long_prompt(turn);
        args.push(&prompt);
        let run = env.run("ag-prompt", &args).ok();
        id = session_id(&run);
        if !learned(&env).is_empty() {
            break;
        }
    }
    assert_eq!(learned(&env), [format!("{model}@{small_host} 2048")]);
    // The same model on another server keeps its own window.
    env.set("OPENAI_BASE_URL", big.openai_url());
    let run = env.run("ag-prompt", &["-m", model, "hello"]).ok();
    let id = session_id(&run);
    let show = env.log(&["show", &id, "--json"]).ok().json();
    assert_eq!(show["context"]["window"], 128_000, "{show}");
    // How each server counts prompts against the estimate is kept per endpoint too. LLMock
    // counts message text only (never the tool definitions), so its count is well under the
    // estimate of everything a request carries.
    let scales = |env: &TestEnv| -> Vec<(String, f64)> {
        env.run("ag-prompt", &["models", "--json"])
            .ok()
            .json_lines()
            .iter()
            .filter_map(|m| Some((m["model"].as_str()?.to_string(), m["count_scale"].as_f64()?)))
            .collect()
    };
    let counted = scales(&env);
    assert_eq!(counted.len(), 2, "{counted:?}");
    assert!(counted
        .iter()
        .any(|(m, _)| m == &format!("{model}@{small_host}")));
    assert!(
        counted.iter().all(|(_, s)| (0.1..0.9).contains(s)),
        "{counted:?}"
    );
    let text = env.run("ag-prompt", &["models"]).ok().stdout;
    assert!(text.contains("TOKEN COUNTS"), "{text}");
    // Forgotten, it is gone everywhere: the window and both endpoints' counts.
    let run = env.run("ag-prompt", &["models", "--forget", model]).ok();
    assert!(
        run.stderr.contains("forgot 3 learned figures"),
        "{}",
        run.stderr
    );
    assert!(learned(&env).is_empty());
    assert!(scales(&env).is_empty());
}

#[test]
fn a_summarizer_that_stays_unavailable_follows_network_and_exits_75() {
    let (Some(good), Some(down)) = (
        Llmock::start(&["--tool-mode", "off"]),
        Llmock::start(&["--tool-mode", "off", "--error-rate-503", "1.0"]),
    ) else {
        return;
    };
    let mut env = env_with(None, "");
    // Four attempts, where the summarizer used to make three of its own.
    let cfg = env.dir.path().join("config/ag/config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text.replace("max_attempts = 3", "max_attempts = 4")).unwrap();
    env.set("OPENAI_BASE_URL", good.openai_url())
        .set("OPENAI_API_KEY", "sk-llmock");
    let model = "openai/gpt-4o-mini";
    let first = env.run("ag-prompt", &["-m", model, "one"]).ok();
    let id = session_id(&first);
    env.run("ag-prompt", &["-m", model, "-s", &id, "two"]).ok();
    env.set("OPENAI_BASE_URL", down.openai_url());
    let run = env.log(&["compact", &id]);
    assert_eq!(run.code, 75, "{run:?}");
    assert!(
        run.stderr.contains("stayed unavailable: after 4 attempts"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--summary TEXT"), "{}", run.stderr);
    let log = down.requests();
    assert_eq!(log["requests"].as_array().unwrap().len(), 4);
    // `ag-prompt --compact` says the same.
    let run = env.run("ag-prompt", &["-m", model, "-s", &id, "--compact"]);
    assert_eq!(run.code, 75, "{run:?}");
    // Nothing was written.
    let fold = env.log(&["fold", &id]).ok().stdout;
    assert!(!fold.contains("This conversation was compacted"));
}

#[test]
fn a_failing_summarizer_is_not_called_again_after_two_automatic_failures() {
    let (Some(good), Some(down)) = (
        Llmock::start(&["--tool-mode", "off", "--context-window", "4096"]),
        Llmock::start(&["--tool-mode", "off", "--error-rate-503", "1.0"]),
    ) else {
        return;
    };
    // The session's model answers; the summarizer (another model) is down.
    let mut env = env_with(
        None,
        "[context]\ncompact_model = \"openai/gpt-4o-mini\"\n\
         [models.\"anthropic/claude-sonnet-4-5\"]\ncontext_window = 4096\n",
    );
    env.set("ANTHROPIC_BASE_URL", good.anthropic_url())
        .set("ANTHROPIC_API_KEY", "sk-ant-llmock")
        .set("OPENAI_BASE_URL", down.openai_url())
        .set("OPENAI_API_KEY", "sk-llmock");
    let summarizer_calls = || down.requests()["requests"].as_array().unwrap().len();
    let model = "anthropic/claude-sonnet-4-5";
    let mut id = String::new();
    let mut tripped = false;
    for n in 1..=8 {
        let run = turn(&env, model, &mut id, &long_prompt(n));
        if run
            .stderr
            .contains("automatic compaction of this session is off")
        {
            assert!(run
                .stderr
                .contains(&format!("ag-log compact {id} --summary TEXT")));
            tripped = true;
            break;
        }
    }
    assert!(tripped, "two failures never stopped automatic compaction");
    // Two failures of three attempts each ([network] max_attempts), then no more calls.
    assert_eq!(summarizer_calls(), 6);
    let more = long_prompt(20);
    let _ = env.run("ag-prompt", &["-m", model, "-s", &id, &more]);
    assert_eq!(summarizer_calls(), 6, "the summarizer was called again");
    // A compaction by hand succeeds and lets automatic ones run again.
    env.log(&["compact", &id, "--summary", "by hand"]).ok();
    let failures = env.sqlite_count(&format!(
        "SELECT compact_failures FROM sessions WHERE id = '{id}'"
    ));
    assert_eq!(failures, 0);
}

/// One prompt and sixty `read` steps of 2 KB each on a model with `window` tokens; the
/// session's chunks and its fold after the turn.
fn sixty_steps(window: u32) -> (Vec<Value>, String) {
    let env = env_with(None, "");
    env.write_file("big.txt", &"0123456789abcdef ".repeat(120));
    let mut toml = String::new();
    for _ in 0..60 {
        toml.push_str(
            "[[step]]\ntool_calls = [{ name = \"read\", arguments = { path = \"big.txt\" } }]\n",
        );
    }
    toml.push_str("[[step]]\ntext = \"read it sixty times\"\n");
    let model = crate::prompt::script(&env, "sixty.toml", &toml);
    let cfg = env.dir.path().join("config/ag/config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        format!(
            "[context]\ncompact_model = \"echo\"\n[models.\"{model}\"]\ncontext_window = {window}\n\
             [models.echo]\ncontext_window = 8192\n{text}"
        ),
    )
    .unwrap();
    let run = env
        .run(
            "ag-prompt",
            &[
                "-m",
                &model,
                "--max-steps",
                "80",
                "read big.txt sixty times",
            ],
        )
        .ok();
    assert!(run.stdout.contains("read it sixty times"), "{}", run.stderr);
    let id = session_id(&run);
    let fold = env.log(&["fold", &id]).ok().stdout;
    assert!(
        (fold.len() as u32) / 4 < window,
        "the fold is {} bytes",
        fold.len()
    );
    (env.chunks(&id), fold)
}

#[test]
fn one_prompt_and_sixty_tool_steps_stay_within_the_window_inside_the_turn() {
    let (chunks, _) = sixty_steps(8192);
    // Old results are cleared (a prune) or summarized (a compaction) inside the one turn.
    let mut reductions = crate::prompt::system_kind(&chunks, "compaction");
    reductions.extend(crate::prompt::system_kind(&chunks, "prune"));
    assert!(!reductions.is_empty(), "nothing was reduced");
    let turn = chunks[0]["turn"].clone();
    assert!(reductions.iter().all(|c| c["turn"] == turn));
}

/// Where pruning is not enough, the one long turn is compacted inside itself: its kept part
/// starts at one of its steps (a call and its result stay together), the prompt is restated
/// verbatim in the handoff, and the newest steps stay verbatim. (The script model goes on to
/// its next step after each compaction: it does not start the sixty reads again.)
#[test]
fn one_long_turn_is_compacted_at_a_step_inside_it() {
    let (chunks, fold) = sixty_steps(4096);
    let compactions = crate::prompt::system_kind(&chunks, "compaction");
    assert!(!compactions.is_empty(), "no compaction");
    let prompt_seq = chunks[0]["seq"].as_i64().unwrap();
    for c in &compactions {
        let kept = c["data"]["kept_from_seq"].as_i64().unwrap();
        assert!(kept > prompt_seq, "the cut is not inside the turn: {c}");
        let first = chunks.iter().find(|k| k["seq"] == kept).unwrap();
        assert_eq!(
            first["type"], "tool_call",
            "the kept part starts at {first}"
        );
        assert_eq!(first["turn"], chunks[0]["turn"]);
    }
    // The prompt is the session's first: the handoff restates it as the goal.
    assert!(
        fold.contains("(the first request, verbatim): read big.txt sixty times"),
        "{fold}"
    );
    assert!(fold.contains("read it sixty times"));
}

/// An offline model takes a window for the run (`--context-window`) or from its script
/// (`context_window = N`), so compaction can be exercised without a provider: long turns on
/// `echo` compact under a 1,000-token window and never without one.
#[test]
fn offline_models_compact_under_a_window_given_for_the_run() {
    let env = crate::support::TestEnv::new();
    let words = |n: usize, tag: &str| {
        (0..n)
            .map(|i| format!("{tag}{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let compactions = |env: &crate::support::TestEnv| {
        let ls = env.log(&["ls", "-q", "--any"]).ok().stdout;
        let id = ls.lines().next().unwrap();
        system_kind(&env.chunks(id), "compaction").len()
    };
    env.run("ag-prompt", &["-m", "echo", &words(300, "a")]).ok();
    for t in 0..5 {
        env.run(
            "ag-prompt",
            &["-c", "-m", "echo", &words(300, &format!("t{t}x"))],
        )
        .ok();
    }
    assert_eq!(compactions(&env), 0, "echo has no window of its own");
    for t in 0..5 {
        env.run(
            "ag-prompt",
            &[
                "-c",
                "-m",
                "echo",
                "--context-window",
                "1000",
                &words(300, &format!("w{t}x")),
            ],
        )
        .ok();
    }
    assert!(
        compactions(&env) >= 1,
        "a 1,000-token window compacts long turns"
    );
    // A script declares its own window.
    let other = crate::support::TestEnv::new();
    let bad = crate::prompt::script(
        &other,
        "tiny.toml",
        "context_window = 10\n[[step]]\ntext = \"ok\"\n",
    );
    let run = other.run("ag-prompt", &["-m", &bad, "hi"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("at least 256"), "{}", run.stderr);
    let fine = crate::prompt::script(
        &other,
        "fine.toml",
        "context_window = 300\n[[step]]\ntext = \"ok\"\n",
    );
    other.run("ag-prompt", &["-m", &fine, "hi"]).ok();
}

/// A prompt that alone is more than the window: no compaction can help, so the turn ends at
/// once, says what is too large and by how much, and exits 6; in both dialects.
#[test]
fn a_newest_message_larger_than_the_window_says_so_with_its_own_exit_status() {
    let Some(mock) = Llmock::start(&["--tool-mode", "off", "--context-window", "2000"]) else {
        return;
    };
    let mut env = env_with(None, "");
    mock.point(&mut env);
    let huge: String = (0..3000).map(|i| format!("word{i} ")).collect();
    for model in ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"] {
        let run = env.run("ag-prompt", &["-m", model, &huge]);
        assert_eq!(run.code, 6, "{model}: {}", run.stderr);
        assert!(
            run.stderr.contains("the newest message is too large")
                && run.stderr.contains("2000")
                && run.stderr.contains("shorten the prompt"),
            "{model}: {}",
            run.stderr
        );
        // One refused request, no compaction attempted for it.
        let id = session_id(&run);
        assert!(system_kind(&env.chunks(&id), "compaction").is_empty());
    }
    // A prompt that fits still runs.
    env.run("ag-prompt", &["-m", "openai/gpt-4o-mini", "hello"])
        .ok();
}
