//! The accept loops' answer to accept errors, shared by every listener of the process (gRPC,
//! health, `/metrics`). An accept error that is not about one connection (out of file
//! descriptors — EMFILE/ENFILE — or of kernel memory) puts the loop to sleep, 10 ms doubling
//! to 1 s, instead of retrying at once (which would spin a core while the pending connection
//! stays in the backlog). One WARN line per episode.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use metrics::Counter;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tracing::{debug, warn};

/// Resolves once `stop` is true (or its sender is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// `true` for accept errors about the one connection being accepted (retry at once); other
/// errors (EMFILE, ENFILE, ENOBUFS, ENOMEM, ...) mean the process or system is short of
/// something, and retrying at once would spin.
fn per_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
            | io::ErrorKind::PermissionDenied
    )
}

/// The accept loop's answer to accept errors (see the module docs): every listener of the
/// process (gRPC, health, `/metrics`) accepts through [`AcceptBackoff::accept`].
pub(crate) struct AcceptBackoff {
    delay: Duration,
    /// Which listener, for the WARN line.
    what: &'static str,
    /// Counts each back-off (`reddog_accept_backoffs_total`).
    backoffs: Counter,
}

impl AcceptBackoff {
    /// The back-off of the listener named `what` (in its WARN line), counting each back-off
    /// in `backoffs`.
    pub(crate) fn new(what: &'static str, backoffs: Counter) -> AcceptBackoff {
        AcceptBackoff { delay: Duration::ZERO, what, backoffs }
    }

    /// How long to sleep after the accept error `e` before accepting again: zero for an
    /// error about one connection; else 10 ms, doubling on each error in a row up to 1 s.
    pub(crate) fn after_error(&mut self, e: &io::Error) -> Duration {
        if per_connection_error(e) {
            debug!(error = %e, listener = self.what, "accept failed for one connection");
            return Duration::ZERO;
        }
        if self.delay.is_zero() {
            warn!(error = %e, listener = self.what, "accept failed; backing off until it succeeds again");
            self.delay = Duration::from_millis(10);
        } else {
            self.delay = (self.delay * 2).min(Duration::from_secs(1));
        }
        self.backoffs.increment(1);
        self.delay
    }

    /// Accepts the next connection, sleeping after errors as [`Self::after_error`] says.
    /// Cancel-safe (a `select!` branch).
    pub(crate) async fn accept(&mut self, listener: &TcpListener) -> (TcpStream, SocketAddr) {
        loop {
            match listener.accept().await {
                Ok(accepted) => {
                    self.delay = Duration::ZERO;
                    return accepted;
                }
                Err(e) => {
                    let pause = self.after_error(&e);
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_out_of_file_descriptors_backs_off_and_one_bad_connection_does_not() {
        let mut b = AcceptBackoff::new("test", Counter::noop());
        let emfile = io::Error::from_raw_os_error(24);
        let waits: Vec<Duration> = (0..9).map(|_| b.after_error(&emfile)).collect();
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        let aborted = io::Error::from(io::ErrorKind::ConnectionAborted);
        assert_eq!(AcceptBackoff::new("test", Counter::noop()).after_error(&aborted), Duration::ZERO);
    }
}
