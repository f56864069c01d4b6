//! The code that runs in the jail's own processes: the init (the first process, pid 1 of its
//! PID namespace when sandboxed) and the shell it forks.
//!
//! Both run right after a `clone` of a multi-threaded process, so until `execve` they may
//! only make system calls on data prepared beforehand: no allocation, no locks, no panics.
//! Every function here is a thin sequence of `libc` calls on the [`ChildPlan`]'s buffers.

use std::ffi::{c_char, c_void, CString};

/// How the init reports to the parent on the status pipe: one tag byte, then the payload.
/// `M`: the user namespace exists; write its id maps, then say go on the sync pipe.
pub(super) const MAPS: u8 = b'M';
/// `R`: the shell runs.
pub(super) const READY: u8 = b'R';
/// `E`, the errno (4 bytes, native endian), then what failed (text).
pub(super) const SETUP_FAILED: u8 = b'E';
/// `X`, then the shell's wait status (4 bytes, native endian).
pub(super) const EXITED: u8 = b'X';
/// `J`, then the init's pid (4 bytes, native endian): the call's first process joined the
/// shared namespaces ([`super::netns`]) and started the init beside itself.
pub(super) const JOINED: u8 = b'J';

/// A mount the init makes before the command starts.
pub(super) enum MountOp {
    /// Bind a directory onto itself, so it cannot be renamed or removed.
    Pin(CString),
    /// Bind a path onto itself read-only, keeping the locked flags (`nosuid`, …) it had.
    ReadOnly(CString, libc::c_ulong),
    /// Bind `from` over `to` (the private `/dev/shm`).
    Over(CString, CString),
    /// [`MountOp::ReadOnly`] for a path another session claims; one removed since the call
    /// started is skipped (there is nothing left to protect).
    ClaimedReadOnly(CString, libc::c_ulong),
}

/// Everything the child processes need, built before the clone.
pub(super) struct ChildPlan {
    pub(crate) sandboxed: bool,
    /// The parent is not root: to write our id maps it needs our /proc files owned by its
    /// user, which they are only while we are dumpable.
    pub(crate) dumpable_for_maps: bool,
    pub(crate) network: bool,
    /// The shared user and network namespaces to join first ([`super::enter`]): the init is then
    /// in a user namespace whose id maps are already written.
    pub(crate) join: Option<[i32; 2]>,
    pub(crate) mounts: Vec<MountOp>,
    /// The Landlock ruleset to enforce (-1: none).
    pub(crate) ruleset: i32,
    pub(crate) shell: CString,
    pub(crate) argv: Vec<*const c_char>,
    pub(crate) envp: Vec<*const c_char>,
    pub(crate) cwd: CString,
    /// The init's ends of the pipes, and /dev/null.
    pub(crate) null: i32,
    pub(crate) out_w: i32,
    pub(crate) err_w: i32,
    pub(crate) sync_r: i32,
    /// The parent's end of the sync pipe: the call's first process says go on it
    /// ([`super::enter`]).
    pub(crate) sync_w: i32,
    pub(crate) status_w: i32,
    /// The parent's ends, which the clone copied: closed at once, or the sync pipe would
    /// never report the parent gone.
    pub(crate) parent_ends: [i32; 4],
    /// The signal mask of the thread that starts the call, which the init restores (the
    /// call's first process runs with every signal blocked).
    pub(crate) sigmask: libc::sigset_t,
}

/// A new process from a raw `clone`: glibc's `fork` would take malloc's locks, which another
/// thread of the parent may have held when it was copied.
///
/// # Safety
/// The child may only use async-signal-safe calls until it execs or exits.
pub(super) unsafe fn clone_process(flags: libc::c_int) -> libc::pid_t {
    // SAFETY: a raw clone(2) with no new stack: the child goes on on a copy of this stack, and the
    // caller promises it makes only async-signal-safe calls until it execs or exits.
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        ) as libc::pid_t
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

