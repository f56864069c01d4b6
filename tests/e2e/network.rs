//! The network layer: proxies from the environment (and `NO_PROXY`), a provider whose
//! certificate only a given CA vouches for, keep-alive pings that are not progress, and the
//! attempt deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ag::config::{Config, ProviderConfig, ProviderKind};
use ag::provider::Provider;

use crate::fake_provider::sse;
use crate::fake_provider::{FakeProvider, Reply};
use crate::prompt::{env_with, KEY, MODEL};
use crate::support::TestEnv;

// ---------------------------------------------------------------------------------------------
// Idle means no progress; the attempt deadline

/// A keyless `local/model` provider at `fake` with a 1 s idle timeout; `tweak` adjusts more.
fn local(fake: &FakeProvider, tweak: impl FnOnce(&mut Config)) -> Box<dyn Provider> {
    let mut config = Config::default();
    config.network.connect_timeout_s = 2.0;
    config.network.idle_timeout_s = 1.0;
    config.providers.insert(
        "local".into(),
        ProviderConfig {
            kind: ProviderKind::Anthropic,
            base_url: fake.url(),
            api_key_env: None,
        },
    );
    tweak(&mut config);
    ag::provider::resolve("local/model", &config).expect("resolve")
}

fn body() -> serde_json::Value {
    serde_json::json!({"model": "model", "stream": true, "messages": []})
}

