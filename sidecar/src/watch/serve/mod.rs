//! The two HTTP addresses of `switchyard watch`, served by axum:
//!
//! - **operations** (`--listen`): `/healthz`, `/readyz` and `/metrics`, what kubelet's probes and
//!   Prometheus need, on the pod's address; nothing else answers there (404);
//! - **dashboard** (`--dashboard-listen`, loopback unless a token guards it): the [`dashboard`] at
//!   `/`, `/table`, `/status` and what the page reads, which show the cluster's whole routing
//!   picture, behind [`access::guard`] when `--dashboard-token-file` is given.

pub mod dashboard;
pub mod metrics;

use axum::extract::State as AxumState;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::flags::TableEncoding;
use crate::watch::serve::dashboard::{access, offload};
use crate::watch::state::Shared;

/// The operations address's routes: probes and metrics only.
pub fn operations_router(state: Shared) -> Router {
    Router::new()
        .route("/healthz", get(|| async { text(StatusCode::OK, "ok\n".to_owned()) }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// The dashboard address's routes, every one but the login form behind `access`.
pub fn dashboard_router(state: Shared, access: access::Access) -> Router {
    let guarded = Router::new()
        .route("/table", get(table))
        .route("/status", get(status))
        .merge(dashboard::router());
    let guarded = match access.needs_token() {
        true => guarded.route_layer(axum::middleware::from_fn_with_state(access.clone(), access::guard)),
        false => guarded,
    };
    guarded.merge(dashboard::public_router(access)).with_state(state)
}

/// Serves `router` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, router: Router) -> std::io::Result<()> {
    axum::serve(listener, router).await
}

fn text(code: StatusCode, body: String) -> Response {
    (code, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

fn json(code: StatusCode, body: String) -> Response {
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn readyz(AxumState(state): AxumState<Shared>) -> Response {
    match state.lock().readiness() {
        Ok(reason) => text(StatusCode::OK, reason + "\n"),
        Err(reason) => text(StatusCode::SERVICE_UNAVAILABLE, reason + "\n"),
    }
}

async fn metrics(AxumState(state): AxumState<Shared>) -> Response {
    let body = metrics::render(&state.lock());
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn table(AxumState(state): AxumState<Shared>) -> Response {
    // Written outside the lock and off the event loop: 100,000 rules are 36 MB of JSON.
    let Some(table) = state.lock().table.clone() else {
        return json(
            StatusCode::SERVICE_UNAVAILABLE,
            "{\"error\": \"no table pushed yet\"}\n".to_owned(),
        );
    };
    // People read it: a basic authentication's hashes are hidden (they travel to the gateway only).
    let text = offload::run(offload::DOCUMENT_TIME_LIMIT, move || {
        TableEncoding::Json.file_text(&table.without_credentials())
    });
    match text.await {
        Err(not_done) => not_done.response(),
        Ok(Ok(text)) => json(StatusCode::OK, text),
        Ok(Err(e)) => {
            state.internal_error(&format!("/table does not serialize: {e}"));
            json(
                StatusCode::INTERNAL_SERVER_ERROR,
                "{\"error\": \"internal error: the table does not serialize (see the log)\"}\n".to_owned(),
            )
        }
    }
}

async fn status(AxumState(state): AxumState<Shared>) -> Response {
    let document = state.lock().status_json();
    match serde_json::to_string_pretty(&document) {
        Ok(body) => json(StatusCode::OK, body + "\n"),
        Err(e) => {
            state.internal_error(&format!("/status does not serialize: {e}"));
            json(
                StatusCode::INTERNAL_SERVER_ERROR,
                "{\"error\": \"internal error: the status does not serialize (see the log)\"}\n".to_owned(),
            )
        }
    }
}
