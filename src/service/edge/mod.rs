//! The network edge: what happens to a connection and a call before any round logic.
//!
//! - [`accept`]: accept loops that back off when out of file descriptors;
//! - [`transport`], [`limits`], [`tls`]: connection admission (handshake and idle deadlines,
//!   the connection cap, shares per peer), its configuration, TLS with reload;
//! - [`guard`]: the per-call guard — in-flight slots, the queue bound, the request timeout,
//!   load shedding;
//! - [`codec`]: prost's codec, with decode errors that name the field;
//! - [`metrics_http`]: the `/metrics` listener.

pub(crate) mod accept;
pub(crate) mod codec;
pub(crate) mod guard;
pub(crate) mod limits;
pub(crate) mod metrics_http;
pub(crate) mod tls;
pub(crate) mod transport;
