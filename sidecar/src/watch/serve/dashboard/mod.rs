//! The dashboard of `switchyard watch --dashboard-listen`, at `/`: one HTML page, its script and its
//! style sheet, embedded in the binary (no CDN, no build step), and the endpoints the page reads:
//!
//! - `/status` and `/table` (from [`crate::watch::serve`]);
//! - `/rules`: the live table as hosts → rules in priority order ([`rules`]);
//! - `POST /explain`: `{"url", "method", "headers": ["Name: value"], "cookies": ["name=value"]}` →
//!   the decision of the live table for that request, from the very functions `switchyard explain`
//!   calls ([`switchyard_compiler::explain::request`], [`explain`](switchyard_compiler::explain::explain),
//!   [`render`](switchyard_compiler::explain::render)); at most [`EXPLAIN_MAX_BODY`] bytes, answered
//!   within [`offload::EXPLAIN_TIME_LIMIT`] ([`offload`]);
//! - `/events`: server-sent events, one `change` event whenever the watch compiled, pushed, or a
//!   source or sink changed state, so the page follows without a reload.
//!
//! All of it shows the cluster's whole routing picture, so it has its own address, loopback by
//! default, and a token beyond it ([`access`]).
//!
//! The page renders whatever `/status` and `/rules` hold: resource kinds, statuses, condition
//! reasons and any other top-level `/status` field are shown as they come, not from a fixed list.

pub mod access;
pub mod offload;
pub mod rules;

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State as AxumState};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures::Stream;
use serde::Deserialize;
use switchyard_table::RouteTable;

use crate::watch::state::{Leadership, Shared, State};

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/dashboard.js");
const STYLE: &str = include_str!("assets/dashboard.css");

/// Everything the page loads comes from here: no inline script, nothing from another origin.
pub(crate) const CSP: &str =
    "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// How often an `/events` stream looks for a change.
const POLL: Duration = Duration::from_millis(200);

/// The largest `POST /explain` body read (413 beyond): a URL, a method and a few headers and cookies.
pub const EXPLAIN_MAX_BODY: usize = 16 * 1024;

/// The page's routes that need the token when there is one (merged with `/status` and `/table` by
/// [`crate::watch::serve::dashboard_router`]).
pub fn router() -> Router<Shared> {
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX) }))
        .route(
            "/dashboard.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route("/rules", get(rules))
        .route("/explain", post(explain).layer(DefaultBodyLimit::max(EXPLAIN_MAX_BODY)))
        .route("/events", get(events))
}

