//! The platform's HTTP side: the page (plain HTML/JS/CSS compiled into the binary), and a
//! small JSON API for it. The browser never receives a sealed token: every answer is built
//! from [`RoundView`], which has none.
//!
//! Sessions are a random token in an `HttpOnly`, `SameSite=Strict` cookie, ended after an
//! idle time and an absolute lifetime ([`crate::accounts`]); every POST takes a JSON body (so
//! a cross-site form cannot post), and every page is served with a strict
//! Content-Security-Policy (scripts from this origin only). Wrong sign-ins are throttled so
//! that they slow the guesser and never lock out the player (a trusted device, the recovery
//! code: [`crate::accounts`]); sign-up answers a taken name and a free one alike.
//!
//! An internal failure is answered 500 with a request id and no detail; the detail is logged
//! under that id.

use crate::accounts::{Attempt, DeviceKey, Refusal, Scope};
use crate::limits::{self, LimitError};
use crate::players::{self, PlayerError};
use crate::rounds::{HistoryAt, Platform, RoundError, RoundView, now_ms};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;

const COOKIE: &str = "rd_session";

/// An API error: HTTP status, a stable code, a message naming the field.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// For a 429: how long to wait (ms), also sent as `Retry-After` (seconds, rounded up).
    retry_after_ms: Option<i64>,
    /// For a sign-in's 429: the scope of the wait ([`crate::accounts::Scope`]).
    scope: Option<&'static str>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), retry_after_ms: None, scope: None }
    }

    /// A 500: the error is logged under a fresh request id, and the answer carries only that
    /// id (never the error's text: it may name tables, files or internal state).
    pub fn internal(error: &dyn std::fmt::Display) -> Self {
        let mut bytes = [0u8; 8];
        let request_id = match getrandom::fill(&mut bytes) {
            Ok(()) => hex::encode(bytes),
            Err(_) => format!("t{}", now_ms()),
        };
        tracing::error!(request_id = %request_id, error = %error, "internal error");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("internal error; quote request id {request_id} to the operator"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let Some(ms) = self.retry_after_ms else {
            return (self.status, Json(json!({"error": self.code, "message": self.message}))).into_response();
        };
        let secs = ms.saturating_add(999) / 1000;
        let body = json!({"error": self.code, "message": self.message, "retry_after_ms": ms, "scope": self.scope});
        (self.status, [(header::RETRY_AFTER, secs.to_string())], Json(body)).into_response()
    }
}

impl From<RoundError> for ApiError {
    fn from(e: RoundError) -> Self {
        use RoundError::*;
        let (status, code) = match &e {
            NotFound => (StatusCode::NOT_FOUND, "not_found"),
            Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            Expired => (StatusCode::CONFLICT, "commitment_expired"),
            BetOutOfRange { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "bet_out_of_range"),
            InsufficientFunds { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "insufficient_funds"),
            BadClientSeed(_) => (StatusCode::UNPROCESSABLE_ENTITY, "bad_client_seed"),
            BadSeats(_) => (StatusCode::UNPROCESSABLE_ENTITY, "bad_seats"),
            EngineRefused(_) => (StatusCode::BAD_GATEWAY, "engine_refused"),
            EngineUnavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "engine_unavailable"),
            Ledger(_) | Db(_) => return ApiError::internal(&e),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<PlayerError> for ApiError {
    fn from(e: PlayerError) -> Self {
        use PlayerError::*;
        let (status, code) = match &e {
            BadName | BadPin => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            NameTaken => (StatusCode::CONFLICT, "name_taken"),
            BadLogin => (StatusCode::UNAUTHORIZED, "bad_login"),
            Hash | Ledger(_) | Db(_) => return ApiError::internal(&e),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> Self {
        RoundError::Db(e).into()
    }
}

type App = Arc<Platform>;

/// The platform's routes.
pub fn router(app: App) -> Router {
    Router::new()
        .route("/", get(|| async { page(INDEX_HTML) }))
        .route("/history", get(|| async { page(HISTORY_HTML) }))
        .route("/rules", get(|| async { page(RULES_HTML) }))
        .route("/favicon.ico", get(favicon))
        .route("/static/{file}", get(static_file))
        .route("/api/state", get(state))
        .route("/api/register", post(register))
        .route("/api/login", post(login))
        .route("/api/logout", post(logout))
        .route("/api/logout-all", post(logout_all))
        .route("/api/round", post(new_round))
        .route("/api/round/{round_id}", get(round_status))
        .route("/api/round/deal", post(deal))
        .route("/api/round/decide", post(decide))
        .route("/api/limits", post(set_limits))
        .route("/api/history", get(history))
        .route("/metrics", get(metrics_text))
        .with_state(app)
        .layer(axum::middleware::from_fn(security_headers))
}

async fn security_headers(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; \
             base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

const INDEX_HTML: &str = include_str!("../static/index.html");
const HISTORY_HTML: &str = include_str!("../static/history.html");
const RULES_HTML: &str = include_str!("../static/rules.html");

/// The favicon: a red diamond (SVG), so `/favicon.ico` is not a 404.
async fn favicon() -> Response {
    (
        [(header::CONTENT_TYPE, "image/svg+xml")],
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M8 1l6 7-6 7-6-7z" fill="#c21d2b"/></svg>"##,
    )
        .into_response()
}

fn page(body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

async fn static_file(Path(file): Path<String>) -> Response {
    let (ctype, body) = match file.as_str() {
        "app.js" => ("text/javascript; charset=utf-8", include_str!("../static/app.js")),
        "history.js" => ("text/javascript; charset=utf-8", include_str!("../static/history.js")),
        "verify.js" => ("text/javascript; charset=utf-8", include_str!("../static/verify.js")),
        "verify-core.js" => ("text/javascript; charset=utf-8", include_str!("../static/verify-core.js")),
        "ui.js" => ("text/javascript; charset=utf-8", include_str!("../static/ui.js")),
        "record.js" => ("text/javascript; charset=utf-8", include_str!("../static/record.js")),
        "pin.js" => ("text/javascript; charset=utf-8", include_str!("../static/pin.js")),
        "i18n.js" => ("text/javascript; charset=utf-8", include_str!("../static/i18n.js")),
        "rules.js" => ("text/javascript; charset=utf-8", include_str!("../static/rules.js")),
        "style.css" => ("text/css; charset=utf-8", include_str!("../static/style.css")),
        _ => return (StatusCode::NOT_FOUND, "not found").into_response(),
    };
    ([(header::CONTENT_TYPE, ctype)], body).into_response()
}

/// The cookie `name`, when it holds a token of our form (64 hex digits).
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name && v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit())).then(|| v.to_string())
    })
}

fn session_token(headers: &HeaderMap) -> Option<String> {
    cookie(headers, COOKIE)
}

async fn player_of(app: &Platform, headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(token) = session_token(headers) else {
        return Ok(None);
    };
    let policy = app.accounts;
    // Read on a read-only connection; only an expired or a stale session needs a write.
    let now = now_ms();
    let t = token.clone();
    let check = app.read(move |c| players::check_session(c, &t, now, &policy)).await?;
    Ok(match check {
        players::SessionCheck::Unknown => None,
        players::SessionCheck::Alive(player) => Some(player),
        _ => app.db(move |c| players::apply_session_check(c, &token, now, check)).await?,
    })
}

async fn require_player(app: &Platform, headers: &HeaderMap) -> Result<i64, ApiError> {
    player_of(app, headers).await?.ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "signed_out", "sign in first"))
}

