//! `switchyard watch --kubernetes --ingress-nginx-class` against a real kube-apiserver and etcd
//! (`switchyard-envtest`, from `KUBEBUILDER_ASSETS`), as a user runs it: the sidecar is a process,
//! the restricted ServiceAccount user of `deploy/rbac.yaml`, and reads ingress-nginx's ConfigMap
//! through the Role of `deploy/ingress-nginx/configmap-rbac.yaml` (ROUTING.md §7). The tests share
//! one API server, each in its own namespace (and watching only it), with one IngressClass `nginx`
//! of ingress-nginx's controller.
//!
//! Run with `make test-kubernetes` (part of `make test` when `KUBEBUILDER_ASSETS` is set).

use std::path::Path;
use std::time::Duration;

use kube::Client;
use serde_json::{json, Value};
use switchyard_envtest::manifests::{apply, documents};
use switchyard_envtest::watch::{eventually, eventually_async, Watch};
use switchyard_envtest::{Envtest, User};

const PATIENCE: Duration = Duration::from_secs(20);

/// ingress-nginx's IngressClass, as its install creates it.
const INGRESS_CLASS: &str = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\nspec: {controller: k8s.io/ingress-nginx}\n";

/// The ConfigMap's name in ingress-nginx's install (and in deploy/ingress-nginx/configmap-rbac.yaml).
const CONFIG_MAP: &str = "ingress-nginx-controller";

/// The address written to load balancers.
const PUBLISHED: &str = "203.0.113.9";

/// The binary under test: `SWITCHYARD_BIN`, else this build's.
fn bin() -> std::path::PathBuf {
    std::env::var_os("SWITCHYARD_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_BIN_EXE_switchyard")).to_path_buf())
}

/// `switchyard watch` as the ServiceAccount user, watching `namespace` only and publishing
/// [`PUBLISHED`].
fn watch(env: &Envtest, namespace: &str, args: &[&str]) -> Watch {
    let mut all = vec![
        "--namespaces",
        namespace,
        "--debounce-ms",
        "50",
        "--publish-address",
        PUBLISHED,
    ];
    all.extend_from_slice(args);
    Watch::start(&bin(), &env.kubeconfig(User::Switchyard), &all).unwrap()
}

/// Server-side applies YAML documents as the admin.
async fn admin_apply(client: &Client, yaml: &str) {
    for object in documents(yaml).unwrap() {
        apply(client, &object).await.unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A fresh namespace with ingress-nginx's IngressClass in the cluster.
async fn setup(env: &Envtest, prefix: &str) -> (Client, String) {
    let admin = env.admin().await;
    admin_apply(&admin, INGRESS_CLASS).await;
    let ns = env.namespace(prefix).await;
    (admin, ns)
}

/// deploy/ingress-nginx/configmap-rbac.yaml as shipped, with the ConfigMap's namespace `namespace`
/// instead of `ingress-nginx` (each test has its own).
async fn grant_config_map(admin: &Client, namespace: &str) {
    let path = switchyard_envtest::project_root().join("deploy/ingress-nginx/configmap-rbac.yaml");
    let shipped = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(shipped.contains("  namespace: ingress-nginx\n") && shipped.contains(CONFIG_MAP));
    admin_apply(
        admin,
        &shipped.replace("  namespace: ingress-nginx\n", &format!("  namespace: {namespace}\n")),
    )
    .await;
}

/// ingress-nginx's ConfigMap in `namespace` with `data`.
async fn config_map(admin: &Client, namespace: &str, data: Value) {
    let object = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": namespace}, "data": data
    });
    apply(admin, &object).await.unwrap_or_else(|e| panic!("{e}"));
}

