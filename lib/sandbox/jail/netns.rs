//! The user namespace the sandboxed calls of one process share, and the network namespace
//! of the calls without the network.
//!
//! A call without the network must not reach anything outside its command. A new network
//! namespace per call gave that, but making one (and tearing it down) cost more than the rest
//! of the sandbox together: about half a millisecond to clone, bringing `lo` up and the
//! kernel's clean-up after. So the first sandboxed call without the network makes one, owned
//! by a user namespace of its own, and every later call of this process joins both (`setns`)
//! before it makes its per-call mount, PID and IPC namespaces. Calls with the network join a
//! user namespace made the same way, without a network namespace: no id maps to write per
//! call either. The namespace holds only `lo`,
//! up: what a command can reach there is what another command of the same process started in
//! it, and a command cannot start anything that outlives its call (its PID namespace ends
//! with it). Commands of different calls cannot signal, trace or reach each other's abstract
//! sockets either: each call has its own Landlock domain, which scopes all three.
//!
//! The namespaces are kept alive by two descriptors of this process (close-on-exec, and never
//! passed to a command: the call's first process drops them before the jail's init exists),
//! not by a process: the short-lived holder that made them exits at once.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::OnceLock;

use super::child::{self, clone_process};

/// A shared user namespace, and the network namespace it owns (none for calls with the
/// network).
pub(super) struct Shared {
    pub(super) user: OwnedFd,
    pub(super) net: Option<OwnedFd>,
}

impl Shared {
    /// The descriptors to join, -1 for no network namespace.
    pub(super) fn fds(&self) -> [i32; 2] {
        [
            self.user.as_raw_fd(),
            self.net.as_ref().map_or(-1, |f| f.as_raw_fd()),
        ]
    }
}

/// The shared namespaces for calls with or without the `network`, made by the first caller;
/// `None` where they cannot be made (the call then makes its own, and reports why that fails,
/// if it does).
pub(super) fn shared(network: bool) -> Option<&'static Shared> {
    static ISOLATED: OnceLock<Option<Shared>> = OnceLock::new();
    static NETWORK: OnceLock<Option<Shared>> = OnceLock::new();
    let cell = if network { &NETWORK } else { &ISOLATED };
    cell.get_or_init(|| make(network).ok()).as_ref()
}

/// What the holder needs, built before its clone.
pub(super) struct HolderPlan {
    /// Make itself readable while the parent writes its id maps and opens its namespaces.
    pub(super) dumpable: bool,
    /// Bring up `lo` (in the new network namespace).
    pub(super) loopback: bool,
    pub(super) status_w: i32,
    pub(super) sync_r: i32,
    /// The parent's ends of the two pipes, which the clone copied.
    pub(super) parent_ends: [i32; 2],
}

fn make(network: bool) -> io::Result<Shared> {
    let (status_r, status_w) = super::pipe()?;
    let (sync_r, sync_w) = super::pipe()?;
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let plan = HolderPlan {
        dumpable: !root,
        loopback: !network,
        status_w: status_w.as_raw_fd(),
        sync_r: sync_r.as_raw_fd(),
        parent_ends: [status_r.as_raw_fd(), sync_w.as_raw_fd()],
    };
    let net = if network { 0 } else { libc::CLONE_NEWNET };
    // SAFETY: the child runs only `holder_main`, which makes system calls on `plan` and never
    // returns.
    let pid = unsafe { clone_process(libc::CLONE_NEWUSER | net) };
    if pid == 0 {
        // SAFETY: this is the freshly cloned child, as `holder_main` requires.
        unsafe { child::holder_main(&plan) }
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    drop((status_w, sync_r));
    let mut status = File::from(status_r);
    let mut sync = File::from(sync_w);
    let result = (|| {
        let mut tag = [0u8; 1];
        status.read_exact(&mut tag)?;
        if tag[0] != child::MAPS {
            return Err(io::Error::other("the namespace holder ended early"));
        }
        super::write_id_maps(pid)?;
        let open = |ns: &str| File::open(format!("/proc/{pid}/ns/{ns}")).map(OwnedFd::from);
        let shared = Shared {
            user: open("user")?,
            net: if network { None } else { Some(open("net")?) },
        };
        sync.write_all(b"g")?;
        status.read_exact(&mut tag)?;
        if tag[0] != child::READY {
            return Err(io::Error::other("the namespace holder ended early"));
        }
        Ok(shared)
    })();
    drop(sync);
    // SAFETY: reaping our own child, which exits once the sync pipe is closed.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    result
}
