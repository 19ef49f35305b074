//! The `switchyard` binary on real files: compile output, status JSON shape, exit codes, YAML errors
//! naming file and line, and `explain` in JSON and human form.

// The compiler's test helpers (examples and their flags), shared rather than copied.
#[path = "../../compiler/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Output};

fn switchyard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn example(name: &str) -> String {
    common::examples_dir().join(name).display().to_string()
}

/// Compiles an example into `dir/table.json`; returns its path.
fn compile_into(dir: &Path, name: &str, extra: &[&str]) -> String {
    let table = dir.join("table.json").display().to_string();
    let mut args = vec!["compile".to_owned(), example(name), "-o".to_owned(), table.clone()];
    args.extend(common::example_args(name));
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(&args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    table
}

#[test]
fn compile_prints_the_table_on_stdout_and_a_summary_on_stderr() {
    let out = switchyard(&["compile", &example("002-cond-priority"), "--ingress-class", "bfe"]);
    assert_eq!(out.status.code(), Some(0));
    let table: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(table["version"], 1);
    assert_eq!(table["rules"].as_array().unwrap().len(), 2);
    let summary = text(&out.stderr);
    assert!(summary.contains("Ingress: 2 accepted"), "{summary}");
    assert!(summary.contains("table: 2 rules, 1 hosts"), "{summary}");
    assert!(summary.contains("warnings"), "{summary}");
}

#[test]
fn compile_writes_table_and_status_files_with_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t.json");
    let status = dir.path().join("s.json");
    let out = switchyard(&[
        "compile",
        &example("003-host-collision"),
        "-o",
        table.to_str().unwrap(),
        "--status",
        status.to_str().unwrap(),
    ]);
    // Rejected resources are status, not failure.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&status).unwrap()).unwrap();
    let entries = report.as_array().unwrap();
    for entry in entries {
        let keys: Vec<&str> = entry.as_object().unwrap().keys().map(String::as_str).collect();
        if entry["kind"] == "VirtualServer" {
            // NGINX's own status beside ours: state, reason, message.
            assert_eq!(keys, ["conditions", "kind", "name", "namespace", "nginx", "status"]);
            let nginx: Vec<&str> = entry["nginx"].as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(nginx, ["message", "reason", "state"]);
        } else {
            assert_eq!(keys, ["conditions", "kind", "name", "namespace", "status"]);
        }
        assert!(
            ["accepted", "ignored", "rejected", "valid", "invalid", "orphaned", "warning"]
                .contains(&entry["status"].as_str().unwrap())
        );
        for condition in entry["conditions"].as_array().unwrap() {
            let keys: Vec<&str> = condition.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(keys, ["message", "reason", "type"]);
        }
    }
    let rejected = entries.iter().find(|e| e["name"] == "cafe-ingress-2").unwrap();
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["kind"], "Ingress");
    assert!(switchyard_table::RouteTable::from_json(&std::fs::read(&table).unwrap()).is_ok());
}

#[test]
fn compile_fails_on_a_yaml_error_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hosts.yaml");
    std::fs::write(
        &file,
        "kind: Ingress\napiVersion: networking.k8s.io/v1\nmetadata:\n  name: x\nspec:\n  rules:\n    - host: *.net\n",
    )
    .unwrap();
    let out = switchyard(&["compile", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let table: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(table["rules"], serde_json::json!([]), "nothing else to compile");
    let error = text(&out.stderr);
    assert!(error.contains(&format!("{}:7:", file.display())), "{error}");
    assert!(error.contains("host: \"*.net\""), "{error}");
}

/// Issue 43: a migration dry run over a folder wants every problem at once: each object that does
/// not decode is reported (file, object, field), the rest is compiled and summarised, and the exit
/// code says something was left out.
#[test]
fn compile_reports_every_object_it_cannot_decode_and_compiles_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let ingress = |name: &str, extra: &str| {
        format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: shop{extra}}}\n\
             spec:\n  rules:\n  - host: {name}.example\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, \
             backend: {{service: {{name: {name}, port: {{number: 80}}}}}}}}\n"
        )
    };
    std::fs::write(dir.path().join("a.yaml"), ingress("good-a", "")).unwrap();
    // An annotation written as a YAML integer, then a good object in the same file.
    let bad_annotation = ingress("bad-annotation", ", annotations: {example.com/replicas: 3}");
    let two = format!("{bad_annotation}---\n{}", ingress("good-b", ""));
    std::fs::write(dir.path().join("b.yaml"), two).unwrap();
    // A `kind: List` (kubectl get -o yaml) whose second item has a TLS host written as a map.
    let list = "apiVersion: v1\nkind: List\nitems:\n\
        - {apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: good-c, namespace: shop}, spec: {defaultBackend: {service: {name: c, port: {number: 80}}}}}\n\
        - {apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: bad-tls, namespace: shop}, spec: {tls: [{hosts: [{name: x.example}]}]}}\n";
    std::fs::write(dir.path().join("c.yaml"), list).unwrap();
    let out = switchyard(&["compile", dir.path().to_str().unwrap()]);
    let error = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{error}");
    for wanted in [
        "b.yaml:1: Ingress shop/bad-annotation: field `metadata.annotations.example.com/replicas`",
        "c.yaml:1: Ingress shop/bad-tls: field `spec.tls[0].hosts[0]`",
        "not read (2)",
        "2 document(s) or object(s) could not be read",
        "Ingress: 3 accepted",
    ] {
        assert!(error.contains(wanted), "{wanted:?} in:\n{error}");
    }
    let table: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut names: Vec<&str> = table["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "Ingress/shop/good-a#0",
            "Ingress/shop/good-b#0",
            "Ingress/shop/good-c#0"
        ]
    );
}

