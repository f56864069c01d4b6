//! The one way `ag` follows files as they grow (`ag-log tail -f`, `ag-room tail -f`,
//! `ag-log import --follow`, `ag-prompt --wait`): file-system notifications wake the follower
//! at once, and a poll is the backstop where they do not arrive (network file systems, a
//! watch limit reached, a directory that appears later). Each wake-up runs one pass of the
//! caller's; the pass reads what is new from its own cursor, so a wake-up that finds nothing
//! costs one read and a lost notification costs at most one poll interval.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::Watcher;

/// What a pass asks of the follower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Wait for the next change (or the poll) and run the pass again.
    Wait,
    /// Stop following.
    Stop,
}

/// Wakes on a change under any watched path, or when the poll interval has passed.
pub(crate) struct Follower {
    tx: mpsc::Sender<()>,
    rx: mpsc::Receiver<()>,
    watchers: Vec<notify::RecommendedWatcher>,
    poll: Duration,
}

impl Follower {
    /// A follower that polls at least every `poll`.
    pub(crate) fn new(poll: Duration) -> Follower {
        let (tx, rx) = mpsc::channel();
        Follower {
            tx,
            rx,
            watchers: Vec::new(),
            poll,
        }
    }

    /// Also wake on changes under `path` (its entries; `recursive`: the whole tree). A path
    /// that cannot be watched is left to the poll.
    pub(crate) fn watch(mut self, path: &Path, recursive: bool) -> Follower {
        let tx = self.tx.clone();
        let mode = if recursive {
            notify::RecursiveMode::Recursive
        } else {
            notify::RecursiveMode::NonRecursive
        };
        let watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
            let _ = tx.send(());
        });
        if let Ok(mut w) = watcher {
            if w.watch(path, mode).is_ok() {
                self.watchers.push(w);
            }
        }
        self
    }

    /// A way for another source (a room server's subscription) to wake this follower.
    pub(crate) fn waker(&self) -> mpsc::Sender<()> {
        self.tx.clone()
    }

    /// Block until something changed or the poll interval passed (at most until `deadline`),
    /// then forget the wake-ups that piled up: the next pass reads all they announced.
    pub(crate) fn wait(&self, deadline: Option<Instant>) {
        let mut wait = self.poll;
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        let _ = self.rx.recv_timeout(wait);
        while self.rx.try_recv().is_ok() {}
    }

    /// Run `pass` after every wake-up until it says [`Next::Stop`] or fails.
    pub(crate) fn run<E>(&self, mut pass: impl FnMut() -> Result<Next, E>) -> Result<(), E> {
        loop {
            self.wait(None);
            if pass()? == Next::Stop {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_wakes_the_follower_before_the_poll() {
        let dir = tempfile::tempdir().unwrap();
        let f = Follower::new(Duration::from_secs(60)).watch(dir.path(), false);
        let path = dir.path().join("grows");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            std::fs::write(path, "x").unwrap();
        });
        let start = Instant::now();
        f.wait(Some(start + Duration::from_secs(30)));
        writer.join().unwrap();
        // Woken by the write, not by the 60 s poll or the 30 s deadline.
        assert!(start.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn the_poll_runs_the_pass_where_nothing_is_watched() {
        let f = Follower::new(Duration::from_millis(1));
        let mut passes = 0;
        f.run(|| -> Result<Next, ()> {
            passes += 1;
            Ok(if passes == 3 { Next::Stop } else { Next::Wait })
        })
        .unwrap();
        assert_eq!(passes, 3);
    }

    #[test]
    fn a_failing_pass_ends_the_follow_with_its_error() {
        let f = Follower::new(Duration::from_millis(1));
        assert_eq!(f.run(|| Err::<Next, _>("gone")), Err("gone"));
    }
}
