//! `bash {command, timeout_s?}`: run a shell command in the session's cwd.
//!
//! `bash` is a separately granted tool, confined by the session's sandbox
//! ([`crate::sandbox`]): by default it reads anywhere, writes only in the workspace and a
//! private `TMPDIR`, and has no network. What it gets:
//!
//! - `bash -c` (or `/bin/sh -c` where there is no bash), in the cwd, stdin from /dev/null so a
//!   command that waits for input ends instead of hanging the turn;
//! - an environment without secrets ([`scrubbed_env`]) plus the caller's extra variables;
//! - a jail that owns every process it starts: the timeout, an interrupt or the end of the
//!   command kills them all, including ones that double-forked or called `setsid`;
//! - stdout and stderr on two reader threads into one buffer, in arrival order, bounded in
//!   memory: the first and last halves of the output cap are kept, because a build's first
//!   lines say what ran and its last lines say what failed.

use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::{Args, ToolCtx, ToolOutput};
use crate::sandbox::jail::{self, JailError};

/// The longest timeout a call may ask for, unless the session's default is longer.
const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// How long to keep reading after the shell has exited. Output still in the pipe arrives at
/// once; a background job (`server &`) that keeps the pipe open would otherwise hold the call
/// until the timeout.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Names that are secrets whatever their suffix.
const SECRET_NAMES: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GITHUB_PAT",
    "PGPASSWORD",
    "MYSQL_PWD",
];

/// Name endings that mark a secret: `*_API_KEY` and every other `*_KEY`, `*_APIKEY`,
/// `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, `*_PASSWD`.
const SECRET_SUFFIXES: &[&str] = &[
    "_KEY",
    "_APIKEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
];

/// Whether an environment variable is kept out of bash's environment.
///
/// The rule, compared case-insensitively: the name ends with `_KEY` (which covers `_API_KEY`,
/// `AWS_SECRET_ACCESS_KEY`, …), `_APIKEY`, `_TOKEN`, `_SECRET`, `_PASSWORD` or `_PASSWD`, or is
/// one of `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GITHUB_PAT`, `PGPASSWORD`, `MYSQL_PWD`.
/// Broad on purpose: losing a harmless `*_KEY` costs a command little, while a provider key in
/// a model-driven shell can leave with one `curl`.
pub(crate) fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str()) || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// `vars` without the secrets ([`is_secret_var`]).
pub(crate) fn scrub_env(vars: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    vars.into_iter()
        .filter(|(k, _)| !is_secret_var(k))
        .collect()
}

/// This process's environment with provider keys and other secrets removed (the rule is
/// [`is_secret_var`]); the base environment of every `bash` call. Variables whose name or
/// value is not valid Unicode are left out too, since they cannot be represented here.
pub(crate) fn scrubbed_env() -> Vec<(String, String)> {
    scrub_env(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
    )
}

pub(super) fn run(args: &Args<'_>, ctx: &ToolCtx) -> Result<ToolOutput, String> {
    run_with_base_env(args, ctx, scrubbed_env())
}