/// The Ingress of ingress-nginx's documentation (its rewrite example): `use-regex`, `rewrite-target:
/// /$2`, and an annotation Switchyard does not honour; TLS for `host` when `tls`.
fn rewrite_ingress(namespace: &str, name: &str, host: &str, tls: bool) -> String {
    let tls = match tls {
        true => format!("  tls:\n  - hosts: [{host}]\n    secretName: {name}-tls\n"),
        false => String::new(),
    };
    format!(
        "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {name}
  namespace: {namespace}
  annotations:
    nginx.ingress.kubernetes.io/use-regex: \"true\"
    nginx.ingress.kubernetes.io/rewrite-target: /$2
    nginx.ingress.kubernetes.io/proxy-read-timeout: \"120\"
    nginx.ingress.kubernetes.io/limit-rate: \"100\"
spec:
  ingressClassName: nginx
{tls}  rules:
  - host: {host}
    http:
      paths:
      - path: /something(/|$)(.*)
        pathType: ImplementationSpecific
        backend: {{service: {{name: web, port: {{number: 80}}}}}}
"
    )
}

/// One of Switchyard's own Ingresses (no class: ROUTING.md §1's first rule with `--ingress-class`
/// empty).
fn own_ingress(namespace: &str, name: &str, host: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  rules:\n  - host: {host}\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: own, port: {{number: 80}}}}}}}}\n"
    )
}

/// The table's rule named `name` (`Null` when missing).
fn rule(sy: &Watch, name: &str) -> Value {
    let table = sy.table();
    let found = table["rules"]
        .as_array()
        .and_then(|rules| rules.iter().find(|r| r["name"] == name));
    found.cloned().unwrap_or(Value::Null)
}

/// The names of the table's rules for `host`.
fn rule_names(sy: &Watch, host: &str) -> Vec<String> {
    let table = sy.table();
    let rules = table["rules"].as_array().cloned().unwrap_or_default();
    rules
        .iter()
        .filter(|r| r["host"] == host)
        .filter_map(|r| r["name"].as_str().map(str::to_owned))
        .collect()
}

/// An Ingress as the admin reads it (`Null` when missing).
async fn ingress_object(client: &Client, namespace: &str, name: &str) -> Value {
    let api: kube::Api<k8s_openapi::api::networking::v1::Ingress> = kube::Api::namespaced(client.clone(), namespace);
    match api.get_opt(name).await.unwrap() {
        Some(object) => serde_json::to_value(object).unwrap(),
        None => Value::Null,
    }
}

/// The events.k8s.io/v1 events regarding an object, as (reason, note), sorted.
async fn events_of(client: &Client, namespace: &str, name: &str) -> Vec<(String, String)> {
    let api: kube::Api<k8s_openapi::api::events::v1::Event> = kube::Api::namespaced(client.clone(), namespace);
    let mut out: Vec<(String, String)> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect();
    out.sort();
    out
}

/// The `/status` entry of the Ingress `namespace/name`.
fn status_of(sy: &Watch, namespace: &str, name: &str) -> Value {
    let status = sy.status();
    let found = status["resources"].as_array().and_then(|all| {
        all.iter()
            .find(|r| r["kind"] == "Ingress" && r["namespace"] == namespace && r["name"] == name)
            .cloned()
    });
    found.unwrap_or(Value::Null)
}

