//! The HTTP/2 server behind the connection admission of [`super::transport`]: hyper's, one
//! task per admitted connection, with the settings tonic's `Server` gives it. Served here
//! rather than by tonic's `Server` for the one thing that cannot do: close one connection
//! gracefully — GOAWAY, then its calls in progress finish — while the others go on
//! ([`Activity::retire`]: a newcomer at the connection cap takes the place of a busy
//! connection of its own peer that way). What tonic's `Server` adds around the services and
//! this does not: enforcing a client's `grpc-timeout` on the server side (the client still
//! cancels its call at its deadline, which ends the call here, and every RedDog call is
//! bounded by the request timeout, `super::guard`).
//!
//! [`Activity::retire`]: super::transport::Activity::retire

use std::io;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_stream::{Stream, StreamExt};
use tonic::body::Body;
use tonic::service::Routes;
use tonic::transport::server::Connected;
use tower::ServiceExt;
use tracing::debug;

use crate::service::edge::transport::ConnIo;

/// A listener's HTTP/2 settings.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE, and the connection's receive window.
    pub stream_window: u32,
    pub connection_window: u32,
    /// PINGs to detect a dead peer: how often, and how long to wait for the answer.
    pub keepalive_interval: Duration,
    pub keepalive_timeout: Duration,
    /// Streams a connection may make the server reset before it is closed (h2's guard).
    pub max_local_error_resets: usize,
}

/// How long a connection asked to close gracefully has to finish its calls before it is
/// closed outright (a peer that reads nothing never sees the GOAWAY).
pub const RETIRE_GRACE: Duration = Duration::from_secs(1);

/// Serves every connection `incoming` yields with `routes` under `settings` until `stop`
/// turns true (or `incoming` ends); then asks each connection still open to close gracefully
/// (GOAWAY; its calls in progress finish) and returns once every one has closed.
pub(crate) async fn serve(
    incoming: impl Stream<Item = Result<ConnIo, io::Error>>,
    routes: Routes,
    settings: Settings,
    mut stop: watch::Receiver<bool>,
) {
    let builder = builder(&settings);
    let routes = routes.prepare();
    let mut open = JoinSet::new();
    let each = stop.clone();
    let mut incoming = Box::pin(incoming);
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            Some(_) = open.join_next(), if !open.is_empty() => {}
            io = incoming.next() => match io {
                Some(Ok(io)) => {
                    open.spawn(serve_connection(io, routes.clone(), builder.clone(), each.clone()));
                }
                Some(Err(e)) => debug!(error = %e, "a connection failed before it was served"),
                None => break,
            },
        }
    }
    // Connections admitted but not yet served close now (their places given back).
    drop(incoming);
    while open.join_next().await.is_some() {}
}

/// hyper's HTTP/2 server under `settings`.
fn builder(settings: &Settings) -> http2::Builder<TokioExecutor> {
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .initial_stream_window_size(settings.stream_window)
        .initial_connection_window_size(settings.connection_window)
        .max_concurrent_streams(settings.max_concurrent_streams)
        .keep_alive_interval(settings.keepalive_interval)
        .keep_alive_timeout(settings.keepalive_timeout)
        .max_local_error_reset_streams(settings.max_local_error_resets);
    builder
}

/// Serves one connection until it ends. On `stop`, or when the connection table retires it,
/// it closes gracefully; a retired connection still open [`RETIRE_GRACE`] later is closed
/// outright.
async fn serve_connection(
    io: ConnIo,
    routes: Routes,
    builder: http2::Builder<TokioExecutor>,
    stop: watch::Receiver<bool>,
) {
    let info = io.connect_info();
    let activity = info.activity.clone();
    let service = routes.map_request(move |request: Request<Incoming>| {
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(info.clone());
        request
    });
    let connection = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
    tokio::pin!(connection);
    let leave = {
        let (mut stop, activity) = (stop, activity.clone());
        async move {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => false,
                () = activity.retired() => true,
            }
        }
    };
    let retired = tokio::select! {
        result = &mut connection => return ended(result),
        retired = leave => retired,
    };
    connection.as_mut().graceful_shutdown();
    if !retired {
        return ended(connection.await);
    }
    if let Ok(result) = tokio::time::timeout(RETIRE_GRACE, &mut connection).await {
        return ended(result);
    }
    debug!("a retired connection did not finish within the grace: closing it");
    activity.abort();
    ended(connection.await);
}

/// Logs how a connection ended.
fn ended(result: Result<(), hyper::Error>) {
    if let Err(e) = result {
        debug!(error = %e, "a connection ended with an error");
    }
}