/// `run` with the base environment given, so tests can check the scrub without changing the
/// test process's own environment.
fn run_with_base_env(
    args: &Args<'_>,
    ctx: &ToolCtx,
    base_env: Vec<(String, String)>,
) -> Result<ToolOutput, String> {
    let command = args.req_str("command")?;
    if command.trim().is_empty() {
        return Err("argument `command` is empty".to_string());
    }
    let timeout = timeout_of(args, ctx)?;
    let shell = shell();
    let mut env = base_env;
    env.retain(|(k, _)| !ctx.secrets.names_key(k));
    env.extend(ctx.env.iter().cloned());
    let job = jail::Job {
        shell: Path::new(shell),
        command,
        cwd: &ctx.cwd,
        env,
        settings: &ctx.sandbox,
        claimed: &ctx.claimed_by_others,
        hidden: ctx.secrets.files(),
    };
    let mut running = jail::spawn(&job).map_err(|e| match e {
        JailError::Unsupported { .. } => refusal(&e),
        JailError::Io(why) => format!("cannot start {shell} in {}: {why}", ctx.cwd.display()),
    })?;
    let pgid = running.pgid() as i64;
    ctx.set_running_group(Some((pgid, crate::proc::start_time(pgid).unwrap_or(0))));
    let output = Output::read(&mut running, ctx.output_cap);

    let deadline = Instant::now() + timeout;
    let status: Option<ExitStatus> = loop {
        if ctx.cancel.load(std::sync::atomic::Ordering::SeqCst) {
            running.finish();
            ctx.set_running_group(None);
            return Err(format!(
                "`{command}` was interrupted and its processes killed"
            ));
        }
        let now = Instant::now();
        if now >= deadline {
            running.stop();
            break None;
        }
        if let Some(s) = running.wait_timeout((deadline - now).min(Duration::from_millis(10))) {
            break Some(s);
        }
    };
    let notes = running.finish();
    ctx.set_running_group(None);
    let mut text = output.collect();
    for n in &notes {
        text.push_str(&format!("(sandbox: {n})\n"));
    }
    let (status_line, is_error) = match status {
        None => (
            format!(
                "timed out after {}; the command and every process it started were killed",
                secs(timeout)
            ),
            true,
        ),
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => (format!("exit {code}"), code != 0),
            (None, Some(sig)) => (format!("killed by signal {sig}"), true),
            (None, None) => (format!("ended: {s}"), true),
        },
    };
    text.push_str(&status_line);
    Ok(ToolOutput { text, is_error })
}

/// The call's timeout: its `timeout_s`, capped, else the session's default.
fn timeout_of(args: &Args<'_>, ctx: &ToolCtx) -> Result<Duration, String> {
    match args.opt_f64("timeout_s")? {
        None => Ok(ctx.bash_timeout),
        Some(s) if s.is_finite() && s > 0.0 => {
            let max = MAX_TIMEOUT.max(ctx.bash_timeout);
            Ok(Duration::from_secs_f64(s.min(max.as_secs_f64())))
        }
        Some(s) => Err(format!(
            "argument `timeout_s` must be a positive number of seconds, got {s}"
        )),
    }
}

/// stdout and stderr read on two threads into one bounded buffer, in arrival order.
struct Output {
    capture: Arc<Mutex<Capture>>,
    done: mpsc::Receiver<()>,
    readers: usize,
}

impl Output {
    fn read(running: &mut jail::Running, cap: usize) -> Output {
        let capture = Arc::new(Mutex::new(Capture::new(cap)));
        let (done_tx, done) = mpsc::channel::<()>();
        let mut readers = 0;
        for mut pipe in [running.stdout.take(), running.stderr.take()]
            .into_iter()
            .flatten()
        {
            let capture = Arc::clone(&capture);
            let done = done_tx.clone();
            readers += 1;
            thread::spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => lock(&capture).push(&buf[..n]),
                    }
                }
                let _ = done.send(());
            });
        }
        Output {
            capture,
            done,
            readers,
        }
    }

    /// The text, once the readers are done. Every process of the command is gone by now, so
    /// the pipes close; the grace only guards against one that escaped an unconfined command.
    fn collect(self) -> String {
        let drain_until = Instant::now() + DRAIN_GRACE;
        let mut finished = 0;
        while finished < self.readers {
            let left = drain_until.saturating_duration_since(Instant::now());
            match self.done.recv_timeout(left) {
                Ok(()) => finished += 1,
                Err(_) => break,
            }
        }
        let mut text = lock(&self.capture).render();
        if text.is_empty() {
            text.push_str("(no output)");
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if finished < self.readers {
            text.push_str(
                "(a process that escaped the command still holds the output open; what it prints is not shown)\n",
            );
        }
        text
    }
}

/// The tool error when the sandbox cannot be enforced: what, and how the user (not the
/// model) can choose to run commands without it.
fn refusal(e: &JailError) -> String {
    format!(
        "bash was not run: {e}. Commands never fall back to running unconfined. To run them \
         without a sandbox, the user can set `mode = \"off\"` under `[sandbox]` in the user \
         config ($XDG_CONFIG_HOME/ag/config.toml) or start ag-prompt with `--sandbox off`."
    )
}

