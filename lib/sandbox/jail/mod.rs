//! The jail: start `SHELL -c COMMAND` under a session's sandbox settings and own the lifetime
//! of everything it starts.
//!
//! Process tree: this process → an init → the shell → whatever the command starts. The init
//! leads the process group the store records, and:
//!
//! - sandboxed (`workspace-write`, `read-only`): it is pid 1 of new mount, PID and IPC
//!   namespaces, in a user namespace this process made for its calls and, without the
//!   network, in the network namespace made with it ([`netns`]: only `lo`, so nothing outside
//!   the command answers). The call's first process joins those two and clones the init
//!   beside itself (`CLONE_PARENT`): the init is this process's child. Where they could not
//!   be made, the init is cloned into new user (and network) namespaces of its own. It bind-mounts the protected paths
//!   read-only ([`super::protect`]), mounts a /proc of its own, enforces the Landlock
//!   ruleset built here (reads anywhere, writes only where the mode allows), and starts the
//!   shell. When the init exits, the kernel kills every process left in its namespace: a
//!   command cannot leave anything running, whether it forked, double-forked or `setsid`.
//! - `off`: no namespaces; the init is a child subreaper, so orphans of the command come to
//!   it, and it kills them all when the shell ends.
//!
//! The init ends the command when the shell exits, or when this process closes the sync pipe
//! (timeout, interrupt) or dies (`kill -9`): the pipe closes with it. A sandboxed init also
//! has `PR_SET_PDEATHSIG`.

mod child;
mod enter;
mod netns;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod seccomp;
mod tmp;

/// Elsewhere the filter is not available; the command still has no controlling terminal.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod seccomp {
    pub(super) unsafe fn install() -> i32 {
        0
    }
}

pub(crate) use tmp::sweep_once as sweep_stale_temp_dirs;

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use super::protect::Protected;
use super::{Mode, Settings};
use child::{ChildPlan, MountOp};

/// Set only by tests: `mount` makes the init's setup fail (a mount that cannot be made),
/// anything else behaves as on a kernel without Landlock.
pub(crate) const SIMULATE_UNSUPPORTED_ENV: &str = "AG_TEST_SANDBOX_UNSUPPORTED";

/// What a test asked [`SIMULATE_UNSUPPORTED_ENV`] to simulate.
fn simulated() -> Option<String> {
    std::env::var_os(SIMULATE_UNSUPPORTED_ENV).map(|v| v.to_string_lossy().into_owned())
}

/// How long a stopped init gets to end the command before its group is killed outright.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Device files any command may write: `2>/dev/null` must work in every mode.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

#[derive(Debug, thiserror::Error)]
pub(crate) enum JailError {
    #[error("the sandbox ({mode}) cannot be enforced on this system: {why}")]
    Unsupported { mode: Mode, why: String },
    #[error("{0}")]
    Io(String),
}

/// What to run.
pub(crate) struct Job<'a> {
    pub(crate) shell: &'a Path,
    pub(crate) command: &'a str,
    /// The workspace: the command's cwd, writable under `workspace-write`.
    pub(crate) cwd: &'a Path,
    /// The command's whole environment (`TMPDIR` is added).
    pub(crate) env: Vec<(String, String)>,
    pub(crate) settings: &'a Settings,
    /// Paths other sessions claim, bound read-only under `workspace-write` (what a peer
    /// removed meanwhile is skipped).
    pub(crate) claimed: &'a [PathBuf],
    /// Files of the user's the command must not read (the room server's credential): an
    /// empty file is bound over each.
    pub(crate) hidden: &'a [PathBuf],
}

/// A started command.
pub(crate) struct Running {
    pid: libc::pid_t,
    pub(crate) stdout: Option<File>,
    pub(crate) stderr: Option<File>,
    status: File,
    sync: Option<File>,
    tmp: PathBuf,
    /// Says the directory is in use until the call ends (see [`tmp`]).
    _tmp_lock: File,
    protected: Option<Protected>,
    exit: Option<ExitStatus>,
    reaped: bool,
    /// The call's first process, when it joined the shared namespaces: reaped with the init.
    enter: Option<libc::pid_t>,
}