fn with_cookie(token: &str, max_age_secs: i64, body: serde_json::Value) -> Response {
    let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age_secs}");
    ([(header::SET_COOKIE, cookie)], Json(body)).into_response()
}

/// A random 32-byte token, hex.
fn random_token() -> Result<String, ApiError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| ApiError::internal(&e))?;
    Ok(hex::encode(bytes))
}

#[derive(Serialize)]
struct LimitsView {
    table_min: u64,
    table_max: u64,
    min_bet: u64,
    max_bet: u64,
    player_max_bet: Option<u64>,
    changed_ms: Option<i64>,
    next_change_ms: Option<i64>,
    week_zone: &'static str,
}

async fn limits_view(app: &Platform, player: i64) -> Result<LimitsView, ApiError> {
    let limit = app.read(move |c| players::limit(c, player)).await?;
    let (min_bet, max_bet) = limit.effective(app.table);
    let next = limits::next_change_allowed(&limit, jiff::Timestamp::now()).map_err(|e| ApiError::internal(&e))?;
    Ok(LimitsView {
        table_min: app.table.min_bet,
        table_max: app.table.max_bet,
        min_bet,
        max_bet,
        player_max_bet: limit.max_bet,
        changed_ms: limit.changed_at.map(|t| t.as_millisecond()),
        next_change_ms: next.map(|t| t.as_millisecond()),
        week_zone: limits::WEEK_ZONE,
    })
}

async fn state(State(app): State<App>, headers: HeaderMap) -> Result<Response, ApiError> {
    let r = &app.rules;
    // Chips of 1, 5, 25 and 100 in the table's currency.
    let unit = 10u64.checked_pow(r.minor_unit_exponent).unwrap_or(100);
    let chips: Vec<u64> = [1u64, 5, 25, 100].iter().filter_map(|c| c.checked_mul(unit)).collect();
    let table = json!({
        "min_bet": r.min_bet, "max_bet": r.max_bet, "decks": r.decks, "spread_odds": r.spread_odds,
        "three_of_a_kind_odds": r.three_of_a_kind_odds, "algorithm": r.algorithm, "raise_rule": r.raise_rule,
        "max_client_seed_bytes": r.max_client_seed_bytes, "max_seats": r.max_seats,
        "currency": r.currency, "minor_unit_exponent": r.minor_unit_exponent,
        "chips": chips, "signing_keys": r.signing_keys,
    });
    let Some(player) = player_of(&app, &headers).await? else {
        return Ok(Json(json!({"player": null, "table": table})).into_response());
    };
    // Finishing a step the platform owes (e.g. after an engine outage) happens here too.
    // If the engine is down, the player still sees their balance and is told so; the round
    // stays where it is and is finished when the engine is back.
    let (round, engine_error) = match app.open_round(player).await {
        Ok(r) => (r, None),
        Err(RoundError::EngineUnavailable(m)) => {
            (None, Some(format!("the engine is unavailable ({m}); your round is kept")))
        }
        Err(e) => return Err(e.into()),
    };
    let name = app.read(move |c| players::name(c, player)).await?;
    Ok(Json(json!({
        "player": {"name": name, "balance": app.balance(player).await?},
        "table": table,
        "limits": limits_view(&app, player).await?,
        "round": round,
        "last_bet": app.last_bet(player).await?,
        "engine_error": engine_error,
    }))
    .into_response())
}

#[derive(Deserialize)]
struct Credentials {
    name: String,
    pin: String,
    /// Sign-in only: the recovery code shown at sign-up, which lets a player on a new
    /// device pass the waits a guesser caused ([`crate::accounts`]).
    #[serde(default)]
    recovery_code: Option<String>,
}

/// The device cookie: a random token per browser, sent to the sign-in only. A sign-in with
/// the right PIN makes its SHA-256 one of the player's trusted devices.
const DEVICE_COOKIE: &str = "rd_device";
/// How long a browser keeps its device cookie (400 days, the most browsers allow).
const DEVICE_MAX_AGE_SECS: i64 = 400 * 24 * 3600;

fn device_token(headers: &HeaderMap) -> Option<String> {
    cookie(headers, DEVICE_COOKIE)
}

/// The device token's key in the sign-in throttle: the first 16 bytes of its SHA-256.
fn device_key(device_sha256: &str) -> Option<DeviceKey> {
    let bytes = hex::decode(device_sha256.get(..32)?).ok()?;
    Some(DeviceKey(bytes.try_into().ok()?))
}

