//! The network edge: what happens to a connection and a call before any round logic.
//!
//! - [`accept`]: accept loops that back off when out of file descriptors;
//! - [`transport`], [`peers`], [`limits`], [`tls`]: connection admission (handshake and idle
//!   deadlines, the connection cap, fair shares by peer and penalties), its configuration,
//!   TLS with reload;
//! - [`guard`], [`worker_wait`]: the per-call guard — in-flight slots, the queue bound, the
//!   request timeout, load shedding by the wait for a worker;
//! - [`http2`]: hyper's HTTP/2 server for the admitted connections, which can close one
//!   gracefully;
//! - [`codec`]: prost's codec, with decode errors that name the field;
//! - [`metrics_http`]: the `/metrics` listener.

pub(crate) mod accept;
pub(crate) mod codec;
pub(crate) mod guard;
pub(crate) mod http2;
pub(crate) mod limits;
pub(crate) mod metrics_http;
pub(crate) mod peers;
pub(crate) mod tls;
pub(crate) mod transport;
pub(crate) mod worker_wait;
