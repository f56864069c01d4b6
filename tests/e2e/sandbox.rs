//! The `bash` sandbox end to end, on this machine's kernel: what a command may write, the
//! network, the read-only git hooks and config, the parent's environment (also as `nobody`,
//! the path users get), what still works inside, the modes and who may change them, and a
//! kernel without support. Each test scripts its commands with the offline `script:` model.
//! The lifetime of the processes a command starts is in `sandbox_procs.rs`.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use crate::prompt::{env_with, of_type, script, session_id};
use crate::support::{Run, TestEnv};

/// A script that runs each command with `bash`, one step each, then says "done".
pub(crate) fn bash_model(env: &TestEnv, name: &str, commands: &[&str]) -> String {
    let mut toml = String::new();
    for c in commands {
        let arg = serde_json::to_string(c).unwrap();
        toml.push_str(&format!(
            "[[step]]\ntool_calls = [{{ name = \"bash\", arguments = {{ command = {arg} }} }}]\n"
        ));
    }
    toml.push_str("[[step]]\ntext = \"done\"\n");
    script(env, name, &toml)
}

/// The text and error flag of each tool result of a session.
pub(crate) fn results(env: &TestEnv, id: &str) -> Vec<(String, bool)> {
    of_type(&env.chunks(id), Some("tool"), "tool_result")
        .iter()
        .map(|r| {
            (
                r["data"]["result"].as_str().unwrap_or_default().to_string(),
                r["data"]["is_error"] == true,
            )
        })
        .collect()
}

/// Run `commands` through `ag-prompt --tools bash` plus `extra`; the run and its results.
pub(crate) fn run_bash(
    env: &TestEnv,
    commands: &[&str],
    extra: &[&str],
) -> (Run, Vec<(String, bool)>) {
    let model = bash_model(env, "bash.toml", commands);
    let mut args = vec!["-m", model.as_str(), "--tools", "bash"];
    args.extend_from_slice(extra);
    args.push("go");
    let run = env.run("ag-prompt", &args).ok();
    let id = session_id(&run);
    let r = results(env, &id);
    assert_eq!(r.len(), commands.len(), "{r:?}\n{}", run.stderr);
    (run, r)
}

pub(crate) fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

#[test]
fn sandbox_workspace_write_keeps_writes_in_the_workspace() {
    let env = env_with(None, "");
    let outside = env.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let evil = outside.join("evil.txt");
    let write_outside = format!("echo owned > {}", evil.display());
    let (_, r) = run_bash(
        &env,
        &[
            "echo hi > inside.txt && cat inside.txt",
            &write_outside,
            "echo $TMPDIR > tmpdir.txt && echo scratch > $TMPDIR/s && cat $TMPDIR/s",
            "touch /tmp/ag-sandbox-e2e-escape",
        ],
        &[],
    );
    assert_eq!(r[0], ("hi\nexit 0".into(), false));
    assert!(r[1].1, "{}", r[1].0);
    assert!(r[1].0.contains("Permission denied"), "{}", r[1].0);
    assert!(!evil.exists(), "a write outside the workspace landed");
    assert_eq!(r[2], ("scratch\nexit 0".into(), false));
    let tmp = std::fs::read_to_string(env.cwd.join("tmpdir.txt")).unwrap();
    assert!(
        !Path::new(tmp.trim()).exists(),
        "the private TMPDIR {tmp} is removed after the call"
    );
    assert!(r[3].1, "{}", r[3].0);
    assert!(!Path::new("/tmp/ag-sandbox-e2e-escape").exists());
}

#[test]
fn sandbox_keeps_git_hooks_and_config_read_only_while_git_commit_works() {
    let env = env_with(None, "");
    git(&env.cwd, &["init", "-q"]);
    std::fs::create_dir_all(env.cwd.join(".claude")).unwrap();
    env.write_file("a.txt", "one\n");
    let hooks_before = std::fs::read_dir(env.cwd.join(".git/hooks"))
        .unwrap()
        .count();
    let config_before = std::fs::read_to_string(env.cwd.join(".git/config")).unwrap();
    let (_, r) = run_bash(
        &env,
        &[
            "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit",
            "git config core.fsmonitor 'touch /tmp/pwned'",
            "echo '{}' > .claude/settings.json",
            "mv .git .git-moved",
            "umount .git/hooks || mount -o remount,rw .git/hooks || touch .git/hooks/x",
            "mkdir -p .ag && echo 'model = \"evil/x\"' > .ag/config.toml && echo made",
            "export GIT_CONFIG_NOSYSTEM=1 HOME=$TMPDIR; git status --short && git add a.txt && \
             git -c user.name=t -c user.email=t@e commit -qm first && git log --oneline | wc -l",
            "echo two >> a.txt && git diff --stat | tail -1",
        ],
        &[],
    );
    for (i, what) in [
        (0, "hooks"),
        (1, "config"),
        (2, ".claude"),
        (3, "rename of .git"),
        (4, "unmounting or remounting the hooks"),
    ] {
        assert!(r[i].1, "{what}: {}", r[i].0);
    }
    assert!(r[0].0.contains("Read-only file system"), "{}", r[0].0);
    assert_eq!(
        std::fs::read_dir(env.cwd.join(".git/hooks"))
            .unwrap()
            .count(),
        hooks_before
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!env.cwd.join(".claude/settings.json").exists());
    assert!(env.cwd.join(".git").is_dir() && !env.cwd.join(".git-moved").exists());
    // A protected path the command created is removed when it ends, and the result says so.
    assert!(r[5].0.contains("made"), "{}", r[5].0);
    assert!(
        r[5].0
            .contains(".ag, which the sandbox keeps read-only; it was removed"),
        "{}",
        r[5].0
    );
    assert!(!env.cwd.join(".ag").exists());
    assert_eq!(r[6], ("?? a.txt\n1\nexit 0".into(), false), "{}", r[6].0);
    assert!(r[7].0.contains("1 file changed"), "{}", r[7].0);
}

