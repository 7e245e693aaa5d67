//! Connection admission in front of the HTTP/2 server: the accept loop, the handshake
//! deadline, optional TLS, the connection cap and the idle-connection deadline.
//!
//! - **Accept back-off** ([`AcceptBackoff`], shared with the `/metrics` listener).
//! - **Handshake deadline.** A connection reaches the HTTP/2 server only once it has completed
//!   the TLS handshake (with TLS) and sent the 24-byte HTTP/2 client preface, within
//!   [`TransportLimits::handshake_timeout`]; otherwise it is closed. At most
//!   [`TransportLimits::max_pending_handshakes`] connections wait at once; more are closed at
//!   accept. Connections still in the handshake when the server drains are closed at once,
//!   so they never hold the drain.
//! - **Peers.** Each admitted connection belongs to a peer ([`super::peers`]: the client
//!   certificate on mutual TLS, otherwise the remote address), which counts its connections
//!   and the in-flight slots its calls hold. A new connection of a peer under a penalty for
//!   leaving answers unread is held unread after the handshake until the penalty ends (past
//!   [`super::peers::MAX_HELD`] such connections, closed at once: `penalized`).
//! - **Connection cap.** At most [`TransportLimits::max_connections`] connections past the
//!   handshake. A connection that completes its handshake at the cap gets in by closing one
//!   of the peer holding the most connections: when that peer holds at least two more than
//!   the newcomer's own peer, its connection with the fewest calls in progress (idle longest
//!   among equals) is closed whatever its use — so however many connections one peer opens,
//!   busy or not, a new peer gets in (if every such connection is already closing, displaced
//!   a moment before, it waits up to [`DISPLACE_WAIT`] for the next place given back).
//!   Otherwise (the newcomer's peer is among those holding the most) the newcomer takes the
//!   place of a connection idle for at least [`DISPLACE_MIN_IDLE`], of its own peer or of a
//!   peer holding more than it; failing that, it *retires* the one of those with the most
//!   calls in progress, among those open for [`RETIRE_MIN_AGE`] with [`RETIRE_MIN_CALLS`]
//!   calls in progress at least: the connection closes gracefully (`super::http2`: GOAWAY,
//!   its calls finish) and its place is handed to the newcomer, which waits up to
//!   [`DISPLACE_WAIT`] for it. So a cap full of one peer's busy connections does not keep
//!   that peer's next client out, and a client calling one at a time keeps its place. When
//!   there is none it is closed instead. A connection that never carried a call may be
//!   displaced once it is [`UNUSED_MIN_AGE`] old, so a churn of fresh unused connections
//!   slower than the cap divided by [`UNUSED_MIN_AGE`] cannot keep newcomers of its own peer
//!   out either (a faster one shares those admissions with them). A connection whose calls
//!   have all been health checks may be displaced by that rule only once idle for the
//!   table's health threshold ([`HEALTH_DISPLACE_MIN_IDLE`] on the gRPC port), so a prober
//!   checking less often than once a second is not cut by a connection flood of its own
//!   address.
//! - **Idle deadline.** A connection with no call in progress for
//!   [`TransportLimits::idle_timeout`] is closed (its reads end; the HTTP/2 server sends
//!   GOAWAY and closes it). A sweep checks every connection a few times per idle timeout (at
//!   most once a second); nothing runs per read. Calls are counted from request to the end of
//!   the response body — RedDog calls by [`Guarded`], the others by [`Activity`] — so a health
//!   `Watch` keeps its connection.
//! - **Undelivered answers.** A RedDog answer holds its slot until it has been sent. A peer
//!   that does not read (an HTTP/2 receive window of 0, a full TCP window) would hold its slots
//!   for ever, so an answer still unsent [`DELIVERY_DEADLINE`] to 2 × [`DELIVERY_DEADLINE`]
//!   after the handler produced it closes its connection outright (reads end, writes fail):
//!   the slots of every call on it are released then, each counted in
//!   `reddog_rpc_undelivered_total`, and its peer is penalized ([`super::peers`]). Per call
//!   this costs two atomic additions (a two-epoch count per connection, flipped by the
//!   sweep), no timer.
//! - **Drain.** [`Connections::abort_all`] ends every connection at once (reads end, writes
//!   fail): the drain uses it once no call is in progress, so a peer that never reads cannot
//!   hold the shutdown.
//!
//! [`Guarded`]: crate::service::edge::guard::Guarded
//! [`Activity`]: crate::service::edge::guard::Activity

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use atomic_waker::AtomicWaker;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;
use tracing::debug;