#[test]
fn keep_alive_pings_do_not_reset_the_idle_timeout() {
    let fake = FakeProvider::start();
    let good = sse::anthropic_text("pinged");
    let cut = good.find("event: content_block_start").unwrap();
    // Progress, then only pings every 200 ms for a minute: idle must still fire after 1 s. Had
    // the pings reset it, the attempt would last the whole minute, so the bound below leaves
    // a loaded machine half a minute of slack and still tells the two apart.
    let pings = "event: ping\ndata: {\"type\": \"ping\"}\n\n".repeat(300);
    fake.push(Reply::SseSlow {
        body: format!("{}{pings}", &good[..cut]),
        piece_delay: Duration::from_millis(200),
    });
    let p = local(&fake, |_| {});
    let start = Instant::now();
    let e = p.attempt(&body(), &mut |_| {}).unwrap_err();
    let took = start.elapsed();
    assert!(e.retryable, "{e}");
    assert!(e.message.contains("no progress for 1 s"), "{e}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn the_attempt_deadline_cuts_a_stream_that_keeps_progressing() {
    let fake = FakeProvider::start();
    // Text arrives every 150 ms, well inside the idle timeout, for about a minute: the 1 s
    // attempt deadline must cut it long before (the bound below leaves room for a loaded
    // machine and still tells a cut from a stream that ran to its end).
    let long = "word ".repeat(60);
    let stream = sse::anthropic(&[sse::Block::Text(long)], "end_turn", (1, 1, 0, 0));
    let mut paced = String::new();
    for event in stream.split_inclusive("\n\n") {
        paced.push_str(event);
        if event.contains("text_delta") {
            paced.push_str(&event.replace("word ", "").repeat(200));
        }
    }
    fake.push(Reply::SseSlow {
        body: paced,
        piece_delay: Duration::from_millis(150),
    });
    let p = local(&fake, |c| c.network.attempt_timeout_s = 1.0);
    let start = Instant::now();
    let mut ops = 0;
    let e = p.attempt(&body(), &mut |_| ops += 1).unwrap_err();
    let took = start.elapsed();
    assert!(e.message.contains("network.attempt_timeout_s"), "{e}");
    assert!(e.retryable, "{e}");
    assert!(ops > 0, "the stream was progressing");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

// ---------------------------------------------------------------------------------------------
// Proxies

/// A forward proxy on loopback: absolute-form requests and CONNECT tunnels, each recorded by
/// its request line and relayed to the origin.
struct Proxy {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        // The accept thread ends with the test process; each test starts its own proxy.
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || relay(conn, &log));
            }
        });
        Proxy { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn relay(client: TcpStream, log: &Mutex<Vec<String>>) -> Option<()> {
    let mut reader = BufReader::new(client.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let line = line.trim_end().to_owned();
    log.lock().unwrap().push(line.clone());
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    let mut head = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        if h.trim_end().is_empty() {
            break;
        }
        head.push(h);
    }
    let (authority, first) = if method == "CONNECT" {
        (target.to_owned(), None)
    } else {
        let rest = target.strip_prefix("http://")?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        (
            authority.to_owned(),
            Some(format!("{method} {path} HTTP/1.1\r\n")),
        )
    };
    let mut upstream = TcpStream::connect(&authority).ok()?;
    let mut client_w = client;
    match first {
        None => client_w
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .ok()?,
        Some(first) => {
            upstream.write_all(first.as_bytes()).ok()?;
            for h in head
                .iter()
                .filter(|h| !h.to_ascii_lowercase().starts_with("proxy-"))
            {
                upstream.write_all(h.as_bytes()).ok()?;
            }
            upstream.write_all(b"\r\n").ok()?;
        }
    }
    // Whatever the reader buffered belongs to the body or the tunnel.
    upstream.write_all(reader.buffer()).ok()?;
    let mut up_r = upstream.try_clone().ok()?;
    let mut down_w = client_w.try_clone().ok()?;
    let back = std::thread::spawn(move || {
        let _ = std::io::copy(&mut up_r, &mut down_w);
        let _ = down_w.shutdown(Shutdown::Both);
    });
    let mut client_r = reader.into_inner();
    let _ = std::io::copy(&mut client_r, &mut upstream);
    let _ = back.join();
    Some(())
}

#[test]
fn a_request_goes_through_the_proxy_from_the_environment() {
    let fake = FakeProvider::start();
    fake.push(Reply::Sse(sse::anthropic_text("via the proxy")));
    let proxy = Proxy::start();
    let mut env = env_with(Some(&fake), "");
    env.set("HTTP_PROXY", proxy.url());
    let run = env.run("ag-prompt", &["-m", MODEL, "hello"]).ok();
    assert!(run.stdout.contains("via the proxy"), "{}", run.stdout);
    let expected = format!("POST {}/v1/messages HTTP/1.1", fake.url());
    assert_eq!(proxy.seen(), vec![expected]);
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(fake.requests()[0].headers["x-api-key"], KEY);
}

#[test]
fn no_proxy_bypasses_the_proxy() {
    let fake = FakeProvider::start();
    fake.push(Reply::Sse(sse::anthropic_text("straight there")));
    let proxy = Proxy::start();
    let mut env = env_with(Some(&fake), "");
    env.set("HTTPS_PROXY", proxy.url())
        .set("HTTP_PROXY", proxy.url())
        .set("NO_PROXY", "example.org,127.0.0.1");
    let run = env.run("ag-prompt", &["-m", MODEL, "hello"]).ok();
    assert!(run.stdout.contains("straight there"), "{}", run.stdout);
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());
    assert_eq!(fake.requests().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// A provider behind a private CA

/// A TLS front for `fake` on loopback with a leaf certificate for 127.0.0.1 signed by a fresh
/// CA. Each connection: one request in, relayed in plain HTTP, the whole answer back.
struct TlsFront {
    port: u16,
    ca_pem: String,
}

impl TlsFront {
    fn start(fake: &FakeProvider) -> TlsFront {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "ag test CA");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&leaf_key, &ca)
            .unwrap();
        let _ = rustls::crypto::ring::default_provider().install_default();
        let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap();
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone(), ca.der().clone()], key)
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let origin = fake.url().trim_start_matches("http://").to_owned();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let config = config.clone();
                let origin = origin.clone();
                std::thread::spawn(move || front(conn, config, &origin));
            }
        });
        TlsFront {
            port,
            ca_pem: ca.pem(),
        }
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }
}