#[test]
fn sandbox_read_only_refuses_workspace_writes() {
    let env = env_with(None, "");
    let (run, r) = run_bash(
        &env,
        &[
            "touch made.txt",
            "echo ok > $TMPDIR/x && cat $TMPDIR/x && ls",
        ],
        &["--sandbox", "read-only"],
    );
    assert!(r[0].1 && r[0].0.contains("Permission denied"), "{}", r[0].0);
    assert!(!env.cwd.join("made.txt").exists());
    assert_eq!(
        r[1],
        ("ok\nexit 0".into(), false),
        "reads still work: {}",
        r[1].0
    );
    let id = session_id(&run);
    let show = env.log(&["show", &id]).ok();
    assert!(
        show.stdout.contains("sandbox   read-only, no network"),
        "{}",
        show.stdout
    );
}

/// A loopback port of the test's own that takes connections for as long as the listener is
/// held: the kernel completes a connection into the backlog without an `accept`, so no
/// thread and no deadline that a slow run could outlast.
fn listener() -> (u16, TcpListener) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    (l.local_addr().unwrap().port(), l)
}

#[test]
fn sandbox_network_is_off_unless_the_user_allows_it() {
    let env = env_with(None, "");
    let (port, server) = listener();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let (_, r) = run_bash(&env, &[&connect], &[]);
    assert!(r[0].1, "{}", r[0].0);
    assert!(!r[0].0.contains("connected"), "{}", r[0].0);
    let (_, r) = run_bash(&env, &[&connect], &["--net"]);
    assert_eq!(r[0], ("connected\nexit 0".into(), false));
    drop(server);

    // The same from the user config; a project file cannot turn it on.
    let env = env_with(None, "[sandbox]\nnetwork = true\n");
    let (port, server) = listener();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let (_, r) = run_bash(&env, &[&connect], &[]);
    assert_eq!(r[0], ("connected\nexit 0".into(), false));
    drop(server);
    let env = env_with(None, "");
    env.write_file(
        ".ag/config.toml",
        "[sandbox]\nnetwork = true\nmode = \"off\"\n",
    );
    let (port, _server) = listener();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let (run, r) = run_bash(&env, &[&connect], &[]);
    assert!(r[0].1 && !r[0].0.contains("connected"), "{}", r[0].0);
    assert!(
        run.stderr.contains("sandbox.network = true is ignored"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("cannot loosen the sandbox"),
        "{}",
        run.stderr
    );
}

/// Without `--net`, the calls of one run share one network namespace that is not the
/// machine's (made once, for speed), with `lo` up: a server a command starts on loopback
/// answers it. With `--net` a command is in the machine's.
#[test]
fn sandbox_calls_share_one_network_namespace_of_their_own() {
    let env = env_with(None, "");
    let host = std::fs::read_link("/proc/self/ns/net").unwrap();
    let host = host.to_string_lossy();
    let ns = "readlink /proc/self/ns/net";
    let serve = "python3 -c 'import socket; s = socket.create_server((\"127.0.0.1\", 0)); \
        socket.create_connection(s.getsockname()); print(\"lo up\")'";
    let (_, r) = run_bash(&env, &[ns, ns, serve], &["--sandbox", "read-only"]);
    assert!(r[0].0.starts_with("net:["), "{r:?}");
    assert_eq!(r[0], r[1], "two calls, two namespaces");
    assert!(!r[0].0.contains(&*host), "{r:?} is the machine's {host}");
    assert_eq!(r[2], ("lo up\nexit 0".into(), false));
    let (_, r) = run_bash(&env, &[ns], &["--net"]);
    assert_eq!(r[0], (format!("{host}\nexit 0"), false));
}

#[test]
fn sandbox_python_pipes_and_cargo_build_work_inside() {
    let env = env_with(None, "");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let bin_dir = Path::new(&cargo).parent().unwrap().display().to_string();
    let cargo_home = env.dir.path().join("cargo-home");
    std::fs::create_dir(&cargo_home).unwrap();
    let config = env.dir.path().join("config/ag/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text = format!(
        "[sandbox]\nwritable = [\"{}\"]\n{text}",
        cargo_home.display()
    );
    std::fs::write(&config, text).unwrap();
    env.write_file(
        "script.py",
        "import multiprocessing, sys\nlock = multiprocessing.Lock()\nwith lock:\n    print(sum(range(10)), sys.argv[1])\n",
    );
    env.write_file(
        "crate/Cargo.toml",
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    env.write_file("crate/src/main.rs", "fn main() { println!(\"built\"); }\n");
    let build = format!(
        "cd crate && CARGO_HOME={} PATH={bin_dir}:$PATH cargo build -q --offline && ./target/debug/tiny",
        cargo_home.display()
    );
    let (_, r) = run_bash(
        &env,
        &[
            "python3 script.py ok",
            "seq 1 1000 | grep 7 | sort -r | head -2",
            &build,
        ],
        &[],
    );
    assert_eq!(r[0], ("45 ok\nexit 0".into(), false), "{}", r[0].0);
    assert_eq!(r[1], ("997\n987\nexit 0".into(), false), "{}", r[1].0);
    assert_eq!(r[2], ("built\nexit 0".into(), false), "{}", r[2].0);
}

#[test]
fn sandbox_modes_bind_follow_ups_forks_and_definitions() {
    // The user chose read-only; a definition asking for `off` does not loosen it.
    let env = env_with(None, "[sandbox]\nmode = \"read-only\"\n");
    let agents = env.dir.path().join("config/ag/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("loose.toml"),
        "description = \"asks for no sandbox\"\ntools = [\"bash\"]\nsandbox = \"off\"\n",
    )
    .unwrap();
    // Two turns' worth: the script answers by the number of assistant messages so far.
    let model = script(
        &env,
        "touch.toml",
        &"[[step]]\ntool_calls = [{ name = \"bash\", arguments = { command = \"touch made.txt\" } }]\n[[step]]\ntext = \"done\"\n".repeat(2),
    );
    let run = env
        .run(
            "ag-prompt",
            &["-m", &model, "--agent", "loose", "--json", "go"],
        )
        .ok();
    let events = run.json_lines();
    assert_eq!(events[0]["type"], "session");
    assert_eq!(events[0]["sandbox"]["mode"], "read-only");
    assert!(!env.cwd.join("made.txt").exists());
    let id = events[0]["session"].as_str().unwrap().to_string();

    // A follow-up keeps it, cannot loosen it, and a fork carries it.
    let run = env
        .run("ag-prompt", &["-m", &model, "-s", &id, "again"])
        .ok();
    assert!(results(&env, &id)[1].1, "{}", run.stderr);
    assert!(!env.cwd.join("made.txt").exists());
    let run = env
        .run(
            "ag-prompt",
            &["-m", &model, "-s", &id, "--sandbox", "off", "x"],
        )
        .code(2);
    assert!(run.stderr.contains("would loosen it"), "{}", run.stderr);
    let child = env.run("ag-fork", &[&id]).ok().stdout.trim().to_string();
    let show = env.log(&["show", &child, "--json"]).ok().json();
    assert_eq!(show["sandbox"]["mode"], "read-only", "{show}");
}

#[test]
fn sandbox_off_says_so_and_an_unsupported_kernel_refuses_bash() {
    let mut env = env_with(None, "");
    env.set("AG_TEST_SANDBOX_UNSUPPORTED", "1");
    let (run, r) = run_bash(&env, &["touch ran.txt"], &[]);
    assert!(r[0].1, "{}", r[0].0);
    for needle in [
        "bash was not run",
        "workspace-write",
        "Landlock",
        "--sandbox off",
        "mode = \"off\"",
    ] {
        assert!(r[0].0.contains(needle), "{needle}: {}", r[0].0);
    }
    assert!(!env.cwd.join("ran.txt").exists(), "it ran unconfined");
    assert!(!run.stderr.contains("sandbox: off"));
    // A setup step that fails inside the new namespaces is refused the same way.
    env.set("AG_TEST_SANDBOX_UNSUPPORTED", "mount");
    let (_, r) = run_bash(&env, &["touch ran.txt"], &[]);
    assert!(r[0].1, "{}", r[0].0);
    assert!(
        r[0].0
            .contains("setting up the sandbox failed at /nonexistent/ag-simulated-mount"),
        "{}",
        r[0].0
    );
    assert!(!env.cwd.join("ran.txt").exists(), "it ran unconfined");
    // Off is the user's explicit choice, said on stderr at the start of the run.
    let (run, r) = run_bash(&env, &["touch ran.txt"], &["--sandbox", "off"]);
    assert_eq!(r[0], ("(no output)\nexit 0".into(), false));
    assert!(run.stderr.contains("sandbox: off"), "{}", run.stderr);
    assert!(env.cwd.join("ran.txt").exists());
}

/// `cmd` run as `nobody` when the tests run as root (the path users get), else as is.
fn as_user(env: &TestEnv, mut cmd: Command) -> Option<Command> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(cmd);
    }
    if !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("setpriv missing: the unprivileged run is not tested here");
        return None;
    }
    let chown = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(env.dir.path())
        .status()
        .unwrap();
    assert!(chown.success());
    let mut wrapped = Command::new("/usr/bin/setpriv");
    wrapped.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
    wrapped.arg(cmd.get_program()).args(cmd.get_args());
    wrapped.env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            wrapped.env(k, v);
        }
    }
    wrapped.current_dir(&env.cwd);
    cmd = wrapped;
    Some(cmd)
}