pub(super) unsafe fn write_all(fd: i32, mut data: &[u8]) {
    // SAFETY: `write` reads at most `data.len()` bytes from a live slice.
    unsafe {
        while !data.is_empty() {
            let n = libc::write(fd, data.as_ptr() as *const c_void, data.len());
            if n <= 0 {
                if n < 0 && errno() == libc::EINTR {
                    continue;
                }
                return;
            }
            data = &data[n as usize..];
        }
    }
}

/// Report a setup failure and end the init.
pub(super) unsafe fn fail(p: &ChildPlan, what: &[u8]) -> ! {
    // SAFETY: `write_all` on the plan's status pipe, then `_exit`: both async-signal-safe.
    unsafe {
        let e = errno().to_ne_bytes();
        write_all(p.status_w, &[SETUP_FAILED, e[0], e[1], e[2], e[3]]);
        write_all(p.status_w, what);
        libc::_exit(125)
    }
}

/// The init: set up the namespace, start the shell, reap, report, and take everything with it
/// when the shell ends or the parent lets go of the sync pipe.
///
/// # Safety
/// Called only in a freshly cloned child; never returns.
pub(super) unsafe fn init_main(p: &ChildPlan) -> ! {
    // SAFETY: runs in the freshly cloned child (the caller's promise). Every call is a system call
    // on the plan's buffers and descriptors, built before the clone and mapped in this copy of the
    // parent's memory; nothing allocates, locks or unwinds.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &p.sigmask, std::ptr::null_mut());
        for fd in p.parent_ends {
            libc::close(fd);
        }
        if p.sandboxed {
            // The namespace dies with its init, and the init with the parent.
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
        }
        // A session of its own: no controlling terminal, so nothing the command runs can open
        // `/dev/tty`, push keystrokes into the user's shell (TIOCSTI) or write escapes past the
        // output's escaping. It also makes the init the leader of the command's process group.
        if libc::setsid() < 0 {
            fail(p, b"starting a new session (setsid)");
        }
        if p.dumpable_for_maps && p.join.is_none() {
            // Our memory is a copy of the parent's, keys and all. Blank the environment block
            // (what /proc/PID/environ shows) before we are readable, and be readable only until
            // the maps are written: no command of ours exists yet.
            scrub_environment();
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        }
        if p.join.is_none() {
            write_all(p.status_w, &[MAPS]);
        }
        // Wait until the parent has written the user namespace's id maps (or, having joined
        // the shared ones, until the call's first process has reported our pid, so that the
        // pid comes first on the status pipe).
        let mut go = 0u8;
        let got = libc::read(p.sync_r, &mut go as *mut u8 as *mut c_void, 1);
        if p.dumpable_for_maps && p.join.is_none() {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        if got != 1 {
            libc::_exit(125);
        }
        if p.sandboxed {
            setup_mounts(p);
            if !p.network && p.join.is_none() {
                loopback_up();
            }
        } else {
            // Orphans of the command come to us, so we can end them with it.
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        if p.ruleset >= 0 {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                fail(p, b"setting no_new_privs");
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, p.ruleset, 0) != 0 {
                fail(p, b"enforcing the Landlock ruleset");
            }
        }
        if p.sandboxed && super::seccomp::install() != 0 {
            fail(p, b"installing the seccomp filter");
        }
        let shell = clone_process(0);
        if shell == 0 {
            shell_main(p);
        }
        if shell < 0 {
            fail(p, b"starting the shell");
        }
        // The output pipes now belong to the shell and what it starts.
        libc::close(p.out_w);
        libc::close(p.err_w);
        libc::close(p.null);
        write_all(p.status_w, &[READY]);
        let status = wait_for(shell, p.sync_r);
        if !p.sandboxed {
            kill_descendants();
        }
        // Stopped by the parent: the shell is (or is about to be) killed by SIGKILL.
        let s = status.unwrap_or(libc::SIGKILL).to_ne_bytes();
        write_all(p.status_w, &[EXITED, s[0], s[1], s[2], s[3]]);
        // When the init of a PID namespace exits, the kernel kills everything left in it.
        libc::_exit(0)
    }
}

