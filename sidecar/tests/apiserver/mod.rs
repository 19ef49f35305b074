//! A stand-in for the Kubernetes API server's list and watch protocol, on 127.0.0.1, for testing
//! `switchyard watch --kubernetes` with a real kube `Client`, where a real API server cannot be made to
//! do what a test needs at an exact point (tests/envtest.rs covers the rest against a real one).
//!
//! What it speaks, in the real JSON wire format:
//! - `GET` lists (`/api/v1/services`, `/apis/GROUP/VERSION[/namespaces/NS]/PLURAL`) with a
//!   `metadata.resourceVersion`; every object carries its own `metadata.resourceVersion`.
//! - `GET ...?watch=true&resourceVersion=RV`: a chunked stream of `{"type", "object"}` lines:
//!   `ADDED`, `MODIFIED`, `DELETED` replayed from RV onwards, then live; `BOOKMARK` on request;
//!   an `ERROR` with a `Status` of code 410 (`Expired`) when RV is older than the compaction point.
//! - `PATCH .../NAME/status` (merge patch into the stored object, which emits `MODIFIED` as the
//!   real server does), for the status write-back.
//!
//! Test controls: put, bookmark, compact, end every watch response, and the log of every request.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, watch};

/// A resource type: `("networking.k8s.io/v1", "ingresses", "Ingress")`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kind {
    /// `v1` or `group/version`.
    pub api_version: &'static str,
    /// The URL's plural.
    pub plural: &'static str,
    /// `kind`.
    pub kind: &'static str,
}

pub const INGRESS: Kind = Kind {
    api_version: "networking.k8s.io/v1",
    plural: "ingresses",
    kind: "Ingress",
};
pub const INGRESS_CLASS: Kind = Kind {
    api_version: "networking.k8s.io/v1",
    plural: "ingressclasses",
    kind: "IngressClass",
};
pub const SERVICE: Kind = Kind {
    api_version: "v1",
    plural: "services",
    kind: "Service",
};
pub const HTTPPROXY: Kind = Kind {
    api_version: "projectcontour.io/v1",
    plural: "httpproxies",
    kind: "HTTPProxy",
};
pub const SECRET: Kind = Kind {
    api_version: "v1",
    plural: "secrets",
    kind: "Secret",
};
const KINDS: [Kind; 5] = [INGRESS, INGRESS_CLASS, SERVICE, HTTPPROXY, SECRET];

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
struct Line {
    /// The `drop_watches` epoch it was emitted in: a watch opened in an earlier epoch never sees it.
    epoch: u64,
    plural: &'static str,
    namespace: String,
    rv: u64,
    text: String,
}

#[derive(Default)]
struct Inner {
    rv: u64,
    objects: BTreeMap<(&'static str, String, String), Value>,
    history: Vec<Line>,
    compacted: u64,
    gone: usize,
    epoch: u64,
    requests: Vec<Recorded>,
}

/// The stand-in, serving until dropped with the test's runtime.
#[derive(Clone)]
pub struct ApiServer {
    pub addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    lines: broadcast::Sender<Line>,
    disconnect: Arc<watch::Sender<u64>>,
}

impl ApiServer {
    pub async fn start() -> ApiServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (lines, _) = broadcast::channel(1024);
        let (disconnect, _) = watch::channel(0);
        let server = ApiServer {
            addr,
            inner: Arc::default(),
            lines,
            disconnect: Arc::new(disconnect),
        };
        let app = axum::Router::new().fallback(handle).with_state(server.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        server
    }

    /// A kube client talking to the stand-in.
    pub fn client(&self) -> kube::Client {
        let config = kube::Config::new(format!("http://{}", self.addr).parse().unwrap());
        kube::Client::try_from(config).unwrap()
    }

    /// Adds or replaces an object (its kind decides where); emits ADDED or MODIFIED.
    pub fn put(&self, kind: Kind, object: Value) {
        let mut inner = self.inner.lock().unwrap();
        self.store(&mut inner, kind, object);
    }