#[test]
fn sandbox_the_parent_environment_cannot_be_read_and_it_works_unprivileged() {
    const CANARY: &str = "canary-7d1e5a0b9c";
    let mut env = env_with(None, "");
    env.set("AG_CANARY_TOKEN", CANARY);
    // Every visible process's environment; a control proves environments can be read. The
    // scan waits (up to 20 s) until the control has exec'd with its variable: under load the
    // scan could otherwise run between its fork and its exec and miss it.
    let scan = "CTRL=visible-3f2a sleep 60 & c=$!; \
        for i in $(seq 400); do tr '\\0' '\\n' < /proc/$c/environ 2>/dev/null | grep -q visible-3f2a && break; sleep 0.05; done; \
        for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null | grep -c -e canary-7d1e -e visible-3f2a; kill $c";
    let escape = env.dir.path().join("escaped");
    let write = format!("touch inside && touch {}", escape.display());
    let model = bash_model(&env, "scan.toml", &[scan, &write]);
    std::fs::set_permissions(
        env.dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    for mode in ["workspace-write", "off"] {
        let mut cmd = env.command("ag-prompt");
        cmd.args(["-m", &model, "--tools", "bash", "--sandbox", mode, "go"]);
        let Some(mut cmd) = as_user(&env, cmd) else {
            return;
        };
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {stderr}");
        let id = crate::prompt::session_of(&stderr).unwrap();
        let r = results(&env, &id);
        // Only the control: the parent's canary (and everything ag-prompt holds) stays hidden.
        assert_eq!(r[0].0, "1\nexit 0", "{mode}: {}", r[0].0);
        if mode == "workspace-write" {
            assert!(r[1].1, "{}", r[1].0);
            assert!(r[1].0.contains("Permission denied"), "{}", r[1].0);
            assert!(env.cwd.join("inside").exists());
            assert!(!escape.exists(), "a write outside the workspace landed");
        }
    }
}

#[test]
fn sandbox_a_summoned_child_never_loosens_its_parents_mode() {
    let env = env_with(None, "");
    env.write_file(
        ".ag/scripts/child.toml",
        "[[step]]\ntext = \"child done\"\n",
    );
    env.write_file(
        ".ag/agents/loose.toml",
        "is_subagent = true\ntools = [\"bash\"]\nsandbox = \"off\"\nmodels = [\"script:../scripts/child.toml\"]\n",
    );
    env.write_file(
        ".ag/agents/tight.toml",
        "is_subagent = true\ntools = [\"bash\"]\nsandbox = \"read-only\"\nmodels = [\"script:../scripts/child.toml\"]\n",
    );
    let parent = script(
        &env,
        "parent.toml",
        "[[step]]\ntool_calls = [{name = \"summon\", arguments = {agent = \"loose\", task = \"a\"}}]\n\
         [[step]]\ntool_calls = [{name = \"summon\", arguments = {agent = \"tight\", task = \"b\"}}]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let run = env
        .run(
            "ag-prompt",
            &["-m", &parent, "--tools", "bash,summon", "go"],
        )
        .ok();
    let id = session_id(&run);
    let kids = env
        .run("ag-summon", &["ps", "--parent", &id, "--json"])
        .ok();
    let mut modes: Vec<String> = kids
        .json_lines()
        .iter()
        .map(|k| {
            let show = env
                .log(&["show", k["id"].as_str().unwrap(), "--json"])
                .ok()
                .json();
            format!(
                "{}:{}",
                k["agent"].as_str().unwrap(),
                show["sandbox"]["mode"].as_str().unwrap()
            )
        })
        .collect();
    modes.sort();
    assert_eq!(modes, ["loose:workspace-write", "tight:read-only"]);
}