fn cstring(s: impl AsRef<OsStr>) -> Result<CString, JailError> {
    CString::new(s.as_ref().as_bytes())
        .map_err(|_| JailError::Io("a path or argument holds a NUL byte".into()))
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A private temporary directory (0700) for one call; see [`tmp`].
fn private_tmp() -> Result<tmp::PrivateTmp, JailError> {
    tmp::sweep_once();
    let base = std::env::temp_dir();
    tmp::create(&base).map_err(|e| {
        JailError::Io(format!(
            "cannot create a temporary directory in {}: {e}",
            base.display()
        ))
    })
}

/// The Landlock ruleset: read and execute anywhere, write where `writable` says, and the
/// harmless devices. Best effort on the newer rights, but Landlock itself is required.
fn ruleset(mode: Mode, writable: &[PathBuf]) -> Result<OwnedFd, JailError> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
    };
    let unsupported = |why: String| JailError::Unsupported { mode, why };
    if simulated().is_some_and(|v| v != "mount") {
        return Err(unsupported(format!(
            "Landlock is not available in this kernel (simulated by {SIMULATE_UNSUPPORTED_ENV})"
        )));
    }
    let newest = ABI::V10;
    let created = Ruleset::default()
        .handle_access(AccessFs::from_all(newest))
        .and_then(|r| r.scope(Scope::from_all(newest)))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(newest))))
        .and_then(|r| r.add_rules(path_beneath_rules(DEVICES, AccessFs::from_file(newest))))
        .and_then(|r| r.add_rules(path_beneath_rules(writable, AccessFs::from_all(newest))))
        .map_err(|e| unsupported(format!("building the Landlock ruleset failed: {e}")))?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| unsupported("Landlock is not available in this kernel".into()))
}

/// The mount flags a read-only remount of `p` must keep (a user namespace may not drop the
/// locked `nosuid`, `nodev`, `noexec` and atime flags of the mount it came from).
fn locked_flags(p: &CString) -> libc::c_ulong {
    // SAFETY: statvfs writes into the zeroed struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a struct of the right type to fill.
    if unsafe { libc::statvfs(p.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let f = st.f_flag as libc::c_ulong;
    [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(st, _)| f & st != 0)
    .fold(0, |acc, (_, ms)| acc | ms)
}

/// Write the user namespace's id maps for `pid`: the caller's own ids, or every id for root.
fn write_id_maps(pid: libc::pid_t) -> io::Result<()> {
    // SAFETY: these getters cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let write = |file: &str, text: &str| -> io::Result<()> {
        std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/{pid}/{file}"))?
            .write_all(text.as_bytes())
    };
    if uid == 0 {
        write("uid_map", "0 0 4294967295\n")?;
        write("gid_map", "0 0 4294967295\n")
    } else {
        write("setgroups", "deny")?;
        write("uid_map", &format!("{uid} {uid} 1\n"))?;
        write("gid_map", &format!("{gid} {gid} 1\n"))
    }
}

/// Start the job. Returns once the command runs, or with `Unsupported` when the sandbox
/// cannot be set up — never by running it unconfined.
pub(crate) fn spawn(job: &Job<'_>) -> Result<Running, JailError> {
    let settings = job.settings;
    let sandboxed = settings.mode != Mode::Off;
    let tmp = private_tmp()?;
    let path = tmp.path.clone();
    let result = spawn_in(job, sandboxed, tmp);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&path);
    }
    result
}

/// What confines a sandboxed command, prepared before the clone.
#[derive(Default)]
struct Confinement {
    mounts: Vec<MountOp>,
    protected: Option<Protected>,
    ruleset: Option<OwnedFd>,
}

/// What a command may never write, wherever it is: the store the session writes to (the
/// `AG_HOME` the command is given, else this process's), the user's configuration, and Claude
/// Code's user folder (read for agent definitions). `Protected` binds those inside a writable
/// root read-only.
fn private_paths(job: &Job<'_>) -> Vec<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let ag_home = job
        .env
        .iter()
        .find(|(k, _)| k == "AG_HOME")
        .map(|(_, v)| PathBuf::from(v))
        .or_else(|| crate::paths::Home::resolve(None).ok().map(|h| h.dir));
    ag_home
        .into_iter()
        .chain(crate::config::user_config_dir())
        .chain(var("HOME").map(|h| h.join(".claude")))
        .filter(|p| p.is_absolute())
        .collect()
}

