//! `ingress_nginx.json` read into [`NginxCase`]s: ROUTING.md §7 (ingress-nginx's Ingresses) as
//! data; `access_control.json` (§9, every dialect) in the same form. Each case names a manifest file under `ingress-nginx/`, the `switchyard compile` flags it
//! is compiled with, the requests with the decision each must get (rule, cluster, status,
//! `Location`, the path and headers the backend receives, and at a canary's location which step
//! decided), and the status conditions the compiler must report. The same case runs natively (the compiler, then the table's matcher through
//! `switchyard explain`'s own function) and through the real filter under host-sim
//! (`host-sim/tests/ingress_nginx_cases.rs`).

use std::path::PathBuf;

use serde_json::Value;

use crate::corpus::{describe_request, url_parts};

/// The corpus, as written in this crate's `ingress_nginx.json`.
const CORPUS: &str = include_str!("../ingress_nginx.json");

/// ROUTING.md §9 (access controls, every dialect) in the same form: `access_control.json` over the
/// manifests of `access/`.
const ACCESS_CONTROL: &str = include_str!("../access_control.json");

/// One case: manifests, flags, requests and the conditions the status report must carry.
#[derive(Debug, Clone)]
pub struct NginxCase {
    /// The behaviour, as a test name: `regex_mode_exact_path_matches_any_case_prefix`.
    pub name: String,
    /// The sentence of ROUTING.md §7 the case pins (and, for a case taken from ingress-nginx's own
    /// tests, the file it comes from).
    pub about: String,
    /// The manifest file, relative to this crate (`ingress-nginx/paths.yaml`).
    pub manifests: String,
    /// The `switchyard compile` flags (`--ingress-nginx-class nginx` when the case says none).
    pub flags: Vec<String>,
    /// The requests and the decision each must get.
    pub requests: Vec<NginxProbe>,
    /// Status conditions that must be reported. For every (resource, reason) listed, the report
    /// holds exactly as many conditions of that reason on that resource as are listed.
    pub conditions: Vec<WantCondition>,
}

/// A request and the decision it must get.
#[derive(Debug, Clone)]
pub struct NginxProbe {
    /// The method (`GET` unless the case says otherwise).
    pub method: String,
    /// `http://authority/path?query` (`https://` for a request whose `:scheme` is `https`).
    pub url: String,
    /// Request headers in order.
    pub headers: Vec<(String, String)>,
    /// The decision.
    pub want: Want,
}

/// The decision for one request. `status` 200 means routed to `cluster`; any other status is the
/// filter's local reply (a redirect with its `Location`, or the no-route 404).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    /// The winning rule, when the case names it (`None` with `rule_none`: no rule at all).
    pub rule: Option<String>,
    /// The request must match no rule (the filter's own 404).
    pub rule_none: bool,
    /// The cluster the request goes to (required when `status` is 200).
    pub cluster: Option<String>,
    /// 200 when routed, else the local reply's status.
    pub status: u16,
    /// A redirect's `Location`.
    pub location: Option<String>,
    /// The `:path` the backend receives, query included.
    pub path: Option<String>,
    /// Request headers the backend receives (lowercase names; `:authority` for the Host).
    pub headers: Vec<(String, String)>,
    /// Request headers the filter must not add (lowercase names).
    pub absent_headers: Vec<String>,
    /// Text the local reply's body must contain (a 403 of ROUTING.md §9 names its field).
    pub body: Option<String>,
    /// At a location with a canary (ROUTING.md §7.6): the decision `switchyard explain` prints
    /// (`canary: header X-Canary = always`, `main by weight 0/100`). Checked natively only: the
    /// filter does not say which step decided.
    pub canary: Option<String>,
}

/// A status condition the report must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantCondition {
    /// `Ingress/namespace/name` (or `IngressClass//name`).
    pub resource: String,
    /// The condition's reason (`PathTaken`, `AnnotationNotHonored`, …).
    pub reason: String,
    /// Text the condition's message must contain (empty: any).
    pub contains: String,
}

impl NginxCase {
    /// The manifest file's path on disk.
    pub fn manifest_path(&self) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(&self.manifests)
    }

    /// The manifests' text.
    pub fn manifest_text(&self) -> String {
        let path = self.manifest_path();
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("case {}: {}: {e}", self.name, path.display()))
    }
}

impl NginxProbe {
    /// The authority of [`NginxProbe::url`].
    pub fn authority(&self) -> &str {
        url_parts(&self.url).0
    }

    /// The path and query of [`NginxProbe::url`].
    pub fn path(&self) -> &str {
        url_parts(&self.url).1
    }
}

impl std::fmt::Display for NginxProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        describe_request(f, &self.method, &self.url, &self.headers)
    }
}

/// Every case of `ingress_nginx.json`. Panics on a malformed corpus, naming the case.
pub fn ingress_nginx_cases() -> Vec<NginxCase> {
    cases_of(CORPUS)
}