#[tokio::test]
async fn an_ingress_nginx_rewrite_is_routed_with_its_rewrite_and_gets_its_load_balancer() {
    let env = Envtest::shared().await;
    let (admin, ns) = setup(env, "inx-rewrite").await;
    admin_apply(&admin, &rewrite_ingress(&ns, "rewrite", "rewrite.example", false)).await;
    let mut sy = watch(env, &ns, &["--ingress-nginx-class", "nginx"]);
    sy.ready(PATIENCE).await.unwrap();
    let name = format!("Ingress/{ns}/rewrite#0");
    let routed = eventually(
        "the rewrite's rule in the table",
        PATIENCE,
        || Some(rule(&sy, &name)).filter(|r| !r.is_null()),
        || format!("{}\n{}", sy.table(), sy.log()),
    )
    .await;
    // Regex mode (§7.4): the path is a case-insensitive regex anchored at its start; the whole path
    // is replaced by `/$2` from the location's groups (§7.5).
    assert_eq!(routed["host"], "rewrite.example");
    assert_eq!(routed["path"]["type"], "regex", "{routed}");
    assert!(
        routed["path"]["value"].as_str().unwrap().starts_with("(?i)"),
        "{routed}"
    );
    let route = &routed["action"]["route"];
    assert_eq!(route["backends"][0]["cluster"], format!("{ns}/web:80"), "{routed}");
    assert_eq!(route["rewrite_regex"]["path"], "/$2", "{routed}");
    assert!(
        route["rewrite_regex"]["pattern"]
            .as_str()
            .unwrap()
            .contains("/something(/|$)(.*)"),
        "{routed}"
    );

    let check = async || {
        let balancer = ingress_object(&admin, &ns, "rewrite").await["status"]["loadBalancer"].clone();
        match balancer == json!({"ingress": [{"ip": PUBLISHED}]}) {
            true => Ok(()),
            false => Err(balancer.to_string()),
        }
    };
    eventually_async("the load balancer written", PATIENCE, check, || sy.log()).await;
    // The migration report in `kubectl describe ingress`: one event per annotation not honoured.
    let check = async || {
        let events = events_of(&admin, &ns, "rewrite").await;
        let not_honoured: Vec<&String> = events
            .iter()
            .filter(|(reason, _)| reason == "AnnotationNotHonored")
            .map(|(_, note)| note)
            .collect();
        match not_honoured.len() == 2
            && not_honoured[0].contains("nginx.ingress.kubernetes.io/limit-rate")
            && not_honoured[1].contains("nginx.ingress.kubernetes.io/proxy-read-timeout")
        {
            true => Ok(()),
            false => Err(format!("{events:?}")),
        }
    };
    eventually_async("an event per annotation not honoured", PATIENCE, check, || sy.log()).await;
    assert!(!sy.log().contains("Forbidden"), "{}", sy.log());
}

#[tokio::test]
async fn without_ingress_nginx_class_an_ingress_nginx_ingress_is_left_untouched() {
    let env = Envtest::shared().await;
    let (admin, ns) = setup(env, "inx-off").await;
    admin_apply(&admin, &rewrite_ingress(&ns, "theirs", "theirs.example", false)).await;
    admin_apply(&admin, &own_ingress(&ns, "own", "own.example")).await;
    let mut sy = watch(env, &ns, &[]);
    sy.ready(PATIENCE).await.unwrap();
    // Our own Ingress is routed and gets its load balancer: the watch compiled and wrote status.
    sy.eventually_routes("own.example", None, PATIENCE).await;
    let check = async || {
        let balancer = ingress_object(&admin, &ns, "own").await["status"]["loadBalancer"].clone();
        match balancer == json!({"ingress": [{"ip": PUBLISHED}]}) {
            true => Ok(()),
            false => Err(balancer.to_string()),
        }
    };
    eventually_async("our Ingress's load balancer", PATIENCE, check, || sy.log()).await;
    // Everything about it was written, so the compile that ignored ingress-nginx's is done too.
    eventually(
        "the ingress-nginx Ingress ignored by class in /status",
        PATIENCE,
        || (status_of(&sy, &ns, "theirs")["status"] == "ignored").then_some(()),
        || sy.status().to_string(),
    )
    .await;
    assert!(!sy.routes("theirs.example", None), "{}", sy.table());
    let theirs = ingress_object(&admin, &ns, "theirs").await;
    let balancer = &theirs["status"]["loadBalancer"];
    assert!(
        balancer.is_null() || balancer == &json!({}),
        "no load balancer written: {theirs}"
    );
    let managers: Vec<&Value> = theirs["metadata"]["managedFields"]
        .as_array()
        .map(|m| m.iter().map(|f| &f["manager"]).collect())
        .unwrap_or_default();
    assert!(!managers.contains(&&json!("switchyard")), "{managers:?}");
    assert_eq!(events_of(&admin, &ns, "theirs").await, []);
}