fn confinement(job: &Job<'_>, tmp: &Path) -> Result<Confinement, JailError> {
    let settings = job.settings;
    let mut c = Confinement::default();
    if simulated().as_deref() == Some("mount") {
        c.mounts
            .push(MountOp::Pin(cstring("/nonexistent/ag-simulated-mount")?));
    }
    let mut writable = vec![tmp.to_path_buf()];
    if settings.mode == Mode::WorkspaceWrite {
        writable.push(job.cwd.to_path_buf());
        writable.extend(settings.writable.iter().cloned());
        let p = Protected::plan(job.cwd, &private_paths(job), &writable);
        for d in &p.pinned {
            c.mounts.push(MountOp::Pin(cstring(d)?));
        }
        for r in &p.readonly {
            let path = cstring(r)?;
            let locked = locked_flags(&path);
            c.mounts.push(MountOp::ReadOnly(path, locked));
        }
        c.protected = Some(p);
        // Landlock only grants, it cannot take a claimed file back out of the writable
        // workspace: a read-only bind in the command's mount namespace does.
        for path in job.claimed {
            let path = cstring(path)?;
            let locked = locked_flags(&path);
            c.mounts.push(MountOp::ClaimedReadOnly(path, locked));
        }
    }
    // A private /dev/shm (POSIX semaphores, Python's multiprocessing) inside the temp dir.
    let shm = tmp.join("shm");
    if Path::new("/dev/shm").is_dir() && crate::paths::create_private_dir(&shm).is_ok() {
        writable.push(shm.clone());
        c.mounts
            .push(MountOp::Over(cstring(&shm)?, cstring("/dev/shm")?));
    }
    hide(&mut c, tmp, job.hidden)?;
    c.ruleset = Some(ruleset(settings.mode, &writable)?);
    Ok(c)
}

/// Bind an empty file over each of `files` that exists, so reading it gives nothing.
fn hide(c: &mut Confinement, tmp: &Path, files: &[PathBuf]) -> Result<(), JailError> {
    let files: Vec<&PathBuf> = files.iter().filter(|f| f.is_file()).collect();
    if files.is_empty() {
        return Ok(());
    }
    let empty = tmp.join(".hidden");
    std::fs::File::create(&empty)
        .map_err(|e| JailError::Io(format!("{}: {e}", empty.display())))?;
    for file in files {
        c.mounts
            .push(MountOp::Over(cstring(&empty)?, cstring(file)?));
    }
    Ok(())
}

/// `SHELL -c COMMAND` and its environment (with `TMPDIR`), as C strings.
fn exec_strings(job: &Job<'_>, tmp: &Path) -> Result<(Vec<CString>, Vec<CString>), JailError> {
    let args = vec![cstring(job.shell)?, cstring("-c")?, cstring(job.command)?];
    let mut env = Vec::new();
    for (k, v) in job.env.iter().filter(|(k, _)| k != "TMPDIR") {
        env.push(cstring(format!("{k}={v}"))?);
    }
    env.push(cstring(format!("TMPDIR={}", tmp.to_string_lossy()))?);
    Ok((args, env))
}

/// A null-terminated array of pointers into `strings` (which must outlive it).
fn pointers(strings: &[CString]) -> Vec<*const std::ffi::c_char> {
    let mut v: Vec<_> = strings.iter().map(|a| a.as_ptr()).collect();
    v.push(std::ptr::null());
    v
}

/// The pipes between this process and the init, and /dev/null for the shell's stdin.
struct Pipes {
    out: (OwnedFd, OwnedFd),
    err: (OwnedFd, OwnedFd),
    sync: (OwnedFd, OwnedFd),
    status: (OwnedFd, OwnedFd),
    null: OwnedFd,
}

impl Pipes {
    fn open() -> Result<Pipes, JailError> {
        let io_err = |what: &str, e: io::Error| JailError::Io(format!("{what}: {e}"));
        let p = || pipe().map_err(|e| io_err("pipe", e));
        Ok(Pipes {
            out: p()?,
            err: p()?,
            sync: p()?,
            status: p()?,
            null: File::options()
                .read(true)
                .write(true)
                .open("/dev/null")
                .map_err(|e| io_err("/dev/null", e))?
                .into(),
        })
    }
}

