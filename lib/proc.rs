//! Process identity: a pid plus its start time, so a recycled pid is never taken for the
//! process that once held it.

/// The start time of a process (clock ticks since boot, from /proc), or None when it is gone.
pub fn start_time(pid: i64) -> Option<i64> {
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

/// Whether `pid` is still the process that started at `start`.
pub fn alive(pid: i64, start: Option<i64>) -> bool {
    match (start_time(pid), start) {
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// This process: (pid, start time).
pub fn me() -> (i64, Option<i64>) {
    let pid = std::process::id() as i64;
    (pid, start_time(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_wrong_start_is_not() {
        let (pid, start) = me();
        assert!(start.is_some());
        assert!(alive(pid, start));
        assert!(!alive(pid, start.map(|s| s + 1)));
        assert!(!alive(i32::MAX as i64, None));
    }
}