/// The holder of the shared namespaces ([`super::netns`]), cloned into them: wait for its id
/// maps, bring `lo` up (in a new network namespace), say so, and exit when the parent closes the sync pipe.
///
/// # Safety
/// Called only in a freshly cloned child; never returns.
pub(super) unsafe fn holder_main(p: &super::netns::HolderPlan) -> ! {
    // SAFETY: system calls on the plan's descriptors and stack buffers, in a freshly cloned
    // child; nothing allocates, locks or unwinds.
    unsafe {
        for fd in p.parent_ends {
            libc::close(fd);
        }
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if p.dumpable {
            scrub_environment();
            libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        }
        write_all(p.status_w, &[MAPS]);
        let mut go = 0u8;
        let got = libc::read(p.sync_r, &mut go as *mut u8 as *mut c_void, 1);
        if p.dumpable {
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        if got != 1 {
            libc::_exit(125);
        }
        if p.loopback {
            loopback_up();
        }
        write_all(p.status_w, &[READY]);
        while libc::read(p.sync_r, &mut go as *mut u8 as *mut c_void, 1) > 0 {}
        libc::_exit(0)
    }
}

/// Zero this process's environment block (`env_start..env_end` from /proc/self/stat).
unsafe fn scrub_environment() {
    // SAFETY: reads /proc/self/stat into a stack buffer; the environment block's bounds come from
    // the kernel and are checked, and zeroing it touches only this process's copy of its own
    // environment, which nothing reads again.
    unsafe {
        let mut buf = [0u8; 4096];
        let fd = libc::open(
            c"/proc/self/stat".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return;
        }
        let n = libc::read(fd, buf.as_mut_ptr() as *mut c_void, buf.len());
        libc::close(fd);
        if n <= 0 {
            return;
        }
        let stat = &buf[..n as usize];
        let Some(close) = stat.iter().rposition(|&b| b == b')') else {
            return;
        };
        // After the name, fields count from 3 (state); env_start and env_end are fields 50, 51.
        let (mut start, mut end) = (0usize, 0usize);
        for (i, field) in stat[close + 1..]
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty())
            .enumerate()
        {
            let value = field.iter().try_fold(0usize, |acc, &b| {
                b.is_ascii_digit()
                    .then(|| acc.wrapping_mul(10).wrapping_add((b - b'0') as usize))
            });
            match (i, value) {
                (47, Some(v)) => start = v,
                (48, Some(v)) => end = v,
                _ => {}
            }
        }
        if start > 0 && end > start && end - start < (1 << 24) {
            std::ptr::write_bytes(start as *mut u8, 0, end - start);
        }
    }
}

unsafe fn setup_mounts(p: &ChildPlan) {
    // SAFETY: mount(2) on NUL-terminated paths from the plan (alive in this copy of the parent's
    // memory) and on static C strings.
    unsafe {
        let none: *const c_char = std::ptr::null();
        let root = c"/";
        if libc::mount(
            none,
            root.as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            fail(p, b"making the mount namespace private");
        }
        for op in &p.mounts {
            match op {
                MountOp::Pin(path) => {
                    if bind(path, path) != 0 {
                        fail(p, path.as_bytes());
                    }
                }
                MountOp::ReadOnly(path, locked) => {
                    let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | locked;
                    if bind(path, path) != 0
                        || libc::mount(none, path.as_ptr(), none, flags, std::ptr::null()) != 0
                    {
                        fail(p, path.as_bytes());
                    }
                }
                MountOp::ClaimedReadOnly(path, locked) => {
                    if bind(path, path) != 0 {
                        if *libc::__errno_location() == libc::ENOENT {
                            continue;
                        }
                        fail(p, path.as_bytes());
                    }
                    let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | locked;
                    if libc::mount(none, path.as_ptr(), none, flags, std::ptr::null()) != 0 {
                        fail(p, path.as_bytes());
                    }
                }
                MountOp::Over(from, to) => {
                    if bind(from, to) != 0 {
                        fail(p, to.as_bytes());
                    }
                }
            }
        }
        // A /proc of this PID namespace: the command sees only its own processes. Some container
        // runtimes forbid it; the namespace still hides the rest from signals, so go on.
        let proc_ = c"/proc";
        libc::mount(
            c"proc".as_ptr(),
            proc_.as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        );
    }
}

