//! Processes: identity (a pid plus its start time, so a recycled pid is never taken for the
//! process that once held it), the one process-group kill, and the process-wide protections
//! every `ag-*` command sets before it starts a tool or a child.

/// The start time of a process (clock ticks since boot, from /proc), or None when it is gone.
#[cfg(target_os = "linux")]
pub(crate) fn start_time(pid: i64) -> Option<i64> {
    if pid <= 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // A zombie (or a dying process) is gone for our purposes, even before its parent reaps it.
    if matches!(rest.split_whitespace().next(), Some("Z" | "X" | "x")) {
        return None;
    }
    // Fields after the name start at field 3 (state); starttime is field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Without /proc there is no start time to read: a process that exists answers 0, the same
/// value this process records for itself, so `alive` says whether the pid exists. A recycled
/// pid then reads as the old owner: a session may stay busy too long, but a second `ag-prompt`
/// never takes over one that is running.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start_time(pid: i64) -> Option<i64> {
    let pid = i32::try_from(pid).ok().filter(|p| *p > 0)?;
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists.then_some(0)
}

/// Whether `pid` is still the process that started at `start`.
pub(crate) fn alive(pid: i64, start: Option<i64>) -> bool {
    match (start_time(pid), start) {
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// This process: (pid, start time).
pub(crate) fn me() -> (i64, Option<i64>) {
    let pid = std::process::id() as i64;
    (pid, start_time(pid))
}

/// The parent process (the shell or script that ran this command): (pid, start time).
pub(crate) fn parent() -> Option<(i64, i64)> {
    // SAFETY: getppid(2) takes nothing and cannot fail.
    let pid = i64::from(unsafe { libc::getppid() });
    Some((pid, start_time(pid)?))
}

/// Send `sig` to the process group `pgid`. Never to group 0 (our own) or 1 ("every process
/// we may signal"): those are refused, and so is a pid that does not fit a `pid_t`.
pub(crate) fn kill_group(pgid: impl TryInto<i32>, sig: i32) -> bool {
    match pgid.try_into() {
        // SAFETY: kill(2) takes two integers and touches no memory of ours.
        Ok(p) if p > 1 => unsafe { libc::kill(-p, sig) == 0 },
        _ => false,
    }
}

/// Whether this process has exactly one thread (Linux: `num_threads`, the 20th field of
/// `/proc/self/stat`, which the kernel makes far more cheaply than `/proc/self/status`);
/// elsewhere `false`, the safe answer for [`crate::secrets::withdraw`].
pub(crate) fn single_threaded() -> bool {
    #[cfg(target_os = "linux")]
    {
        std::fs::read("/proc/self/stat")
            .ok()
            .and_then(|s| {
                // After the command name in parentheses (which may hold anything), the
                // fields count from 3: `num_threads` is the 18th.
                let close = s.iter().rposition(|&b| b == b')')?;
                let threads = s[close + 1..]
                    .split(u8::is_ascii_whitespace)
                    .filter(|f| !f.is_empty())
                    .nth(17)?;
                Some(threads == b"1")
            })
            .unwrap_or(false)
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Make this process non-dumpable: no core file, and another process of the same user (a
/// tool's command) cannot read its memory or `/proc/PID/environ`, where the provider keys
/// it started with still are.
#[cfg(target_os = "linux")]
pub(crate) fn make_undumpable() {
    // SAFETY: prctl(PR_SET_DUMPABLE) takes integers only.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Elsewhere there is no `PR_SET_DUMPABLE`; the keys' protection is Linux's.
#[cfg(not(target_os = "linux"))]
pub(crate) fn make_undumpable() {}

/// Whether fd 1 was closed when the process started (`>&-`). The standard library puts
/// `/dev/null` on a closed standard fd before `main` runs, after which a write to it succeeds
/// silently; so this is looked at earlier, by a constructor that runs before `main`.
pub(crate) fn stdout_closed_at_start() -> bool {
    STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed)
}

static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static LOOK_AT_STDOUT: extern "C" fn() = look_at_stdout;

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
extern "C" fn look_at_stdout() {
    // SAFETY: fcntl(F_GETFD) on an integer fd only reads the descriptor table.
    let closed = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) } == -1;
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the reader of the pipe on `fd` has gone away: `poll` reports an error on a pipe's
/// write end once its read end is closed, before anything is written (as GNU `tail -f` checks).
pub(crate) fn reader_gone(fd: libc::c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
}

/// The process group and start time of a process, from /proc.
fn group_and_start(pid: i64) -> Option<(i64, i64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (3), ppid (4), pgrp (5) … starttime (22).
    Some((fields.get(2)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

/// Kill what is left of a tool's process group that an earlier run recorded (`pgid`, and the
/// start time of its leader): every process still in that group that started no earlier than
/// the leader did, so a recycled group id is left alone. Returns how many were signalled.
pub(crate) fn kill_leftover_group(pgid: i64, leader_start: i64) -> usize {
    if pgid <= 1 {
        return 0;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut killed = 0;
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i64>().ok()) else {
            continue;
        };
        if let Some((group, start)) = group_and_start(pid) {
            if group == pgid
                && start >= leader_start
                // SAFETY: kill(2) takes two integers.
                && unsafe { libc::kill(pid as i32, libc::SIGKILL) } == 0
            {
                killed += 1;
            }
        }
    }
    killed
}

/// Whether this process has a controlling terminal, as a person's shell gives it (a cron job,
/// a CI step or a daemon has none).
pub(crate) fn has_terminal() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .open("/dev/tty")
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_group_refuses_our_group_and_everyone() {
        assert!(!kill_group(0, 0));
        assert!(!kill_group(1, 0));
        assert!(!kill_group(-5, 0));
        assert!(!kill_group(i64::MAX, 0));
    }

    #[test]
    fn a_leftover_group_is_killed_and_a_younger_start_is_required() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id() as i64;
        let start = start_time(pid).unwrap();
        // A group whose leader started later than the process is not the recorded one.
        assert_eq!(kill_leftover_group(pid, start + 1), 0);
        assert_eq!(kill_leftover_group(pid, start), 1);
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_second_thread_makes_the_process_not_single_threaded() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || rx.recv());
        assert!(!single_threaded());
        drop(tx);
        let _ = other.join();
    }

    #[test]
    fn this_process_is_alive_and_a_wrong_start_is_not() {
        let (pid, start) = me();
        assert!(start.is_some());
        assert!(alive(pid, start));
        assert!(!alive(pid, start.map(|s| s + 1)));
        assert!(!alive(i32::MAX as i64, None));
    }
}