use crate::service::edge::accept::{AcceptBackoff, stopped};
use crate::service::edge::limits::TransportLimits;
use crate::service::edge::peers::{Peer, PeerKey, Peers};
use crate::service::edge::tls::TlsReloader;
use crate::service::edge::worker_wait::WorkerWait;
use crate::service::ops::metrics::MetricsRegistry;

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    u64::try_from(base().elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One connection's state shared with its calls and with the connection table: its peer,
/// calls in progress, when the last one ended, its share of the global in-flight slots, and
/// whether the server has decided to close it.
#[derive(Debug)]
pub(crate) struct Activity {
    peer: Arc<Peer>,
    in_flight: AtomicUsize,
    last_ms: AtomicU64,
    /// Whether a call has ever begun on it.
    used: AtomicBool,
    /// Whether a call other than a health check has ever begun on it.
    not_health: AtomicBool,
    /// RedDog calls of this connection holding a global in-flight slot (see `guard`).
    admitted: AtomicUsize,
    /// Reads end (a clean close: the HTTP/2 server answers with GOAWAY).
    closing: AtomicBool,
    /// Writes fail too (the drain's last step: a peer that never reads cannot hold it).
    aborted: AtomicBool,
    waker: AtomicWaker,
    /// Answers produced but not yet sent, by the delivery epoch they were produced in.
    undelivered: [AtomicUsize; 2],
    /// The delivery epoch (its low bit indexes `undelivered`), advanced by the sweep.
    epoch: AtomicUsize,
    /// When it was admitted.
    opened: Instant,
    /// Asked to close gracefully ([`Self::retire`]); its server task waits on `retire`.
    retiring: AtomicBool,
    retire: Notify,
    /// The newcomer its place goes to once it has closed, if it was retired for one.
    heir: Mutex<Option<oneshot::Sender<OwnedSemaphorePermit>>>,
}

impl Activity {
    fn new(peer: Arc<Peer>) -> Arc<Activity> {
        Arc::new(Activity {
            peer,
            in_flight: AtomicUsize::new(0),
            last_ms: AtomicU64::new(now_ms()),
            used: AtomicBool::new(false),
            not_health: AtomicBool::new(false),
            admitted: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            undelivered: [AtomicUsize::new(0), AtomicUsize::new(0)],
            epoch: AtomicUsize::new(0),
            opened: Instant::now(),
            retiring: AtomicBool::new(false),
            retire: Notify::new(),
            heir: Mutex::new(None),
        })
    }

    /// Asks the connection to close gracefully (its server task sends GOAWAY and lets the
    /// calls in progress finish, `super::http2`), its place going to `heir` once it has.
    fn retire(&self, heir: oneshot::Sender<OwnedSemaphorePermit>) {
        *self.heir.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(heir);
        self.retiring.store(true, Ordering::Release);
        self.retire.notify_one();
    }

    /// Resolves once the connection has been retired ([`Connections::make_room`]).
    pub(crate) async fn retired(&self) {
        while !self.retiring.load(Ordering::Acquire) {
            self.retire.notified().await;
        }
    }

    /// Whether the server has decided to close it (displaced, idle, retired, aborted).
    fn leaving(&self) -> bool {
        self.closing.load(Ordering::Acquire) || self.retiring.load(Ordering::Acquire)
    }

    /// Ends its reads and writes at once, whatever the peer does.
    pub(crate) fn abort(&self) {
        self.close(true);
    }

    /// Counts an answer as undelivered until the returned guard is dropped (its body sent or
    /// given up).
    pub(crate) fn answered(self: &Arc<Self>) -> Undelivered {
        let bucket = self.epoch.load(Ordering::Acquire) & 1;
        self.undelivered[bucket].fetch_add(1, Ordering::AcqRel);
        Undelivered(self.clone(), bucket)
    }

    /// Answers produced before the last epoch flip and still unsent, then flips: called every
    /// [`DELIVERY_DEADLINE`], so a non-zero result means answers unsent for at least that long.
    fn stale_answers(&self) -> usize {
        let previous = (self.epoch.load(Ordering::Acquire) & 1) ^ 1;
        let stale = self.undelivered[previous].load(Ordering::Acquire);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        stale
    }

    /// Counts a call (not a health check) until the guard is dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> ActivityGuard {
        if !self.not_health.load(Ordering::Relaxed) {
            self.not_health.store(true, Ordering::Relaxed);
        }
        self.begin_health()
    }

    /// Counts a health check until the guard is dropped.
    pub(crate) fn begin_health(self: &Arc<Self>) -> ActivityGuard {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
        ActivityGuard(self.clone())
    }

    /// Takes one of the global slots for a call of this connection: within the connection's
    /// `share`, and unless the connection, or its peer, holds as many as are still `free` (so
    /// however many connections or peers take slots greedily, some stay free for a newcomer:
    /// with `n` of them, about `free / (n + 1)`); never while its peer is penalized. A
    /// connection's first slot is not held to its peer's share: a connection of a peer whose
    /// other connections hold all its share (a second client behind the same address, a
    /// mesh sidecar's) still gets a call at a time through. There are no more such slots
    /// than connections (the connection cap, under the global cap).
    pub(crate) fn admit(self: &Arc<Self>, share: usize, free: usize) -> Result<Admitted, Refused> {
        if let Some(left) = self.peer.penalty_left(now_ms()) {
            return Err(Refused::Penalized(left));
        }
        let held = self.admitted.fetch_add(1, Ordering::AcqRel);
        if held >= share.min(free) {
            self.admitted.fetch_sub(1, Ordering::AcqRel);
            return Err(Refused::Share);
        }
        if !self.peer.take_slot(if held == 0 { usize::MAX } else { free }) {
            self.admitted.fetch_sub(1, Ordering::AcqRel);
            return Err(Refused::Share);
        }
        Ok(Admitted(self.clone()))
    }

    /// Calls (health checks included) in progress on the connection now.
    pub(crate) fn calls_in_progress(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// How long the connection has been idle; `None` while a call is in progress.
    fn idle_for(&self, now_ms: u64) -> Option<u64> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(now_ms.saturating_sub(self.last_ms.load(Ordering::Acquire)))
    }

    /// Ends the connection's reads (and, with `abort`, its writes) and wakes its task.
    fn close(&self, abort: bool) {
        if abort {
            self.aborted.store(true, Ordering::Release);
        }
        self.closing.store(true, Ordering::Release);
        self.waker.wake();
    }
}

