//! The chat (`ag-prompt` on a terminal with no prompt, `ag chat`), driven through a real
//! terminal (tmux): turns, `/btw` beside a running turn, type-ahead, `/fork`, Ctrl-C, approvals,
//! custom commands, and what the person sees (rendered Markdown, no escapes under NO_COLOR).
//! Every check of the log goes through `ag-log`, which reads the same store.

use serde_json::Value;

use crate::prompt::{env_with, script};
use crate::support::TestEnv;
use crate::tmux::{self, Tmux};

/// A chat started from a shell in tmux; the shell prints `CHAT-END-<status>` when it ends.
fn chat(env: &TestEnv, args: &str) -> Tmux {
    let t = Tmux::shell(env);
    t.line(&format!("ag-prompt {args} 2>../chat.err; echo CHAT-END-$?"));
    t.wait_for("the chat's greeting", |s| s.contains("Ctrl-D leaves"));
    t
}

/// Wait until `n` turns have ended on the screen.
#[track_caller]
fn turns_done(t: &Tmux, n: usize) -> String {
    t.wait_for(&format!("{n} finished turns"), |s| {
        s.matches("─ done").count() + s.matches("interrupted: what was written").count() >= n
    })
}

/// The chat sessions of the store, newest first, as `ag-log ls --json` gives them.
fn sessions(env: &TestEnv, kind: &str) -> Vec<Value> {
    env.log(&["ls", "--json", "--kind", kind]).ok().json_lines()
}