/// Sign-up. A taken name and a free one get the same answer (202, no cookie), after the same
/// work and no earlier than the policy's floor, so that sign-up does not tell which names
/// exist; the page then signs in. Only the form of the name and PIN is reported.
///
/// The answer carries a recovery code either way (for a taken name one that is stored
/// nowhere): the page shows it once the sign-in that follows succeeds.
async fn register(State(app): State<App>, Json(req): Json<Credentials>) -> Result<Response, ApiError> {
    let started = tokio::time::Instant::now();
    players::validate_name(&req.name)?;
    players::validate_pin(&req.pin)?;
    let pin = req.pin.clone();
    let hash =
        tokio::task::spawn_blocking(move || players::hash_pin(&pin)).await.map_err(|e| ApiError::internal(&e))??;
    let code = players::new_recovery_code().map_err(|e| ApiError::internal(&e))?;
    let recovery = players::recovery_sha256(&code).ok_or_else(|| ApiError::internal(&"a new recovery code"))?;
    let now = now_ms();
    let balance = app.new_player_balance;
    let name = req.name.clone();
    let outcome = app.db(move |c| players::sign_up(c, &name, &hash, &recovery, balance, now)).await?;
    if let players::SignUp::Created(id) = outcome {
        tracing::info!(player = id, "player registered");
    }
    tokio::time::sleep_until(started + std::time::Duration::from_millis(app.accounts.sign_up_floor_ms)).await;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "status": "accepted",
            "message": "if this name was free it is now yours: sign in with this name and PIN",
            "recovery_code": code,
        })),
    )
        .into_response())
}

/// Sign-in, throttled so that wrong PINs slow the guesser and never lock out the player
/// ([`crate::accounts::SignInThrottle`]; behind a trusted proxy, the address it forwards):
/// an attempt meeting a wait is answered 429 with `retry_after_ms` and the `scope` of the
/// wait before any PIN is checked. The browser's device cookie, when the player trusts it,
/// and the player's right recovery code each pass the waits other addresses caused. A
/// sign-in with the right PIN trusts the browser's device from then on (setting the cookie
/// if it had none); a sign-in that used the recovery code, or by a player who has none yet,
/// answers a new code (`recovery_code`), which replaces the old one.
async fn login(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Json(req): Json<Credentials>,
) -> Result<Response, ApiError> {
    let forwarded = headers.get_all("x-forwarded-for").into_iter().filter_map(|v| v.to_str().ok());
    let client = app.sign_in.client_key(peer.ip(), forwarded);
    let device = device_token(&headers);
    let device_sha256 = device.as_deref().map(players::token_hash);
    let recovery = req.recovery_code.as_deref().and_then(players::recovery_sha256);
    let (name, dev) = (req.name.clone(), device_sha256.clone());
    let facts = app.read(move |c| players::sign_in_facts(c, &name, dev.as_deref())).await?;
    let recovery_ok = matches!((&facts, &recovery), (Some(f), Some(r)) if f.recovery_sha256.as_ref() == Some(r));
    let trusted = match (&facts, &device_sha256) {
        (Some(f), Some(d)) if f.device_trusted => device_key(d),
        _ => None,
    };
    let attempt = Attempt { account: &req.name, address: client, trusted_device: trusted, recovery: recovery_ok };
    let ticket = match app.sign_in.admit(&attempt, now_ms()) {
        Ok(ticket) => ticket,
        Err(refused) => {
            metrics::counter!("reddog_demo_sign_ins_throttled_total", "scope" => refused.wait.scope.as_str())
                .increment(1);
            if refused.alert {
                guessing_alert(&app, &req.name);
            }
            return Err(too_many_attempts(refused.wait));
        }
    };
    // Hash something even for an unknown name, so timing does not tell names apart.
    let hash = facts.as_ref().map_or_else(
        || "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG".to_string(),
        |f| f.pin_hash.clone(),
    );
    let pin = req.pin.clone();
    let pin_ok = tokio::task::spawn_blocking(move || players::verify_pin(&hash, &pin)).await.unwrap_or(false);
    let Some(facts) = facts.filter(|_| pin_ok) else {
        let settled = ticket.settle(false, now_ms());
        metrics::counter!("reddog_demo_sign_in_failures_total").increment(1);
        if settled.alert {
            guessing_alert(&app, &req.name);
        }
        if let Some(wait) = settled.wait {
            return Err(too_many_attempts(wait));
        }
        return Err(PlayerError::BadLogin.into());
    };
    let _ = ticket.settle(true, now_ms());
    if recovery_ok {
        metrics::counter!("reddog_demo_recovery_sign_ins_total").increment(1);
        tracing::info!(player = facts.id, "signed in with the recovery code; a new one is issued");
    }
    // A new recovery code after the old one was used, or for a player who has none yet.
    let new_code = if recovery_ok || facts.recovery_sha256.is_none() {
        Some(players::new_recovery_code().map_err(|e| ApiError::internal(&e))?)
    } else {
        None
    };
    let new_recovery = match &new_code {
        Some(code) => Some(players::recovery_sha256(code).ok_or_else(|| ApiError::internal(&"a new recovery code"))?),
        None => None,
    };
    let device = match device {
        Some(token) => token,
        None => random_token()?,
    };
    let device_sha256 = players::token_hash(&device);
    let id = facts.id;
    let token = app
        .db(move |c| {
            let now = now_ms();
            players::trust_device(c, id, &device_sha256, now)?;
            if let Some(r) = &new_recovery {
                players::set_recovery(c, id, r)?;
            }
            players::new_session(c, id, now)
        })
        .await?;
    let mut res = with_cookie(
        &token,
        app.accounts.session_max_ms / 1000,
        json!({"name": req.name, "recovery_code": new_code, "recovered": recovery_ok}),
    );
    let device_cookie =
        format!("{DEVICE_COOKIE}={device}; HttpOnly; SameSite=Strict; Path=/api/login; Max-Age={DEVICE_MAX_AGE_SECS}");
    res.headers_mut()
        .append(header::SET_COOKIE, HeaderValue::from_str(&device_cookie).map_err(|e| ApiError::internal(&e))?);
    Ok(res)
}