fn spawn_in(job: &Job<'_>, sandboxed: bool, tmp: tmp::PrivateTmp) -> Result<Running, JailError> {
    let settings = job.settings;
    let tmp_lock = tmp.lock;
    let tmp = tmp.path.as_path();
    let mut conf = if sandboxed {
        confinement(job, tmp)?
    } else {
        Confinement::default()
    };
    let strings = exec_strings(job, tmp)?;
    let pipes = Pipes::open()?;
    let plan = child_plan(job, sandboxed, &mut conf, &pipes, &strings)?;
    let pid = clone_init(&plan, sandboxed, settings)?;
    // No setpgid here: the init makes itself a session (and so group) leader with setsid,
    // which fails on a process that is already a group leader. It has done so before it
    // reports MAPS, and nothing signals the group before that.
    // The child's ends are the child's now (holding them would keep the pipes open); ours go
    // to the handle. The ruleset is in the child too.
    let Pipes {
        out: (out_r, out_w),
        err: (err_r, err_w),
        sync: (sync_r, sync_w),
        status: (status_r, status_w),
        null,
    } = pipes;
    drop((out_w, err_w, sync_r, status_w, null, conf.ruleset));
    let mut running = Running {
        pid,
        stdout: Some(out_r.into()),
        stderr: Some(err_r.into()),
        status: status_r.into(),
        sync: Some(sync_w.into()),
        tmp: tmp.to_path_buf(),
        _tmp_lock: tmp_lock,
        protected: conf.protected,
        exit: None,
        reaped: false,
        enter: None,
    };
    running.start(settings.mode, sandboxed, plan.join.is_some())?;
    Ok(running)
}

/// What the init does: the confinement's mounts (taken from `conf`) and ruleset, the shell
/// to start and the ends of `pipes` it keeps or closes. It points into `args` and `env`,
/// which must outlive it.
fn child_plan(
    job: &Job<'_>,
    sandboxed: bool,
    conf: &mut Confinement,
    pipes: &Pipes,
    (args, env): &(Vec<CString>, Vec<CString>),
) -> Result<ChildPlan, JailError> {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    Ok(ChildPlan {
        sandboxed,
        dumpable_for_maps: sandboxed && !root,
        network: job.settings.network,
        join: sandboxed
            .then(|| netns::shared(job.settings.network))
            .flatten()
            .map(netns::Shared::fds),
        mounts: std::mem::take(&mut conf.mounts),
        ruleset: conf.ruleset.as_ref().map_or(-1, |f| f.as_raw_fd()),
        shell: cstring(job.shell)?,
        argv: pointers(args),
        envp: pointers(env),
        cwd: cstring(job.cwd)?,
        null: pipes.null.as_raw_fd(),
        out_w: pipes.out.1.as_raw_fd(),
        err_w: pipes.err.1.as_raw_fd(),
        sync_r: pipes.sync.0.as_raw_fd(),
        sync_w: pipes.sync.1.as_raw_fd(),
        status_w: pipes.status.1.as_raw_fd(),
        parent_ends: [
            pipes.out.0.as_raw_fd(),
            pipes.err.0.as_raw_fd(),
            pipes.sync.1.as_raw_fd(),
            pipes.status.0.as_raw_fd(),
        ],
        sigmask: enter::current_sigmask(),
    })
}

/// Clone the init, which runs `plan`: in new namespaces when sandboxed (a network one
/// unless the network is allowed). Returns its pid.
fn clone_init(
    plan: &ChildPlan,
    sandboxed: bool,
    settings: &Settings,
) -> Result<libc::pid_t, JailError> {
    let flags = match (sandboxed, settings.network) {
        (false, _) => 0,
        // The call's first process joins the shared namespaces and clones the init
        // ([`enter`]).
        (true, _) if plan.join.is_some() => 0,
        (true, net) => {
            libc::CLONE_NEWUSER
                | libc::CLONE_NEWNS
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWIPC
                | if net { 0 } else { libc::CLONE_NEWNET }
        }
    };
    let pid = match plan.join {
        // SAFETY: the plan is complete.
        Some(fds) => unsafe { enter::spawn(plan, fds) },
        None => {
            // SAFETY: the child runs only `init_main`, which makes system calls on `plan` and
            // never returns; the parent continues as usual.
            let pid = unsafe { child::clone_process(flags) };
            if pid == 0 {
                // SAFETY: this is the freshly cloned child, as `init_main` requires.
                unsafe { child::init_main(plan) }
            }
            pid
        }
    };
    if pid < 0 {
        let e = io::Error::last_os_error();
        return Err(if sandboxed {
            JailError::Unsupported {
                mode: settings.mode,
                why: format!("user namespaces are not available to this user ({e})"),
            }
        } else {
            JailError::Io(format!("cannot start the shell: {e}"))
        });
    }
    Ok(pid)
}

impl Running {
    /// The init's pid, which is also the process group of the command.
    pub(crate) fn pgid(&self) -> i32 {
        self.pid
    }

