//! The transport's limits: plain configuration, shared by the settings (`app`), the server
//! (`server`) and the connection layer (`transport`) without any of them importing another.

use std::time::Duration;

/// HTTP/2 and admission limits. Every value must be positive; see `docs/OPERATIONS.md`
/// ("Transport limits") for what each bounds and how the defaults were measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportLimits {
    /// HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS announced to each connection.
    pub max_concurrent_streams_per_connection: u32,
    /// Streams a connection may make the server reset (protocol errors, refused streams)
    /// before it is closed with GOAWAY ENHANCE_YOUR_CALM (h2's local-reset guard).
    pub max_local_error_resets: usize,
    /// Longest time one RedDog call may take, request body included (DEADLINE_EXCEEDED).
    pub request_timeout: Duration,
    /// RedDog calls holding a slot across all connections (from the arrival of the request
    /// message until the answer has been sent); calls beyond it are answered
    /// RESOURCE_EXHAUSTED at once (health and reflection are not counted).
    pub max_in_flight: usize,
    /// Slots of `max_in_flight` one connection may hold at once; its calls beyond it are
    /// answered RESOURCE_EXHAUSTED at once. (A peer — an address, or a client certificate —
    /// holds no more slots than are still free, however many connections it has.)
    pub max_in_flight_per_connection: usize,
    /// Longest time a RedDog call may wait in the server for a worker thread. A call arriving
    /// while a task woken now would wait longer is answered RESOURCE_EXHAUSTED at once
    /// (unless it is its connection's only call and the wait is under twice this), and one
    /// that waited longer from its headers reaching the service until it first ran is
    /// answered so instead of run (its request message's arrival is bounded by the request
    /// timeout instead): the calls served stay fast under overload.
    pub max_queue_wait: Duration,
    /// Request bytes the server holds for calls whose message is still arriving, across all
    /// connections (a call holds no slot meanwhile). A call whose next bytes would pass it is
    /// answered RESOURCE_EXHAUSTED at once; the bytes are given back when its message is whole.
    pub max_pending_request_bytes: usize,
    /// Time from TCP accept until the client has sent the HTTP/2 preface (after the TLS
    /// handshake, with TLS); slower connections are closed.
    pub handshake_timeout: Duration,
    /// Connections not yet past the handshake, at most; more are closed at once.
    pub max_pending_handshakes: usize,
    /// Connections past the handshake, at most. A new connection at the cap gets in by
    /// closing one of the peer holding the most connections if that peer holds at least two
    /// more than the newcomer's, else the longest-idle one of its own peer or of a peer
    /// holding more (idle for `transport::DISPLACE_MIN_IDLE` at least), else by retiring
    /// (GOAWAY) the busiest of those (`transport::RETIRE_MIN_AGE`); when there is none it is
    /// closed. With `max_concurrent_streams_per_connection` it bounds the streams (and their
    /// memory) the server holds at once, and so how long a saturating load's calls queue in
    /// the server's sockets: 64 × 100 (docs/RELIABILITY.md, "Floods and limits", "Overload").
    pub max_connections: usize,
    /// A connection with no call in progress for this long is closed.
    pub idle_timeout: Duration,
    /// Interval of HTTP/2 PINGs to detect dead peers.
    pub keepalive_interval: Duration,
}

impl Default for TransportLimits {
    fn default() -> Self {
        TransportLimits {
            max_concurrent_streams_per_connection: 100,
            max_local_error_resets: 256,
            request_timeout: Duration::from_secs(10),
            max_in_flight: 256,
            max_in_flight_per_connection: 64,
            max_queue_wait: Duration::from_millis(100),
            max_pending_request_bytes: 16 * 1024 * 1024,
            handshake_timeout: Duration::from_secs(5),
            max_pending_handshakes: 1024,
            max_connections: 64,
            idle_timeout: Duration::from_secs(300),
            keepalive_interval: Duration::from_secs(30),
        }
    }
}