/// Wrong PINs (or attempts meeting the name's wait) for one name from several addresses:
/// logged and counted once per spell. The name only, never a PIN; an operator may want to
/// tell the player.
fn guessing_alert(app: &Platform, name: &str) {
    metrics::counter!("reddog_demo_sign_in_guessing_alerts_total").increment(1);
    tracing::warn!(
        alert = "sign_in_guessing",
        name = %name,
        addresses = app.accounts.throttle.alert_addresses,
        "wrong PINs for one name from several addresses: someone is guessing"
    );
}

/// The 429 for a wait in force: `retry_after_ms`, `Retry-After` and the wait's `scope`
/// (`pair`, `address`, `account`, `device` or `recovery`; the page words each, and offers the
/// recovery code for every one but `recovery`).
fn too_many_attempts(wait: Refusal) -> ApiError {
    let secs = (wait.wait_ms + 999) / 1000;
    let whence = match wait.scope {
        Scope::Pair => "for this name from this address",
        Scope::Address => "from this address",
        Scope::Account => "for this name from new devices (not from this one)",
        Scope::Device => "for this name from this device",
        Scope::Recovery => "with this recovery code",
    };
    ApiError {
        retry_after_ms: Some(wait.wait_ms),
        scope: Some(wait.scope.as_str()),
        ..ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_attempts",
            format!("too many wrong sign-ins {whence}; try again in {secs} s"),
        )
    }
}

/// The recorder's handle, set by `main` (none in unit tests: `/metrics` is then empty).
pub static METRICS: std::sync::OnceLock<metrics_exporter_prometheus::PrometheusHandle> = std::sync::OnceLock::new();

/// `GET /metrics`: Prometheus text, to loopback peers only (an operator's scraper on the
/// machine or a sidecar); 404 to anyone else. Besides the counters, the accounts now
/// waiting because of wrong sign-ins, and those guessed from several addresses.
async fn metrics_text(State(app): State<App>, ConnectInfo(peer): ConnectInfo<SocketAddr>) -> Response {
    if !peer.ip().to_canonical().is_loopback() {
        return StatusCode::NOT_FOUND.into_response();
    }
    let (waiting, guessed) = app.sign_in.accounts_waiting(now_ms());
    metrics::gauge!("reddog_demo_accounts_sign_in_waiting").set(waiting as f64);
    metrics::gauge!("reddog_demo_accounts_guessed_across_addresses").set(guessed as f64);
    let text = METRICS.get().map(|h| h.render()).unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// Refuses (429) while the player's limit-form PIN checks are locked after repeated wrong
/// PINs (only the signed-in player can make them).
async fn pin_not_locked(app: &Platform, player: i64) -> Result<(), ApiError> {
    match app.read(move |c| players::pin_locked_until(c, player, now_ms())).await? {
        Some(until) => {
            let at = jiff::Timestamp::from_millisecond(until).map(|t| t.to_string()).unwrap_or_default();
            Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "pin_locked",
                format!("pin: too many wrong PINs; try again after {at}"),
            ))
        }
        None => Ok(()),
    }
}

async fn logout(State(app): State<App>, headers: HeaderMap) -> Result<Response, ApiError> {
    if let Some(token) = session_token(&headers) {
        app.db(move |c| players::end_session(c, &token)).await?;
    }
    let cookie = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    Ok(([(header::SET_COOKIE, cookie)], Json(json!({}))).into_response())
}

/// "Sign out everywhere": ends every session of the signed-in player (other browsers and
/// devices are signed out at their next request).
async fn logout_all(State(app): State<App>, headers: HeaderMap) -> Result<Response, ApiError> {
    let player = require_player(&app, &headers).await?;
    let ended = app.db(move |c| players::end_all_sessions(c, player)).await?;
    tracing::info!(player, sessions = ended, "signed out everywhere");
    let cookie = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    Ok(([(header::SET_COOKIE, cookie)], Json(json!({"sessions_ended": ended}))).into_response())
}

async fn new_round(State(app): State<App>, headers: HeaderMap) -> Result<Json<RoundView>, ApiError> {
    let player = require_player(&app, &headers).await?;
    Ok(Json(app.current_or_new(player).await?))
}

/// A deal: `bets` (one per seat, 1 to the table's `max_seats`), or `bet` for one seat.
#[derive(Deserialize)]
struct DealRequest {
    round_id: String,
    client_seed: String,
    bet: Option<i64>,
    bets: Option<Vec<i64>>,
}

async fn deal(State(app): State<App>, headers: HeaderMap, Json(req): Json<DealRequest>) -> Result<Response, ApiError> {
    let player = require_player(&app, &headers).await?;
    let bets = match (req.bets, req.bet) {
        (Some(bets), None) => bets,
        (None, Some(bet)) => vec![bet],
        _ => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                "bets: give `bets` (one per seat) or `bet` (one seat), not both",
            ));
        }
    };
    let round = app.deal(player, &req.round_id, &req.client_seed, &bets).await?;
    Ok(Json(json!({"round": round, "balance": app.balance(player).await?})).into_response())
}

/// Raise or stand for one seat (`seat` 0-based, 0 when absent).
#[derive(Deserialize)]
struct DecideRequest {
    round_id: String,
    action: String,
    #[serde(default)]
    seat: usize,
}

async fn decide(
    State(app): State<App>,
    headers: HeaderMap,
    Json(req): Json<DecideRequest>,
) -> Result<Response, ApiError> {
    let player = require_player(&app, &headers).await?;
    let raise = match req.action.as_str() {
        "raise" => true,
        "stand" => false,
        _ => {
            return Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", "action: 'raise' or 'stand'"));
        }
    };
    let round = app.decide(player, &req.round_id, req.seat, raise).await?;
    Ok(Json(json!({"round": round, "balance": app.balance(player).await?})).into_response())
}

