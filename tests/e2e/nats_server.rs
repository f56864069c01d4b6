//! A real `nats-server` with JetStream for the shared-room tests: on a free loopback port,
//! with its storage in a temp dir (in memory where it can be), killed when dropped. Missing
//! outside CI, the tests that need it skip with a message; under `CI=true` a missing server
//! fails them.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct NatsServer {
    child: Option<Child>,
    pub port: u16,
    store: tempfile::TempDir,
    extra: Vec<String>,
}

/// Whether `nats-server` can be run; `None` (with a printed note) means skip.
fn available() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|d| d.join("nats-server"))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "nats-server is not installed, and CI=true: `.ci/run` installs it (apt-get install nats-server)"
        );
        eprintln!("skipped: nats-server is not installed (apt-get install nats-server)");
    }
    found
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// JetStream's storage: in memory (`/dev/shm`) where there is one, so the whole suite's disk
/// writes cannot stall the server past a client's request timeout; else the temp dir.
fn storage_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("ag-nats-")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

impl NatsServer {
    /// A server with JetStream, or `None` when there is none to run (outside CI).
    pub fn start() -> Option<NatsServer> {
        NatsServer::start_with(&[])
    }

    /// With extra flags (`--user U --pass P`).
    pub fn start_with(extra: &[&str]) -> Option<NatsServer> {
        available()?;
        let mut s = NatsServer {
            child: None,
            port: free_port(),
            store: storage_dir(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        s.run();
        Some(s)
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn run(&mut self) {
        let bin = available().expect("nats-server");
        let child = Command::new(bin)
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-sd",
            ])
            .arg(self.store.path())
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server did not listen within 30 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stop the server (its storage stays).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start it again on the same port with the same storage.
    pub fn restart(&mut self) {
        self.stop();
        self.run();
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}
