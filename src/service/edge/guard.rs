//! Tower services around the gRPC services:
//!
//! - [`Guarded`] wraps `reddog.v1.RedDog`. First, a call that would wait longer than
//!   [`CallLimits::max_queue_wait`] for a worker thread ([`WorkerWait`]: how late a task woken
//!   now starts) is answered RESOURCE_EXHAUSTED (`OVERLOADED`, `max_queue_wait_ms`, with a
//!   retry hint) at once, before its message is read — unless it is the only call in progress
//!   on its connection and the wait is under twice the bound: under overload, connections
//!   that pile calls up (a flood's 100 streams each) are shed while a client calling one at a
//!   time is still served, and the calls that are served stay fast. Then a call reads its
//!   request message, taking no slot meanwhile (a peer that sends headers and never its
//!   message holds an HTTP/2 stream, bounded per connection, not a slot); a body over the
//!   size limit is answered RESOURCE_EXHAUSTED (`REQUEST_TOO_LARGE`, with a `QuotaFailure`)
//!   and an empty one INVALID_ARGUMENT. A call whose task waited longer than the bound from
//!   its headers reaching this service until a thread first ran it is shed instead of run.
//!   Then it takes a slot within its connection's share ([`CallLimits::per_connection`]),
//!   its peer's share (`super::peers`; not for a connection's first slot, so one client of
//!   a peer whose others hold its share still gets a call at a time through) and under the
//!   global cap ([`CallLimits::max_in_flight`]); a call over any is answered RESOURCE_EXHAUSTED
//!   (`OVERLOADED`) at once — load shedding — as is every call of a peer penalized for
//!   leaving answers unread (with what is left of the penalty as the retry delay). The slot is
//!   held until its answer has been sent. Neither a connection nor a peer takes a slot while
//!   it holds as many as are free, so connections or peers that take slots greedily (or
//!   cannot drain their answers) always leave some to a newcomer. The whole call, request
//!   body included, is bounded by the per-call timeout (DEADLINE_EXCEEDED). (A message prost
//!   cannot decode is answered by the codec, [`super::codec`], and counted here.) Health and
//!   reflection are not behind the cap: health stays answerable under any load.
//! - [`CallsInProgress`] counts RedDog calls from arrival until the handler has answered; the
//!   drain waits for it to reach zero. Its gauge, `reddog_rpc_in_flight`, counts them until
//!   the answer has been sent, so it includes every held slot.
//! - [`EndOnStop`] wraps the health service: when the server drains, a response stream still
//!   open (a `Watch`) ends with UNAVAILABLE after the messages already due (the NOT_SERVING
//!   update), so it does not hold the drain.
//! - [`Activity`] counts the calls in progress on each connection, marking health checks (see
//!   [`super::transport`]: the idle deadline and the connection cap) for the services other
//!   than RedDog, whose [`Guarded`] counts its own.
//!
//! Why not tower's `ConcurrencyLimit`, `LoadShed` and `Timeout` layers: a concurrency limit
//! takes its permit in `poll_ready`, before the request's message has arrived, so headers
//! alone would hold slots (the lockout this module prevents); it has no per-connection share;
//! and their errors become tonic's generic statuses without the details (`ErrorInfo`,
//! `RetryInfo`, `QuotaFailure`) the API documents. What `Guarded` adds over them is those
//! three orderings and answers, in one service.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use http::{HeaderMap, Request, Response};
use http_body::Frame;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tonic::body::Body;
use tonic::codegen::Bytes;
use tonic::server::NamedService;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::error::EngineError;
use crate::service::edge::codec::UNDECODABLE;
use crate::service::edge::transport::{self, ActivityGuard, Admitted, ConnInfo, Refused};
use crate::service::edge::worker_wait::WorkerWait;
use crate::service::error::{ERROR_DOMAIN, ErrorReason};
use crate::service::ops::metrics::MetricsRegistry;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The answer to a call over the global cap: RESOURCE_EXHAUSTED with `ErrorInfo` reason
/// `OVERLOADED` and a `RetryInfo` hint.
pub fn overloaded() -> Status {
    let mut d = ErrorDetails::with_retry_info(Some(Duration::from_millis(100)));
    d.set_error_info(ErrorReason::Overloaded.as_str_name(), ERROR_DOMAIN, []);
    Status::with_error_details(
        Code::ResourceExhausted,
        "the server is at its limit of calls in progress; retry later",
        d,
    )
}