fn front(conn: TcpStream, config: Arc<rustls::ServerConfig>, origin: &str) -> Option<()> {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let server = rustls::ServerConnection::new(config).ok()?;
    let mut tls = rustls::StreamOwned::new(server, conn);
    let mut reader = BufReader::new(&mut tls);
    let mut request = Vec::new();
    let mut length = 0;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        request.extend_from_slice(h.as_bytes());
        if h.trim_end().is_empty() {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    request.extend_from_slice(&body);
    let mut upstream = TcpStream::connect(origin).ok()?;
    upstream.write_all(&request).ok()?;
    let mut answer = Vec::new();
    upstream.read_to_end(&mut answer).ok()?;
    tls.write_all(&answer).ok()?;
    tls.conn.send_close_notify();
    tls.flush().ok()
}

fn tls_env(front: &TlsFront, network: &str) -> TestEnv {
    let mut env = TestEnv::new();
    let dir = env.dir.path().join("config").join("ag");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[network]\nconnect_timeout_s = 2\nidle_timeout_s = 2\nmax_attempts = 1\n{network}"
        ),
    )
    .unwrap();
    env.set("ANTHROPIC_BASE_URL", front.url())
        .set("ANTHROPIC_API_KEY", KEY);
    env
}

#[test]
fn a_private_ca_is_refused_by_default_and_trusted_when_given() {
    let fake = FakeProvider::start();
    let front = TlsFront::start(&fake);
    let ca = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca.path(), &front.ca_pem).unwrap();

    let env = tls_env(&front, "");
    let run = env.run("ag-prompt", &["-m", MODEL, "hello"]).code(1);
    assert!(run.stderr.contains("certificate"), "{}", run.stderr);
    assert!(run.stderr.contains("network.ca_file"), "{}", run.stderr);
    assert!(fake.requests().is_empty(), "nothing reached the provider");

    fake.push(Reply::Sse(sse::anthropic_text("trusted by config")));
    let config = format!("ca_file = {:?}\n", ca.path());
    let run = tls_env(&front, &config)
        .run("ag-prompt", &["-m", MODEL, "hello"])
        .ok();
    assert!(run.stdout.contains("trusted by config"), "{}", run.stdout);

    fake.push(Reply::Sse(sse::anthropic_text("trusted by SSL_CERT_FILE")));
    let mut env = tls_env(&front, "");
    env.set("SSL_CERT_FILE", ca.path().to_string_lossy());
    let run = env.run("ag-prompt", &["-m", MODEL, "hello"]).ok();
    assert!(
        run.stdout.contains("trusted by SSL_CERT_FILE"),
        "{}",
        run.stdout
    );
    assert_eq!(fake.requests().len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Retry-After beyond the cap

#[test]
fn a_retry_after_beyond_the_cap_ends_the_turn_at_once_saying_when() {
    let fake = FakeProvider::start();
    fake.push(Reply::Status {
        code: 429,
        retry_after: Some(3600),
        body: r#"{"error":{"message":"come back in an hour"}}"#.into(),
    });
    fake.push(Reply::Sse(sse::anthropic_text("never asked for")));
    let mut env = env_with(Some(&fake), "");
    env.set("AG_FAKE_NOW_MS", "0");
    let start = Instant::now();
    let run = env.run("ag-prompt", &["-m", MODEL, "hello"]).code(75);
    // Waiting would take an hour; a loaded machine's slow start is far below the bound.
    assert!(start.elapsed() < Duration::from_secs(60), "it did not wait");
    assert_eq!(fake.requests().len(), 1, "no second attempt");
    assert!(
        run.stderr
            .contains("accepts requests again in 3600 s (at 01:00:00 UTC)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("come back in an hour"),
        "{}",
        run.stderr
    );
}
