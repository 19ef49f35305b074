//! The operations endpoint (`--listen`): `/healthz`, `/readyz`, `/metrics`, `/table` and `/status`,
//! and the [`dashboard`] at `/`, served by axum on the address given (use
//! 127.0.0.1 unless the pod network needs more).

use axum::extract::State as AxumState;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::flags::TableEncoding;
use crate::watch::state::Shared;
use crate::watch::{dashboard, metrics};

/// The routes.
pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/healthz", get(|| async { text(StatusCode::OK, "ok\n".to_owned()) }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/table", get(table))
        .route("/status", get(status))
        .merge(dashboard::router())
        .with_state(state)
}

/// Serves until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, state: Shared) -> std::io::Result<()> {
    axum::serve(listener, router(state)).await
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
    // Written outside the lock: 100,000 rules are 36 MB of JSON.
    let table = state.lock().table.clone();
    match table.map(|table| TableEncoding::Json.file_text(&table)) {
        Some(Ok(text)) => json(StatusCode::OK, text),
        Some(Err(e)) => {
            state.internal_error(&format!("/table does not serialize: {e}"));
            json(
                StatusCode::INTERNAL_SERVER_ERROR,
                "{\"error\": \"internal error: the table does not serialize (see the log)\"}\n".to_owned(),
            )
        }
        None => json(
            StatusCode::SERVICE_UNAVAILABLE,
            "{\"error\": \"no table pushed yet\"}\n".to_owned(),
        ),
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