#[test]
fn compile_fails_on_a_missing_path() {
    let out = switchyard(&["compile", "/nonexistent/dir"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("/nonexistent/dir: cannot read"));
}

#[test]
fn usage_errors_exit_with_2() {
    assert_eq!(switchyard(&["compile"]).status.code(), Some(2));
    assert_eq!(
        switchyard(&["compile", "x", "--host-collision", "sometimes"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(switchyard(&["explain", "http://x/"]).status.code(), Some(2));
}

#[test]
fn ingress_nginx_without_class_with_empty_ingress_class_is_a_usage_error() {
    let both = switchyard(&[
        "compile",
        "x",
        "--ingress-class",
        "ours",
        "--empty-ingress-class",
        "--ingress-nginx-class",
        "nginx",
        "--ingress-nginx-without-class",
    ]);
    assert_eq!(both.status.code(), Some(2), "{}", text(&both.stderr));
    assert!(
        text(&both.stderr).contains("--empty-ingress-class"),
        "{}",
        text(&both.stderr)
    );
    // The flags that refine §7 need the flag that turns it on.
    let alone = switchyard(&["compile", "x", "--ingress-nginx-without-class"]);
    assert_eq!(alone.status.code(), Some(2), "{}", text(&alone.stderr));
    assert!(
        text(&alone.stderr).contains("--ingress-nginx-class"),
        "{}",
        text(&alone.stderr)
    );
}

#[test]
fn help_teaches_with_examples() {
    for args in [&["--help"][..], &["compile", "--help"], &["explain", "--help"]] {
        let out = switchyard(args);
        assert_eq!(out.status.code(), Some(0));
        let help = text(&out.stdout);
        assert!(help.contains("Examples:"), "{args:?}: {help}");
    }
    let help = text(&switchyard(&["compile", "--help"]).stdout);
    for flag in [
        "--ingress-class",
        "--empty-ingress-class",
        "--controller-name",
        "--host-collision",
        "--root-namespaces",
        "--cluster-template",
        "--cluster-header",
        "--no-route",
        "--status",
    ] {
        assert!(help.contains(flag), "{flag}");
    }
    assert!(help.contains("TLS settings"), "{help}");
}

#[test]
fn explain_json_names_rule_cluster_status_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let table = compile_into(dir.path(), "002-multi-cond-priority", &[]);
    let out = switchyard(&[
        "explain",
        "--table",
        &table,
        "--json",
        "http://example.net/bar/foo",
        "-H",
        "Header-key: value",
        "--cookie",
        "cookie-key=value",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        decision,
        serde_json::json!({"rule": "Ingress/production/multi_cond_priority2#0", "cluster": "production/service2:80", "status": 200, "path": "/bar/foo"})
    );
    // The seed's curl spelling `--cookie "cookie-key: value"` means the same cookie.
    let out = switchyard(&[
        "explain",
        "--table",
        &table,
        "--json",
        "http://example.net/bar/foo",
        "--cookie",
        "cookie-key: value",
    ]);
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(decision["rule"], "Ingress/production/multi_cond_priority2#0");
}

#[test]
fn explain_json_reports_404_when_no_rule_matches() {
    let dir = tempfile::tempdir().unwrap();
    let table = compile_into(dir.path(), "002-multi-cond-priority", &[]);
    let out = switchyard(&["explain", "--table", &table, "--json", "http://example.net/bar/foo"]);
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        decision,
        serde_json::json!({"rule": null, "cluster": null, "status": 404, "path": "/bar/foo"})
    );
}

#[test]
fn explain_json_reports_502_for_a_broken_include() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("root.yaml"),
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: root}\nspec:\n  virtualhost: {fqdn: root.example.com}\n  includes:\n    - name: gone\n      conditions: [{prefix: /gone}]\n",
    )
    .unwrap();
    let table = dir.path().join("t.json");
    assert!(switchyard(&[
        "compile",
        dir.path().join("root.yaml").to_str().unwrap(),
        "-o",
        table.to_str().unwrap()
    ])
    .status
    .success());
    let out = switchyard(&[
        "explain",
        "--table",
        table.to_str().unwrap(),
        "--json",
        "http://root.example.com/gone/x",
    ]);
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        decision,
        serde_json::json!({"rule": "HTTPProxy/default/root#0", "cluster": null, "status": 502, "path": "/gone/x"})
    );
}

