//! The network edge: the one tokio runtime of a process and the HTTP clients built on it.
//!
//! The commands stay synchronous. Code that needs the network (a provider attempt, an MCP
//! call) runs on a worker thread of its own and blocks that thread on [`block_on`]; the
//! runtime's single worker drives connections and MCP servers in the background between
//! calls. The pure modules (log, fold, reduce, policy) never see tokio.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::config::Network;

/// The process's runtime: one worker thread, started on first use.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ag-net")
            .enable_all()
            .build()
            .expect("start the network runtime")
    })
}

/// Runs `fut` to completion on the runtime, blocking this (non-runtime) thread.
pub(crate) fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    runtime().block_on(fut)
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum NetError {
    #[error("cannot read the CA file {path} (network.ca_file)")]
    CaRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the CA file {path} (network.ca_file) holds no usable PEM certificate: {message}")]
    CaParse { path: PathBuf, message: String },
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
}

/// An HTTP client with the user's network settings: rustls with the platform's trust store
/// (which honours `SSL_CERT_FILE`/`SSL_CERT_DIR`) plus `network.ca_file`, proxies from
/// `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` minus `NO_PROXY`, HTTP/2 where offered, no redirects
/// (a redirect would resend a key to wherever it points).
pub(crate) fn client(net: &Network) -> Result<reqwest::Client, NetError> {
    crypto();
    let mut builder = reqwest::Client::builder()
        .connect_timeout(net.connect_timeout())
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_secs(30))
        .user_agent(concat!("agkit/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = &net.ca_file {
        for cert in ca_certificates(path)? {
            builder = builder.tls_certs_merge([cert]);
        }
    }
    builder.build().map_err(|e| NetError::Client(chain(&e)))
}

fn ca_certificates(path: &Path) -> Result<Vec<reqwest::Certificate>, NetError> {
    let pem = std::fs::read(path).map_err(|source| NetError::CaRead {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |message: String| NetError::CaParse {
        path: path.to_path_buf(),
        message,
    };
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(chain(&e)))?;
    if certs.is_empty() {
        return Err(bad("no BEGIN CERTIFICATE block".into()));
    }
    Ok(certs)
}

/// rustls is built with ring only; it must be the process default before any client exists.
fn crypto() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // Err means another default is already installed, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// An error with its causes, `: `-separated (reqwest's own Display stops at the top).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