unsafe fn bind(from: &CString, to: &CString) -> i32 {
    // SAFETY: mount(2) with two NUL-terminated paths the caller keeps alive.
    unsafe {
        libc::mount(
            from.as_ptr(),
            to.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    }
}

/// Bring up `lo` in the new network namespace, so a command can talk to a server it started
/// itself. Best effort: without it loopback fails like any other network.
unsafe fn loopback_up() {
    // SAFETY: ioctl(2) on a socket of our own, with a zeroed `ifreq` whose name is written within
    // its bounds.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return;
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            req.ifr_name[i] = *b as c_char;
        }
        if libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req) == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(sock, libc::SIOCSIFFLAGS, &mut req);
        }
        libc::close(sock);
    }
}

/// Wait until the shell ends (its wait status) or the parent closes the sync pipe (`None`),
/// reaping every orphan that comes to us meanwhile.
unsafe fn wait_for(shell: libc::pid_t, sync_r: i32) -> Option<i32> {
    // SAFETY: waitpid(2) and poll(2) on values on this stack and descriptors this process owns.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, shell, 0) as i32;
        loop {
            loop {
                let mut st = 0;
                let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if r == shell {
                    return Some(st);
                }
                if r <= 0 {
                    break;
                }
            }
            let mut fds = [
                libc::pollfd {
                    fd: sync_r,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // Without pidfds (before Linux 5.3), look again every few milliseconds.
            let (n, timeout) = if pidfd >= 0 { (2, 1000) } else { (1, 5) };
            if libc::poll(fds.as_mut_ptr(), n, timeout) > 0 && fds[0].revents != 0 {
                return None;
            }
        }
    }
}

/// Without a PID namespace: kill every process left under us (we are their subreaper, so
/// each orphan becomes our child), until none is left.
unsafe fn kill_descendants() {
    // SAFETY: reads /proc into a stack buffer, and signals and reaps only this process's own
    // children.
    unsafe {
        let path = c"/proc/thread-self/children";
        let mut buf = [0u8; 4096];
        loop {
            let mut killed = 0;
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                // No way to list them: reap what has already ended and leave.
                while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
                return;
            }
            loop {
                let n = libc::read(fd, buf.as_mut_ptr() as *mut c_void, buf.len());
                if n <= 0 {
                    break;
                }
                let mut pid: i32 = 0;
                for &b in &buf[..n as usize] {
                    if b.is_ascii_digit() {
                        pid = pid.saturating_mul(10).saturating_add((b - b'0') as i32);
                    } else {
                        if pid > 1 {
                            libc::kill(pid, libc::SIGKILL);
                            killed += 1;
                        }
                        pid = 0;
                    }
                }
                if pid > 1 {
                    libc::kill(pid, libc::SIGKILL);
                    killed += 1;
                }
            }
            libc::close(fd);
            let flags = if killed > 0 { 0 } else { libc::WNOHANG };
            let r = libc::waitpid(-1, std::ptr::null_mut(), flags);
            if r < 0 {
                return; // ECHILD: nothing is left.
            }
            if r == 0 {
                libc::sched_yield();
            }
        }
    }
}

/// The shell: standard streams, default signals, the workspace, no inherited descriptors,
/// then `execve`.
unsafe fn shell_main(p: &ChildPlan) -> ! {
    // SAFETY: in the cloned shell: dup2, signal, chdir, close_range and execve on the plan's
    // descriptors and NUL-terminated arrays, built before the clone and mapped in this copy of
    // memory.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        libc::dup2(p.null, 0);
        libc::dup2(p.out_w, 1);
        libc::dup2(p.err_w, 2);
        // The parent ignores SIGPIPE (Rust does); an ignored signal stays ignored across exec, and
        // `yes | head` would then print errors instead of ending quietly.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        if libc::chdir(p.cwd.as_ptr()) != 0 {
            write_all(2, b"ag: cannot enter the session's directory\n");
            libc::_exit(126);
        }
        // Nothing but the three streams reaches the command, whatever the parent left open.
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        libc::execve(p.shell.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
        write_all(2, b"ag: cannot start the shell\n");
        libc::_exit(127)
    }
}