#[test]
fn explain_human_form_names_the_winner_and_why_each_other_candidate_lost() {
    let dir = tempfile::tempdir().unwrap();
    let table = compile_into(dir.path(), "002-path-priority", &[]);
    let out = switchyard(&[
        "explain",
        "--table",
        &table,
        "http://example.net/bar/foo",
        "-H",
        "Key: value",
    ]);
    let human = text(&out.stdout);
    assert!(
        human.contains("winner: Ingress/production/path_priority1#0 -> cluster production/service1:80"),
        "{human}"
    );
    assert!(
        human.contains("Ingress/production/path_priority2#0 (position 1): ranked lower by path precision"),
        "{human}"
    );
    // Without the header... path_priority1 still wins, and a failed condition is named when one decides.
    let table = compile_into(dir.path(), "002-cond-priority", &[]);
    let out = switchyard(&["explain", "--table", &table, "http://example.net/bar/foo"]);
    let human = text(&out.stdout);
    assert!(human.contains("winner: Ingress/production/cond_priority2#0"), "{human}");
    assert!(
        human.contains(
            "Ingress/production/cond_priority1#0 (position 0): its condition failed: header key exact \"value\""
        ),
        "{human}"
    );
}

#[test]
fn explain_shows_the_rewritten_upstream_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("root.yaml"),
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: root}\nspec:\n  virtualhost: {fqdn: root.example.com}\n  routes:\n    - conditions: [{prefix: /api}]\n      services: [{name: api, port: 80}]\n      pathRewritePolicy: {replacePrefix: [{replacement: /v2}]}\n",
    )
    .unwrap();
    let table = dir.path().join("t.json");
    assert!(
        switchyard(&["compile", dir.path().to_str().unwrap(), "-o", table.to_str().unwrap()])
            .status
            .success()
    );
    let out = switchyard(&[
        "explain",
        "--table",
        table.to_str().unwrap(),
        "--json",
        "http://root.example.com/api/users?id=1",
    ]);
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(decision["path"], "/v2/users?id=1");
    assert_eq!(decision["cluster"], "default/api:80");
}