/// Keeps one call counted on its connection.
#[derive(Debug)]
pub(crate) struct ActivityGuard(Arc<Activity>);

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        self.0.last_ms.store(now_ms(), Ordering::Release);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One slot of a connection's share of the global in-flight slots.
#[derive(Debug)]
pub(crate) struct Admitted(Arc<Activity>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.admitted.fetch_sub(1, Ordering::AcqRel);
        self.0.peer.give_slot();
    }
}

/// Why [`Activity::admit`] gave no slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The connection or its peer holds its share.
    Share,
    /// The peer is penalized for this much longer.
    Penalized(Duration),
}

/// One answer counted as undelivered on its connection (see [`Activity::answered`]).
#[derive(Debug)]
pub(crate) struct Undelivered(Arc<Activity>, usize);

impl Drop for Undelivered {
    fn drop(&mut self) {
        self.0.undelivered[self.1].fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a request knows about its connection (a request extension).
#[derive(Clone, Debug)]
pub(crate) struct ConnInfo {
    pub remote_addr: Option<SocketAddr>,
    #[allow(dead_code)] // unread since the module is crate-private
    pub local_addr: Option<SocketAddr>,
    /// Whether the connection is TLS.
    #[allow(dead_code)] // unread since the module is crate-private
    pub tls: bool,
    pub activity: Arc<Activity>,
}

/// The connections past the handshake: the cap's slots, each connection's [`Activity`] and
/// the peers they belong to, for the idle sweep, for making room at the cap, and for the drain.
#[derive(Debug)]
pub(crate) struct Connections {
    slots: Arc<Semaphore>,
    /// How long a connection that carried only health checks must be idle to be displaced.
    health_min_idle: Duration,
    next_id: AtomicU64,
    live: Mutex<HashMap<u64, Arc<Activity>>>,
    peers: Peers,
    /// The wait for a worker, if the server sheds by it: answers left unsent while it was
    /// long may be the server's doing, not the peer's.
    worker_wait: OnceLock<Arc<WorkerWait>>,
    /// Where closed connections, undelivered answers, penalties and accept back-offs are
    /// counted.
    metrics: MetricsRegistry,
}

impl Connections {
    /// A table for at most `max` connections, where a connection that carried only health
    /// checks is displaced like any other (the health-only port's table), counted in
    /// `metrics`.
    pub(crate) fn new(max: usize, metrics: MetricsRegistry) -> Arc<Connections> {
        Connections::with_health_min_idle(max, DISPLACE_MIN_IDLE, metrics)
    }

    /// A table for at most `max` connections, where a connection that carried only health
    /// checks may be displaced once idle for `health_min_idle` (the gRPC port's table:
    /// [`HEALTH_DISPLACE_MIN_IDLE`]), counted in `metrics`.
    pub(crate) fn with_health_min_idle(
        max: usize,
        health_min_idle: Duration,
        metrics: MetricsRegistry,
    ) -> Arc<Connections> {
        Arc::new(Connections {
            slots: Arc::new(Semaphore::new(max)),
            health_min_idle,
            next_id: AtomicU64::new(0),
            live: Mutex::default(),
            peers: Peers::default(),
            worker_wait: OnceLock::new(),
            metrics,
        })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Activity>>> {
        self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Connections open now.
    pub(crate) fn len(&self) -> usize {
        self.live().len()
    }

    /// Whether no connection is open.
    #[allow(dead_code)] // unused since the module is crate-private
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes room at the cap for a new connection of `newcomer` (module docs, "Connection
    /// cap"): closes a connection of the peer holding the most connections if it holds at
    /// least two more than `newcomer`, else the connection idle longest past its threshold
    /// (`min_idle`; the table's health threshold if it carried only health checks;
    /// [`UNUSED_MIN_AGE`] if it never carried a call) among those of `newcomer` and of the
    /// peers holding more; failing both, retires the busiest of those ([`retire_busiest`]),
    /// its place promised to `newcomer`.
    fn make_room(&self, newcomer: &PeerKey, min_idle: Duration) -> Room {
        let mine = self.peers.get(newcomer).map_or(0, |p| p.connections());
        let live = self.live();
        let open: Vec<&Arc<Activity>> = live.values().filter(|a| !a.leaving()).collect();
        if close_of_biggest_peer(&open, newcomer, mine) || self.close_longest_idle(&open, newcomer, mine, min_idle) {
            return Room::Displaced;
        }
        retire_busiest(&open, newcomer, mine).map_or(Room::None, Room::Promised)
    }

    /// Whether a peer other than `newcomer`'s holds at least two more connections than it
    /// (those closing included): then `newcomer` is owed a place at the cap, and when every
    /// connection it could displace is already closing (displaced by others a moment before),
    /// it waits for one of their places instead of being turned away.
    fn outnumbered(&self, newcomer: &PeerKey) -> bool {
        let mine = self.peers.get(newcomer).map_or(0, |p| p.connections());
        self.live().values().any(|a| a.peer.key() != *newcomer && a.peer.connections() >= mine + 2)
    }

    /// Closes the connection idle longest past its threshold among those of `newcomer` and of
    /// the peers holding more than its `mine` (see [`Self::make_room`]). Whether one was closed.
    fn close_longest_idle(&self, open: &[&Arc<Activity>], newcomer: &PeerKey, mine: usize, min_idle: Duration) -> bool {
        let now = now_ms();
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let min_idle = ms(min_idle);
        let unused_min = ms(UNUSED_MIN_AGE).min(min_idle);
        let health_min = ms(self.health_min_idle).max(min_idle);
        let threshold = |a: &Activity| {
            if !a.used.load(Ordering::Relaxed) {
                unused_min
            } else if a.not_health.load(Ordering::Relaxed) {
                min_idle
            } else {
                health_min
            }
        };
        let oldest = open
            .iter()
            .filter(|a| a.peer.key() == *newcomer || a.peer.connections() > mine)
            .filter_map(|a| a.idle_for(now).map(|idle| (idle, a)))
            .filter(|(idle, a)| *idle >= threshold(a))
            .max_by_key(|(idle, _)| *idle);
        match oldest {
            Some((_, a)) => {
                a.close(false);
                true
            }
            None => false,
        }
    }

    /// Closes every connection idle for at least `idle`.
    fn close_idle(&self, idle: Duration) {
        let now = now_ms();
        let limit = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
        for a in self.live().values() {
            if !a.closing.load(Ordering::Acquire) && a.idle_for(now).is_some_and(|i| i >= limit) {
                debug!("closing an idle connection");
                self.metrics.connection_closed("idle");
                a.close(false);
            }
        }
    }

    /// Reads `wait` in [`Self::close_undelivered`].
    pub(crate) fn set_worker_wait(&self, wait: Arc<WorkerWait>) {
        let _ = self.worker_wait.set(wait);
    }

    /// Closes (reads end, writes fail) every connection with answers unsent since before the
    /// previous call, penalizing its peer; called every [`DELIVERY_DEADLINE`]. Not after a
    /// period in which a task waited over half the deadline for a worker: the answers may be
    /// unsent because the server has not got round to them (they are looked at again next
    /// time). Forgets the peers whose penalty is over and forgiven.
    fn close_undelivered(&self) {
        let now = now_ms();
        let busy = self.worker_wait.get().is_some_and(|w| w.take_peak() > DELIVERY_DEADLINE / 2);
        for a in self.live().values() {
            let stale = a.stale_answers();
            if stale > 0 && !busy && !a.closing.load(Ordering::Acquire) {
                debug!(answers = stale, "closing a connection that does not read its answers");
                self.metrics.connection_closed("undelivered");
                self.metrics.undelivered(a.admitted.load(Ordering::Acquire));
                a.close(true);
                if let Some(penalty) = a.peer.strike(now) {
                    debug!(penalty_ms = penalty.as_millis(), "a peer left answers unread: no slot meanwhile");
                    self.metrics.peer_penalized();
                }
            }
        }
        self.peers.sweep(now);
    }

    /// Ends every open connection at once: reads end and writes fail, whatever the peer does.
    pub(crate) fn abort_all(&self) {
        for a in self.live().values() {
            a.close(true);
        }
    }
}

/// What [`Connections::make_room`] did.
enum Room {
    /// Closed a connection: its place goes to the first connection waiting for one.
    Displaced,
    /// Retired one: its place goes to the newcomer, through this, once it has closed.
    Promised(oneshot::Receiver<OwnedSemaphorePermit>),
    /// Nothing.
    None,
}

/// A connection's place in [`Connections`], given back when the connection is dropped (or
/// handed to the newcomer it was retired for).
struct Entry {
    table: Arc<Connections>,
    id: u64,
    peer: Arc<Peer>,
    slot: Option<OwnedSemaphorePermit>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let gone = self.table.live().remove(&self.id);
        self.table.peers.leave(&self.peer, now_ms());
        let heir = gone.and_then(|a| a.heir.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take());
        if let (Some(heir), Some(slot)) = (heir, self.slot.take()) {
            // A newcomer that stopped waiting drops the place, giving it back.
            let _ = heir.send(slot);
        }
    }
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
/// reads and writes pass through until the server closes it (idle, displaced at the cap, or
/// the drain's last step): then reads end and, when aborted, writes fail.
pub(crate) struct ConnIo {
    inner: Stream,
    replayed: usize,
    info: ConnInfo,
    _entry: Entry,
}

impl ConnIo {
    fn aborted() -> io::Error {
        io::Error::new(io::ErrorKind::BrokenPipe, "the server closed the connection")
    }

    /// Registers the task for [`Activity::close`] after an operation returned `Pending`.
    fn park(&self, cx: &mut Context<'_>) {
        self.info.activity.waker.register(cx.waker());
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
        let activity = &this.info.activity;
        if activity.closing.load(Ordering::Acquire) {
            return Poll::Ready(Ok(())); // end of stream: the HTTP/2 server closes the connection
        }
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Pending => {
                this.park(cx);
                if this.info.activity.closing.load(Ordering::Acquire) { Poll::Ready(Ok(())) } else { Poll::Pending }
            }
            ready => ready,
        }
    }
}

impl ConnIo {
    /// Runs a write-side operation unless the connection was aborted; parks on `Pending`.
    fn write_op<T>(
        &mut self,
        cx: &mut Context<'_>,
        op: impl FnOnce(Pin<&mut Stream>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if self.info.activity.aborted.load(Ordering::Acquire) {
            return Poll::Ready(Err(Self::aborted()));
        }
        match op(Pin::new(&mut self.inner), cx) {
            Poll::Pending => {
                self.park(cx);
                if self.info.activity.aborted.load(Ordering::Acquire) {
                    Poll::Ready(Err(Self::aborted()))
                } else {
                    Poll::Pending
                }
            }
            ready => ready,
        }
    }
}

impl AsyncWrite for ConnIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().write_op(cx, |s, cx| s.poll_write(cx, buf))
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().write_op(cx, |s, cx| s.poll_flush(cx))
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().write_op(cx, |s, cx| s.poll_shutdown(cx))
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().write_op(cx, |s, cx| s.poll_write_vectored(cx, bufs))
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

/// If the peer holding the most connections among `open` holds at least two more than
/// `newcomer`'s `mine`, closes its connection with the fewest calls in progress (idle longest
/// among equals). Whether one was closed.
fn close_of_biggest_peer(open: &[&Arc<Activity>], newcomer: &PeerKey, mine: usize) -> bool {
    let Some(big) = open.iter().map(|a| &a.peer).max_by_key(|p| p.connections()) else { return false };
    if big.key() == *newcomer || big.connections() < mine + 2 {
        return false;
    }
    let now = now_ms();
    let victim = open
        .iter()
        .filter(|a| Arc::ptr_eq(&a.peer, big))
        .min_by_key(|a| (a.calls_in_progress(), std::cmp::Reverse(a.idle_for(now).unwrap_or(0))));
    match victim {
        Some(victim) => {
            // With calls in progress (they are cut), writes end too, so its place frees at
            // once whatever the peer reads.
            victim.close(victim.calls_in_progress() > 0);
            true
        }
        None => false,
    }
}

/// Retires the connection with the most calls in progress (the oldest among equals) among
/// those of `newcomer` and of the peers holding more than its `mine` that have been open for
/// [`RETIRE_MIN_AGE`] at least and have [`RETIRE_MIN_CALLS`] calls in progress at least; the
/// receiver gets its place once it has closed. (A client calling one at a time, or a
/// prober, keeps its connection: the places retired are those of connections that pile
/// calls up.)
fn retire_busiest(
    open: &[&Arc<Activity>],
    newcomer: &PeerKey,
    mine: usize,
) -> Option<oneshot::Receiver<OwnedSemaphorePermit>> {
    let busiest = open
        .iter()
        .filter(|a| a.peer.key() == *newcomer || a.peer.connections() > mine)
        .filter(|a| a.opened.elapsed() >= RETIRE_MIN_AGE && a.calls_in_progress() >= RETIRE_MIN_CALLS)
        .max_by_key(|a| (a.calls_in_progress(), std::cmp::Reverse(a.opened)))?;
    let (heir, place) = oneshot::channel();
    busiest.retire(heir);
    Some(place)
}

/// Accepts connections on `listener` and yields those that completed the handshake (TLS if
/// `tls`, then the HTTP/2 preface) in time, until `stop` turns true; then the listener and
/// every connection still in its handshake are closed and the stream ends. `conns` is the
/// table the admitted connections join (the caller keeps it for the drain).
pub(crate) fn incoming(
    listener: TcpListener,
    limits: &TransportLimits,
    tls: Option<TlsReloader>,
    conns: Arc<Connections>,
    mut stop: watch::Receiver<bool>,
) -> ReceiverStream<Result<ConnIo, io::Error>> {
    let (tx, rx) = mpsc::channel(64);
    let limits = limits.clone();
    tokio::spawn(sweep(conns.clone(), limits.idle_timeout, stop.clone()));
    tokio::spawn(async move {
        let mut pending: JoinSet<()> = JoinSet::new();
        let mut backoff = AcceptBackoff::new("grpc", conns.metrics.accept_backoff_counter());
        loop {
            tokio::select! {
                () = stopped(&mut stop) => break,
                Some(_) = pending.join_next(), if !pending.is_empty() => {}
                (tcp, peer) = backoff.accept(&listener) => {
                    if pending.len() >= limits.max_pending_handshakes {
                        conns.metrics.connection_closed("too_many_handshakes");
                        debug!(%peer, "closing a connection: too many connections in their handshake");
                        continue;
                    }
                    let _ = tcp.set_nodelay(true);
                    pending.spawn(admit(tcp, peer, conns.clone(), tls.clone(), limits.clone(), tx.clone()));
                }
            }
        }
        // Dropping the listener closes the port; dropping `pending` aborts the handshakes.
        drop(listener);
        pending.shutdown().await;
    });
    ReceiverStream::new(rx)
}

/// Until `stop`: closes connections idle past `idle_timeout` and those whose answers were not
/// taken within [`DELIVERY_DEADLINE`].
async fn sweep(conns: Arc<Connections>, idle_timeout: Duration, mut stop: watch::Receiver<bool>) {
    let every = (idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut delivery = tokio::time::interval(DELIVERY_DEADLINE);
    delivery.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stopped(&mut stop) => break,
            _ = tick.tick() => conns.close_idle(idle_timeout),
            _ = delivery.tick() => conns.close_undelivered(),
        }
    }
}

/// An answer the handler has produced and the peer has not taken within this time (at most
/// twice this) closes its connection, releasing its slots (see the module docs). A reading
/// peer takes a RedDog answer (a few KiB at most, under any HTTP/2 window it may announce)
/// in a round trip.
pub const DELIVERY_DEADLINE: Duration = Duration::from_secs(1);

/// How long a connection that completed its handshake at the cap waits for the slot of the
/// connection it displaced or retired.
const DISPLACE_WAIT: Duration = Duration::from_secs(2);

/// A newcomer at the cap that finds no connection to displace retires (closes gracefully:
/// GOAWAY, its calls in progress finish) the busiest connection of its own peer, or of a peer
/// holding more, among those open this long with [`RETIRE_MIN_CALLS`] in progress
/// (`retire_busiest`): so the cap full of one peer's busy connections does not keep that
/// peer's next client out (a platform's second instance behind the same address), while each
/// connection, once in, keeps its place for this long however fast newcomers arrive.
pub const RETIRE_MIN_AGE: Duration = Duration::from_secs(1);

/// Calls in progress a connection must have for a newcomer at the cap to retire it: more than
/// a client calling one at a time has.
pub const RETIRE_MIN_CALLS: usize = 2;

/// How long a connection must have had no call in progress before a new connection at the
/// cap may displace it (an accepted connection counts as idle since its accept).
///
/// Closing a connection races with a call its client starts at that moment: the server has
/// stopped reading, so the call fails although the server never saw it. A client calling at
/// least once a second never meets that race, and a connection flood cannot churn through the
/// connections that just got in: under `h2load -c 500 -m 100` at the cap, the connections
/// past it are closed instead (`too_many_connections`).
pub const DISPLACE_MIN_IDLE: Duration = Duration::from_secs(1);

/// How long a connection on the gRPC port whose calls have all been health checks must have
/// had no call in progress before a new connection at the cap may displace it: a prober that
/// checks at least once a minute (Kubernetes' default period is 10 s) keeps its connection
/// through a connection flood, where a RedDog client must call once a second. Not longer: an
/// attacker holding connections with health checks pays one call a minute for each.
pub const HEALTH_DISPLACE_MIN_IDLE: Duration = Duration::from_secs(60);

/// A connection that has never carried a call may be displaced at the cap once it is this
/// old: a client calls within a round trip of connecting, so it is not cut before its first
/// call, while connections opened and left unused (a churn of new connections) cannot keep
/// newcomers out by being younger than [`DISPLACE_MIN_IDLE`].
pub const UNUSED_MIN_AGE: Duration = Duration::from_millis(100);

/// Admits one accepted connection: its handshake in time, its peer's penalty waited out, a
/// place in the connection table (displacing one at the cap), then hands it to the server.
async fn admit(
    tcp: TcpStream,
    peer: SocketAddr,
    conns: Arc<Connections>,
    tls: Option<TlsReloader>,
    limits: TransportLimits,
    tx: mpsc::Sender<Result<ConnIo, io::Error>>,
) {
    let local_addr = tcp.local_addr().ok();
    let is_tls = tls.is_some();
    let stream = match tokio::time::timeout(limits.handshake_timeout, handshake(tcp, tls)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err((reason, e))) => {
            conns.metrics.connection_closed(reason);
            debug!(%peer, reason, error = %e, "closing a connection before HTTP/2");
            return;
        }
        Err(_) => {
            conns.metrics.connection_closed("handshake_timeout");
            debug!(%peer, "closing a connection: no HTTP/2 preface within the handshake timeout");
            return;
        }
    };
    let key = peer_key(&stream, peer);
    if !wait_out_penalty(&conns, &key, peer).await {
        return;
    }
    let Some(slot) = connection_slot(&conns, &key, peer).await else { return };
    let peer_entry = conns.peers.join(key);
    let activity = Activity::new(peer_entry.clone());
    let id = conns.next_id.fetch_add(1, Ordering::Relaxed);
    conns.live().insert(id, activity.clone());
    let io = ConnIo {
        inner: stream,
        replayed: 0,
        info: ConnInfo { remote_addr: Some(peer), local_addr, tls: is_tls, activity },
        _entry: Entry { table: conns, id, peer: peer_entry, slot: Some(slot) },
    };
    let _ = tx.send(Ok(io)).await;
}

/// The TLS handshake (with `tls`), then the HTTP/2 client preface; an error names the
/// `reddog_connections_closed_total` reason.
async fn handshake(tcp: TcpStream, tls: Option<TlsReloader>) -> Result<Stream, (&'static str, io::Error)> {
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
}

/// Whom a connection's shares belong to: its client certificate on mutual TLS, else its address.
fn peer_key(stream: &Stream, peer: SocketAddr) -> PeerKey {
    match stream {
        Stream::Tls(tls) => match tls.get_ref().1.peer_certificates().and_then(|chain| chain.first()) {
            Some(leaf) => PeerKey::of_certificate(leaf),
            None => PeerKey::of_ip(peer.ip()),
        },
        Stream::Plain(_) => PeerKey::of_ip(peer.ip()),
    }
}

/// A penalized peer waits: its new connection is held unread until the penalty ends (or
/// closed at once past `MAX_HELD` of them), so a client reconnecting at once does not spin.
/// False when the connection is to be closed.
async fn wait_out_penalty(conns: &Connections, key: &PeerKey, peer: SocketAddr) -> bool {
    if let Some(penalized) = conns.peers.get(key)
        && let Some(left) = penalized.penalty_left(now_ms())
    {
        let Some(_held) = penalized.hold() else {
            conns.metrics.connection_closed("penalized");
            debug!(%peer, penalty_left_ms = left.as_millis(), "closing a connection: its peer left answers unread");
            return false;
        };
        debug!(%peer, penalty_left_ms = left.as_millis(), "holding a connection until its peer's penalty ends");
        tokio::time::sleep(left).await;
    }
    true
}

/// A place under the connection cap, made by displacing a connection when the cap is full
/// (`Connections::make_room`); `None` when there is none to be had (the connection is closed).
async fn connection_slot(conns: &Connections, key: &PeerKey, peer: SocketAddr) -> Option<OwnedSemaphorePermit> {
    if let Ok(slot) = conns.slots.clone().try_acquire_owned() {
        return Some(slot);
    }
    match conns.make_room(key, DISPLACE_MIN_IDLE) {
        Room::Displaced => {
            conns.metrics.connection_closed("displaced");
            debug!(%peer, "at the connection cap: closed a connection to make room");
            freed_slot(conns).await
        }
        Room::Promised(place) => {
            conns.metrics.connection_closed("retired");
            debug!(%peer, "at the connection cap: waiting for the place of a connection closing gracefully");
            match tokio::time::timeout(DISPLACE_WAIT, place).await {
                Ok(Ok(slot)) => Some(slot),
                _ => {
                    conns.metrics.connection_closed("too_many_connections");
                    None
                }
            }
        }
        // Slots are handed out first come, first served, so the places of the connections
        // closing now go to those who closed them, and the next one to this newcomer.
        Room::None if conns.outnumbered(key) => {
            debug!(%peer, "at the connection cap: waiting for the place of a closing connection");
            freed_slot(conns).await
        }
        Room::None => {
            conns.metrics.connection_closed("too_many_connections");
            debug!(%peer, "closing a connection: at the connection cap, no connection to displace");
            None
        }
    }
}

/// The next slot given back, within [`DISPLACE_WAIT`]; `None` (the connection is closed,
/// `too_many_connections`) when none is.
async fn freed_slot(conns: &Connections) -> Option<OwnedSemaphorePermit> {
    match tokio::time::timeout(DISPLACE_WAIT, conns.slots.clone().acquire_owned()).await {
        Ok(Ok(slot)) => Some(slot),
        _ => {
            conns.metrics.connection_closed("too_many_connections");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection of `key` in the table that the server has already decided to close (its
    /// place not yet given back).
    fn closing_connection(conns: &Connections, key: PeerKey) {
        let activity = Activity::new(conns.peers.join(key));
        activity.close(false);
        let id = conns.next_id.fetch_add(1, Ordering::Relaxed);
        conns.live().insert(id, activity);
    }

    /// A connection of `key` in the table, holding one of `conns`' places, opened `age` ago
    /// with `calls` in progress (kept while the returned guards live).
    fn connection(
        conns: &Arc<Connections>,
        key: PeerKey,
        age: Duration,
        calls: usize,
    ) -> (Arc<Activity>, Entry, Vec<ActivityGuard>) {
        let peer = conns.peers.join(key);
        let mut activity = Activity::new(peer.clone());
        Arc::get_mut(&mut activity).unwrap().opened = Instant::now() - age;
        let guards = (0..calls).map(|_| activity.begin()).collect();
        let id = conns.next_id.fetch_add(1, Ordering::Relaxed);
        conns.live().insert(id, activity.clone());
        let slot = conns.slots.clone().try_acquire_owned().unwrap();
        (activity, Entry { table: conns.clone(), id, peer, slot: Some(slot) }, guards)
    }

    #[tokio::test]
    async fn a_newcomer_of_a_peer_holding_the_cap_busy_retires_its_busiest_connection_and_takes_its_place() {
        let conns = Connections::new(3, MetricsRegistry::default());
        let (key, addr) = (PeerKey::of_ip([127, 0, 0, 3].into()), SocketAddr::from(([127, 0, 0, 3], 1)));
        let old = RETIRE_MIN_AGE * 2;
        let (steady, _steady_entry, _s) = connection(&conns, key, old, 1); // one call at a time
        let (busy, busy_entry, _b) = connection(&conns, key, old, RETIRE_MIN_CALLS + 1);
        let (young, _young_entry, _y) = connection(&conns, key, RETIRE_MIN_AGE / 2, RETIRE_MIN_CALLS + 5);
        let waiting = tokio::spawn({
            let conns = conns.clone();
            async move { connection_slot(&conns, &key, addr).await }
        });
        tokio::time::timeout(Duration::from_secs(1), busy.retired()).await.expect("the busiest old connection retired");
        assert!(
            !steady.leaving() && !young.leaving(),
            "a client calling one at a time, or a young connection, retired"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the newcomer did not wait for the retired connection's place");
        drop(busy_entry); // the retired connection closes
        let _place = waiting.await.unwrap().expect("the newcomer did not get the retired connection's place");
        // The others are not retired for it, nor for the next newcomer: none is left to retire.
        assert!(connection_slot(&conns, &key, addr).await.is_none());
        assert!(!steady.leaving() && !young.leaving());
    }

    /// A retired connection's place goes to the newcomer it was retired for, not to another
    /// waiting at the cap; if that newcomer gave up, the place is given back.
    #[tokio::test]
    async fn a_retired_connections_place_goes_to_its_heir_or_back_to_the_cap() {
        let conns = Connections::new(1, MetricsRegistry::default());
        let (activity, entry, _calls) = connection(&conns, PeerKey::of_ip([127, 0, 0, 3].into()), RETIRE_MIN_AGE, 0);
        let (heir, place) = oneshot::channel();
        activity.retire(heir);
        let other = tokio::spawn(conns.slots.clone().acquire_owned());
        drop(entry);
        let inherited = place.await.expect("the heir got no place");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!other.is_finished(), "the place went to another waiting");
        other.abort();
        let _ = other.await;
        drop(inherited);
        let (activity, entry, _calls) = connection(&conns, PeerKey::of_ip([127, 0, 0, 3].into()), RETIRE_MIN_AGE, 0);
        let (heir, place) = oneshot::channel();
        activity.retire(heir);
        drop(place); // the newcomer gave up
        drop(entry);
        assert!(conns.slots.clone().try_acquire_owned().is_ok(), "the place was not given back");
    }

    /// A connection's first slot is not held to its peer's share; its second is.
    #[test]
    fn a_connection_gets_its_first_slot_while_its_peer_holds_its_share() {
        let conns = Connections::new(4, MetricsRegistry::default());
        let key = PeerKey::of_ip([127, 0, 0, 3].into());
        let (greedy, _e1, _c1) = connection(&conns, key, Duration::ZERO, 0);
        let (second, _e2, _c2) = connection(&conns, key, Duration::ZERO, 0);
        // 8 slots free: the peer takes 4 through one connection, then holds as many as are free.
        let mut held: Vec<_> = (0..4).map(|i| greedy.admit(64, 8 - i).unwrap()).collect();
        assert_eq!(greedy.admit(64, 4).unwrap_err(), Refused::Share);
        held.push(second.admit(64, 4).expect("a connection's first slot"));
        assert_eq!(second.admit(64, 3).unwrap_err(), Refused::Share, "its second slot, over the peer's share");
    }

    #[tokio::test]
    async fn a_new_peer_waits_for_a_place_when_every_connection_it_could_displace_is_closing() {
        let conns = Connections::new(2, MetricsRegistry::default());
        let mut places: Vec<_> = (0..2).map(|_| conns.slots.clone().try_acquire_owned().unwrap()).collect();
        let big = PeerKey::of_ip([127, 0, 0, 3].into());
        closing_connection(&conns, big);
        closing_connection(&conns, big);
        let (newcomer, addr) = (PeerKey::of_ip([127, 0, 0, 4].into()), SocketAddr::from(([127, 0, 0, 4], 1)));
        let waiting = tokio::spawn({
            let conns = conns.clone();
            async move { connection_slot(&conns, &newcomer, addr).await }
        });
        // Long enough for a refusal, which comes at once (no timer before it).
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the new peer was turned away instead of waiting");
        drop(places.pop()); // one closing connection gives its place back
        let place = waiting.await.unwrap();
        assert!(place.is_some(), "the new peer got no place");
        // The peer holding the most is owed nothing: its newcomer is turned away at once.
        assert!(connection_slot(&conns, &big, SocketAddr::from(([127, 0, 0, 3], 1))).await.is_none());
    }
}