#[tokio::test]
async fn a_change_of_ingress_nginxs_configmap_reaches_the_table_and_a_missing_one_is_waited_for() {
    let env = Envtest::shared().await;
    let (admin, ns) = setup(env, "inx-configmap").await;
    grant_config_map(&admin, &ns).await;
    admin_apply(&admin, &rewrite_ingress(&ns, "secure", "secure.example", true)).await;
    let configmap = format!("{ns}/{CONFIG_MAP}");
    let mut sy = watch(
        env,
        &ns,
        &[
            "--ingress-nginx-class",
            "nginx",
            "--ingress-nginx-configmap",
            &configmap,
        ],
    );
    // No ConfigMap yet: ingress-nginx's defaults (ssl-redirect on a host with TLS) and /status
    // names it.
    sy.ready(PATIENCE).await.unwrap();
    let redirect = format!("Ingress/{ns}/secure#0.https-redirect");
    eventually(
        "the HTTPS redirect by default",
        PATIENCE,
        || (!rule(&sy, &redirect).is_null()).then_some(()),
        || format!("{:?}\n{}", rule_names(&sy, "secure.example"), sy.log()),
    )
    .await;
    assert_eq!(rule(&sy, &redirect)["action"]["redirect"]["status"], 308);
    let errors = sy.status()["errors"].clone();
    assert!(
        errors.to_string().contains(&format!("ConfigMap {configmap}"))
            && errors.to_string().contains("no such ConfigMap"),
        "{errors}"
    );
    assert!(sy.log().contains(&format!("ConfigMap {configmap}")), "{}", sy.log());

    // It appears with ssl-redirect off: the redirect rules go.
    config_map(&admin, &ns, json!({"ssl-redirect": "false", "use-gzip": "true"})).await;
    eventually(
        "no HTTPS redirect with ssl-redirect: false",
        PATIENCE,
        || {
            let names = rule_names(&sy, "secure.example");
            (!names.is_empty() && !names.iter().any(|n| n.ends_with(".https-redirect"))).then_some(())
        },
        || format!("{:?}\n{}", rule_names(&sy, "secure.example"), sy.log()),
    )
    .await;
    let status = sy.status();
    assert_eq!(status["errors"], json!([]), "{status}");
    assert!(
        status["warnings"].to_string().contains("use-gzip"),
        "a key that is not routing is listed: {}",
        status["warnings"]
    );

    // Changed again: a redirect with the ConfigMap's code.
    config_map(
        &admin,
        &ns,
        json!({"ssl-redirect": "true", "http-redirect-code": "301"}),
    )
    .await;
    eventually(
        "the HTTPS redirect back, with code 301",
        PATIENCE,
        || (rule(&sy, &redirect)["action"]["redirect"]["status"] == 301).then_some(()),
        || format!("{}\n{}", rule(&sy, &redirect), sy.log()),
    )
    .await;
    assert!(!sy.log().contains("Forbidden"), "{}", sy.log());
}

#[tokio::test]
async fn without_the_configmap_role_readyz_names_the_configmap_it_cannot_read() {
    let env = Envtest::shared().await;
    let (admin, ns) = setup(env, "inx-norole").await;
    config_map(&admin, &ns, json!({"ssl-redirect": "false"})).await;
    let configmap = format!("{ns}/{CONFIG_MAP}");
    let sy = watch(
        env,
        &ns,
        &[
            "--ingress-nginx-class",
            "nginx",
            "--ingress-nginx-configmap",
            &configmap,
        ],
    );
    let label = format!("ConfigMap {configmap}");
    eventually(
        "/readyz names the ConfigMap, forbidden",
        PATIENCE,
        || {
            let answer = sy.readyz();
            (answer.code == 503 && answer.body.contains(&label) && answer.body.contains("403")).then_some(())
        },
        || format!("{} {}\n{}", sy.readyz().code, sy.readyz().body, sy.log()),
    )
    .await;
    assert!(sy.table().is_null(), "nothing pushed: {}", sy.table());
}