#[test]
fn explain_refuses_an_invalid_table() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t.json");
    std::fs::write(&table, r#"{"version": 2}"#).unwrap();
    let out = switchyard(&["explain", "--table", table.to_str().unwrap(), "http://x/"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("unsupported table version 2"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn compile_flags_reach_the_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("m.yaml"),
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: root, namespace: infra}\nspec:\n  virtualhost: {fqdn: root.example.com}\n  routes: [{services: [{name: api, port: 80}]}]\n---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: root, namespace: team}\nspec:\n  virtualhost: {fqdn: team.example.com}\n  routes: [{services: [{name: api, port: 80}]}]\n",
    )
    .unwrap();
    let status = dir.path().join("s.json");
    let out = switchyard(&[
        "compile",
        dir.path().to_str().unwrap(),
        "--cluster-template",
        "outbound|{port}||{service}.{namespace}.svc.cluster.local",
        "--cluster-header",
        "x-cluster",
        "--no-route",
        "pass",
        "--root-namespaces",
        "infra,other",
        "--host-collision",
        "winner",
        "--debug-rule-header",
        "--status",
        status.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(table["cluster_header"], "x-cluster");
    assert_eq!(table["no_route"], "pass");
    assert_eq!(table["debug_rule_header"], true);
    assert_eq!(table["rules"].as_array().unwrap().len(), 1);
    assert_eq!(
        table["rules"][0]["action"]["route"]["backends"][0]["cluster"],
        "outbound|80||api.infra.svc.cluster.local"
    );
    let report = text(&std::fs::read(&status).unwrap());
    assert!(report.contains("RootProxyNotAllowedInNamespace"), "{report}");
}

#[test]
fn summary_counts_resources_by_status_and_lists_the_problems() {
    let out = switchyard(&["compile", &example("004-across-namespaces")]);
    let summary = text(&out.stderr);
    assert!(summary.contains("HTTPProxy: 2 valid, 1 orphaned"), "{summary}");
    assert!(
        summary.contains("HTTPProxy marketing/orphan (orphaned): Orphaned:"),
        "{summary}"
    );
}

/// `compile --l4` then `explain --l4`: a host a TLS passthrough TransportServer won is reported as
/// passed through at L4 (human and JSON forms); another host is not.
#[test]
fn explain_with_l4_reports_a_host_passed_through_by_a_transport_server() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("ts.yaml");
    std::fs::write(
        &manifests,
        "apiVersion: k8s.nginx.org/v1\nkind: TransportServer\nmetadata: {name: secure, namespace: shop}\nspec:\n  listener: {name: tls-passthrough, protocol: TLS_PASSTHROUGH}\n  host: secure.example.com\n  upstreams: [{name: app, service: app, port: 8443}]\n  action: {pass: app}\n",
    )
    .unwrap();
    let (table, l4) = (dir.path().join("table.json"), dir.path().join("l4.json"));
    let (table, l4) = (table.to_str().unwrap(), l4.to_str().unwrap());
    let out = switchyard(&["compile", manifests.to_str().unwrap(), "-o", table, "--l4", l4]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("L4: 1 TLS passthrough host(s), 0 TCP/UDP listener(s)"),
        "{}",
        text(&out.stderr)
    );

    let out = switchyard(&["explain", "--table", table, "--l4", l4, "https://Secure.example.com/"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let human = text(&out.stdout);
    assert!(
        human.starts_with("host secure.example.com: TLS is passed through by SNI on Envoy listener switchyard-tls-passthrough (port 443) to cluster shop/app:8443"),
        "{human}"
    );
    let out = switchyard(&[
        "explain",
        "--table",
        table,
        "--l4",
        l4,
        "--json",
        "https://secure.example.com/",
    ]);
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        decision["l4"],
        serde_json::json!({"listener": "switchyard-tls-passthrough", "port": 443, "cluster": "shop/app:8443"})
    );
    let out = switchyard(&[
        "explain",
        "--table",
        table,
        "--l4",
        l4,
        "--json",
        "http://other.example.com/",
    ]);
    let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(decision.get("l4").is_none(), "{decision}");
}

/// `explain --sni` over the HTTPS listener `watch --lds-file … --sds-dir …` writes: which
/// certificate a handshake naming a host gets (its Secret, the wildcard's, the default), and the
/// request still routes by its own host.
#[test]
fn explain_with_sni_says_which_certificate_the_https_listener_presents() {
    use switchyard_compiler::https::listener::HttpsOptions;
    use switchyard_compiler::https::{HostTls, Https, SecretRef, Served, TlsRange};
    use switchyard_compiler::lds::{https_document, LdsOptions};
    use switchyard_compiler::route_config::GatewayRoutes;
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("web.yaml");
    std::fs::write(
        &manifests,
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n  - host: a.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n",
    )
    .unwrap();
    let (table, l4) = (dir.path().join("table.json"), dir.path().join("l4.json"));
    let (table, l4) = (table.to_str().unwrap(), l4.to_str().unwrap());
    let out = switchyard(&["compile", manifests.to_str().unwrap(), "-o", table]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let served = Served::Secret {
        secret: SecretRef {
            namespace: "shop".into(),
            name: "a-tls".into(),
        },
        fingerprint: "00".into(),
    };
    let https = Https {
        hosts: vec![HostTls {
            host: "a.example.com".into(),
            served,
            versions: TlsRange::default(),
            strict_sni: false,
            decided_by: "Ingress/shop/web".into(),
            why: String::new(),
        }],
        ..Https::default()
    };
    let options = LdsOptions {
        https: Some(HttpsOptions {
            filter_name: "switchyard".into(),
            ecds_path: "/run/filter.json".into(),
            filter_type_url: "t".into(),
            routes: GatewayRoutes {
                cluster_header: "x-route-cluster".into(),
                ..GatewayRoutes::default()
            },
            sds_folder: "/run/sds".into(),
            reject_unknown_sni: false,
        }),
        ..LdsOptions::default()
    };
    std::fs::write(l4, https_document(&Default::default(), &https, &options)).unwrap();
    let explain = |sni: &str| {
        let out = switchyard(&[
            "explain",
            "--table",
            table,
            "--l4",
            l4,
            "--sni",
            sni,
            "https://a.example.com/",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let own = explain("a.example.com");
    assert!(own.starts_with("TLS naming a.example.com: the certificate of Secret shop/a-tls (filter chain https-a.example.com, TLSv1_2 to TLSv1_3)"), "{own}");
    assert!(own.contains("shop/web:80"), "the request routes by its host: {own}");
    let other = explain("other.example.com");
    assert!(
        other.starts_with("TLS naming other.example.com: the default certificate, made at start"),
        "{other}"
    );
    assert!(explain("").starts_with("TLS without SNI: the default certificate"));
}

/// An ingress-nginx Ingress with a source range and CORS, compiled into `dir`'s table (with the
/// gateway's routes: its timeouts too).
fn policy_table(dir: &Path) -> String {
    let manifests = dir.join("api.yaml");
    std::fs::write(
        &manifests,
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\nspec: {controller: k8s.io/ingress-nginx}\n---\n\
         apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: api\n  namespace: shop\n  annotations:\n    \
         nginx.ingress.kubernetes.io/whitelist-source-range: 10.0.0.0/8\n    nginx.ingress.kubernetes.io/enable-cors: \"true\"\n\
         spec:\n  ingressClassName: nginx\n  rules:\n  - host: shop.example.org\n    http:\n      paths:\n      \
         - {path: /, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}\n",
    )
    .unwrap();
    let table = dir.join("table.json");
    let out = switchyard(&[
        "compile",
        manifests.to_str().unwrap(),
        "--ingress-nginx-class",
        "nginx",
        "--gateway-routes",
        "-o",
        table.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    table.display().to_string()
}

#[test]
fn explain_says_which_policy_answered_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let table = policy_table(dir.path());
    let decide = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["explain", "--table", &table, "--json"];
        all.extend(args);
        let out = switchyard(&all);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let upload = [
        "-X",
        "POST",
        "-H",
        "Content-Length: 3145728",
        "--client-address",
        "10.1.2.3",
    ];
    let body = decide(&[&upload[..], &["http://shop.example.org/upload"]].concat());
    assert_eq!(body["status"], 413);
    assert_eq!(
        body["policy"],
        "a body of 3145728 bytes, over proxy-body-size 1m of Ingress shop/api"
    );
    let outside = decide(&["--client-address", "192.0.2.9", "http://shop.example.org/"]);
    assert_eq!(
        (outside["status"].as_u64(), outside["cluster"].is_null()),
        (Some(403), true)
    );
    let inside = decide(&["--client-address", "10.1.2.3", "http://shop.example.org/"]);
    assert_eq!(
        (inside["status"].as_u64(), &inside["cluster"]),
        (Some(200), &serde_json::json!("shop/api:80"))
    );
    let preflight = decide(&[
        "-X",
        "OPTIONS",
        "-H",
        "Origin: https://app.example",
        "http://shop.example.org/",
    ]);
    assert_eq!(preflight["status"], 204, "{preflight}");
    let human = switchyard(&["explain", "--table", &table, "http://shop.example.org/"]);
    let human = text(&human.stdout);
    assert!(
        human.contains("  policy: body limit 1m (1048576 bytes, proxy-body-size)"),
        "{human}"
    );
    assert!(
        human.contains("  policy: gateway route: total timeout none; idle timeout 60 s"),
        "{human}"
    );
}
