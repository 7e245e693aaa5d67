//! Connection admission in front of the HTTP/2 server: the accept loop, the handshake
//! deadline, optional TLS, and the idle-connection deadline.
//!
//! - **Accept back-off.** An accept error that is not about one connection (out of file
//!   descriptors — EMFILE/ENFILE — or of kernel memory) puts the loop to sleep, 10 ms doubling
//!   to 1 s, instead of retrying at once (which would spin a core while the pending connection
//!   stays in the backlog). One WARN line per episode.
//! - **Handshake deadline.** A connection reaches the HTTP/2 server only once it has completed
//!   the TLS handshake (with TLS) and sent the 24-byte HTTP/2 client preface, within
//!   [`TransportLimits::handshake_timeout`]; otherwise it is closed. At most
//!   [`TransportLimits::max_pending_handshakes`] connections wait at once; more are closed at
//!   accept. Connections still in the handshake when the server drains are closed at once,
//!   so they never hold the drain.
//! - **Connection cap.** At most [`TransportLimits::max_connections`] connections past the
//!   handshake; more are closed at accept (before the handshake, so they cost nothing).
//! - **Idle deadline.** A connection with no call in progress for
//!   [`TransportLimits::idle_timeout`] is closed (its reads end). Calls are counted by
//!   [`ActivityLayer`] from request to the end of the response body, so a health `Watch`
//!   keeps its connection.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;
use tracing::{debug, warn};

use super::app::TransportLimits;
use super::metrics;
use super::tls::TlsReloader;

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    u64::try_from(base().elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Calls in progress on one connection, and when the last one ended.
#[derive(Debug)]
pub struct Activity {
    in_flight: AtomicUsize,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Arc<Activity> {
        Arc::new(Activity { in_flight: AtomicUsize::new(0), last_ms: AtomicU64::new(now_ms()) })
    }

    /// Counts a call until the guard is dropped.
    pub fn begin(self: &Arc<Self>) -> ActivityGuard {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        ActivityGuard(self.clone())
    }

    /// When the connection becomes idle-expired if nothing happens; `None`: it is now.
    fn idle_deadline(&self, idle: Duration) -> Option<Instant> {
        let now = Instant::now();
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Some(now + idle);
        }
        let last = base() + Duration::from_millis(self.last_ms.load(Ordering::Acquire));
        let at = last + idle;
        (at > now).then_some(at)
    }
}

