//! The sandbox and the user's terminal: a sandboxed command runs in a session of its own with
//! no controlling terminal, so it can neither push keystrokes into the shell that started
//! `ag-prompt` (`ioctl(TIOCSTI)` on `/dev/tty`) nor write escape sequences past the output's
//! escaping. Driven through a real terminal (tmux), where the attack would land.

use crate::prompt::{env_with, session_of};
use crate::sandbox::{bash_model, results, run_bash};
use crate::tmux::{self, Tmux};

/// Pushes `touch injected` + Enter into the controlling terminal's input, and sets the
/// terminal's title through it and through every pty it can open.
const ATTACK: &str = r#"python3 - <<'EOF'
import fcntl, glob, os, termios
try:
    fd = os.open('/dev/tty', os.O_RDWR)
    for c in b'touch injected\n':
        fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
    os.write(fd, b'\x1b]2;PWNED\x07')
    print('tty: opened')
except OSError as e:
    print('tty:', e.strerror)
for p in glob.glob('/dev/pts/[0-9]*'):
    try:
        fd = os.open(p, os.O_WRONLY)
        os.write(fd, b'\x1b]2;PWNED\x07')
        print(p, 'written')
    except OSError as e:
        print(p, e.strerror)
EOF"#;

#[test]
fn sandbox_command_cannot_type_into_or_retitle_the_users_terminal() {
    if !tmux::available() {
        return;
    }
    let env = env_with(None, "");
    let model = bash_model(&env, "attack.toml", &[ATTACK]);
    let term = Tmux::shell(&env);
    for mode in ["read-only", "workspace-write"] {
        term.line(&format!(
            "ag-prompt -m {model} --tools bash --sandbox {mode} go >/dev/null 2>../{mode}.err; echo END-{mode}-$?"
        ));
        term.wait_for_line(&format!("END-{mode}-0"));
        // The attack ran, and could open no terminal (Landlock refuses `/dev/tty` and the
        // ptys; without a controlling terminal `/dev/tty` has nothing behind it anyway).
        let err = std::fs::read_to_string(env.dir.path().join(format!("{mode}.err"))).unwrap();
        let id = session_of(&err).unwrap_or_else(|| panic!("no session in {err}"));
        let r = results(&env, &id);
        assert!(r[0].0.contains("tty: "), "{mode}: {r:?}");
        assert!(
            !r[0].0.contains("tty: opened") && !r[0].0.contains("written"),
            "{r:?}"
        );
        // Had the keystrokes landed, the shell would run `touch injected` before this.
        term.line(&format!("echo AFTER-{mode}"));
        term.wait_for_line(&format!("AFTER-{mode}"));
        assert!(
            !env.cwd.join("injected").exists(),
            "{mode}: the command typed into the user's shell:\n{}",
            term.screen()
        );
        assert_ne!(term.format("#{pane_title}"), "PWNED", "{mode}");
    }
}

#[test]
fn sandbox_refuses_tiocsti_even_on_an_inherited_terminal() {
    let env = env_with(None, "");
    // Without a terminal at hand (stdin is /dev/null here) the ioctl reaches the filter first:
    // EPERM from seccomp, where the kernel alone would say ENOTTY.
    let probe = "python3 -c \"import fcntl,termios,sys\ntry:\n fcntl.ioctl(0, termios.TIOCSTI, b'x')\nexcept OSError as e: print('errno', e.errno)\"";
    let tty = "exec 3</dev/tty && echo has-terminal || echo no-terminal";
    for mode in ["read-only", "workspace-write"] {
        let (_, r) = run_bash(&env, &[probe, tty], &["--sandbox", mode]);
        assert!(
            r[0].0.contains(&format!("errno {}", libc::EPERM)),
            "{mode}: {r:?}"
        );
        assert!(r[1].0.contains("no-terminal"), "{mode}: {r:?}");
    }
}
