//! The sandbox's seccomp filter: `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` fail with `EPERM`.
//!
//! The command already runs in a session without a controlling terminal, but a terminal can
//! still reach it as an inherited descriptor (a `tmux` pane's tty passed as stdin by a caller,
//! say). `TIOCSTI` pushes bytes into that terminal's input queue, where the user's shell reads
//! them as typed keys after `ag-prompt` exits; `TIOCLINUX` can do the same through the
//! console's selection buffer. Nothing a command legitimately does needs either.
//!
//! The program is a static table, installed in the init after the clone, where only system
//! calls on prepared data are allowed: no allocation, no seccomp library.

use libc::sock_filter;

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;

/// Offsets in `struct seccomp_data`: the call number, the architecture, and the low 32 bits
/// of the second argument (little-endian; the kernel reads an ioctl's command as 32 bits, so
/// the high half cannot hide it).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG1_LOW: u32 = 24;

const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541C;

#[cfg(target_arch = "x86_64")]
mod arch {
    pub(super) const NATIVE: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
    pub(super) const NATIVE_IOCTL: u32 = 16;
    /// x32 calls share the native arch with this bit set in the number: all refused.
    pub(super) const X32_BIT: u32 = 0x4000_0000;
    pub(super) const COMPAT: u32 = 0x4000_0003; // AUDIT_ARCH_I386
    pub(super) const COMPAT_IOCTL: u32 = 54;
}

#[cfg(target_arch = "aarch64")]
mod arch {
    pub(super) const NATIVE: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
    pub(super) const NATIVE_IOCTL: u32 = 29;
    /// No second ABI shares the native arch: a bound no call number reaches.
    pub(super) const X32_BIT: u32 = u32::MAX;
    pub(super) const COMPAT: u32 = 0x4000_0028; // AUDIT_ARCH_ARM
    pub(super) const COMPAT_IOCTL: u32 = 54;
}

const fn op(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// Jumps are relative to the next instruction: `ALLOW` is 11, `DENY` 12.
static PROGRAM: [sock_filter; 13] = [
    /* 0 */ op(LD_W_ABS, 0, 0, ARCH),
    /* 1 */ op(JEQ_K, 0, 3, arch::NATIVE),
    /* 2 */ op(LD_W_ABS, 0, 0, NR),
    /* 3 */ op(JGE_K, 8, 0, arch::X32_BIT),
    /* 4 */ op(JEQ_K, 3, 6, arch::NATIVE_IOCTL),
    /* 5 */ op(JEQ_K, 0, 5, arch::COMPAT),
    /* 6 */ op(LD_W_ABS, 0, 0, NR),
    /* 7 */ op(JEQ_K, 0, 3, arch::COMPAT_IOCTL),
    /* 8 */ op(LD_W_ABS, 0, 0, ARG1_LOW),
    /* 9 */ op(JEQ_K, 2, 0, TIOCSTI),
    /* 10 */ op(JEQ_K, 1, 0, TIOCLINUX),
    /* 11 */ op(RET_K, 0, 0, RET_ALLOW),
    /* 12 */ op(RET_K, 0, 0, RET_EPERM),
];

/// Install the filter on the calling thread (inherited by everything it starts). Returns 0,
/// or -1 with errno set.
///
/// # Safety
/// Async-signal-safe: two `prctl` calls on static data.
pub(super) unsafe fn install() -> i32 {
    let prog = libc::sock_fprog {
        len: PROGRAM.len() as u16,
        filter: PROGRAM.as_ptr() as *mut sock_filter,
    };
    // Required without CAP_SYS_ADMIN; the Landlock step has usually set it already.
    // SAFETY: prctl(2) with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return -1;
    }
    // SAFETY: `prog` points at the static program and lives until the call returns; the
    // kernel copies the filter.
    unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &prog as *const libc::sock_fprog as libc::c_ulong,
            0,
            0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run the program as the kernel would, on one call.
    fn verdict(arch: u32, nr: u32, arg1: u64) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        data[24..32].copy_from_slice(&arg1.to_le_bytes());
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = &PROGRAM[pc];
            pc += 1;
            match i.code {
                LD_W_ABS => {
                    let at = i.k as usize;
                    acc = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                }
                JEQ_K | JGE_K => {
                    let taken = if i.code == JEQ_K {
                        acc == i.k
                    } else {
                        acc >= i.k
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                RET_K => return i.k,
                other => panic!("unexpected instruction {other:#x}"),
            }
        }
    }

    #[test]
    fn terminal_injection_is_refused_in_every_abi() {
        use arch::*;
        for (a, nr) in [(NATIVE, NATIVE_IOCTL), (COMPAT, COMPAT_IOCTL)] {
            assert_eq!(verdict(a, nr, TIOCSTI.into()), RET_EPERM);
            assert_eq!(verdict(a, nr, TIOCLINUX.into()), RET_EPERM);
            // The kernel reads the command as 32 bits: high bits do not hide it.
            assert_eq!(
                verdict(a, nr, 0xdead_0000_0000_0000 | u64::from(TIOCSTI)),
                RET_EPERM
            );
            // Other ioctls (TCGETS) and other calls go through.
            assert_eq!(verdict(a, nr, 0x5401), RET_ALLOW);
            assert_eq!(verdict(a, nr + 1, TIOCSTI.into()), RET_ALLOW);
        }
        if X32_BIT != u32::MAX {
            assert_eq!(verdict(NATIVE, X32_BIT | 514, TIOCSTI.into()), RET_EPERM);
        }
        assert_eq!(verdict(0x1234, NATIVE_IOCTL, TIOCSTI.into()), RET_ALLOW);
    }
}
