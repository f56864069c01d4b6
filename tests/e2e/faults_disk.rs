//! A full disk, on a small tmpfs mounted in a user and mount namespace of its own: writing
//! commands say the disk is full and name the file, reading commands still work, and search
//! says it could not search. Skipped, with a message, where such a mount is not allowed.

use std::process::Command;

use crate::support::TestEnv;

/// The script runs inside the namespace; each step prints `STEP rc=N` after its output.
const SCRIPT: &str = r#"
T="$1"
mount -t tmpfs -o size=2m tmpfs "$T" || exit 99
export AG_HOME="$T/home"
step() { name="$1"; shift; "$@" 2>&1; echo "$name rc=$?"; }
step SETUP ag-log append --new --title full 'first needle' -q
step INDEX ag-log search needle -q
step SECOND ag-log append -s last 'second haystack' -q
step ROOM ag-room tell --from me 'said before the disk filled'
dd if=/dev/zero of="$T/fill" bs=4k >/dev/null 2>&1
step SEARCH ag-log search haystack
step APPEND ag-log append -s last 'more'
step CAT ag-log cat last
step LS ag-log ls
step TAIL ag-room tail
step TELL ag-room tell --from me "$(yes x | head -n 3000 | tr -d '\n')"
"#;

#[test]
fn a_full_disk_is_named_and_reading_still_works() {
    let env = TestEnv::new();
    let mnt = env.dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let out = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            SCRIPT,
            "sh",
        ])
        .arg(&mnt)
        .env_clear()
        .envs(env.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&env.cwd)
        .output();
    let out = match out {
        Ok(o) if o.status.code() != Some(99) && o.status.success() => o,
        other => {
            eprintln!(
                "skipped: cannot mount a small tmpfs in a user namespace here ({:?})",
                other.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            );
            return;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let step = |name: &str| -> (String, i32) {
        let end = text
            .find(&format!("{name} rc="))
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"));
        let start = text[..end]
            .rfind(" rc=")
            .map_or(0, |i| i + text[i..].find('\n').unwrap() + 1);
        let rc = text[end..].split('=').nth(1).unwrap();
        let rc = rc[..rc.find('\n').unwrap()].parse().unwrap();
        (text[start..end].to_string(), rc)
    };
    for ok in ["SETUP", "INDEX", "SECOND", "ROOM"] {
        assert_eq!(step(ok).1, 0, "{ok}:\n{text}");
    }
    let (search, rc) = step("SEARCH");
    assert_ne!(rc, 0, "{text}");
    assert!(
        search.contains("cannot search") && search.contains("is full"),
        "{search}"
    );
    let (append, rc) = step("APPEND");
    assert_eq!(rc, 1, "{text}");
    assert!(
        append.contains("the disk holding") && append.contains("ag.db is full"),
        "{append}"
    );
    assert!(!append.contains("--home"), "{append}");
    let (cat, rc) = step("CAT");
    assert_eq!(rc, 0, "{text}");
    assert!(
        cat.contains("first needle") && cat.contains("second haystack"),
        "{cat}"
    );
    assert_eq!(step("LS").1, 0, "{text}");
    let (tail, rc) = step("TAIL");
    assert_eq!(rc, 0, "{text}");
    assert!(tail.contains("said before the disk filled"), "{tail}");
    // The room file's last page may still have room for a line; when it has not, the error
    // keeps its cause.
    let (tell, rc) = step("TELL");
    assert!(
        rc == 0 || tell.contains("No space left on device"),
        "{tell}"
    );
}