async fn round_status(
    State(app): State<App>,
    headers: HeaderMap,
    Path(round_id): Path<String>,
) -> Result<Json<RoundView>, ApiError> {
    let player = require_player(&app, &headers).await?;
    Ok(Json(app.round_status(player, &round_id).await?))
}

#[derive(Deserialize)]
struct LimitRequest {
    max_bet: u64,
    pin: String,
}

async fn set_limits(
    State(app): State<App>,
    headers: HeaderMap,
    Json(req): Json<LimitRequest>,
) -> Result<Response, ApiError> {
    let player = require_player(&app, &headers).await?;
    pin_not_locked(&app, player).await?;
    let hash = app.read(move |c| players::pin_hash(c, player)).await?;
    let pin = req.pin.clone();
    let pin_ok = tokio::task::spawn_blocking(move || players::verify_pin(&hash, &pin)).await.unwrap_or(false);
    app.db(move |c| players::record_pin_check(c, player, pin_ok, now_ms())).await?;
    let table = app.table;
    let max_bet = req.max_bet;
    let result = app
        .db(move |c| {
            Ok::<_, rusqlite::Error>(players::set_max_bet(c, player, pin_ok, max_bet, table, jiff::Timestamp::now()))
        })
        .await?;
    match result {
        Ok(_) => {
            tracing::info!(player, max_bet = req.max_bet, "player lowered their limit");
            Ok(Json(json!({"limits": limits_view(&app, player).await?})).into_response())
        }
        Err(e) => {
            let (status, code) = match &e {
                LimitError::WrongPin => (StatusCode::FORBIDDEN, "wrong_pin"),
                LimitError::TooSoon { .. } => (StatusCode::CONFLICT, "once_per_week"),
                LimitError::TimeZone(_) => return Err(ApiError::internal(&e)),
                _ => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            };
            Err(ApiError::new(status, code, e.to_string()))
        }
    }
}

/// `limit` (1–500, default 50) rounds, newest first: the newest, or those just older than
/// the nonce `before`, or just newer than the nonce `after` (decimal strings, as the page
/// gets them in `older` and `newer`).
#[derive(Deserialize)]
struct HistoryQuery {
    limit: Option<i64>,
    before: Option<String>,
    after: Option<String>,
}

fn nonce_param(field: &str, value: &str) -> Result<i64, ApiError> {
    value.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", format!("{field}: a nonce, in decimal digits"))
    })
}

