//! `switchyard watch --manifests DIR --ingress-nginx-class nginx` as a process on real files
//! (ROUTING.md §7 in folder mode): ingress-nginx's Ingresses reach the table file with their
//! rewrite, and the ConfigMap `--ingress-nginx-configmap` names is read from the folder, missing
//! (ingress-nginx's defaults, `/status` names it) or edited (the table follows).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use switchyard_watch_process::{Address, WatchProcess};

const PATIENCE: Duration = Duration::from_secs(20);

/// ingress-nginx's IngressClass and an Ingress of its class with TLS, `use-regex` and
/// `rewrite-target: /$2` (ingress-nginx's documented rewrite example).
const INGRESS: &str = "\
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: rewrite
  namespace: shop
  annotations:
    nginx.ingress.kubernetes.io/use-regex: \"true\"
    nginx.ingress.kubernetes.io/rewrite-target: /$2
spec:
  ingressClassName: nginx
  tls:
  - hosts: [rewrite.example]
    secretName: rewrite-tls
  rules:
  - host: rewrite.example
    http:
      paths:
      - path: /something(/|$)(.*)
        pathType: ImplementationSpecific
        backend: {service: {name: web, port: {number: 80}}}
";

/// ingress-nginx's ConfigMap with `data` (a YAML flow mapping).
fn config_map(data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ingress-nginx-controller, namespace: ingress-nginx}}\ndata: {data}\n"
    )
}

/// The table file (`Null` before the first push or while it is being replaced).
fn table(path: &Path) -> Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

/// The table's rule named `name` (`Null` when missing).
fn rule(path: &Path, name: &str) -> Value {
    let table = table(path);
    let found = table["rules"]
        .as_array()
        .and_then(|rules| rules.iter().find(|r| r["name"] == name));
    found.cloned().unwrap_or(Value::Null)
}

/// `switchyard watch` on `<dir>/m` writing `<dir>/table.json`, with ingress-nginx's Ingresses served
/// and its ConfigMap read from the folder.
fn start(dir: &Path) -> WatchProcess {
    let (manifests, output) = (dir.join("m"), dir.join("table.json"));
    WatchProcess::spawn(
        env!("CARGO_BIN_EXE_switchyard"),
        &[
            "--manifests",
            manifests.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
            "--debounce-ms",
            "20",
            "--dashboard-listen",
            "127.0.0.1:0",
            "--ingress-nginx-class",
            "nginx",
            "--ingress-nginx-configmap",
            "ingress-nginx/ingress-nginx-controller",
        ],
        &dir.join("watch.log"),
    )
}

#[test]
fn folder_mode_routes_ingress_nginxs_rewrite_and_follows_its_configmap_from_missing_to_edited() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("m");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(manifests.join("rewrite.yaml"), INGRESS).unwrap();
    let output = dir.path().join("table.json");
    let mut watch = start(dir.path());
    let routed = "Ingress/shop/rewrite#0";
    let redirect = "Ingress/shop/rewrite#0.https-redirect";

    // No ConfigMap in the folder: the watch runs on ingress-nginx's defaults (an HTTPS redirect on
    // a host with TLS) and says which ConfigMap it misses.
    watch.wait_until("the rewrite and its HTTPS redirect", PATIENCE, |_| {
        !rule(&output, routed).is_null() && !rule(&output, redirect).is_null()
    });
    let route = &rule(&output, routed)["action"]["route"];
    assert_eq!(route["rewrite_regex"]["path"], "/$2", "{route}");
    assert_eq!(route["backends"][0]["cluster"], "shop/web:80", "{route}");
    assert_eq!(rule(&output, routed)["path"]["type"], "regex");
    watch.wait_for_address(Address::Dashboard, PATIENCE);
    let status: Value = serde_json::from_str(&watch.get("/status").unwrap().body).unwrap();
    assert!(
        status["errors"]
            .to_string()
            .contains("--ingress-nginx-configmap ingress-nginx/ingress-nginx-controller: no such ConfigMap"),
        "{}",
        status["errors"]
    );
    assert!(
        watch.log().contains("no such ConfigMap"),
        "the log says it once: {}",
        watch.log()
    );

    // The ConfigMap is added with ssl-redirect off: the redirect goes, the error too.
    std::fs::write(
        manifests.join("configmap.yaml"),
        config_map("{ssl-redirect: \"false\"}"),
    )
    .unwrap();
    watch.wait_until("no HTTPS redirect with ssl-redirect: false", PATIENCE, |_| {
        !rule(&output, routed).is_null() && rule(&output, redirect).is_null()
    });
    let status: Value = serde_json::from_str(&watch.get("/status").unwrap().body).unwrap();
    assert_eq!(status["errors"], serde_json::json!([]), "{status}");

    // Edited: the redirect is back, with the ConfigMap's code.
    std::fs::write(
        manifests.join("configmap.yaml"),
        config_map("{ssl-redirect: \"true\", http-redirect-code: \"301\"}"),
    )
    .unwrap();
    watch.wait_until("the HTTPS redirect with code 301", PATIENCE, |_| {
        rule(&output, redirect)["action"]["redirect"]["status"] == 301
    });
    assert!(
        watch
            .log()
            .contains("ingress-nginx's ConfigMap ingress-nginx/ingress-nginx-controller changed"),
        "{}",
        watch.log()
    );
}

