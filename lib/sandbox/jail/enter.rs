//! The call's first process when the shared namespaces exist ([`super::netns`]): it joins
//! them and clones the init beside itself.
//!
//! It shares this process's memory (`CLONE_VM`, with `CLONE_VFORK`: the calling thread waits
//! until it exits), as `posix_spawn` does, so starting it copies no page tables and its exit
//! frees none: it runs on a stack of its own, with every signal blocked (a handler of this
//! process must not run in it), and makes only system calls on the plan until it exits. The
//! init it clones gets a copy of the memory, as an init cloned directly does. Joining a user
//! namespace needs a process of one thread with a filesystem context of its own; sharing
//! memory is allowed.

use std::ffi::c_void;

use super::child::{clone_process, fail, init_main, write_all, ChildPlan, JOINED};

/// The stack the process runs on; the init runs on its copy too.
const STACK: usize = 256 * 1024;

struct Enter<'a> {
    plan: &'a ChildPlan,
    fds: [i32; 2],
}

/// Start the call's first process, which joins the namespaces `fds` (user, network or -1) and
/// starts the init; returns once it has exited (its pid, to reap), or -1.
///
/// # Safety
/// `plan` must be complete: the child and the init use it as they find it.
pub(super) unsafe fn spawn(plan: &ChildPlan, fds: [i32; 2]) -> libc::pid_t {
    // SAFETY: a private anonymous mapping is fresh memory; its lowest page becomes a guard.
    // Blocking signals and restoring them touches only this thread's mask. The child runs
    // `main` on that stack and exits before `clone` returns here (CLONE_VFORK), so `args` and
    // the stack outlive it.
    unsafe {
        // SAFETY: sysconf cannot fail for the page size.
        let page = libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize;
        let mem = libc::mmap(
            std::ptr::null_mut(),
            STACK + page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        );
        if mem == libc::MAP_FAILED {
            return -1;
        }
        libc::mprotect(mem, page, libc::PROT_NONE);
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let args = Enter { plan, fds };
        let top = (mem as *mut u8).add(STACK + page) as *mut c_void;
        let pid = libc::clone(
            main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &args as *const Enter<'_> as *mut c_void,
        );
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        libc::munmap(mem, STACK + page);
        pid
    }
}

/// This thread's signal mask.
pub(super) fn current_sigmask() -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is a valid value to be filled; pthread_sigmask with no new
    // set only reads this thread's mask into it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set);
        set
    }
}

/// Join the namespaces (no network namespace when `net` is -1), clone the init (in new mount,
/// PID and IPC namespaces) as a child of the parent, report its pid, tell the init to go on,
/// and exit.
extern "C" fn main(args: *mut c_void) -> libc::c_int {
    // SAFETY: `args` is the `Enter` that `spawn` keeps alive until this process exits. Every
    // call is a system call on the plan's descriptors; nothing allocates, locks or unwinds.
    unsafe {
        let Enter {
            plan: p,
            fds: [user, net],
        } = *(args as *const Enter<'_>);
        if libc::setns(user, libc::CLONE_NEWUSER) != 0 {
            fail(p, b"joining the sandbox's user namespace");
        }
        if net >= 0 && libc::setns(net, libc::CLONE_NEWNET) != 0 {
            fail(p, b"joining the sandbox's network namespace");
        }
        // Nothing started from here on holds the namespaces' descriptors.
        libc::close(user);
        if net >= 0 {
            libc::close(net);
        }
        let flags =
            libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_PARENT;
        let init = clone_process(flags);
        if init == 0 {
            init_main(p);
        }
        if init < 0 {
            fail(p, b"starting the sandbox's init");
        }
        let b = init.to_ne_bytes();
        write_all(p.status_w, &[JOINED, b[0], b[1], b[2], b[3]]);
        // The init may go on: its pid is on the status pipe before anything it reports. The
        // parent need not take part, and reaps this process later.
        write_all(p.sync_w, b"g");
        libc::_exit(0)
    }
}
