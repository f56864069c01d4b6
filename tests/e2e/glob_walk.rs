//! `glob` walks on directory handles (issue #11): a directory swapped for a symlink while the
//! walk runs never shows a name from outside the session's directory.

use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::prompt::{env_with, script, session_id};
use crate::trust::{results, Swapper};

fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// The swap at a chosen moment: `a/.ignore` is a FIFO, so a walk that opens it blocks there
/// until this test opens the other end. `a` sorts before `d`, so a walk by path (the `ignore`
/// crate's) has listed the top directory — `d` as a directory — but not yet read `d`; the test
/// then swaps `d` for a link to a directory outside, and lets the walk go on. A walk on
/// handles opens `.ignore` without waiting (and skips it: not a regular file) and never reads
/// through the link, whenever the swap lands.
#[test]
fn a_directory_swapped_for_a_link_mid_walk_shows_glob_no_outside_names() {
    let env = env_with(None, "");
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret-name.txt"), "").unwrap();
    env.write_file("a/x.txt", "");
    env.write_file("d/inside.txt", "");
    mkfifo(&env.cwd.join("a/.ignore"));
    let model = script(
        &env,
        "glob.toml",
        "[[step]]\ntool_calls = [{ name = \"glob\", arguments = { pattern = \"**/*.txt\" } }]\n\
         [[step]]\ntext = \"done\"\n",
    );
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, fifo, d, real) = (
            stop.clone(),
            env.cwd.join("a/.ignore"),
            env.cwd.join("d"),
            env.cwd.join("d.real"),
        );
        let outside = outside.clone();
        std::thread::spawn(move || {
            let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                // Opening the writing end without blocking succeeds only while a reader has
                // the FIFO open: the walk is there.
                // SAFETY: a NUL-terminated path; the descriptor is closed below.
                let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK) };
                if fd >= 0 {
                    std::fs::rename(&d, &real).unwrap();
                    std::os::unix::fs::symlink(&outside, &d).unwrap();
                    // SAFETY: our descriptor, closed once: the reader sees end of file.
                    unsafe { libc::close(fd) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let run = env
        .run("ag-prompt", &["-m", &model, "--tools", "glob", "list"])
        .ok();
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let out = results(&env, &session_id(&run));
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        !out[0].contains("secret-name"),
        "glob listed outside: {}",
        out[0]
    );
    assert!(out[0].contains("a/x.txt"), "{}", out[0]);
    assert!(
        out[0].contains("d/inside.txt") || out[0].contains("replaced by a link"),
        "{}",
        out[0]
    );
}

/// Many walks while `d` flips between a directory and a link to `outside`.
#[test]
fn a_symlink_swapped_in_while_glob_runs_never_lists_outside() {
    let env = env_with(None, "");
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret-name.txt"), "").unwrap();
    env.write_file("d/inside.txt", "");
    let calls = "  { name = \"glob\", arguments = { pattern = \"**/*.txt\" } },\n".repeat(200);
    let model = script(
        &env,
        "glob-race.toml",
        &format!("[[step]]\ntool_calls = [\n{calls}]\n[[step]]\ntext = \"done\"\n"),
    );
    let swapper = Swapper::start(&env.cwd, &outside);
    let run = env
        .run("ag-prompt", &["-m", &model, "--tools", "glob", "race"])
        .ok();
    swapper.stop();
    let out = results(&env, &session_id(&run));
    assert_eq!(out.len(), 200, "every call answered");
    assert!(
        !out.iter().any(|r| r.contains("secret-name")),
        "glob listed outside: {:?}",
        out.iter().find(|r| r.contains("secret-name"))
    );
}