/// An Ingress of basic authentication (`auth-type: basic`) and its Secret's htpasswd file, with
/// `hash` for alice.
fn basic_auth(hash: &str) -> String {
    format!(
        "\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: staff
  namespace: shop
  annotations:
    nginx.ingress.kubernetes.io/auth-type: basic
    nginx.ingress.kubernetes.io/auth-secret: basic-auth
    nginx.ingress.kubernetes.io/auth-realm: Staff only
spec:
  ingressClassName: nginx
  rules:
  - host: staff.example
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {{service: {{name: web, port: {{number: 80}}}}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: basic-auth, namespace: shop}}
stringData:
  auth: |
    alice:{hash}
"
    )
}

/// Basic authentication from a Secret in folder mode: the users' hashes reach the table file (the
/// gateway's configuration, which checks them) and nowhere people read (`/table`, `/status`, the
/// log); an edited Secret is followed; a Secret gone leaves the Ingress's rules answering 403,
/// its status saying why (ROUTING.md §9), never served open.
#[test]
fn basic_auth_hashes_reach_the_gateways_table_only_and_a_missing_secret_denies() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("m");
    std::fs::create_dir(&manifests).unwrap();
    // `openssl passwd -apr1 -salt kw3V9Mq. s3cret`, then of "n3w".
    let (first, second) = (
        "$apr1$kw3V9Mq.$KxEn69LI7peZ2wh1MU6Ce/",
        "$apr1$kw3V9Mq.$WXLPabiEtmJDN6a4P4d4I.",
    );
    let written = INGRESS.split("---").next().unwrap().to_owned() + "---\n" + &basic_auth(first);
    std::fs::write(manifests.join("staff.yaml"), &written).unwrap();
    let output = dir.path().join("table.json");
    let mut watch = start(dir.path());
    let staff = "Ingress/shop/staff#0";
    let hash_of = |output: &Path| rule(output, staff)["policy"]["basic_auth"]["users"][0]["hash"].clone();
    watch.wait_until("alice's hash in the table file", PATIENCE, |_| {
        hash_of(&output) == first
    });
    let auth = &rule(&output, staff)["policy"]["basic_auth"];
    assert_eq!(auth["realm"], "Staff only", "{auth}");
    assert_eq!(auth["source"], "Secret shop/basic-auth", "{auth}");

    watch.wait_for_address(Address::Dashboard, PATIENCE);
    let shown = watch.get("/table").unwrap().body;
    assert!(shown.contains("\"alice\"") && shown.contains("(hidden)"), "{shown}");
    let status = watch.get("/status").unwrap().body;
    for seen in [&shown, &status, &watch.log()] {
        assert!(
            !seen.contains("KxEn69LI7peZ2wh1MU6Ce"),
            "a hash where people read: {seen}"
        );
    }

    std::fs::write(manifests.join("staff.yaml"), written.replace(first, second)).unwrap();
    watch.wait_until("the edited Secret's hash", PATIENCE, |_| hash_of(&output) == second);
    // The Ingress alone edited (compiled incrementally): its users are still read from the Secret.
    let renamed = written.replace(first, second).replace("Staff only", "Staff");
    std::fs::write(manifests.join("staff.yaml"), &renamed).unwrap();
    watch.wait_until("the new realm, the same users", PATIENCE, |_| {
        let auth = &rule(&output, staff)["policy"]["basic_auth"];
        auth["realm"] == "Staff" && auth["users"][0]["hash"] == second
    });
    assert!(watch.log().contains("path=\"incremental\""), "{}", watch.log());

    let without_secret = renamed
        .split("---\napiVersion: v1\nkind: Secret")
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(manifests.join("staff.yaml"), without_secret).unwrap();
    watch.wait_until("the rules answer 403 without the Secret", PATIENCE, |_| {
        rule(&output, staff)["action"]["direct_response"]["status"] == 403
    });
    let status = watch.get("/status").unwrap().body;
    assert!(
        status.contains("AccessControlNotEnforced") && status.contains("Secret shop/basic-auth does not exist"),
        "{status}"
    );
}