/// The texts of a session's chunks of `role`/`type`, in order.
fn texts(env: &TestEnv, id: &str, role: &str, ty: &str) -> Vec<String> {
    env.chunks(id)
        .into_iter()
        .filter(|c| c["role"] == role && c["type"] == ty)
        .map(|c| c["data"]["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn leave(t: &Tmux) {
    // Ctrl-D only once the line editor reads again (an empty prompt is the last line): a key
    // sent while a command or a turn still holds the terminal can be lost when the editor puts
    // it back in raw mode.
    t.wait_for("an empty prompt", |s| {
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(str::trim)
            == Some("›")
    });
    t.keys(&["C-d"]);
    t.wait_for_line("CHAT-END-0");
}

#[test]
fn three_turns_then_a_fork_and_a_turn_in_it() {
    if !tmux::available() {
        return;
    }
    let env = env_with(None, "");
    let model = script(
        &env,
        "chat.toml",
        "[[step]]\ntext = \"first answer\"\n[[step]]\ntext = \"second answer\"\n\
         [[step]]\ntext = \"third answer\"\n[[step]]\ntext = \"answer in the fork\"\n",
    );
    let t = chat(&env, &format!("-m {model}"));
    for (i, prompt) in ["one", "two", "three"].iter().enumerate() {
        t.line(prompt);
        turns_done(&t, i + 1);
    }
    let screen = t.screen();
    for a in ["first answer", "second answer", "third answer"] {
        assert!(screen.contains(a), "{screen}");
    }
    t.line("/fork a side road");
    t.wait_for("the fork", |s| s.contains("the chat goes on in the fork"));
    t.line("four");
    turns_done(&t, 4);
    leave(&t);
    let chats = sessions(&env, "chat");
    assert_eq!(chats.len(), 2, "{chats:?}");
    let fork = chats.iter().find(|s| s["title"] == "a side road").unwrap();
    let source = chats.iter().find(|s| s["title"] != "a side road").unwrap();
    let fork_id = fork["id"].as_str().unwrap();
    let source_id = source["id"].as_str().unwrap();
    assert_eq!(source["title"], "one");
    assert_eq!(
        texts(&env, source_id, "user", "text"),
        ["one", "two", "three"]
    );
    // The fork holds the source's turns (read through its parent) and its own.
    assert_eq!(
        texts(&env, fork_id, "user", "text"),
        ["one", "two", "three", "four"]
    );
    assert_eq!(
        texts(&env, fork_id, "assistant", "text").last().unwrap(),
        "answer in the fork"
    );
    assert!(!texts(&env, source_id, "assistant", "text").contains(&"answer in the fork".into()));
}

#[test]
fn btw_is_answered_beside_a_slow_turn_and_type_ahead_joins_it_once() {
    if !tmux::available() {
        return;
    }
    let env = env_with(None, "");
    let model = script(
        &env,
        "slow.toml",
        "[[step]]\ntext = \"hello back\"\n\
         [[step]]\ntext = \"working slowly\"\nwait_for = \"gate\"\n\
         [[step]]\ntext = \"main turn done\"\n\
         [[step]]\nreply_to = \"the side question\"\ntext = \"SIDE ANSWER\"\n",
    );
    let t = chat(&env, &format!("-m {model}"));
    t.line("hello");
    turns_done(&t, 1);
    t.line("take your time");
    t.wait_for("the slow turn", |s| s.contains("working slowly"));
    t.line("/btw the side question?");
    let screen = t.wait_for("the side answer", |s| s.contains("│ SIDE ANSWER"));
    // Answered while the main turn still runs.
    assert_eq!(screen.matches("─ done").count(), 1, "{screen}");
    t.line("and also this");
    t.wait_for("the queued line", |s| s.contains("queued: and also this"));
    std::fs::write(env.cwd.join("gate"), "").unwrap();
    let screen = turns_done(&t, 2);
    assert!(screen.contains("main turn done"), "{screen}");
    leave(&t);
    let main = &sessions(&env, "chat")[0];
    let id = main["id"].as_str().unwrap();
    assert_eq!(
        texts(&env, id, "user", "text"),
        ["hello", "take your time", "and also this"]
    );
    assert_eq!(
        texts(&env, id, "assistant", "text"),
        ["hello back", "working slowly", "main turn done"]
    );
    let cat = env.log(&["cat", id]).ok().stdout;
    assert!(
        !cat.contains("SIDE ANSWER") && !cat.contains("side question"),
        "{cat}"
    );
    let side = &sessions(&env, "side")[0];
    let side_texts = texts(&env, side["id"].as_str().unwrap(), "assistant", "text");
    assert_eq!(side_texts.last().unwrap(), "SIDE ANSWER");
}

#[test]
fn ctrl_c_stops_the_turn_and_the_chat_goes_on() {
    if !tmux::available() {
        return;
    }
    let env = env_with(None, "");
    let model = script(
        &env,
        "stop.toml",
        "[[step]]\ntext = \"this takes long\"\nwait_for = \"never\"\n\
         [[step]]\ntext = \"after the stop\"\n",
    );
    let t = chat(&env, &format!("-m {model}"));
    t.line("start");
    t.wait_for("the long step", |s| s.contains("this takes long"));
    t.keys(&["C-c"]);
    t.wait_for("the stop", |s| s.contains("interrupted: what was written"));
    t.line("go on");
    t.wait_for("the next turn", |s| s.contains("after the stop"));
    leave(&t);
    let id = sessions(&env, "chat")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ends: Vec<String> = env
        .chunks(&id)
        .into_iter()
        .filter(|c| c["data"]["kind"] == "turn_end")
        .map(|c| c["data"]["stop_reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ends, ["interrupted", "end_turn"]);
}

#[test]
fn approvals_in_the_chat_once_denied_and_for_the_session() {
    if !tmux::available() {
        return;
    }
    let env = env_with(None, "");
    let model = crate::approvals::four_calls(&env);
    let t = chat(
        &env,
        &format!("-m {model} --tools +write,+bash --approval ask"),
    );
    t.line("go");
    t.wait_for("the first question", |s| {
        s.contains("approve? write") && s.contains("+alpha")
    });
    t.line("y");
    t.wait_for("the bash question", |s| s.contains("$ touch b.txt"));
    t.line("n not in this folder");
    t.wait_for("the third question", |s| s.contains("+gamma"));
    t.line("a");
    let screen = turns_done(&t, 1);
    assert!(!screen.contains("+delta"), "{screen}");
    t.line("more");
    let screen = turns_done(&t, 2);
    assert!(
        screen.contains("done again") && !screen.contains("+epsilon"),
        "{screen}"
    );
    leave(&t);
    for (f, there) in [
        ("a.txt", true),
        ("b.txt", false),
        ("c.txt", true),
        ("d.txt", true),
        ("e.txt", true),
    ] {
        assert_eq!(env.cwd.join(f).exists(), there, "{f}");
    }
    let id = sessions(&env, "chat")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let chunks = env.chunks(&id);
    let denied = chunks
        .iter()
        .find(|c| c["type"] == "tool_result" && c["data"]["name"] == "bash")
        .unwrap();
    assert!(
        denied["data"]["result"]
            .as_str()
            .unwrap()
            .contains("denied it: not in this folder"),
        "{denied}"
    );
    let decisions: Vec<&str> = chunks
        .iter()
        .filter(|c| c["data"]["kind"] == "approval")
        .map(|c| c["data"]["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["allow-once", "deny", "allow-session"]);
}

#[test]
fn a_project_command_with_arguments_in_the_chat_and_from_a_script() {
    if !tmux::available() {
        return;
    }
    let env = env_with(None, "");
    env.write_file(
        ".ag/commands/review.md",
        "---\ndescription: Review a file closely\nargument-hint: FILE\n---\nReview $ARGUMENTS for bugs.\n",
    );
    let model = script(
        &env,
        "review.toml",
        "[[step]]\nreply_to = \"Review\"\ntext = \"reviewed\"\n",
    );
    let t = chat(&env, &format!("-m {model}"));
    t.line("/help");
    t.wait_for("the command in /help", |s| {
        s.contains("/review FILE") && s.contains("Review a file closely (project)")
    });
    t.line("/review src/parser.rs");
    turns_done(&t, 1);
    leave(&t);
    let id = sessions(&env, "chat")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        texts(&env, &id, "user", "text"),
        ["Review src/parser.rs for bugs."]
    );
    // The same command from a script.
    let run = env
        .run(
            "ag-prompt",
            &["-m", &model, "--command", "review", "lib.rs"],
        )
        .ok();
    assert_eq!(run.stdout.trim(), "reviewed");
    let unknown = env.run("ag-prompt", &["-m", &model, "--command", "nope", "x"]);
    assert_eq!(unknown.code, 4, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("the commands here: review"),
        "{}",
        unknown.stderr
    );
}

const MARKDOWN: &str = "# Release plan\\n\\nWe ship **two** things and `ag chat`:\\n\\n- the chat\\n- the ACP server\\n\\n> mind the gap\\n\\n```rust\\nfn main() { let n = 1; }\\n```\\nDone.\\n";

/// The answer as the screen shows it: from the prompt's echo to the line that ends the turn.
fn answer_region(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("› show me"))
        .unwrap()
        + 1;
    let end = lines.iter().position(|l| l.starts_with("─ done")).unwrap();
    lines[start..end]
        .iter()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn markdown_is_rendered_for_people_and_plain_under_no_color() {
    if !tmux::available() {
        return;
    }
    let mut env = env_with(None, "");
    let model = script(
        &env,
        "md.toml",
        &format!("[[step]]\ntext = \"{MARKDOWN}\"\n"),
    );
    // With colour: headings, bullets, quotes and code as a person reads them.
    env.env.retain(|(k, _)| k != "NO_COLOR");
    let t = chat(&env, &format!("-m {model}"));
    t.line("show me");
    let screen = turns_done(&t, 1);
    insta::assert_snapshot!("chat_markdown_rendered", answer_region(&screen));
    assert!(t.screen_escaped().contains("\x1b["), "no colour at all");
    leave(&t);
    // NO_COLOR: the model's text as it wrote it, and not one escape sequence.
    env.set("NO_COLOR", "1");
    let t = chat(&env, &format!("-m {model}"));
    t.line("show me");
    let screen = turns_done(&t, 1);
    let region = answer_region(&screen);
    assert!(
        region.contains("# Release plan") && region.contains("- the chat"),
        "{region}"
    );
    assert!(region.contains("**two**"), "{region}");
    let escaped = t.screen_escaped();
    assert!(!escaped.contains('\x1b'), "{escaped:?}");
    leave(&t);
}

#[test]
fn the_chat_reads_plain_lines_without_a_terminal() {
    let env = env_with(None, "");
    let model = script(
        &env,
        "plain.toml",
        "[[step]]\ntext = \"plain one\"\n[[step]]\ntext = \"plain two\"\n",
    );
    let run = env
        .run_stdin("ag", &["chat", "-m", &model], "hi\nthere\n/cost\n")
        .ok();
    assert!(
        run.stdout.contains("plain one") && run.stdout.contains("plain two"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("2 turns"), "{}", run.stdout);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    // -c continues this folder's latest session; -s names one.
    let model = script(
        &env,
        "more.toml",
        "[[step]]\nreply_to = \"third\"\ntext = \"three\"\n[[step]]\nreply_to = \"fourth\"\ntext = \"four\"\n",
    );
    let id = sessions(&env, "chat")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.run_stdin("ag", &["chat", "-c", "-m", &model], "third\n")
        .ok();
    env.run_stdin("ag", &["chat", "-s", &id, "-m", &model], "fourth\n")
        .ok();
    assert_eq!(sessions(&env, "chat").len(), 1);
    assert_eq!(
        texts(&env, &id, "user", "text"),
        ["hi", "there", "third", "fourth"]
    );
}

#[test]
fn multi_line_input_history_the_room_and_resume() {
    if !tmux::available() {
        return;
    }
    let env = env_with(None, "");
    let model = script(
        &env,
        "more.toml",
        "[[step]]\nreply_to = \"line one\"\ntext = \"got two lines\"\n\
         [[step]]\nreply_to = \"back again\"\ntext = \"resumed here\"\n",
    );
    let t = chat(&env, &format!("-m {model}"));
    // Alt-Enter starts a new line inside the prompt.
    t.keys_literal("line one");
    t.keys(&["M-Enter"]);
    t.keys_literal("line two");
    t.wait_for("two lines in the prompt", |s| {
        s.lines().any(|l| l.trim_end() == "line two")
    });
    t.keys(&["Enter"]);
    turns_done(&t, 1);
    // /tell speaks in this folder's room as the session.
    t.line("/tell hello from the chat");
    // ag-room tell prints the line's id.
    t.wait_for("the line's id", |s| {
        s.lines()
            .any(|l| l.trim().len() == 36 && l.trim().matches('-').count() == 4)
    });
    leave(&t);
    let id = sessions(&env, "chat")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(texts(&env, &id, "user", "text"), ["line one\nline two"]);
    let said = crate::room::room_lines(&env);
    let line = said
        .iter()
        .find(|l| l["text"] == "hello from the chat")
        .unwrap_or_else(|| panic!("{said:?}"));
    assert_eq!(line["from"]["session"], id.as_str(), "{line}");
    // The history is kept per folder, private.
    let dir = env.home.join("history");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("/tell hello from the chat"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    // A new chat: /resume lists the folder's session and continues it.
    let t = chat(&env, &format!("-m {model}"));
    t.line("/resume");
    t.wait_for("the list", |s| s.contains("/resume N or /resume HANDLE"));
    t.line("/resume 1");
    t.wait_for("the resumed session", |s| s.contains("resumed "));
    t.line("back again");
    turns_done(&t, 1);
    leave(&t);
    assert_eq!(sessions(&env, "chat").len(), 1);
    assert_eq!(
        texts(&env, &id, "user", "text"),
        ["line one\nline two", "back again"]
    );
}

#[test]
fn the_chat_against_llmock_in_both_dialects() {
    if !tmux::available() {
        return;
    }
    let Some(mock) = crate::peers::Llmock::start(&["--tool-mode", "off"]) else {
        return;
    };
    let mut env = env_with(None, "");
    env.set("OPENAI_BASE_URL", mock.openai_url())
        .set("OPENAI_API_KEY", "sk-llmock")
        .set("ANTHROPIC_BASE_URL", mock.anthropic_url())
        .set("ANTHROPIC_API_KEY", "sk-ant-llmock");
    for (i, model) in ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"]
        .iter()
        .enumerate()
    {
        let t = chat(&env, &format!("-m {model}"));
        t.line("hello there");
        turns_done(&t, 1);
        t.line("and a second question");
        let screen = turns_done(&t, 2);
        assert!(!screen.contains("error:"), "{screen}");
        leave(&t);
        let id = sessions(&env, "chat")[0]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let answers = texts(&env, &id, "assistant", "text");
        assert_eq!(answers.len(), 2, "{model}: {answers:?}");
        assert!(answers.iter().all(|a| !a.trim().is_empty()), "{answers:?}");
        // The second request carried the first exchange: one session, as a script would see it.
        let log = mock.requests();
        let second = &log["requests"].as_array().unwrap()[2 * i + 1];
        let messages = second["body"]["messages"].as_array().unwrap();
        let users = messages.iter().filter(|m| m["role"] == "user").count();
        assert_eq!(users, 2, "{model}: {second}");
    }
}

#[test]
fn slash_commands_compact_export_model_tools_and_the_room() {
    let env = env_with(None, "[context]\ncompact_model = \"echo\"\n");
    let model = script(
        &env,
        "slash.toml",
        "[[step]]\ntext = \"answer one\"\n[[step]]\ntext = \"answer two\"\n",
    );
    let lines = "one\ntwo\n/compact keep the numbers\n/export out.md\n/model echo\nthree\n\
                 /tools\n/who\n/claims\n/inbox\n/nope\n";
    let run = env.run_stdin("ag", &["chat", "-m", &model], lines).ok();
    let out = &run.stdout;
    assert!(out.contains("compacted "), "{out}");
    assert!(out.contains("wrote out.md"), "{out}");
    assert!(out.contains("the next turns run on echo"), "{out}");
    assert!(out.contains("tools: read, glob, grep"), "{out}");
    assert!(out.contains("no command /nope"), "{out}");
    let id = sessions(&env, "chat")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The compaction is in the session; the export holds the session; the third turn ran on echo.
    let chunks = env.chunks(&id);
    assert!(
        chunks.iter().any(|c| c["data"]["kind"] == "compaction"),
        "{chunks:?}"
    );
    let exported = std::fs::read_to_string(env.cwd.join("out.md")).unwrap();
    assert!(exported.contains("answer two"), "{exported}");
    let show = env.log(&["show", &id, "--json"]).ok().json();
    assert_eq!(show["model"], "echo", "{show}");
    assert_eq!(
        texts(&env, &id, "assistant", "text").last().unwrap(),
        "three"
    );
    // The room commands ran as ag-room would, in this folder's room (their notes on stderr).
    assert!(
        run.stderr.contains("no live session in this worktree")
            && run.stderr.contains("no active claims in this worktree"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_models_escape_sequences_never_drive_the_chats_terminal() {
    if !tmux::available() {
        return;
    }
    let mut env = env_with(None, "");
    env.env.retain(|(k, _)| k != "NO_COLOR");
    // The answer tries to retitle the terminal and to hide a line, in a heading and in code.
    let model = script(
        &env,
        "evil.toml",
        "[[step]]\ntext = \"# title \\u001b]2;PWNED\\u0007\\n```sh\\necho \\u001b[8mhidden\\n```\\n\"\n",
    );
    let t = chat(&env, &format!("-m {model}"));
    t.line("hello");
    let screen = turns_done(&t, 1);
    assert_ne!(t.format("#{pane_title}"), "PWNED");
    assert!(screen.contains("\\u{1b}]2;PWNED"), "{screen}");
    assert!(screen.contains("\\u{1b}[8mhidden"), "{screen}");
    leave(&t);
}

#[test]
fn claude_code_commands_count_only_in_a_trusted_folder_and_grant_nothing() {
    let env = env_with(None, "");
    env.write_file(
        ".claude/commands/wipe.md",
        "---\nallowed-tools: Bash(rm:*)\nmodel: opus\n---\nClean up $ARGUMENTS.\n",
    );
    let model = script(
        &env,
        "wipe.toml",
        "[[step]]\nreply_to = \"Clean up\"\ntext = \"cleaned\"\n",
    );
    let run = env.run("ag-prompt", &["-m", &model, "--command", "wipe", "build/"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    env.run("ag-prompt", &["--trust"]).ok();
    let run = env
        .run(
            "ag-prompt",
            &["-m", &model, "--command", "wipe", "build/", "--json"],
        )
        .ok();
    assert!(run.stdout.contains("cleaned"), "{}", run.stdout);
    // The file's allowed-tools and model are not the session's.
    let id = sessions(&env, "chat")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let show = env.log(&["show", &id, "--json"]).ok().json();
    assert!(
        show["model"].as_str().unwrap().starts_with("script:"),
        "{show}"
    );
    let tools = show["policy"]["tools"].to_string();
    assert!(!tools.contains("bash"), "{tools}");
    assert_eq!(texts(&env, &id, "user", "text"), ["Clean up build/."]);
}