/// What anyone who reaches the address may load: the login form and the style sheet it uses.
pub fn public_router(access: access::Access) -> Router<Shared> {
    Router::new()
        .route(
            access::LOGIN_PATH,
            get(access::login_form)
                .post(access::login)
                .layer(access::login_body_limit()),
        )
        .with_state(access)
        .route(
            "/dashboard.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

fn json(code: StatusCode, body: &serde_json::Value) -> Response {
    (
        code,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

fn error(code: StatusCode, message: &str) -> Response {
    json(code, &serde_json::json!({ "error": message }))
}

/// The live table and its push counter; `None` before the first push, an error response when the
/// pushed table does not index (never expected: the compiler validates every rule).
fn live(state: &Shared) -> Option<Result<(std::sync::Arc<RouteTable>, u64), Response>> {
    Some(state.live_index()?.map_err(|e| {
        state.internal_error(&format!("the pushed table does not validate: {e}"));
        error(StatusCode::INTERNAL_SERVER_ERROR, "internal error (see the log)")
    }))
}

fn not_yet() -> Response {
    error(StatusCode::SERVICE_UNAVAILABLE, "no table pushed yet")
}

async fn rules(AxumState(state): AxumState<Shared>) -> Response {
    let (table, generation) = match live(&state) {
        Some(Ok(live)) => live,
        Some(Err(response)) => return response,
        None => return not_yet(),
    };
    let servers = rules::IngressNginxServers::of(&state.lock().statuses);
    let view = offload::run(offload::DOCUMENT_TIME_LIMIT, move || {
        serde_json::to_value(rules::view(&table, generation, &servers))
    });
    match view.await {
        Err(not_done) => not_done.response(),
        Ok(Ok(view)) => json(StatusCode::OK, &view),
        Ok(Err(e)) => {
            state.internal_error(&format!("/rules does not serialize: {e}"));
            error(StatusCode::INTERNAL_SERVER_ERROR, "internal error (see the log)")
        }
    }
}

/// The explain form's request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asked {
    /// `http://host[:port]/path?query`.
    pub url: String,
    /// The method (default `GET`).
    #[serde(default = "get_method")]
    pub method: String,
    /// `Name: value` headers.
    #[serde(default)]
    pub headers: Vec<String>,
    /// `name=value` cookies.
    #[serde(default)]
    pub cookies: Vec<String>,
    /// The client's address, which decides the winner's address ranges (none: described only).
    #[serde(default)]
    pub client_address: Option<std::net::IpAddr>,
}

fn get_method() -> String {
    "GET".to_owned()
}

/// `switchyard explain` on `table` for `asked`: the decision (the CLI's `--json` form), the winner's
/// detail, every losing candidate with why, and the CLI's human text. `Err`: the request is malformed.
pub fn explain_json(table: &RouteTable, generation: u64, asked: &Asked) -> Result<serde_json::Value, String> {
    use switchyard_compiler::explain;
    let request = explain::request(&asked.url, &asked.method, &asked.headers, &asked.cookies)?;
    let explanation = explain::explain_from(table, &request, asked.client_address);
    Ok(serde_json::json!({
        "generation": generation,
        "table": table.generation(),
        "decision": explanation.decision,
        "winner_detail": explanation.winner_detail,
        "losers": explanation.losers,
        "policies": explanation.policies,
        "text": explain::render(&explanation, &request),
    }))
}

async fn explain(AxumState(state): AxumState<Shared>, body: Bytes) -> Response {
    let asked: Asked = match serde_json::from_slice(&body) {
        Ok(asked) => asked,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("the request body: {e}")),
    };
    let (table, generation) = match live(&state) {
        Some(Ok(live)) => live,
        Some(Err(response)) => return response,
        None => return not_yet(),
    };
    let answer = offload::run(offload::EXPLAIN_TIME_LIMIT, move || {
        explain_json(&table, generation, &asked)
    });
    match answer.await {
        Err(not_done) => not_done.response(),
        Ok(Ok(answer)) => json(StatusCode::OK, &answer),
        Ok(Err(e)) => error(StatusCode::BAD_REQUEST, &e),
    }
}

/// What the page shows changes only when one of these does: counts of what happened, and who leads
/// (which changes without a compile). A field of `/status` that can change without a compile or a
/// push must be part of it, or the page shows it only at the next compile: so are the readings of
/// the traffic (every few seconds with `--envoy-admin`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Revision {
    counts: [u64; 9],
    leader: Leadership,
}

fn revision(state: &State) -> Revision {
    let pushes = state.pushes.values().map(|c| c.ok + c.failed + c.refused).sum();
    Revision {
        counts: [
            state.tables_pushed,
            state.compiles,
            pushes,
            state.status_writes.ok + state.status_writes.failed,
            state.internal_errors,
            state.down.len() as u64,
            u64::from(state.waiting.is_some()),
            u64::from(state.push_error.is_some()),
            state.traffic.attempts(),
        ],
        leader: state.leadership.clone(),
    }
}

async fn events(AxumState(state): AxumState<Shared>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = futures::stream::unfold((state, None), |(state, last)| async move {
        loop {
            let (now, generation) = {
                let locked = state.lock();
                (revision(&locked), locked.tables_pushed)
            };
            if last.as_ref() != Some(&now) {
                let event = Event::default().event("change").data(generation.to_string());
                return Some((Ok(event), (state, Some(now))));
            }
            tokio::time::sleep(POLL).await;
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_answers_as_the_cli_does() {
        let table = RouteTable::from_json(
            br#"{"version": 1, "rules": [
              {"name": "Ingress/p/with-key#0", "host": "example.net", "path": {"type": "segment_prefix", "value": "/bar"},
               "conditions": [{"on": "header", "name": "key", "match": "exact", "value": "value"}],
               "action": {"route": {"backends": [{"cluster": "p/service1:80"}]}}},
              {"name": "Ingress/p/plain#0", "host": "example.net", "path": {"type": "segment_prefix", "value": "/bar"},
               "action": {"route": {"backends": [{"cluster": "p/service2:80"}]}}}]}"#,
        )
        .unwrap();
        let asked = Asked {
            url: "http://example.net/bar/foo".into(),
            method: "GET".into(),
            headers: vec!["Key: value".into()],
            cookies: vec![],
            client_address: None,
        };
        let answer = explain_json(&table, 3, &asked).unwrap();
        assert_eq!(answer["decision"]["rule"], "Ingress/p/with-key#0");
        assert_eq!(answer["decision"]["cluster"], "p/service1:80");
        assert_eq!(answer["losers"][0]["rule"], "Ingress/p/plain#0");
        assert!(
            answer["losers"][0]["why"]
                .as_str()
                .unwrap()
                .starts_with("ranked lower by"),
            "{answer}"
        );
        let request = switchyard_compiler::explain::request(&asked.url, "GET", &asked.headers, &[]).unwrap();
        let cli =
            switchyard_compiler::explain::render(&switchyard_compiler::explain::explain(&table, &request), &request);
        assert_eq!(answer["text"], cli.as_str());

        let bad = Asked {
            headers: vec!["no colon".into()],
            ..asked
        };
        assert!(explain_json(&table, 3, &bad).unwrap_err().contains("\"Name: value\""));
    }

    #[test]
    fn the_revision_moves_on_a_compile_a_source_going_down_a_new_leader_and_a_traffic_reading() {
        let mut state = State::default();
        let before = revision(&state);
        state.compiles += 1;
        let compiled = revision(&state);
        assert_ne!(before, compiled);
        state.down.insert("kubernetes Ingress".into(), "refused".into());
        let down = revision(&state);
        assert_ne!(compiled, down);
        state.leadership.holder = Some("another replica".into());
        let led = revision(&state);
        assert_ne!(down, led);
        state.traffic.read(0.0, 0, Err("refused".into()));
        assert_ne!(led, revision(&state));
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        for attribute in ["src=\"", "href=\""] {
            for (_, rest) in INDEX
                .match_indices(attribute)
                .map(|(at, _)| INDEX.split_at(at + attribute.len()))
            {
                assert!(
                    rest.starts_with('/') || rest.starts_with('#'),
                    "{attribute}{}",
                    &rest[..20]
                );
            }
        }
        assert!(INDEX.contains("src=\"/dashboard.js\"") && INDEX.contains("href=\"/dashboard.css\""));
        assert!(!SCRIPT.contains("://"), "the script names another origin");
        assert!(
            !STYLE.contains("url(") && !STYLE.contains("@import"),
            "the style sheet loads something"
        );
    }
}