    fn store(&self, inner: &mut Inner, kind: Kind, mut object: Value) -> Value {
        inner.rv += 1;
        let rv = inner.rv;
        object["apiVersion"] = json!(kind.api_version);
        object["kind"] = json!(kind.kind);
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        if object["metadata"]["uid"].is_null() {
            object["metadata"]["uid"] = json!(format!("uid-{rv}"));
        }
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or("").to_owned();
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        let previous = inner
            .objects
            .insert((kind.plural, namespace.clone(), name), object.clone());
        let kind_of_event = if previous.is_some() { "MODIFIED" } else { "ADDED" };
        self.emit(
            inner,
            kind.plural,
            namespace,
            json!({"type": kind_of_event, "object": object}),
        );
        object
    }

    fn emit(&self, inner: &mut Inner, plural: &'static str, namespace: String, event: Value) {
        let line = Line {
            epoch: inner.epoch,
            plural,
            namespace,
            rv: inner.rv,
            text: format!("{event}\n"),
        };
        inner.history.push(line.clone());
        let _ = self.lines.send(line);
    }

    /// Sends a BOOKMARK at the current resourceVersion to every watch of `kind`.
    pub fn bookmark(&self, kind: Kind) -> u64 {
        let inner = self.inner.lock().unwrap();
        let event = json!({"type": "BOOKMARK", "object": {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"resourceVersion": inner.rv.to_string()}}});
        // Not history: a bookmark is for the watches open now. Namespace "" reaches every watch.
        let _ = self.lines.send(Line {
            epoch: inner.epoch,
            plural: kind.plural,
            namespace: String::new(),
            rv: inner.rv,
            text: format!("{event}\n"),
        });
        inner.rv
    }

    /// Forgets history: a watch from a resourceVersion older than now gets 410 Gone.
    pub fn compact(&self) {
        let mut inner = self.inner.lock().unwrap();
        inner.compacted = inner.rv;
    }

    /// Ends every open watch response (the client sees its stream end, as after a server timeout).
    pub fn drop_watches(&self) {
        let mut inner = self.inner.lock().unwrap();
        inner.epoch += 1;
        let epoch = inner.epoch;
        self.disconnect.send_replace(epoch);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.lock().unwrap().requests.clone()
    }

    /// How many lists (not watches) of `kind` were served.
    pub fn lists(&self, kind: Kind) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path.ends_with(kind.plural) && !r.query.contains_key("watch"))
            .count()
    }

    /// How many watches were answered 410 Gone.
    pub fn gone(&self) -> usize {
        self.inner.lock().unwrap().gone
    }

    /// A stored object.
    pub fn object(&self, kind: Kind, namespace: &str, name: &str) -> Option<Value> {
        self.inner
            .lock()
            .unwrap()
            .objects
            .get(&(kind.plural, namespace.to_owned(), name.to_owned()))
            .cloned()
    }
}

/// (apiVersion, namespace, plural, name, subresource) of a request path.
type Route = (String, Option<String>, String, Option<String>, Option<String>);

/// `/api/v1/...` or `/apis/G/V/...` → its [`Route`].
fn route(path: &str) -> Option<Route> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (api_version, rest) = match parts.as_slice() {
        ["api", "v1", rest @ ..] => ("v1".to_owned(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_owned()), rest),
        _ => (None, rest),
    };
    let plural = (*rest.first()?).to_owned();
    Some((
        api_version,
        namespace,
        plural,
        rest.get(1).map(|s| (*s).to_owned()),
        rest.get(2).map(|s| (*s).to_owned()),
    ))
}

