//! TLS for the gRPC listener: rustls with the `ring` provider (the only provider compiled in),
//! ALPN `h2`, optionally client certificates required from a CA bundle (mutual TLS).
//!
//! The configuration can be swapped while serving: [`TlsReloader::reload`] re-reads the PEM
//! files and, if they are valid, later handshakes use them; established connections keep the
//! certificate they negotiated. A bad file set is refused (logged at WARN) and the previous
//! configuration stays in force. The server reloads on SIGHUP and when a file's modification
//! time or size changes (polled).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio_rustls::TlsAcceptor;
use tracing::{info, warn};

/// The PEM files TLS is configured from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server's certificate chain, leaf first.
    pub cert: PathBuf,
    /// The server's private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// CA certificates client certificates must chain to; `None`: no client certificates.
    pub client_ca: Option<PathBuf>,
}

/// The ring provider, explicitly: rustls never has to guess a process default.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(what: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{what} {}: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{what} {}: no PEM certificate in the file", path.display()));
    }
    Ok(certs)
}

/// Builds the rustls configuration from the files. Errors name the file, never key bytes.
pub(crate) fn server_config(files: &TlsFiles) -> Result<ServerConfig, String> {
    let chain = certs("--tls-cert", &files.cert)?;
    // The key's parse error text comes from the PEM reader and carries no key material.
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("--tls-key {}: not a PEM private key ({e})", files.key.display()))?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("protocol versions: {e}"))?;
    let builder = match &files.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certs("--tls-client-ca", ca)? {
                roots.add(cert).map_err(|e| format!("--tls-client-ca {}: {e}", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| format!("--tls-client-ca {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert/--tls-key: the key does not fit the certificate or is unusable ({e})"))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// Modification time and length of each file: a change of either triggers a reload.
type Stamp = Vec<Option<(SystemTime, u64)>>;

fn stamp(files: &TlsFiles) -> Stamp {
    [Some(&files.cert), Some(&files.key), files.client_ca.as_ref()]
        .into_iter()
        .flatten()
        .map(|p| std::fs::metadata(p).ok().and_then(|m| Some((m.modified().ok()?, m.len()))))
        .collect()
}

/// The TLS configuration in force, swappable while serving. Cheap to clone.
#[derive(Clone)]
pub struct TlsReloader {
    files: TlsFiles,
    current: Arc<RwLock<Arc<ServerConfig>>>,
    stamp: Arc<RwLock<Stamp>>,
    poll: Duration,
    /// Reloads done and refused so far ([`TlsReloader::reloads`]).
    counts: Arc<[AtomicU64; 2]>,
}

impl std::fmt::Debug for TlsReloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsReloader").field("files", &self.files).finish_non_exhaustive()
    }
}

impl TlsReloader {
    /// Loads the files once; an error names the file at fault.
    pub fn load(files: TlsFiles) -> Result<TlsReloader, String> {
        let stamp_now = stamp(&files);
        let config = server_config(&files)?;
        Ok(TlsReloader {
            files,
            current: Arc::new(RwLock::new(Arc::new(config))),
            stamp: Arc::new(RwLock::new(stamp_now)),
            poll: Duration::from_secs(10),
            counts: Arc::new([AtomicU64::new(0), AtomicU64::new(0)]),
        })
    }

    /// Sets how often the files are checked for changes.
    pub fn with_poll(mut self, poll: Duration) -> TlsReloader {
        self.poll = poll;
        self
    }

    /// An acceptor for one handshake, with the configuration in force now.
    pub fn acceptor(&self) -> TlsAcceptor {
        let config = self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        TlsAcceptor::from(config)
    }

    /// Re-reads the files; on success later handshakes use them, on failure nothing changes.
    pub fn reload(&self) -> Result<(), String> {
        // The stamp is taken first and kept even if the files are bad, so one bad change is
        // reported once, not at every poll.
        *self.stamp.write().unwrap_or_else(std::sync::PoisonError::into_inner) = stamp(&self.files);
        let config = server_config(&self.files).inspect_err(|_| {
            self.counts[1].fetch_add(1, Ordering::Relaxed);
        })?;
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(config);
        self.counts[0].fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// How many reloads (by any trigger) took effect and how many were refused so far.
    pub fn reloads(&self) -> (u64, u64) {
        (self.counts[0].load(Ordering::Relaxed), self.counts[1].load(Ordering::Relaxed))
    }

    fn reload_logged(&self, why: &str) {
        match self.reload() {
            Ok(()) => info!(trigger = why, "TLS certificates reloaded"),
            Err(e) => warn!(trigger = why, error = %e, "TLS reload refused; the previous certificates stay in force"),
        }
    }

    /// Reloads on SIGHUP (if `sighup`) and whenever a file changes, until `stop` turns true.
    pub fn watch(&self, sighup: bool, mut stop: tokio::sync::watch::Receiver<bool>) {
        let this = self.clone();
        // Registered before returning, so a SIGHUP right after start-up never hits the default
        // action (which would end the process).
        #[cfg(unix)]
        let mut hup =
            if sighup { tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok() } else { None };
        #[cfg(not(unix))]
        let _ = sighup;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(this.poll);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                #[cfg(unix)]
                let hup_recv = async {
                    match hup.as_mut() {
                        Some(h) => h.recv().await,
                        None => std::future::pending().await,
                    }
                };
                #[cfg(not(unix))]
                let hup_recv = std::future::pending::<Option<()>>();
                tokio::select! {
                    () = crate::service::edge::accept::stopped(&mut stop) => return,
                    _ = hup_recv => this.reload_logged("SIGHUP"),
                    _ = tick.tick() => {
                        let changed = *this.stamp.read().unwrap_or_else(std::sync::PoisonError::into_inner) != stamp(&this.files);
                        if changed {
                            this.reload_logged("file change");
                        }
                    }
                }
            }
        });
    }
}