async fn history(
    State(app): State<App>,
    headers: HeaderMap,
    Query(q): Query<HistoryQuery>,
) -> Result<Response, ApiError> {
    let player = require_player(&app, &headers).await?;
    let limit = q.limit.unwrap_or(50).clamp(1, 500);
    let at = match (q.before.as_deref(), q.after.as_deref()) {
        (None, None) => HistoryAt::Newest,
        (Some(b), None) => HistoryAt::Before(nonce_param("before", b)?),
        (None, Some(a)) => HistoryAt::After(nonce_param("after", a)?),
        (Some(_), Some(_)) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                "before, after: give one, not both",
            ));
        }
    };
    let page = app.history(player, limit, at).await?;
    Ok(Json(json!({
        "rounds": page.rounds,
        "older": page.older,
        "newer": page.newer,
        "balance_before": page.balance_before,
        "balance": app.balance(player).await?,
    }))
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::{AccountPolicy, ThrottlePolicy};
    use crate::engine::Engine;
    use axum::body::Body;
    use axum::extract::connect_info::MockConnectInfo;
    use axum::http::Request;
    use tower::ServiceExt;

    fn platform(policy: AccountPolicy) -> App {
        let rules = crate::rounds::test_rules();
        // No request here reaches the engine (the channel connects lazily).
        let engine = Engine::new("http://127.0.0.1:9").unwrap();
        let conn = crate::db::open_in_memory().unwrap();
        Arc::new(Platform::new(conn, engine, rules, 100_000, None).unwrap().with_accounts(policy))
    }

    /// A platform behind a trusted proxy (10.0.0.0/8): `X-Forwarded-For` names the client.
    fn behind_proxy(policy: AccountPolicy) -> App {
        let rules = crate::rounds::test_rules();
        let engine = Engine::new("http://127.0.0.1:9").unwrap();
        let conn = crate::db::open_in_memory().unwrap();
        let mut platform = Platform::new(conn, engine, rules, 100_000, None).unwrap().with_accounts(policy);
        platform.sign_in.trust_proxies(crate::accounts::TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]));
        Arc::new(platform)
    }

    struct Answer {
        status: StatusCode,
        body: String,
        cookies: Vec<String>,
        retry_after: Option<String>,
    }

    impl Answer {
        fn json(&self) -> serde_json::Value {
            serde_json::from_str(&self.body).unwrap_or_default()
        }

        /// The Set-Cookie value for `name`, attributes included.
        fn set_cookie(&self, name: &str) -> Option<&str> {
            self.cookies.iter().map(String::as_str).find(|c| c.starts_with(&format!("{name}=")))
        }
    }

    async fn send(app: &App, from: [u8; 4], req: axum::http::request::Builder, body: &str) -> Answer {
        let router = router(app.clone()).layer(MockConnectInfo(SocketAddr::from((from, 40_000))));
        let res = router.oneshot(req.body(Body::from(body.to_string())).unwrap()).await.unwrap();
        let status = res.status();
        let cookies =
            res.headers().get_all(header::SET_COOKIE).iter().map(|v| v.to_str().unwrap().to_string()).collect();
        let retry_after = res.headers().get(header::RETRY_AFTER).map(|v| v.to_str().unwrap().to_string());
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20).await.unwrap();
        Answer { status, body: String::from_utf8(bytes.to_vec()).unwrap(), cookies, retry_after }
    }

    async fn call(app: &App, from: [u8; 4], method: &str, path: &str, cookie: Option<&str>, body: &str) -> Answer {
        let mut req = Request::builder().method(method).uri(path).header(header::CONTENT_TYPE, "application/json");
        if let Some(c) = cookie {
            req = req.header(header::COOKIE, c);
        }
        send(app, from, req, body).await
    }

    /// A sign-in through the proxy 10.0.0.2 for `forwarded_for`, with this browser's cookies.
    async fn login_via(app: &App, forwarded_for: &str, cookie: Option<&str>, body: &str) -> Answer {
        let mut req = Request::builder()
            .method("POST")
            .uri("/api/login")
            .header(header::CONTENT_TYPE, "application/json")
            .header("x-forwarded-for", forwarded_for);
        if let Some(c) = cookie {
            req = req.header(header::COOKIE, c);
        }
        send(app, [10, 0, 0, 2], req, body).await
    }

    fn creds(name: &str, pin: &str) -> String {
        format!(r#"{{"name":"{name}","pin":"{pin}"}}"#)
    }

    fn creds_code(name: &str, pin: &str, code: &str) -> String {
        format!(r#"{{"name":"{name}","pin":"{pin}","recovery_code":"{code}"}}"#)
    }

    /// The `name=value` part of a Set-Cookie, to send back.
    fn cookie_pair(set_cookie: &str) -> String {
        set_cookie.split(';').next().unwrap().to_string()
    }

    fn session(a: &Answer) -> String {
        cookie_pair(a.set_cookie(COOKIE).unwrap())
    }

    fn device(a: &Answer) -> String {
        cookie_pair(a.set_cookie(DEVICE_COOKIE).unwrap())
    }

    const HOME: [u8; 4] = [192, 0, 2, 10];
    const OUTSIDER: [u8; 4] = [198, 51, 100, 66];

    #[tokio::test]
    async fn sign_up_answers_a_taken_name_exactly_like_a_free_one() {
        let policy = AccountPolicy { sign_up_floor_ms: 60, ..AccountPolicy::default() };
        let app = platform(policy);
        let t0 = tokio::time::Instant::now();
        let free = call(&app, HOME, "POST", "/api/register", None, &creds("alice", "2468")).await;
        let free_took = t0.elapsed();
        let t1 = tokio::time::Instant::now();
        let taken = call(&app, OUTSIDER, "POST", "/api/register", None, &creds("alice", "1357")).await;
        let taken_took = t1.elapsed();
        assert_eq!(free.status, StatusCode::ACCEPTED, "{}", free.body);
        assert_eq!(taken.status, free.status);
        // The same answer but for the recovery code, which is new each time, of one form.
        let (mut f, mut t) = (free.json(), taken.json());
        let codes = [f["recovery_code"].take(), t["recovery_code"].take()];
        assert_eq!(f, t, "the same answer for a taken name");
        for code in &codes {
            assert!(players::recovery_sha256(code.as_str().unwrap()).is_some(), "a recovery code: {code}");
        }
        assert_eq!((free.cookies.len(), taken.cookies.len()), (0, 0), "no cookie either way");
        for took in [free_took, taken_took] {
            assert!(took >= std::time::Duration::from_millis(60), "answered after {took:?}, before the floor");
        }
        // The name belongs to the first sign-up: its PIN signs in, the second one's does not.
        let mine = call(&app, HOME, "POST", "/api/login", None, &creds("alice", "2468")).await;
        assert_eq!(mine.status, StatusCode::OK, "{}", mine.body);
        assert_eq!(mine.json()["recovery_code"], serde_json::Value::Null, "the code from sign-up stands");
        let theirs = call(&app, OUTSIDER, "POST", "/api/login", None, &creds("alice", "1357")).await;
        assert_eq!(theirs.status, StatusCode::UNAUTHORIZED, "{}", theirs.body);
        assert!(theirs.body.contains("name or PIN is wrong"), "{}", theirs.body);
        // Only the first sign-up's code is the name's.
        let [first, second] = codes.map(|c| c.as_str().unwrap().to_string());
        let with = |code: &str| creds_code("alice", "2468", code);
        assert_eq!(call(&app, OUTSIDER, "POST", "/api/login", None, &with(&second)).await.json()["recovered"], false);
        assert_eq!(call(&app, OUTSIDER, "POST", "/api/login", None, &with(&first)).await.json()["recovered"], true);
    }

    #[tokio::test]
    async fn an_outsider_typing_a_players_name_cannot_lock_the_player_out() {
        let app = platform(AccountPolicy { sign_up_floor_ms: 0, ..AccountPolicy::default() });
        call(&app, HOME, "POST", "/api/register", None, &creds("bob", "2468")).await;
        let mut statuses = vec![];
        for _ in 0..12 {
            statuses
                .push(call(&app, OUTSIDER, "POST", "/api/login", None, &creds("bob", "0000")).await.status.as_u16());
        }
        assert_eq!(statuses[..5], [401; 5], "five wrong PINs are answered as such");
        assert!(statuses[5..].iter().all(|&s| s == 429), "then the outsider's pair waits: {statuses:?}");
        let blocked = call(&app, OUTSIDER, "POST", "/api/login", None, &creds("bob", "2468")).await;
        assert_eq!(blocked.status, StatusCode::TOO_MANY_REQUESTS, "not even the right PIN is tried from there");
        assert_eq!(blocked.json()["scope"], "pair", "{}", blocked.body);
        // Bob, from his own address and a new browser, signs in at once.
        let bob = call(&app, HOME, "POST", "/api/login", None, &creds("bob", "2468")).await;
        assert_eq!(bob.status, StatusCode::OK, "{}", bob.body);
        assert!(bob.set_cookie(COOKIE).is_some());
    }

    #[tokio::test]
    async fn behind_a_trusted_proxy_a_guesser_slows_down_only_its_own_forwarded_address() {
        let app = behind_proxy(AccountPolicy { sign_up_floor_ms: 0, ..AccountPolicy::default() });
        call(&app, [10, 0, 0, 2], "POST", "/api/register", None, &creds("dora", "2468")).await;
        let mut guesser = vec![];
        for _ in 0..7 {
            // The guesser's own first entry is ignored: the proxy appended the real address.
            guesser
                .push(login_via(&app, "192.0.2.10, 198.51.100.66", None, &creds("dora", "0000")).await.status.as_u16());
        }
        assert_eq!(guesser, [401, 401, 401, 401, 401, 429, 429], "the guesser's forwarded address waits");
        let dora = login_via(&app, "192.0.2.10", None, &creds("dora", "2468")).await;
        assert_eq!(dora.status, StatusCode::OK, "the player, through the same proxy, signs in at once");
        let another = login_via(&app, "198.51.100.67", None, &creds("dora", "0000")).await;
        assert_eq!(another.status, StatusCode::UNAUTHORIZED, "another forwarded address is counted apart");
    }

    #[tokio::test]
    async fn the_device_cookie_is_for_the_sign_in_only_and_a_browser_keeps_one() {
        let app = platform(AccountPolicy { sign_up_floor_ms: 0, ..AccountPolicy::default() });
        call(&app, HOME, "POST", "/api/register", None, &creds("hana", "2468")).await;
        let first = call(&app, HOME, "POST", "/api/login", None, &creds("hana", "2468")).await;
        let set = first.set_cookie(DEVICE_COOKIE).unwrap();
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/api/login", "Max-Age=34560000"] {
            assert!(set.split("; ").any(|a| a == attribute), "{attribute} in {set}");
        }
        let dev = device(&first);
        let again = call(&app, HOME, "POST", "/api/login", Some(&dev), &creds("hana", "2468")).await;
        assert_eq!(device(&again), dev, "the same token: one per browser");
        let wrong = call(&app, HOME, "POST", "/api/login", Some(&dev), &creds("hana", "0000")).await;
        assert!(wrong.cookies.is_empty(), "a wrong PIN sets nothing");
    }

    #[tokio::test]
    async fn a_player_from_before_recovery_codes_gets_one_at_the_next_sign_in() {
        let app = platform(AccountPolicy { sign_up_floor_ms: 0, ..AccountPolicy::default() });
        call(&app, HOME, "POST", "/api/register", None, &creds("old", "2468")).await;
        app.db(|c| c.execute("UPDATE players SET recovery_sha256 = NULL", [])).await.unwrap();
        let first = call(&app, HOME, "POST", "/api/login", None, &creds("old", "2468")).await;
        let code = first.json()["recovery_code"].as_str().map(str::to_string).expect("a code");
        let next = call(&app, HOME, "POST", "/api/login", None, &creds("old", "2468")).await;
        assert_eq!(next.json()["recovery_code"], serde_json::Value::Null, "issued once");
        let used = call(&app, OUTSIDER, "POST", "/api/login", None, &creds_code("old", "2468", &code)).await;
        assert_eq!(used.json()["recovered"], true, "{}", used.body);
    }

    /// An outsider cycling 500 forwarded addresses, 3 wrong PINs from each (1 500 tries, well
    /// within each address's and each pair's free ones), against one player. The waits are
    /// long (10 minutes from the first), so no wait ends during the test and the figures are
    /// exact: 11 PINs checked (the name's 10 free ones and the one that starts its wait),
    /// 1 489 refused unchecked. The player's trusted browser, from a new address every 50
    /// guessing addresses, signs in every time; a new browser waits, told so (`account`),
    /// until it gives the recovery code; a used code is replaced.
    #[tokio::test]
    async fn an_outsider_cycling_500_addresses_never_locks_out_the_player() {
        let throttle = ThrottlePolicy { base_delay_ms: 600_000, ..ThrottlePolicy::default() };
        let app = behind_proxy(AccountPolicy { sign_up_floor_ms: 0, throttle, ..AccountPolicy::default() });
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let _local = metrics::set_default_local_recorder(&recorder);
        let signed_up = call(&app, [10, 0, 0, 2], "POST", "/api/register", None, &creds("finn", "2468")).await;
        let code = signed_up.json()["recovery_code"].as_str().unwrap().to_string();
        let home = login_via(&app, "192.0.2.10", None, &creds("finn", "2468")).await;
        assert_eq!(home.status, StatusCode::OK);
        let phone = device(&home);

        let (mut checked, mut refused, mut player_in) = (0u32, 0u32, 0u32);
        for a in 0..500u32 {
            let addr = format!("198.{}.{}.{}", 18 + a / 65_536, (a / 256) % 256, a % 256);
            for _ in 0..3 {
                let r = login_via(&app, &addr, None, &creds("finn", "0000")).await;
                match (r.status.as_u16(), r.json()["scope"].as_str()) {
                    (401, _) => checked += 1,
                    (429, Some(_)) if r.retry_after.is_some() => refused += 1,
                    other => panic!("address {addr}: {other:?} {}", r.body),
                }
            }
            if a % 50 == 49 {
                let from = format!("203.0.113.{}", a / 50);
                let me = login_via(&app, &from, Some(&phone), &creds("finn", "2468")).await;
                assert_eq!(me.status, StatusCode::OK, "after {} addresses, the trusted browser: {}", a + 1, me.body);
                player_in += 1;
            }
        }
        let free = throttle.account_free_failures;
        assert_eq!((checked, refused, player_in), (free, 1_500 - free, 10), "401s, 429s, the player's sign-ins");
        // A new browser, even with the right PIN, waits for the name; the answer says why.
        let new_phone = login_via(&app, "203.0.113.77", None, &creds("finn", "2468")).await;
        assert_eq!(new_phone.status, StatusCode::TOO_MANY_REQUESTS, "{}", new_phone.body);
        assert_eq!(new_phone.json()["scope"], "account");
        assert!(new_phone.json()["retry_after_ms"].as_i64().is_some_and(|ms| ms > 0 && ms <= throttle.max_delay_ms));
        // A forged device token, or one trusted by another player, is a new browser.
        let forged = format!("{DEVICE_COOKIE}={}", "ab".repeat(32));
        assert_eq!(
            login_via(&app, "203.0.113.78", Some(&forged), &creds("finn", "2468")).await.status,
            StatusCode::TOO_MANY_REQUESTS
        );
        call(&app, [10, 0, 0, 2], "POST", "/api/register", None, &creds("gus", "1357")).await;
        let gus = device(&login_via(&app, "203.0.113.79", None, &creds("gus", "1357")).await);
        assert_eq!(
            login_via(&app, "203.0.113.79", Some(&gus), &creds("finn", "2468")).await.status,
            StatusCode::TOO_MANY_REQUESTS
        );
        // The way back: the recovery code from sign-up.
        let back = login_via(&app, "203.0.113.77", None, &creds_code("finn", "2468", &code)).await;
        assert_eq!(back.status, StatusCode::OK, "{}", back.body);
        let body = back.json();
        assert_eq!(body["recovered"], true);
        let new_code = body["recovery_code"].as_str().expect("a new code").to_string();
        assert_ne!(new_code, code);
        let back_phone = device(&back);
        assert_eq!(
            login_via(&app, "203.0.113.80", Some(&back_phone), &creds("finn", "2468")).await.status,
            StatusCode::OK,
            "that browser is trusted now"
        );
        let old = login_via(&app, "203.0.113.81", None, &creds_code("finn", "2468", &code)).await;
        assert_eq!(
            (old.status, old.json()["scope"].as_str()),
            (StatusCode::TOO_MANY_REQUESTS, Some("account")),
            "a used code is spent"
        );
        let new = login_via(&app, "203.0.113.81", None, &creds_code("finn", "2468", &new_code)).await;
        assert_eq!(new.status, StatusCode::OK, "{}", new.body);
        // Counted and alerted.
        let text = handle.render();
        assert!(text.contains("reddog_demo_sign_in_guessing_alerts_total 1"), "{text}");
        assert!(text.contains(&format!("reddog_demo_sign_in_failures_total {}", free + 1)), "{text}");
        assert!(text.contains("reddog_demo_recovery_sign_ins_total 2"), "{text}");
        let account_refusals = 1_500 - free - 1 + 4;
        assert!(
            text.contains(&format!(r#"reddog_demo_sign_ins_throttled_total{{scope="account"}} {account_refusals}"#)),
            "{text}"
        );
        assert_eq!(app.sign_in.accounts_waiting(now_ms()), (1, 1));
    }

    #[tokio::test]
    async fn a_blocked_client_is_let_through_again_when_its_wait_is_over() {
        // A wait (1 s) longer than a PIN check, so that the wrong PIN that starts it is
        // answered while it runs; the test then sleeps exactly the wait it is told.
        let throttle = ThrottlePolicy { pair_free_failures: 1, base_delay_ms: 1_000, ..ThrottlePolicy::default() };
        let app = platform(AccountPolicy { sign_up_floor_ms: 0, throttle, ..AccountPolicy::default() });
        call(&app, HOME, "POST", "/api/register", None, &creds("cleo", "2468")).await;
        call(&app, HOME, "POST", "/api/login", None, &creds("cleo", "1111")).await;
        let second = call(&app, HOME, "POST", "/api/login", None, &creds("cleo", "1111")).await;
        assert_eq!(second.status, StatusCode::TOO_MANY_REQUESTS);
        let blocked = call(&app, HOME, "POST", "/api/login", None, &creds("cleo", "2468")).await;
        assert_eq!(blocked.status, StatusCode::TOO_MANY_REQUESTS);
        let ms = blocked.json()["retry_after_ms"].as_u64().unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(ms + 5)).await;
        let after = call(&app, HOME, "POST", "/api/login", None, &creds("cleo", "2468")).await;
        assert_eq!(after.status, StatusCode::OK, "{}", after.body);
    }

    #[tokio::test]
    async fn signing_out_everywhere_ends_the_players_other_sessions() {
        let app = platform(AccountPolicy { sign_up_floor_ms: 0, ..AccountPolicy::default() });
        call(&app, HOME, "POST", "/api/register", None, &creds("dora", "2468")).await;
        let phone = call(&app, HOME, "POST", "/api/login", None, &creds("dora", "2468")).await;
        let laptop = call(&app, HOME, "POST", "/api/login", None, &creds("dora", "2468")).await;
        let cookie = phone.set_cookie(COOKIE).unwrap();
        assert!(cookie.contains("HttpOnly") && cookie.contains("Max-Age=43200"), "{cookie}");
        let (phone, laptop) = (session(&phone), session(&laptop));
        assert_eq!(call(&app, HOME, "GET", "/api/history", Some(&laptop), "").await.status, StatusCode::OK);
        let out = call(&app, HOME, "POST", "/api/logout-all", Some(&phone), "{}").await;
        assert_eq!(out.status, StatusCode::OK, "{}", out.body);
        assert!(out.body.contains(r#""sessions_ended":2"#), "{}", out.body);
        for s in [&phone, &laptop] {
            let a = call(&app, HOME, "GET", "/api/history", Some(s), "").await;
            assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{}", a.body);
        }
    }

    #[tokio::test]
    async fn an_internal_error_answers_a_request_id_and_no_detail() {
        let app = platform(AccountPolicy { sign_up_floor_ms: 0, ..AccountPolicy::default() });
        call(&app, HOME, "POST", "/api/register", None, &creds("eli", "2468")).await;
        let s = session(&call(&app, HOME, "POST", "/api/login", None, &creds("eli", "2468")).await);
        app.db(|c| c.execute_batch("DROP INDEX rounds_by_player; ALTER TABLE rounds RENAME TO rounds_gone"))
            .await
            .unwrap();
        let a = call(&app, HOME, "GET", "/api/history", Some(&s), "").await;
        assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR);
        let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
        assert_eq!(v["error"], "internal");
        let message = v["message"].as_str().unwrap();
        let id = message.split("request id ").nth(1).unwrap().split(' ').next().unwrap();
        assert!(id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{message}");
        for leak in ["rounds", "table", "sqlite", "no such"] {
            assert!(!a.body.to_lowercase().contains(leak), "internal detail {leak:?} in {}", a.body);
        }
    }
}
