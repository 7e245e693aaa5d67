//! Tower services around the gRPC services:
//!
//! - [`Guarded`] wraps `reddog.v1.RedDog`: a global cap on calls in progress (a call over the
//!   cap is answered RESOURCE_EXHAUSTED at once — load shedding — and admitted again as soon as
//!   calls finish), a per-call timeout (DEADLINE_EXCEEDED; it covers reading the request body,
//!   so a stalled body cannot hold its slot), and the answers tonic gives to requests it
//!   cannot decode, put right: an undecodable message (bad UTF-8, wrong wire type, truncated)
//!   or a unary call without a message is INVALID_ARGUMENT, not INTERNAL, and a message over the size limit is
//!   RESOURCE_EXHAUSTED, not OUT_OF_RANGE — both with `google.rpc` details.
//!   Health and reflection are not behind the cap: health stays answerable under any load.
//! - [`EndOnStop`] wraps the health service: when the server drains, a response stream still
//!   open (a `Watch`) ends with UNAVAILABLE after the messages already due (the NOT_SERVING
//!   update), so it does not hold the drain.
//! - [`ActivityLayer`] counts the calls in progress on each connection (see
//!   [`super::transport`]: the idle deadline).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderMap, Request, Response};
use http_body::Frame;
use tokio::sync::{Semaphore, watch};
use tonic::body::Body;
use tonic::codegen::Bytes;
use tonic::server::NamedService;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use super::error::ERROR_DOMAIN;
use super::metrics;
use super::transport::ConnInfo;
use crate::error::EngineError;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The answer to a call over the global cap: RESOURCE_EXHAUSTED with `ErrorInfo` reason
/// `OVERLOADED` and a `RetryInfo` hint.
pub fn overloaded() -> Status {
    let mut d = ErrorDetails::with_retry_info(Some(Duration::from_millis(100)));
    d.set_error_info("OVERLOADED", ERROR_DOMAIN, []);
    Status::with_error_details(
        Code::ResourceExhausted,
        "the server is at its limit of calls in progress; retry later",
        d,
    )
}

/// The answer to a call that took longer than the per-call timeout.
pub fn timed_out(limit: Duration) -> Status {
    let mut d = ErrorDetails::new();
    d.set_error_info("REQUEST_TIMEOUT", ERROR_DOMAIN, [("timeout_ms".to_string(), limit.as_millis().to_string())]);
    Status::with_error_details(
        Code::DeadlineExceeded,
        format!("the call did not complete within the server's {} ms limit", limit.as_millis()),
        d,
    )
}

/// The answer to a request message over the size limit: RESOURCE_EXHAUSTED with a
/// `QuotaFailure` on `request` and `ErrorInfo` reason `REQUEST_TOO_LARGE`.
pub fn too_large(limit: usize) -> Status {
    let mut d =
        ErrorDetails::with_quota_failure_violation("request", format!("a request message is at most {limit} bytes"));
    d.set_error_info("REQUEST_TOO_LARGE", ERROR_DOMAIN, [("limit_bytes".to_string(), limit.to_string())]);
    Status::with_error_details(
        Code::ResourceExhausted,
        format!("the request message is over the {limit}-byte limit"),
        d,
    )
}

const PROST_PREFIX: &str = "failed to decode Protobuf message: ";

/// INVALID_ARGUMENT for a protobuf decode error text, naming the field path prost reports
/// (`seats.bet`), or `request` when it names none.
fn undecodable(message: &str) -> Status {
    let mut rest = message.strip_prefix(PROST_PREFIX).unwrap_or(message);
    // prost writes its stack innermost first: "Inner.field: Outer.field: description".
    let mut path = Vec::new();
    while let Some((head, tail)) = rest.split_once(": ") {
        let Some((msg, field)) = head.split_once('.') else { break };
        let ident = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !(ident(msg) && ident(field)) {
            break;
        }
        path.push(field.to_string());
        rest = tail;
    }
    path.reverse();
    let field = if path.is_empty() { "request".to_string() } else { path.join(".") };
    EngineError::invalid(field, format!("the request message is not valid protobuf: {rest}")).into()
}

/// Replaces tonic's decode-error answers (see the module docs); passes anything else.
fn put_right(response: Response<Body>, limit: usize) -> Response<Body> {
    let code = response.headers().get("grpc-status").map(http::HeaderValue::as_bytes);
    let fix = match code {
        Some(b"13") | Some(b"11") => Status::from_header_map(response.headers()).and_then(|s| match s.code() {
            Code::Internal if s.message().starts_with(PROST_PREFIX) => Some(undecodable(s.message())),
            Code::Internal if s.message() == "Missing request message." => {
                Some(EngineError::invalid("request", "the call carried no request message").into())
            }
            Code::OutOfRange if s.message().contains("decoded message length too large") => Some(too_large(limit)),
            _ => None,
        }),
        _ => None,
    };
    match fix {
        Some(status) => {
            metrics::bad_request(status.code());
            status.into_http()
        }
        None => response,
    }
}

/// The RedDog service behind the global cap and the per-call timeout (see the module docs).
#[derive(Clone, Debug)]
pub struct Guarded<S> {
    inner: S,
    permits: Arc<Semaphore>,
    timeout: Duration,
    max_message: usize,
    in_flight: ::metrics::Gauge,
}