#[tokio::test]
async fn the_status_lists_each_annotation_an_ingress_nginx_ingress_carries_that_is_not_honoured() {
    let env = Envtest::shared().await;
    let (admin, ns) = setup(env, "inx-report").await;
    admin_apply(&admin, &rewrite_ingress(&ns, "report", "report.example", false)).await;
    let mut sy = watch(env, &ns, &["--ingress-nginx-class", "nginx"]);
    sy.ready(PATIENCE).await.unwrap();
    let entry = eventually(
        "the Ingress in /status",
        PATIENCE,
        || Some(status_of(&sy, &ns, "report")).filter(|s| !s.is_null()),
        || sy.status().to_string(),
    )
    .await;
    assert_eq!(entry["status"], "accepted", "{entry}");
    let conditions = entry["conditions"].as_array().unwrap();
    let reasons = |reason: &str| -> Vec<&str> {
        conditions
            .iter()
            .filter(|c| c["reason"] == reason)
            .map(|c| c["message"].as_str().unwrap())
            .collect()
    };
    let class = reasons("ClassMatches");
    assert!(
        class[0].starts_with("ours, served as ingress-nginx served it"),
        "{entry}"
    );
    let not_honoured = reasons("AnnotationNotHonored");
    assert_eq!(not_honoured.len(), 2, "{entry}");
    assert!(
        not_honoured[0].contains("nginx.ingress.kubernetes.io/limit-rate"),
        "{entry}"
    );
    assert!(
        not_honoured[1].contains("nginx.ingress.kubernetes.io/proxy-read-timeout"),
        "{entry}"
    );
    assert!(
        conditions
            .iter()
            .filter(|c| c["reason"] == "AnnotationNotHonored")
            .all(|c| c["type"] == "Warning"),
        "{entry}"
    );
    let regex = reasons("RegexMode");
    assert!(
        regex[0].contains(&format!("use-regex on Ingress {ns}/report")),
        "{entry}"
    );
    // The dashboard's view of the host: regex mode, and what turned it on.
    let rules: Value = serde_json::from_str(&sy.get("/rules").body).unwrap();
    let host = rules["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["host"] == "report.example")
        .cloned()
        .unwrap();
    assert_eq!(
        host["ingress_nginx"],
        json!({"regex": true, "turned_on_by": format!("use-regex on Ingress {ns}/report")})
    );
}

#[tokio::test]
async fn an_ingress_nginx_ingress_moved_to_another_class_has_our_load_balancer_removed() {
    let env = Envtest::shared().await;
    let (admin, ns) = setup(env, "inx-moved").await;
    admin_apply(&admin, &rewrite_ingress(&ns, "moved", "moved.example", false)).await;
    let mut sy = watch(env, &ns, &["--ingress-nginx-class", "nginx"]);
    sy.ready(PATIENCE).await.unwrap();
    let balancer = async || ingress_object(&admin, &ns, "moved").await["status"]["loadBalancer"].clone();
    let check = async || match balancer().await == json!({"ingress": [{"ip": PUBLISHED}]}) {
        true => Ok(()),
        false => Err(balancer().await.to_string()),
    };
    eventually_async("the load balancer written", PATIENCE, check, || sy.log()).await;
    // Another controller's class now (no such IngressClass: neither §7.1 nor §1 takes it).
    let moved = rewrite_ingress(&ns, "moved", "moved.example", false)
        .replace("ingressClassName: nginx", "ingressClassName: someone-else");
    admin_apply(&admin, &moved).await;
    let check = async || {
        let now = balancer().await;
        match now.is_null() || now == json!({}) {
            true => Ok(()),
            false => Err(now.to_string()),
        }
    };
    eventually_async("our load balancer removed", PATIENCE, check, || sy.log()).await;
    eventually(
        "the Ingress ignored and its host gone",
        PATIENCE,
        || {
            let ignored = status_of(&sy, &ns, "moved")["status"] == "ignored";
            (ignored && !sy.routes("moved.example", None)).then_some(())
        },
        || format!("{}\n{}", status_of(&sy, &ns, "moved"), sy.log()),
    )
    .await;
}

/// An ingress-nginx Ingress with `auth-url` and `auth-signin` (ROUTING.md §9) in a real API
/// server: its rule answers 403 naming the fields, `/status` lists it as blocked, and `kubectl
/// describe ingress` shows an `AccessControlNotEnforced` event per field; once its owner waives
/// exactly those fields it routes, with `AccessControlWaived` events.
#[tokio::test]
async fn an_access_control_is_never_served_open_and_its_waiver_is_said_in_events() {
    let env = Envtest::shared().await;
    let (admin, ns) = setup(env, "inx-auth").await;
    let protected = |waiver: &str| {
        format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: admin\n  namespace: {ns}\n  \
             annotations:\n    nginx.ingress.kubernetes.io/auth-url: http://oauth2-proxy.auth.svc/oauth2/auth\n    \
             nginx.ingress.kubernetes.io/auth-signin: https://login.example/start\n{waiver}spec:\n  ingressClassName: nginx\n  \
             rules:\n  - host: admin.example\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, \
             backend: {{service: {{name: admin, port: {{number: 80}}}}}}}}\n"
        )
    };
    admin_apply(&admin, &protected("")).await;
    let mut sy = watch(env, &ns, &["--ingress-nginx-class", "nginx"]);
    sy.ready(PATIENCE).await.unwrap();
    let reply = eventually(
        "admin.example's rule in the table",
        PATIENCE,
        || Some(rule(&sy, &format!("Ingress/{ns}/admin#0"))).filter(|r| !r.is_null()),
        || sy.log(),
    )
    .await;
    let fields = "nginx.ingress.kubernetes.io/auth-signin, nginx.ingress.kubernetes.io/auth-url";
    assert_eq!(
        reply["action"]["direct_response"],
        json!({"status": 403, "body": format!("{fields} are not enforced by this gateway\n")}),
        "{reply}"
    );
    assert_eq!(
        sy.status()["access"]["blocked"],
        json!([{"resource": format!("Ingress {ns}/admin"), "fields": [
            "nginx.ingress.kubernetes.io/auth-signin", "nginx.ingress.kubernetes.io/auth-url"
        ]}])
    );
    let events = || two_field_events(&admin, &ns, "AccessControlNotEnforced");
    eventually_async("an event per field not enforced", PATIENCE, events, || sy.log()).await;

    let waiver = "    switchyard.io/serve-without-access-control: auth-url, auth-signin\n";
    admin_apply(&admin, &protected(waiver)).await;
    sy.eventually_routes("admin.example", Some(&format!("{ns}/admin:80")), PATIENCE)
        .await;
    let events = || two_field_events(&admin, &ns, "AccessControlWaived");
    eventually_async("an event per field waived", PATIENCE, events, || sy.log()).await;
    assert_eq!(sy.status()["access"]["blocked"], json!([]));
}

/// `Ok` when the Ingress `admin` has two events of `reason`, about `auth-signin` and `auth-url`;
/// else what it has.
async fn two_field_events(admin: &Client, ns: &str, reason: &str) -> Result<(), String> {
    let events = events_of(admin, ns, "admin").await;
    let notes: Vec<&String> = events.iter().filter(|(r, _)| r == reason).map(|(_, n)| n).collect();
    match notes.len() == 2
        && notes[0].starts_with("nginx.ingress.kubernetes.io/auth-signin")
        && notes[1].starts_with("nginx.ingress.kubernetes.io/auth-url")
    {
        true => Ok(()),
        false => Err(format!("{events:?}")),
    }
}