/// Keeps one call counted on its connection.
#[derive(Debug)]
pub struct ActivityGuard(Arc<Activity>);

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        self.0.last_ms.store(now_ms(), Ordering::Release);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a request knows about its connection (a request extension).
#[derive(Clone, Debug)]
pub struct ConnInfo {
    pub remote_addr: Option<SocketAddr>,
    pub local_addr: Option<SocketAddr>,
    /// Whether the connection is TLS.
    pub tls: bool,
    pub activity: Arc<Activity>,
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// An admitted connection: the preface already read is replayed to the HTTP/2 server, then
/// reads pass through until the idle deadline, when they end (the server closes it).
pub struct ConnIo {
    inner: Stream,
    /// This connection's place under the connection cap, given back when it closes.
    _slot: OwnedSemaphorePermit,
    replayed: usize,
    idle_timeout: Duration,
    idle: Pin<Box<Sleep>>,
    idle_closed: bool,
    info: ConnInfo,
}

impl ConnIo {
    fn idle_expired(&mut self, cx: &mut Context<'_>) -> bool {
        if self.idle_closed {
            return true;
        }
        while self.idle.as_mut().poll(cx).is_ready() {
            match self.info.activity.idle_deadline(self.idle_timeout) {
                Some(at) => self.idle.as_mut().reset(at.into()),
                None => {
                    debug!(peer = ?self.info.remote_addr, "closing an idle connection");
                    metrics::connection_closed("idle");
                    self.idle_closed = true;
                    return true;
                }
            }
        }
        false
    }
}

impl AsyncRead for ConnIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.replayed < PREFACE.len() {
            let n = buf.remaining().min(PREFACE.len() - this.replayed);
            buf.put_slice(&PREFACE[this.replayed..this.replayed + n]);
            this.replayed += n;
            return Poll::Ready(Ok(()));
        }
        if this.idle_expired(cx) {
            return Poll::Ready(Ok(())); // end of stream: the HTTP/2 server closes the connection
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for ConnIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl Connected for ConnIo {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        self.info.clone()
    }
}

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

/// Accepts connections on `listener` and yields those that completed the handshake (TLS if
/// `tls`, then the HTTP/2 preface) in time, until `stop` turns true; then the listener and
/// every connection still in its handshake are closed and the stream ends.
pub fn incoming(
    listener: TcpListener,
    limits: &TransportLimits,
    tls: Option<TlsReloader>,
    mut stop: watch::Receiver<bool>,
) -> ReceiverStream<Result<ConnIo, io::Error>> {
    let (tx, rx) = mpsc::channel(64);
    let limits = limits.clone();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    tokio::spawn(async move {
        let mut pending: JoinSet<()> = JoinSet::new();
        let mut backoff = Duration::ZERO;
        loop {
            tokio::select! {
                () = stopped(&mut stop) => break,
                Some(_) = pending.join_next(), if !pending.is_empty() => {}
                accepted = listener.accept() => match accepted {
                    Ok((tcp, peer)) => {
                        backoff = Duration::ZERO;
                        if pending.len() >= limits.max_pending_handshakes {
                            metrics::connection_closed("too_many_handshakes");
                            debug!(%peer, "closing a connection: too many connections in their handshake");
                            continue;
                        }
                        let Ok(slot) = slots.clone().try_acquire_owned() else {
                            metrics::connection_closed("too_many_connections");
                            debug!(%peer, "closing a connection: at the connection cap");
                            continue;
                        };
                        let _ = tcp.set_nodelay(true);
                        pending.spawn(admit(tcp, peer, slot, tls.clone(), limits.clone(), tx.clone()));
                    }
                    Err(e) if per_connection_error(&e) => debug!(error = %e, "accept failed for one connection"),
                    Err(e) => {
                        if backoff.is_zero() {
                            warn!(error = %e, "accept failed; backing off until it succeeds again");
                            backoff = Duration::from_millis(10);
                        } else {
                            backoff = (backoff * 2).min(Duration::from_secs(1));
                        }
                        metrics::accept_backoff();
                        tokio::select! {
                            () = stopped(&mut stop) => break,
                            () = tokio::time::sleep(backoff) => {}
                        }
                    }
                }
            }
        }
        // Dropping the listener closes the port; dropping `pending` aborts the handshakes.
        drop(listener);
        pending.shutdown().await;
    });
    ReceiverStream::new(rx)
}

async fn admit(
    tcp: TcpStream,
    peer: SocketAddr,
    slot: OwnedSemaphorePermit,
    tls: Option<TlsReloader>,
    limits: TransportLimits,
    tx: mpsc::Sender<Result<ConnIo, io::Error>>,
) {
    let local_addr = tcp.local_addr().ok();
    let is_tls = tls.is_some();
    let handshake = async {
        let mut stream = match tls {
            Some(tls) => Stream::Tls(Box::new(tls.acceptor().accept(tcp).await.map_err(|e| ("tls", e))?)),
            None => Stream::Plain(tcp),
        };
        let mut preface = [0u8; PREFACE.len()];
        stream.read_exact(&mut preface).await.map_err(|e| ("not_http2", e))?;
        if &preface != PREFACE {
            return Err(("not_http2", io::Error::new(io::ErrorKind::InvalidData, "no HTTP/2 client preface")));
        }
        Ok(stream)
    };
    let stream = match tokio::time::timeout(limits.handshake_timeout, handshake).await {
        Ok(Ok(stream)) => stream,
        Ok(Err((reason, e))) => {
            metrics::connection_closed(reason);
            debug!(%peer, reason, error = %e, "closing a connection before HTTP/2");
            return;
        }
        Err(_) => {
            metrics::connection_closed("handshake_timeout");
            debug!(%peer, "closing a connection: no HTTP/2 preface within the handshake timeout");
            return;
        }
    };
    let activity = Activity::new();
    let idle = Box::pin(tokio::time::sleep(limits.idle_timeout));
    let io = ConnIo {
        inner: stream,
        _slot: slot,
        replayed: 0,
        idle_timeout: limits.idle_timeout,
        idle,
        idle_closed: false,
        info: ConnInfo { remote_addr: Some(peer), local_addr, tls: is_tls, activity },
    };
    let _ = tx.send(Ok(io)).await;
}
