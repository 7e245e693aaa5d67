//! The platform's HTTP side: the page (plain HTML/JS/CSS compiled into the binary), and a
//! small JSON API for it. The browser never receives a sealed token: every answer is built
//! from [`RoundView`], which has none.
//!
//! Sessions are a random token in an `HttpOnly`, `SameSite=Strict` cookie; every POST takes
//! a JSON body (so a cross-site form cannot post), and every page is served with a strict
//! Content-Security-Policy (scripts from this origin only).

use crate::limits::{self, LimitError};
use crate::players::{self, PlayerError};
use crate::rounds::{Platform, RoundError, RoundView, now_ms};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

const COOKIE: &str = "rd_session";

/// An API error: HTTP status, a stable code, a message naming the field.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({"error": self.code, "message": self.message}))).into_response()
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
            Ledger(_) | Db(_) => {
                tracing::error!(error = %e, "internal error");
                return ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error");
            }
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
            Hash | Ledger(_) | Db(_) => {
                tracing::error!(error = %e, "internal error");
                return ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error");
            }
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
        .route("/api/round", post(new_round))
        .route("/api/round/{round_id}", get(round_status))
        .route("/api/round/deal", post(deal))
        .route("/api/round/decide", post(decide))
        .route("/api/limits", post(set_limits))
        .route("/api/history", get(history))
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
        "ui.js" => ("text/javascript; charset=utf-8", include_str!("../static/ui.js")),
        "record.js" => ("text/javascript; charset=utf-8", include_str!("../static/record.js")),
        "i18n.js" => ("text/javascript; charset=utf-8", include_str!("../static/i18n.js")),
        "rules.js" => ("text/javascript; charset=utf-8", include_str!("../static/rules.js")),
        "style.css" => ("text/css; charset=utf-8", include_str!("../static/style.css")),
        _ => return (StatusCode::NOT_FOUND, "not found").into_response(),
    };
    ([(header::CONTENT_TYPE, ctype)], body).into_response()
}

fn session_token(headers: &HeaderMap) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == COOKIE && v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit())).then(|| v.to_string())
    })
}

fn player_of(app: &Platform, headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(token) = session_token(headers) else {
        return Ok(None);
    };
    Ok(app.db(|c| players::session_player(c, &token))?)
}

fn require_player(app: &Platform, headers: &HeaderMap) -> Result<i64, ApiError> {
    player_of(app, headers)?.ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "signed_out", "sign in first"))
}

fn with_cookie(token: &str, body: serde_json::Value) -> Response {
    let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
    ([(header::SET_COOKIE, cookie)], Json(body)).into_response()
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

fn limits_view(app: &Platform, player: i64) -> Result<LimitsView, ApiError> {
    let limit = app.db(|c| players::limit(c, player))?;
    let (min_bet, max_bet) = limit.effective(app.table);
    let next = limits::next_change_allowed(&limit, jiff::Timestamp::now()).map_err(|e| {
        tracing::error!(error = %e, "limit window");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error")
    })?;
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
        "chips": chips,
    });
    let Some(player) = player_of(&app, &headers)? else {
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
    let name = app.db(|c| players::name(c, player))?;
    Ok(Json(json!({
        "player": {"name": name, "balance": app.balance(player)?},
        "table": table,
        "limits": limits_view(&app, player)?,
        "round": round,
        "last_bet": app.last_bet(player)?,
        "engine_error": engine_error,
    }))
    .into_response())
}

#[derive(Deserialize)]
struct Credentials {
    name: String,
    pin: String,
}

async fn register(State(app): State<App>, Json(req): Json<Credentials>) -> Result<Response, ApiError> {
    players::validate_name(&req.name)?;
    players::validate_pin(&req.pin)?;
    let pin = req.pin.clone();
    let hash = tokio::task::spawn_blocking(move || players::hash_pin(&pin))
        .await
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error"))??;
    let now = now_ms();
    let balance = app.new_player_balance;
    let (id, token) = app.db(|c| -> Result<(i64, String), PlayerError> {
        let id = players::create(c, &req.name, &hash, balance, now)?;
        Ok((id, players::new_session(c, id, now)?))
    })?;
    tracing::info!(player = id, "player registered");
    Ok(with_cookie(&token, json!({"name": req.name})))
}

