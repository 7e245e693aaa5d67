//! The `/metrics` listener: Prometheus' text format of one Application's registry over
//! hyper's HTTP/1.1 server, with the gRPC listener's accept back-off.

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use tokio::net::TcpListener;

use crate::service::ops::metrics::MetricsRegistry;

/// Serves `GET /metrics` (Prometheus text format: [`crate::service::ops::metrics::MetricsRegistry::render`]) on `listener`
/// until the task is dropped, with hyper's HTTP/1.1 server (keep-alive, pipelining and
/// malformed requests are hyper's business, not ours). `GET /` answers a pointer to
/// `/metrics`; anything else is 404.
pub(crate) async fn serve(listener: TcpListener, registry: MetricsRegistry) {
    // Out of file descriptors, accept fails at once until one is freed: back off like the
    // gRPC listener instead of spinning a core.
    let mut backoff = super::accept::AcceptBackoff::new("metrics", registry.accept_backoff_counter());
    loop {
        let (stream, _) = backoff.accept(&listener).await;
        let registry = registry.clone();
        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let registry = registry.clone();
            async move { Ok::<_, std::convert::Infallible>(respond(&req, &registry)) }
        });
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .header_read_timeout(Duration::from_secs(5))
                .timer(hyper_util::rt::TokioTimer::new())
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let _ = conn.await;
        });
    }
}

fn respond<B>(req: &hyper::Request<B>, registry: &MetricsRegistry) -> hyper::Response<Full<Bytes>> {
    let (status, body) = match (req.method(), req.uri().path()) {
        (&hyper::Method::GET, "/metrics") => (hyper::StatusCode::OK, registry.render()),
        (&hyper::Method::GET, "/") => (hyper::StatusCode::OK, "reddog metrics: see /metrics\n".to_string()),
        _ => (hyper::StatusCode::NOT_FOUND, "not found\n".to_string()),
    };
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"));
    response
}

/// Binds the metrics listener and serves `registry` on it in the background; returns the
/// bound address.
pub(crate) async fn spawn(addr: SocketAddr, registry: MetricsRegistry) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(serve(listener, registry));
    Ok(bound)
}