fn status(code: u16, reason: &str, message: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code});
    (
        StatusCode::from_u16(code).unwrap(),
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn ok(code: StatusCode, body: Value) -> Response {
    (code, [("content-type", "application/json")], body.to_string()).into_response()
}

async fn handle(State(server): State<ApiServer>, method: Method, uri: Uri, body: Bytes) -> Response {
    let query: BTreeMap<String, String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path().to_owned();
    let Some((api_version, namespace, plural, name, subresource)) = route(&path) else {
        return status(404, "NotFound", &format!("no route {path}"));
    };
    server.inner.lock().unwrap().requests.push(Recorded {
        method: method.to_string(),
        path: path.clone(),
        query: query.clone(),
    });
    let kind = KINDS
        .iter()
        .find(|k| k.plural == plural && k.api_version == api_version)
        .copied()
        .unwrap_or(Kind {
            api_version: Box::leak(api_version.clone().into_boxed_str()),
            plural: Box::leak(plural.clone().into_boxed_str()),
            kind: "Unknown",
        });
    match (method, name, subresource) {
        (Method::GET, None, None) if query.get("watch").is_some_and(|w| w == "true" || w == "1") => {
            let from: u64 = query.get("resourceVersion").and_then(|rv| rv.parse().ok()).unwrap_or(0);
            watch_stream(&server, kind, namespace, from)
        }
        (Method::GET, None, None) => {
            let inner = server.inner.lock().unwrap();
            let items: Vec<Value> = inner
                .objects
                .iter()
                .filter(|((p, ns, _), _)| *p == kind.plural && namespace.as_ref().is_none_or(|n| n == ns))
                .map(|(_, o)| o.clone())
                .collect();
            ok(
                StatusCode::OK,
                json!({"apiVersion": kind.api_version, "kind": format!("{}List", kind.kind), "metadata": {"resourceVersion": inner.rv.to_string()}, "items": items}),
            )
        }
        (Method::PATCH, Some(name), Some(sub)) if sub == "status" => {
            let mut inner = server.inner.lock().unwrap();
            let key = (kind.plural, namespace.clone().unwrap_or_default(), name.clone());
            let Some(mut object) = inner.objects.get(&key).cloned() else {
                return status(404, "NotFound", &format!("{plural} {name} not found"));
            };
            merge(&mut object, &parsed);
            let stored = server.store(&mut inner, kind, object);
            ok(StatusCode::OK, stored)
        }
        (method, name, sub) => status(
            405,
            "MethodNotAllowed",
            &format!("the stand-in does not serve {method} {name:?} {sub:?}"),
        ),
    }
}

/// JSON merge patch (RFC 7386).
fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = json!({});
            }
            for (key, value) in fields {
                if value.is_null() {
                    target.as_object_mut().unwrap().remove(key);
                } else {
                    merge(
                        target
                            .as_object_mut()
                            .unwrap()
                            .entry(key.clone())
                            .or_insert(Value::Null),
                        value,
                    );
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn watch_stream(server: &ApiServer, kind: Kind, namespace: Option<String>, from: u64) -> Response {
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let wanted = move |line: &Line| {
        line.plural == kind.plural
            && (line.namespace.is_empty() || namespace.as_ref().is_none_or(|n| *n == line.namespace))
    };
    {
        let mut inner = server.inner.lock().unwrap();
        if from < inner.compacted {
            inner.gone += 1;
            let gone = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("too old resource version: {from} ({})", inner.compacted), "reason": "Expired", "code": 410}});
            let _ = tx.send(Bytes::from(format!("{gone}\n")));
        } else {
            // Subscribed under the lock: nothing emitted after the replay is missed or repeated.
            let mut live = server.lines.subscribe();
            for line in inner.history.iter().filter(|l| l.rv > from && wanted(l)) {
                let _ = tx.send(Bytes::from(line.text.clone()));
            }
            let mut disconnect = server.disconnect.subscribe();
            let epoch = inner.epoch;
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        biased;
                        _ = disconnect.changed() => return,
                        line = live.recv() => match line {
                            Ok(line) if line.epoch != epoch => return,
                            Ok(line) if wanted(&line) => {
                                if tx.send(Bytes::from(line.text)).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                            Err(_) => return,
                        },
                    }
                }
            });
        }
    }
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}