async fn login(State(app): State<App>, Json(req): Json<Credentials>) -> Result<Response, ApiError> {
    let found = app.db(|c| players::find(c, &req.name))?;
    if let Some((id, _)) = &found {
        pin_not_locked(&app, *id)?;
    }
    // Hash something even for an unknown name, so timing does not tell names apart.
    let (id, hash) =
        found.unwrap_or((-1, "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG".into()));
    let pin = req.pin.clone();
    let ok = tokio::task::spawn_blocking(move || players::verify_pin(&hash, &pin)).await.unwrap_or(false);
    if id < 0 {
        return Err(PlayerError::BadLogin.into());
    }
    app.db(|c| players::record_pin_check(c, id, ok, now_ms()))?;
    if !ok {
        return Err(PlayerError::BadLogin.into());
    }
    let token = app.db(|c| players::new_session(c, id, now_ms()))?;
    Ok(with_cookie(&token, json!({"name": req.name})))
}

/// Refuses (429) while the player's PIN checks are locked after repeated wrong PINs.
fn pin_not_locked(app: &Platform, player: i64) -> Result<(), ApiError> {
    match app.db(|c| players::pin_locked_until(c, player, now_ms()))? {
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
        app.db(|c| players::end_session(c, &token))?;
    }
    let cookie = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    Ok(([(header::SET_COOKIE, cookie)], Json(json!({}))).into_response())
}

async fn new_round(State(app): State<App>, headers: HeaderMap) -> Result<Json<RoundView>, ApiError> {
    let player = require_player(&app, &headers)?;
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
    let player = require_player(&app, &headers)?;
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
    Ok(Json(json!({"round": round, "balance": app.balance(player)?})).into_response())
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
    let player = require_player(&app, &headers)?;
    let raise = match req.action.as_str() {
        "raise" => true,
        "stand" => false,
        _ => {
            return Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", "action: 'raise' or 'stand'"));
        }
    };
    let round = app.decide(player, &req.round_id, req.seat, raise).await?;
    Ok(Json(json!({"round": round, "balance": app.balance(player)?})).into_response())
}

async fn round_status(
    State(app): State<App>,
    headers: HeaderMap,
    Path(round_id): Path<String>,
) -> Result<Json<RoundView>, ApiError> {
    let player = require_player(&app, &headers)?;
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
    let player = require_player(&app, &headers)?;
    pin_not_locked(&app, player)?;
    let hash = app.db(|c| players::pin_hash(c, player))?;
    let pin = req.pin.clone();
    let pin_ok = tokio::task::spawn_blocking(move || players::verify_pin(&hash, &pin)).await.unwrap_or(false);
    app.db(|c| players::record_pin_check(c, player, pin_ok, now_ms()))?;
    let table = app.table;
    let result = app.db(|c| {
        Ok::<_, rusqlite::Error>(players::set_max_bet(c, player, pin_ok, req.max_bet, table, jiff::Timestamp::now()))
    })?;
    match result {
        Ok(_) => {
            tracing::info!(player, max_bet = req.max_bet, "player lowered their limit");
            Ok(Json(json!({"limits": limits_view(&app, player)?})).into_response())
        }
        Err(e) => {
            let (status, code) = match &e {
                LimitError::WrongPin => (StatusCode::FORBIDDEN, "wrong_pin"),
                LimitError::TooSoon { .. } => (StatusCode::CONFLICT, "once_per_week"),
                LimitError::TimeZone(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
                _ => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            };
            if status == StatusCode::INTERNAL_SERVER_ERROR {
                // Never internal error text in an answer: logged, and a plain word sent.
                tracing::error!(error = %e, "setting a limit");
                return Err(ApiError::new(status, code, "internal error"));
            }
            Err(ApiError::new(status, code, e.to_string()))
        }
    }
}

#[derive(Deserialize)]
struct HistoryQuery {
    limit: Option<i64>,
}

async fn history(
    State(app): State<App>,
    headers: HeaderMap,
    Query(q): Query<HistoryQuery>,
) -> Result<Response, ApiError> {
    let player = require_player(&app, &headers)?;
    let limit = q.limit.unwrap_or(50).clamp(1, 500);
    Ok(Json(json!({"rounds": app.history(player, limit)?, "balance": app.balance(player)?})).into_response())
}