/// Every case of `access_control.json` (ROUTING.md §9).
pub fn access_control_cases() -> Vec<NginxCase> {
    cases_of(ACCESS_CONTROL)
}

/// Every case of both corpora of manifests: what each layer's runner plays.
pub fn manifest_cases() -> Vec<NginxCase> {
    let mut cases = ingress_nginx_cases();
    cases.extend(access_control_cases());
    cases
}

fn cases_of(text: &str) -> Vec<NginxCase> {
    let corpus: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("manifest corpus: {e}"));
    let cases: Vec<NginxCase> = corpus["cases"]
        .as_array()
        .expect("manifest corpus: a `cases` list")
        .iter()
        .map(case)
        .collect();
    for (i, case) in cases.iter().enumerate() {
        assert!(
            cases[..i].iter().all(|other| other.name != case.name),
            "manifest corpus: two cases named {}",
            case.name
        );
    }
    cases
}

fn text(value: &Value, field: &str, context: &str) -> String {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("manifest corpus: {context}: `{field}` must be a string"))
        .to_owned()
}

fn strings(value: Option<&Value>, context: &str) -> Vec<String> {
    match value {
        None => Vec::new(),
        Some(list) => list
            .as_array()
            .unwrap_or_else(|| panic!("manifest corpus: {context}: a list of strings"))
            .iter()
            .map(|s| {
                s.as_str()
                    .unwrap_or_else(|| panic!("manifest corpus: {context}: {s} is not a string"))
                    .to_owned()
            })
            .collect(),
    }
}

fn pairs(value: Option<&Value>, context: &str) -> Vec<(String, String)> {
    match value {
        None => Vec::new(),
        Some(list) => list
            .as_array()
            .unwrap_or_else(|| panic!("manifest corpus: {context}: headers are a list"))
            .iter()
            .map(|pair| match pair.as_array().map(Vec::as_slice) {
                Some([Value::String(name), Value::String(value)]) => (name.clone(), value.clone()),
                _ => panic!("manifest corpus: {context}: a header is [name, value]"),
            })
            .collect(),
    }
}

fn case(value: &Value) -> NginxCase {
    let name = text(value, "name", "a case");
    let flags = match value.get("flags") {
        None => vec!["--ingress-nginx-class".to_owned(), "nginx".to_owned()],
        some => strings(some, &format!("{name}: flags")),
    };
    let requests = value["requests"]
        .as_array()
        .unwrap_or_else(|| panic!("manifest corpus: case {name}: a `requests` list"))
        .iter()
        .map(|p| probe(p, &name))
        .collect();
    let conditions = match value.get("conditions") {
        None => Vec::new(),
        Some(list) => list
            .as_array()
            .unwrap_or_else(|| panic!("manifest corpus: case {name}: `conditions` is a list"))
            .iter()
            .map(|c| WantCondition {
                resource: text(c, "resource", &name),
                reason: text(c, "reason", &name),
                contains: c.get("contains").and_then(Value::as_str).unwrap_or_default().to_owned(),
            })
            .collect(),
    };
    NginxCase {
        about: text(value, "about", &name),
        manifests: text(value, "manifests", &name),
        name,
        flags,
        requests,
        conditions,
    }
}

fn probe(value: &Value, case: &str) -> NginxProbe {
    let url = text(value, "url", case);
    let context = format!("case {case}: {url}");
    let want = value
        .get("want")
        .unwrap_or_else(|| panic!("manifest corpus: {context}: say `want`"));
    let status = match want.get("status") {
        None => 200,
        Some(n) => n
            .as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .unwrap_or_else(|| panic!("manifest corpus: {context}: `status` is a number")),
    };
    let (rule, rule_none) = match want.get("rule") {
        None => (None, false),
        Some(Value::Null) => (None, true),
        Some(Value::String(name)) => (Some(name.clone()), false),
        Some(other) => panic!("manifest corpus: {context}: `rule` is a name or null, not {other}"),
    };
    let field = |name: &str| want.get(name).and_then(Value::as_str).map(str::to_owned);
    let want = Want {
        rule,
        rule_none,
        cluster: field("cluster"),
        status,
        location: field("location"),
        path: field("path"),
        headers: pairs(want.get("headers"), &context),
        absent_headers: strings(want.get("absent_headers"), &context),
        canary: field("canary"),
        body: field("body"),
    };
    assert!(
        (want.status == 200) == want.cluster.is_some(),
        "manifest corpus: {context}: a routed request (status 200) names its cluster, and only it"
    );
    assert!(
        want.canary.is_none() || want.status == 200,
        "manifest corpus: {context}: a `canary` decision needs a routed request"
    );
    assert!(
        want.location.is_none() || (300..400).contains(&want.status),
        "manifest corpus: {context}: a `location` needs a redirect status"
    );
    NginxProbe {
        method: value.get("method").and_then(Value::as_str).unwrap_or("GET").to_owned(),
        headers: pairs(value.get("headers"), &context),
        url,
        want,
    }
}