/// bash when the system has it (models write bash), else the POSIX shell every Unix has.
fn shell() -> &'static str {
    ["/bin/bash", "/usr/bin/bash"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("/bin/sh")
}

fn lock(c: &Mutex<Capture>) -> std::sync::MutexGuard<'_, Capture> {
    // A reader thread cannot panic while holding the lock in a way that leaves the buffer
    // unusable; keep whatever it holds.
    c.lock().unwrap_or_else(|e| e.into_inner())
}

fn secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Combined output, bounded: the first half of the cap and a rolling last half.
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: usize,
}

impl Capture {
    fn new(cap: usize) -> Capture {
        let head_cap = cap / 2;
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        self.total += data.len();
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(data);
        }
    }

    fn render(&self) -> String {
        let kept = self.head.len() + self.tail.len();
        let cut = self.total - kept;
        let mut bytes = self.head.clone();
        if cut > 0 {
            bytes.extend_from_slice(
                format!("\n[output cut: {cut} bytes in the middle not shown]\n").as_bytes(),
            );
        }
        bytes.extend(self.tail.iter());
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::run;
    use super::*;
    use crate::sandbox::Mode;
    use serde_json::json;

    fn ctx() -> (tempfile::TempDir, ToolCtx) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path().canonicalize().unwrap());
        (dir, ctx)
    }

    #[test]
    fn output_and_exit_status() {
        let (_d, ctx) = ctx();
        let out = run(
            "bash",
            &json!({"command": "echo hi; echo err >&2; exit 3"}),
            &ctx,
        );
        assert!(out.is_error);
        assert!(out.text.contains("hi\n"), "{}", out.text);
        assert!(out.text.contains("err\n"), "{}", out.text);
        assert!(out.text.ends_with("exit 3"), "{}", out.text);
        let out = run("bash", &json!({"command": "pwd; true"}), &ctx);
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, format!("{}\nexit 0", ctx.cwd.display()));
        let out = run("bash", &json!({"command": "cat"}), &ctx);
        assert_eq!(
            out.text, "(no output)\nexit 0",
            "stdin is null, so cat ends"
        );
    }

    #[test]
    fn timeout_kills_the_process_group() {
        let (_d, ctx) = ctx();
        let started = Instant::now();
        // A pipeline: both sides are in the group, and the sleep holds the pipe open. Had the
        // group survived, the call would last the whole minute: the bound leaves a loaded
        // machine half of it and still tells the two apart.
        let out = run(
            "bash",
            &json!({"command": "echo before; sleep 60 | cat", "timeout_s": 1}),
            &ctx,
        );
        let took = started.elapsed();
        assert!(took < Duration::from_secs(30), "took {took:?}");
        assert!(out.is_error);
        assert!(out.text.contains("before\n"), "{}", out.text);
        assert!(out.text.contains("timed out after 1 s"), "{}", out.text);
    }

    /// Pids of running (not zombie) processes whose command line holds `marker`.
    fn running_with(marker: &str) -> Vec<String> {
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let pid = e.file_name().to_string_lossy().into_owned();
            let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z');
            if !zombie && String::from_utf8_lossy(&cmd).contains(marker) {
                out.push(pid);
            }
        }
        out
    }

    /// Wait (with a deadline) until no process holds `marker`; the ones left.
    fn gone(marker: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = running_with(marker);
            if left.is_empty() || Instant::now() > deadline {
                return left;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn no_process_outlives_the_command_in_any_mode() {
        for mode in [Mode::WorkspaceWrite, Mode::Off] {
            let (_d, mut ctx) = ctx();
            ctx.sandbox.mode = mode;
            // A background child, one that double-forked into its own session, and a timeout.
            let out = run(
                "bash",
                &json!({"command": "sleep 30.1111 & setsid sh -c 'sleep 30.2222 & :' ; wait", "timeout_s": 1}),
                &ctx,
            );
            assert!(out.text.contains("timed out"), "{mode}: {}", out.text);
            assert_eq!(gone("30.1111"), Vec::<String>::new(), "{mode}");
            assert_eq!(gone("30.2222"), Vec::<String>::new(), "{mode}");
            // Without a timeout: the shell ends at once, its background jobs with it.
            let started = Instant::now();
            let out = run(
                "bash",
                &json!({"command": "sleep 30.3333 & setsid sleep 30.4444 & echo started"}),
                &ctx,
            );
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{mode}: {}",
                out.text
            );
            assert_eq!(out.text, "started\nexit 0", "{mode}");
            assert_eq!(gone("30.3333"), Vec::<String>::new(), "{mode}");
            assert_eq!(gone("30.4444"), Vec::<String>::new(), "{mode}");
        }
    }

    #[test]
    fn output_is_capped_keeping_head_and_tail() {
        let (_d, mut ctx) = ctx();
        ctx.output_cap = 1000;
        let out = run(
            "bash",
            &json!({"command": "echo START; head -c 100000 /dev/zero | tr '\\0' a; echo; echo END"}),
            &ctx,
        );
        assert!(!out.is_error, "{}", &out.text[..100]);
        assert!(out.text.len() < 1200, "{}", out.text.len());
        assert!(out.text.starts_with("START\n"));
        assert!(
            out.text.contains("bytes in the middle not shown"),
            "{}",
            out.text
        );
        assert!(out.text.ends_with("END\nexit 0"), "{}", out.text);
    }

    #[test]
    fn secrets_do_not_reach_the_child() {
        let (_d, mut ctx) = ctx();
        ctx.env.push(("AG_SESSION".into(), "s-123".into()));
        let base = scrub_env(vec![
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ("ANTHROPIC_API_KEY".to_string(), "sk-ant-leak".to_string()),
            ("OPENAI_API_KEY".to_string(), "sk-leak".to_string()),
            ("GITHUB_TOKEN".to_string(), "ghp-leak".to_string()),
            ("KEEP_ME".to_string(), "kept".to_string()),
        ]);
        let map = serde_json::Map::from_iter([("command".to_string(), json!("env"))]);
        let out = run_with_base_env(&Args(&map), &ctx, base).unwrap();
        assert!(!out.is_error, "{}", out.text);
        assert!(!out.text.contains("leak"), "{}", out.text);
        assert!(out.text.contains("KEEP_ME=kept"), "{}", out.text);
        assert!(out.text.contains("AG_SESSION=s-123"), "{}", out.text);
    }

    #[test]
    fn the_real_environment_is_scrubbed_too() {
        // Checks the rule against whatever this process has, without changing it.
        for (k, _) in scrubbed_env() {
            assert!(!is_secret_var(&k), "{k}");
        }
        let (_d, ctx) = ctx();
        let out = run(
            "bash",
            &json!({"command": "echo ${ANTHROPIC_API_KEY-unset}"}),
            &ctx,
        );
        assert_eq!(out.text, "unset\nexit 0");
    }

    #[test]
    fn secret_rule() {
        for k in [
            "ANTHROPIC_API_KEY",
            "openai_api_key",
            "HF_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "MY_SECRET",
            "DB_PASSWORD",
            "PGPASSWORD",
        ] {
            assert!(is_secret_var(k), "{k}");
        }
        for k in [
            "PATH",
            "HOME",
            "AG_SESSION",
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD",
        ] {
            assert!(!is_secret_var(k), "{k}");
        }
    }

    #[test]
    fn bad_arguments() {
        let (_d, ctx) = ctx();
        let out = run("bash", &json!({"command": "true", "timeout_s": -1}), &ctx);
        assert!(
            out.is_error && out.text.contains("timeout_s"),
            "{}",
            out.text
        );
        let out = run("bash", &json!({"command": "  "}), &ctx);
        assert!(out.is_error && out.text.contains("empty"), "{}", out.text);
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(10);
        c.push(b"0123456789");
        assert_eq!(c.render(), "0123456789");
        c.push(b"abcdefghij");
        assert_eq!(
            c.render(),
            "01234\n[output cut: 10 bytes in the middle not shown]\nfghij"
        );
        for b in b"KLMNO" {
            c.push(&[*b]);
        }
        assert!(c.render().ends_with("KLMNO"));
    }
}