impl<S> Guarded<S> {
    /// `max_in_flight` calls at once, each at most `timeout`; `max_message` is the decode
    /// limit the inner service was given (named in the RESOURCE_EXHAUSTED answer).
    pub fn new(inner: S, max_in_flight: usize, timeout: Duration, max_message: usize) -> Guarded<S> {
        Guarded {
            inner,
            permits: Arc::new(Semaphore::new(max_in_flight)),
            timeout,
            max_message,
            in_flight: metrics::in_flight_gauge(),
        }
    }
}

impl<S: NamedService> NamedService for Guarded<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<Request<Body>> for Guarded<S>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The inner service (a tonic server) is always ready; the cap is checked per call.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            metrics::load_shed();
            return Box::pin(std::future::ready(Ok(overloaded().into_http())));
        };
        let permit = InFlight::new(permit, self.in_flight.clone());
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (timeout, limit) = (self.timeout, self.max_message);
        Box::pin(async move {
            let answer = match tokio::time::timeout(timeout, inner.call(request)).await {
                Ok(Ok(response)) => put_right(response, limit),
                Ok(Err(never)) => match never {},
                Err(_) => {
                    metrics::request_timed_out();
                    timed_out(timeout).into_http()
                }
            };
            // The slot is held until the response has been sent (its body dropped): a call
            // whose answer still waits to be written counts, and so does its buffer.
            Ok(answer.map(|body| Body::new(Held { inner: body, _guard: permit })))
        })
    }
}

/// A response body that ends with UNAVAILABLE once the server drains, after whatever the
/// inner body has ready.
pub struct EndOnStop {
    inner: Body,
    stop: BoxFuture<()>,
    ended: bool,
}

impl http_body::Body for EndOnStop {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => {}
            ready => return ready,
        }
        match this.stop.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                this.ended = true;
                let (parts, ()) = Status::unavailable("the server is shutting down").into_http::<()>().into_parts();
                let mut trailers = HeaderMap::new();
                for name in ["grpc-status", "grpc-message"] {
                    if let Some(v) = parts.headers.get(name) {
                        trailers.insert(name, v.clone());
                    }
                }
                Poll::Ready(Some(Ok(Frame::trailers(trailers))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

/// A service whose response bodies end when `stop` turns true (for the health service).
#[derive(Clone, Debug)]
pub struct DrainStreams<S> {
    inner: S,
    stop: watch::Receiver<bool>,
}

impl<S> DrainStreams<S> {
    pub fn new(inner: S, stop: watch::Receiver<bool>) -> DrainStreams<S> {
        DrainStreams { inner, stop }
    }
}

impl<S: NamedService> NamedService for DrainStreams<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<Request<Body>> for DrainStreams<S>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let stop = self.stop.clone();
        Box::pin(async move {
            let Ok(response) = inner.call(request).await;
            Ok(response.map(|body| {
                let mut stop = stop;
                Body::new(EndOnStop {
                    inner: body,
                    stop: Box::pin(async move {
                        let _ = stop.wait_for(|s| *s).await;
                    }),
                    ended: false,
                })
            }))
        })
    }
}

/// Counts each call on its connection from request until its response body is dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActivityLayer;

impl<S> tower::Layer<S> for ActivityLayer {
    type Service = Activity<S>;
    fn layer(&self, inner: S) -> Activity<S> {
        Activity { inner }
    }
}

/// See [`ActivityLayer`].
#[derive(Clone, Debug)]
pub struct Activity<S> {
    inner: S,
}

impl<S, B> tower::Service<Request<B>> for Activity<S>
where
    S: tower::Service<Request<B>, Response = Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let guard = request.extensions().get::<ConnInfo>().map(|c| c.activity.begin());
        let future = self.inner.call(request);
        Box::pin(async move {
            let response = future.await?;
            Ok(match guard {
                Some(guard) => response.map(|body| Body::new(Held { inner: body, _guard: guard })),
                None => response,
            })
        })
    }
}

/// A call's slot under the global cap, counted in `reddog_rpc_in_flight` from admission
/// until its response body is dropped.
struct InFlight {
    _permit: tokio::sync::OwnedSemaphorePermit,
    gauge: ::metrics::Gauge,
}

impl InFlight {
    fn new(permit: tokio::sync::OwnedSemaphorePermit, gauge: ::metrics::Gauge) -> InFlight {
        gauge.increment(1.0);
        InFlight { _permit: permit, gauge }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.gauge.decrement(1.0);
    }
}

/// A body that keeps something (a call counted, a slot) until dropped.
struct Held<G> {
    inner: Body,
    _guard: G,
}

impl<G: Send + Unpin + 'static> http_body::Body for Held<G> {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_errors_name_the_field_path() {
        let s = undecodable(
            "failed to decode Protobuf message: SeatBet.bet: StartRoundRequest.seats: invalid wire type: LengthDelimited (expected Varint)",
        );
        assert_eq!(s.code(), Code::InvalidArgument);
        let d = s.get_error_details();
        assert_eq!(d.bad_request().unwrap().field_violations[0].field, "seats.bet");
        let s = undecodable("failed to decode Protobuf message: buffer underflow");
        assert_eq!(s.get_error_details().bad_request().unwrap().field_violations[0].field, "request");
    }
}