    /// The handshake with the init: write the id maps when it asks and let it go on (having
    /// joined the shared namespaces, the call's first process lets it go on), and wait for it
    /// to report that the shell runs.
    fn start(&mut self, mode: Mode, sandboxed: bool, joined: bool) -> Result<(), JailError> {
        let mut tag = [0u8; 1];
        let read = self.status.read_exact(&mut tag);
        let go = if joined && read.is_ok() && tag[0] == child::JOINED {
            self.joined_init();
            Some(Ok(()))
        } else if read.is_err() || tag[0] != child::MAPS {
            return Err(self.failed_start(mode, read.is_ok().then_some(tag[0])));
        } else {
            if sandboxed {
                if let Err(e) = write_id_maps(self.pid) {
                    self.kill_now();
                    return Err(JailError::Unsupported {
                        mode,
                        why: format!("the user namespace's id maps cannot be written ({e})"),
                    });
                }
            }
            self.sync.as_mut().map(|s| s.write_all(b"g"))
        };
        let mut tag = [0u8; 1];
        let read = self.status.read_exact(&mut tag);
        if matches!(go, Some(Ok(()))) && read.is_ok() && tag[0] == child::READY {
            return Ok(());
        }
        Err(self.failed_start(mode, read.is_ok().then_some(tag[0])))
    }

    /// After [`child::JOINED`]: take the init's pid, and keep the call's first process (which
    /// has exited or is about to) to reap with the init, so nothing waits for it now.
    fn joined_init(&mut self) {
        let mut pid = [0u8; 4];
        if self.status.read_exact(&mut pid).is_ok() {
            self.enter = Some(self.pid);
            self.pid = i32::from_ne_bytes(pid);
        }
    }

    /// The start failed after `tag` (none: the init said nothing): end the init and say why.
    fn failed_start(&mut self, mode: Mode, tag: Option<u8>) -> JailError {
        let mut rest = Vec::new();
        let _ = self.status.read_to_end(&mut rest);
        self.kill_now();
        if tag == Some(child::SETUP_FAILED) && rest.len() >= 4 {
            let errno = i32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]);
            let what = String::from_utf8_lossy(&rest[4..]);
            return JailError::Unsupported {
                mode,
                why: format!(
                    "setting up the sandbox failed at {what} ({})",
                    io::Error::from_raw_os_error(errno)
                ),
            };
        }
        JailError::Io("the command's init ended before it started".into())
    }

    /// Wait up to `limit` for the command to end; its status when it did.
    pub(crate) fn wait_timeout(&mut self, limit: Duration) -> Option<ExitStatus> {
        if self.exit.is_some() {
            return self.exit;
        }
        let ms = limit.as_millis().min(i32::MAX as u128) as i32;
        let mut pfd = libc::pollfd {
            fd: self.status.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one descriptor we own.
        if unsafe { libc::poll(&mut pfd, 1, ms) } <= 0 {
            return None;
        }
        self.collect();
        self.exit
    }

    /// Read the init's last report and reap it.
    fn collect(&mut self) {
        let mut rest = Vec::new();
        let _ = self.status.read_to_end(&mut rest);
        let status = match rest.as_slice() {
            [t, a, b, c, d, ..] if *t == child::EXITED => i32::from_ne_bytes([*a, *b, *c, *d]),
            _ => libc::SIGKILL,
        };
        self.reap();
        self.exit = Some(ExitStatus::from_raw(status));
    }

    fn reap(&mut self) {
        if !self.reaped {
            // SAFETY: waiting for our own children.
            unsafe {
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
                if let Some(enter) = self.enter.take() {
                    libc::waitpid(enter, std::ptr::null_mut(), 0);
                }
            }
            self.reaped = true;
        }
    }

    fn kill_now(&mut self) {
        self.sync = None;
        crate::proc::kill_group(self.pid, libc::SIGKILL);
        self.reap();
    }

    /// End the command and everything it started: ask the init (by closing the sync pipe),
    /// then kill its group if it has not finished in a moment.
    pub(crate) fn stop(&mut self) {
        if self.exit.is_some() {
            return;
        }
        self.sync = None;
        let deadline = Instant::now() + STOP_GRACE;
        while self.exit.is_none() && Instant::now() < deadline {
            self.wait_timeout(deadline.saturating_duration_since(Instant::now()));
        }
        if self.exit.is_none() {
            self.kill_now();
            self.exit = Some(ExitStatus::from_raw(libc::SIGKILL));
        }
    }

    /// After the command: what happened to the protected paths; removes the temp dir.
    pub(crate) fn finish(mut self) -> Vec<String> {
        self.stop();
        let notes = self.protected.take().map(|p| p.check()).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&self.tmp);
        notes
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            self.stop();
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}