/// The answer to a call that waited longer than `bound` before its handler could start:
/// RESOURCE_EXHAUSTED with `ErrorInfo` reason `OVERLOADED` (`max_queue_wait_ms`) and the
/// same retry hint as [`overloaded`].
pub fn queued_too_long(bound: Duration) -> Status {
    let mut d = ErrorDetails::with_retry_info(Some(Duration::from_millis(100)));
    let wait = [("max_queue_wait_ms".to_string(), bound.as_millis().to_string())];
    d.set_error_info(ErrorReason::Overloaded.as_str_name(), ERROR_DOMAIN, wait);
    Status::with_error_details(
        Code::ResourceExhausted,
        format!("the call waited over the server's {} ms bound before it could start; retry later", bound.as_millis()),
        d,
    )
}

/// The answer to a call of a peer penalized for leaving answers unread: RESOURCE_EXHAUSTED
/// with `ErrorInfo` reason `OVERLOADED` (`penalty_ms`: what is left of the penalty) and that
/// as the `RetryInfo` delay.
pub(crate) fn penalized(left: Duration) -> Status {
    let mut d = ErrorDetails::with_retry_info(Some(left));
    d.set_error_info(
        ErrorReason::Overloaded.as_str_name(),
        ERROR_DOMAIN,
        [("penalty_ms".to_string(), left.as_millis().to_string())],
    );
    Status::with_error_details(
        Code::ResourceExhausted,
        format!(
            "a connection from this client left its answers unread: no calls for {} ms; retry later",
            left.as_millis()
        ),
        d,
    )
}

/// The answer to a call that took longer than the per-call timeout.
pub fn timed_out(limit: Duration) -> Status {
    let mut d = ErrorDetails::new();
    let timeout = [("timeout_ms".to_string(), limit.as_millis().to_string())];
    d.set_error_info(ErrorReason::RequestTimeout.as_str_name(), ERROR_DOMAIN, timeout);
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
    d.set_error_info(
        ErrorReason::RequestTooLarge.as_str_name(),
        ERROR_DOMAIN,
        [("field".to_string(), "request".to_string()), ("limit_bytes".to_string(), limit.to_string())],
    );
    Status::with_error_details(
        Code::ResourceExhausted,
        format!("the request message is over the {limit}-byte limit"),
        d,
    )
}

/// RedDog calls in progress on one server: from the request's arrival until the handler has
/// answered (the response may still be on its way). The drain waits until there are none.
#[derive(Debug)]
pub(crate) struct CallsInProgress {
    count: AtomicUsize,
    gauge: ::metrics::Gauge,
}

impl CallsInProgress {
    /// A counter at zero, mirrored in `metrics`' `reddog_rpc_in_flight` gauge.
    pub(crate) fn new(metrics: &MetricsRegistry) -> Arc<CallsInProgress> {
        Arc::new(CallsInProgress { count: AtomicUsize::new(0), gauge: metrics.in_flight_gauge() })
    }

    /// Calls in progress now.
    pub(crate) fn get(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Resolves once no call is in progress (checked every 10 ms: only the drain waits).
    pub(crate) async fn none(&self) {
        while self.get() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn begin(self: &Arc<Self>) -> InProgress {
        self.count.fetch_add(1, Ordering::AcqRel);
        self.gauge.increment(1.0);
        InProgress(self.clone())
    }
}

/// One call counted in [`CallsInProgress`] until dropped.
struct InProgress(Arc<CallsInProgress>);

impl InProgress {
    /// The handler has answered: the drain no longer waits for the call, but the gauge
    /// counts it until the returned guard is dropped (its answer sent or given up).
    fn answered(self) -> Sending {
        let calls = self.0.clone();
        std::mem::forget(self);
        calls.count.fetch_sub(1, Ordering::AcqRel);
        Sending(calls)
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.gauge.decrement(1.0);
        self.0.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A call whose answer is being sent, counted in `reddog_rpc_in_flight` until dropped.
struct Sending(Arc<CallsInProgress>);

impl Drop for Sending {
    fn drop(&mut self) {
        self.0.gauge.decrement(1.0);
    }
}

/// The limits [`Guarded`] applies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallLimits {
    /// Calls holding a slot at once, across all connections.
    pub max_in_flight: usize,
    /// Slots one connection may hold at once.
    pub per_connection: usize,
    /// Longest wait for a worker thread: a call arriving while the wait ([`WorkerWait`]) is
    /// longer is shed at once unless it is its connection's only call (then only past twice
    /// this), and a call that waited longer from its arrival at this service until a thread
    /// first ran it (the wait for its request message not counted) is shed instead of run.
    pub max_queue_wait: Duration,
    /// Longest call, request body included.
    pub timeout: Duration,
    /// Largest request message (the decode limit the inner service was given).
    pub max_message: usize,
    /// Request bytes held across all calls whose message is still arriving.
    pub max_pending_bytes: usize,
}

impl CallLimits {
    /// Whether a wait for a worker is too long for a call: over [`Self::max_queue_wait`], or
    /// for a call `alone` on its connection (no other call in progress) over twice that.
    fn too_long(&self, wait: Duration, alone: bool) -> bool {
        wait > if alone { self.max_queue_wait * 2 } else { self.max_queue_wait }
    }
}

/// Request bytes held by calls whose message is still arriving, across all connections: a
/// call reads its message before it takes a slot, so without this bound every open stream
/// could hold a whole message (connections × streams × 64 KiB).
#[derive(Debug)]
struct PendingBytes {
    used: AtomicUsize,
    max: usize,
}

/// The bytes of [`PendingBytes`] one call holds, given back when dropped.
struct Reserved {
    pool: Arc<PendingBytes>,
    bytes: usize,
}

impl Reserved {
    /// Takes `n` more bytes, or none if that would pass the bound.
    fn add(&mut self, n: usize) -> bool {
        let taken = self.pool.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
            used.checked_add(n).filter(|&total| total <= self.pool.max)
        });
        if taken.is_ok() {
            self.bytes += n;
        }
        taken.is_ok()
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.pool.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// The request body's bytes would pass [`CallLimits::max_pending_bytes`].
#[derive(Debug, thiserror::Error)]
#[error("the server holds as many pending request bytes as it may")]
struct PendingFull;

/// A request body whose data frames take bytes of [`PendingBytes`] as they arrive.
struct Budgeted {
    inner: Body,
    reserved: Reserved,
}

impl http_body::Body for Budgeted {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref()
                    && !this.reserved.add(data.len())
                {
                    return Poll::Ready(Some(Err(Box::new(PendingFull))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(status))) => Poll::Ready(Some(Err(Box::new(status)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The RedDog service behind the global cap and the per-call timeout (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct Guarded<S> {
    inner: S,
    permits: Arc<Semaphore>,
    wait: Arc<WorkerWait>,
    /// Where its sheds, timeouts, refused requests and queue waits are counted.
    metrics: MetricsRegistry,
    pending: Arc<PendingBytes>,
    limits: CallLimits,
    calls: Arc<CallsInProgress>,
}

impl<S> Guarded<S> {
    /// `inner` under `limits`, its calls counted in `calls`, shed by `wait`, its metrics in
    /// `metrics`.
    pub(crate) fn new(
        inner: S,
        limits: CallLimits,
        calls: Arc<CallsInProgress>,
        wait: Arc<WorkerWait>,
        metrics: MetricsRegistry,
    ) -> Guarded<S> {
        let pending = Arc::new(PendingBytes { used: AtomicUsize::new(0), max: limits.max_pending_bytes });
        Guarded {
            inner,
            permits: Arc::new(Semaphore::new(limits.max_in_flight)),
            wait,
            metrics,
            pending,
            limits,
            calls,
        }
    }
}

impl<S: NamedService> NamedService for Guarded<S> {
    const NAME: &'static str = S::NAME;
}

/// The gRPC message prefix: compression flag and 4-byte length (framing, not content).
const GRPC_PREFIX: usize = 5;

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
        // hyper calls this on the connection's task as it accepts the stream (its headers
        // read); the returned future then waits, spawned, for a thread to run it.
        let arrived = Instant::now();
        let conn = request.extensions().get::<ConnInfo>().map(|c| c.activity.clone());
        // 0. Shed at once a call that would wait too long for a thread: unless it is its
        //    connection's only call (a client calling one at a time is served while the
        //    connections that pile calls up are shed) and the wait is under twice the bound.
        let alone = conn.as_ref().is_some_and(|c| c.calls_in_progress() == 0);
        let wait = self.wait.now();
        if self.limits.too_long(wait, alone) {
            self.metrics.queue_waited(wait);
            self.metrics.queue_shed();
            return Box::pin(std::future::ready(Ok(queued_too_long(self.limits.max_queue_wait).into_http())));
        }
        let clone = self.inner.clone();
        let call = Call {
            progress: self.calls.begin(),
            // The call counts as its connection's activity from arrival until its answer has
            // been sent (held with the slot): this service does what `Activity` does for the
            // other services, without a second boxed future and body per call.
            active: conn.as_ref().map(|c| c.begin()),
            conn,
            inner: std::mem::replace(&mut self.inner, clone),
            permits: self.permits.clone(),
            pending: self.pending.clone(),
            limits: self.limits,
            metrics: self.metrics.clone(),
            worker_wait: self.wait.clone(),
            arrived,
            alone,
        };
        Box::pin(call.run(request))
    }
}

/// One admitted call on its way through the guard's steps (`Guarded::call`).
struct Call<S> {
    progress: InProgress,
    active: Option<ActivityGuard>,
    conn: Option<Arc<transport::Activity>>,
    inner: S,
    permits: Arc<Semaphore>,
    pending: Arc<PendingBytes>,
    limits: CallLimits,
    metrics: MetricsRegistry,
    worker_wait: Arc<WorkerWait>,
    /// When its headers reached the service.
    arrived: Instant,
    /// Whether it was its connection's only call then.
    alone: bool,
}

/// A step's early answer: the call ends with it (boxed: the steps return it in a `Result`).
type Early = Box<Response<Body>>;

impl<S> Call<S>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    async fn run(mut self, request: Request<Body>) -> Result<Response<Body>, Infallible> {
        // The wait for a thread: from the headers' arrival until this future first runs.
        let waited = self.arrived.elapsed();
        let deadline = tokio::time::sleep(self.limits.timeout);
        tokio::pin!(deadline);
        let (parts, body) = request.into_parts();
        let bytes = match read_message(self.limits, &self.metrics, self.pending.clone(), body, deadline.as_mut()).await
        {
            Ok(bytes) => bytes,
            Err(early) => return Ok(*early),
        };
        if let Err(early) = self.shed_if_queued(waited) {
            return Ok(*early);
        }
        let (permit, share) = match self.take_slot() {
            Ok(slot) => slot,
            Err(early) => return Ok(*early),
        };
        let answer = self.answer(Request::from_parts(parts, Body::new(Full::new(bytes))), deadline).await;
        let sending = self.progress.answered();
        // The slot is held until the response has been sent (its body dropped): a call
        // whose answer still waits to be written counts, and so does its buffer. An answer
        // the peer does not take closes its connection (`transport::DELIVERY_DEADLINE`).
        let undelivered = self.conn.as_ref().map(|c| c.answered());
        let guard = (permit, share, self.active, sending, undelivered);
        Ok(answer.map(|body| Body::new(Held { inner: body, _guard: guard })))
    }

    /// 2. Not a call that waited too long for a thread before it first ran: its client may
    ///    have given up, and running it would make every call queued behind it wait longer
    ///    still. (Checked after the message was read, so that a message over the size limit
    ///    is still answered as such.) Only while the wait has lasted (not after one stall of
    ///    the whole process).
    fn shed_if_queued(&self, waited: Duration) -> Result<(), Early> {
        self.metrics.queue_waited(waited);
        if self.limits.too_long(waited, self.alone) && self.worker_wait.now() > self.limits.max_queue_wait / 2 {
            self.metrics.queue_shed();
            return Err(Box::new(queued_too_long(self.limits.max_queue_wait).into_http()));
        }
        Ok(())
    }

    /// 3. A slot: within the connection's and its peer's share, then under the global cap.
    fn take_slot(&self) -> Result<(OwnedSemaphorePermit, Option<Admitted>), Early> {
        let share = match &self.conn {
            Some(activity) => match activity.admit(self.limits.per_connection, self.permits.available_permits()) {
                Ok(share) => Some(share),
                Err(Refused::Share) => {
                    self.metrics.load_shed();
                    return Err(Box::new(overloaded().into_http()));
                }
                Err(Refused::Penalized(left)) => {
                    self.metrics.load_shed();
                    return Err(Box::new(penalized(left).into_http()));
                }
            },
            None => None,
        };
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            self.metrics.load_shed();
            return Err(Box::new(overloaded().into_http()));
        };
        Ok((permit, share))
    }

    /// 4. The call itself, within what is left of the deadline.
    async fn answer(&mut self, request: Request<Body>, deadline: Pin<&mut tokio::time::Sleep>) -> Response<Body> {
        tokio::select! {
            biased;
            response = self.inner.call(request) => match response {
                Ok(response) => counted_undecodable(response, &self.metrics),
                Err(never) => match never {},
            },
            () = deadline => {
                self.metrics.request_timed_out();
                timed_out(self.limits.timeout).into_http()
            }
        }
    }
}

/// 1. (of `Call::run`) The request message, without a slot: a peer that sends headers and never its
///    message holds a stream (bounded per connection by HTTP/2), not a slot, and the
///    bytes it has sent so far (bounded across all calls: `PendingBytes`).
async fn read_message(
    limits: CallLimits,
    metrics: &MetricsRegistry,
    pending: Arc<PendingBytes>,
    body: Body,
    deadline: Pin<&mut tokio::time::Sleep>,
) -> Result<Bytes, Early> {
    let reserved = Reserved { pool: pending, bytes: 0 };
    let read = Limited::new(Budgeted { inner: body, reserved }, limits.max_message + GRPC_PREFIX).collect();
    let bytes = tokio::select! {
        biased;
        read = read => match read {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<LengthLimitError>() => {
                metrics.bad_request(Code::ResourceExhausted);
                return Err(Box::new(too_large(limits.max_message).into_http()));
            }
            Err(e) if e.is::<PendingFull>() => {
                metrics.load_shed();
                return Err(Box::new(overloaded().into_http()));
            }
            // The client reset the stream: nobody reads this answer.
            Err(_) => return Err(Box::new(Status::cancelled("the request stream was reset").into_http())),
        },
        () = deadline => {
            metrics.request_timed_out();
            return Err(Box::new(timed_out(limits.timeout).into_http()));
        }
    };
    if bytes.is_empty() {
        let status: Status = EngineError::MalformedRequest {
            field: "request".into(),
            reason: "the call carried no request message".into(),
        }
        .into();
        metrics.bad_request(status.code());
        return Err(Box::new(status.into_http()));
    }
    Ok(bytes)
}

/// `response`, without the codec's [`UNDECODABLE`] mark; a marked answer (a request the
/// codec could not decode) is counted in `reddog_undecodable_requests_total` by its code.
fn counted_undecodable(mut response: Response<Body>, metrics: &MetricsRegistry) -> Response<Body> {
    if response.headers_mut().remove(UNDECODABLE).is_some() {
        let code = response.headers().get("grpc-status").and_then(|v| v.to_str().ok()?.parse::<i32>().ok());
        metrics.bad_request(code.map_or(Code::InvalidArgument, Code::from));
    }
    response
}

/// A response body that ends with UNAVAILABLE once the server drains, after whatever the
/// inner body has ready.
pub(crate) struct EndOnStop {
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
pub(crate) struct DrainStreams<S> {
    inner: S,
    stop: watch::Receiver<bool>,
}

impl<S> DrainStreams<S> {
    pub(crate) fn new(inner: S, stop: watch::Receiver<bool>) -> DrainStreams<S> {
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

/// Counts each call of one service on its connection from request until its response body is
/// dropped ([`Activity::new`], [`Activity::health`]).
#[derive(Clone, Debug)]
pub(crate) struct Activity<S> {
    inner: S,
    /// Its calls are health checks (a connection that carried only those is displaced later
    /// at the connection cap: `transport::HEALTH_DISPLACE_MIN_IDLE`).
    health: bool,
}

impl<S> Activity<S> {
    /// `inner`, its calls counted as their connection's activity.
    pub(crate) fn new(inner: S) -> Activity<S> {
        Activity { inner, health: false }
    }

    /// The health service `inner`, its calls counted as their connection's activity and
    /// marked as health checks.
    pub(crate) fn health(inner: S) -> Activity<S> {
        Activity { inner, health: true }
    }
}

impl<S: NamedService> NamedService for Activity<S> {
    const NAME: &'static str = S::NAME;
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
        let health = self.health;
        let guard = request
            .extensions()
            .get::<ConnInfo>()
            .map(|c| if health { c.activity.begin_health() } else { c.activity.begin() });
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

    type Inner = tower::util::BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>;

    const BOUND: Duration = Duration::from_millis(250);

    fn guarded() -> (Guarded<Inner>, Arc<AtomicUsize>) {
        guarded_waiting(None)
    }

    /// The guarded service, its worker wait fixed at `wait` if given.
    fn guarded_waiting(wait: Option<Duration>) -> (Guarded<Inner>, Arc<AtomicUsize>) {
        let ran = Arc::new(AtomicUsize::new(0));
        let counter = ran.clone();
        let inner = tower::service_fn(move |_req: Request<Body>| {
            counter.fetch_add(1, Ordering::AcqRel);
            async { Ok::<_, Infallible>(Response::new(Body::empty())) }
        });
        let limits = CallLimits {
            max_in_flight: 4,
            per_connection: 4,
            max_queue_wait: BOUND,
            timeout: Duration::from_secs(10),
            max_message: 1024,
            max_pending_bytes: 1 << 20,
        };
        let metrics = MetricsRegistry::new();
        let calls = CallsInProgress::new(&metrics);
        let wait = wait.map_or_else(|| WorkerWait::spawn(&metrics), WorkerWait::fixed);
        (Guarded::new(tower::util::BoxCloneSyncService::new(inner), limits, calls, wait, metrics), ran)
    }

    /// A 1-byte gRPC message (prefix and payload).
    fn message() -> Bytes {
        Bytes::from_static(&[0, 0, 0, 0, 1, 0])
    }

    fn grpc_status(response: &Response<Body>) -> Option<&str> {
        response.headers().get("grpc-status").map(|v| v.to_str().unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_waited_for_a_thread_past_the_bound_is_shed_not_run() {
        // The server is busy: the wait for a worker has lasted over half the bound.
        let (mut service, ran) = guarded_waiting(Some(BOUND / 2 + Duration::from_millis(1)));
        let call = tower::Service::call(&mut service, Request::new(Body::new(Full::new(message()))));
        // Nothing runs the call's future for longer than the bound (a busy runtime).
        tokio::time::advance(BOUND + Duration::from_millis(1)).await;
        let response = call.await.unwrap();
        let status = Status::from_header_map(response.headers()).expect("a gRPC status");
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        let details = status.get_error_details();
        let info = details.error_info().expect("ErrorInfo");
        assert_eq!(info.reason, "OVERLOADED");
        assert_eq!(info.metadata.get("max_queue_wait_ms").map(String::as_str), Some("250"));
        assert!(details.retry_info().is_some(), "{status:?}");
        assert_eq!(ran.load(Ordering::Acquire), 0, "the handler never ran");
        // Counted in this service's registry, as shed for its wait.
        let m = &service.metrics;
        assert_eq!(m.value("reddog_load_shed_total"), Some(1.0));
        assert_eq!(m.value("reddog_load_shed_queued_total"), Some(1.0));
        assert_eq!(m.value("reddog_rpc_queue_wait_seconds_count"), Some(1.0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_whose_message_comes_late_is_run_not_shed() {
        let (mut service, ran) = guarded();
        let (tx, body) = pending_body();
        let call = tokio::spawn(tower::Service::call(&mut service, Request::new(body)));
        tokio::time::sleep(BOUND * 4).await;
        tx.send(Ok(Frame::data(message()))).await.unwrap();
        drop(tx);
        let response = call.await.unwrap().unwrap();
        assert_eq!(grpc_status(&response), None, "answered by the handler");
        assert_eq!(ran.load(Ordering::Acquire), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_waited_through_one_stall_is_run() {
        // The wait for a worker has not lasted: the process stalled once (the machine busy).
        let (mut service, ran) = guarded_waiting(Some(Duration::ZERO));
        let call = tower::Service::call(&mut service, Request::new(Body::new(Full::new(message()))));
        tokio::time::advance(BOUND * 2).await;
        let response = call.await.unwrap();
        assert_eq!(grpc_status(&response), None, "run, not shed");
        assert_eq!(ran.load(Ordering::Acquire), 1);
    }

    /// A body whose frames come from the returned sender (none until it sends).
    fn pending_body() -> (tokio::sync::mpsc::Sender<Result<Frame<Bytes>, Status>>, Body) {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Status>>(1);
        (tx, Body::new(http_body_util::StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx))))
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_arriving_while_the_wait_for_a_worker_is_over_the_bound_is_shed_before_its_message() {
        for wait in [BOUND + Duration::from_millis(1), BOUND * 3] {
            let (mut service, ran) = guarded_waiting(Some(wait));
            // Its message never comes: the answer does not wait for it.
            let (_tx, body) = pending_body();
            let call = tower::Service::call(&mut service, Request::new(body));
            let response =
                tokio::time::timeout(Duration::from_millis(1), call).await.expect("answered at once").unwrap();
            let status = Status::from_header_map(response.headers()).expect("a gRPC status");
            assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
            let details = status.get_error_details();
            assert_eq!(details.error_info().map(|i| i.reason.as_str()), Some("OVERLOADED"));
            assert!(details.retry_info().is_some(), "{status:?}");
            assert_eq!(ran.load(Ordering::Acquire), 0, "the handler never ran");
        }
        // At the bound, the call is run.
        let (mut service, ran) = guarded_waiting(Some(BOUND));
        let response = tower::Service::call(&mut service, Request::new(Body::new(Full::new(message())))).await.unwrap();
        assert_eq!(grpc_status(&response), None);
        assert_eq!(ran.load(Ordering::Acquire), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_prompt_call_is_run() {
        let (mut service, ran) = guarded();
        let response = tower::Service::call(&mut service, Request::new(Body::new(Full::new(message())))).await.unwrap();
        assert_eq!(grpc_status(&response), None);
        assert_eq!(ran.load(Ordering::Acquire), 1);
        let m = &service.metrics;
        assert_eq!(m.value("reddog_load_shed_total"), Some(0.0));
        assert_eq!(m.value("reddog_rpc_queue_wait_seconds_count"), Some(1.0));
    }
}
