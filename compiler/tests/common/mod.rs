//! Helpers shared by the compiler's tests (and, by path, the sidecar's `cli` and `golden` tests):
//! manifests in, table and status out, requests routed by the same matcher the filter runs.
#![allow(dead_code)]

use switchyard_compiler::load::{parse_text, Loaded};
use switchyard_compiler::status::{Reason, ResourceStatus, Status};
use switchyard_compiler::{compile, Compiled, Options};
use switchyard_table::{RouteTable, SimpleRequest};

/// Parses YAML text (several documents) into objects; panics on a load error (tests only).
pub fn load(yaml: &str) -> Loaded {
    let mut loaded = Loaded::default();
    parse_text(yaml, "test.yaml", &mut loaded).unwrap();
    loaded
}

/// Compiles YAML text with options.
pub fn compile_yaml(yaml: &str, options: &Options) -> Compiled {
    compile(&load(yaml).objects, options).expect("compiles")
}

/// Compiles with the default options.
pub fn compile_default(yaml: &str) -> Compiled {
    compile_yaml(yaml, &Options::default())
}

/// Options with `--ingress-class`.
pub fn with_class(class: &str) -> Options {
    Options {
        ingress_class: class.to_owned(),
        ..Options::default()
    }
}

/// The table, validated and indexed.
pub fn table(compiled: &Compiled) -> RouteTable {
    RouteTable::try_from(compiled.table.clone()).unwrap()
}

/// The cluster a request goes to (`None`: no rule, or a direct response).
pub fn cluster_for(compiled: &Compiled, request: &SimpleRequest) -> Option<String> {
    let table = table(compiled);
    let decision = table.route(request, 0)?;
    decision.backend.map(|b| b.cluster.clone())
}

/// The winning rule's name.
pub fn rule_for(compiled: &Compiled, request: &SimpleRequest) -> Option<String> {
    let table = table(compiled);
    table.route(request, 0).map(|d| d.rule.name().to_owned())
}

/// The winning rule's direct-response status, if the winner is one.
pub fn direct_status(compiled: &Compiled, request: &SimpleRequest) -> Option<u16> {
    let table = table(compiled);
    let decision = table.route(request, 0)?;
    match decision.rule.action() {
        switchyard_table::ActionSpec::DirectResponse(d) => Some(d.status),
        _ => None,
    }
}

/// `GET url`.
pub fn get(url: &str) -> SimpleRequest {
    SimpleRequest::from_url(url)
}

/// One resource's status entry.
pub fn status_of<'c>(compiled: &'c Compiled, kind: &str, namespace: &str, name: &str) -> &'c ResourceStatus {
    compiled
        .statuses
        .iter()
        .find(|s| s.kind.as_str() == kind && s.namespace == namespace && s.name == name)
        .unwrap_or_else(|| panic!("no status for {kind} {namespace}/{name}: {:#?}", compiled.statuses))
}

/// Whether a resource's status has a condition with this reason.
pub fn has_reason(status: &ResourceStatus, reason: Reason) -> bool {
    status.conditions.iter().any(|c| c.reason == reason)
}

/// The message of the condition with this reason.
pub fn message(status: &ResourceStatus, reason: Reason) -> String {
    status
        .conditions
        .iter()
        .find(|c| c.reason == reason)
        .map(|c| c.message.clone())
        .unwrap_or_else(|| panic!("no condition {reason} in {status:#?}"))
}

/// Shorthand for the status value.
pub fn status(compiled: &Compiled, kind: &str, namespace: &str, name: &str) -> Status {
    status_of(compiled, kind, namespace, name).status
}

/// The names of the table's rules, in order.
pub fn rule_names(compiled: &Compiled) -> Vec<String> {
    compiled.table.rules.iter().map(|r| r.name.clone()).collect()
}

/// An IngressClass manifest.
pub fn ingress_class(name: &str, controller: &str, default: bool, created: &str) -> String {
    let annotations = if default {
        "  annotations:\n    ingressclass.kubernetes.io/is-default-class: \"true\"\n".to_owned()
    } else {
        String::new()
    };
    let created = if created.is_empty() {
        String::new()
    } else {
        format!("  creationTimestamp: \"{created}\"\n")
    };
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: {name}\n{created}{annotations}spec:\n  controller: {controller}\n---\n"
    )
}

/// A simple v1 Ingress: one host, one Prefix path, one backend. `extra_meta` lines go under
/// `metadata:` (indented by two spaces already), `class_name` sets `spec.ingressClassName`.
pub fn simple_ingress(
    name: &str,
    host: &str,
    path: &str,
    service: &str,
    extra_meta: &str,
    class_name: Option<&str>,
) -> String {
    let class = class_name
        .map(|c| format!("  ingressClassName: {c}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {name}
  namespace: default
{extra_meta}spec:
{class}  rules:
    - host: \"{host}\"
      http:
        paths:
          - path: {path}
            pathType: Prefix
            backend:
              service:
                name: {service}
                port:
                  number: 80
---
"
    )
}

/// The examples folder.
pub fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// The compile flags an example's `ARGS` file lists, as words.
pub fn example_args(example: &str) -> Vec<String> {
    let text = std::fs::read_to_string(examples_dir().join(example).join("ARGS")).unwrap_or_default();
    text.split_whitespace().map(str::to_owned).collect()
}

/// The options an example's `ARGS` file asks for (the flags the examples use).
pub fn example_options(example: &str) -> Options {
    let args = example_args(example);
    let mut options = Options::default();
    let mut words = args.iter();
    while let Some(flag) = words.next() {
        let mut value = || words.next().cloned().unwrap_or_default();
        match flag.as_str() {
            "--ingress-class" => options.ingress_class = value(),
            "--controller-name" => options.controller_name = value(),
            "--empty-ingress-class" => options.empty_ingress_class = true,
            "--ingress-nginx-class" => options.ingress_nginx.class = Some(value()),
            "--variant-clusters" => options.upstream_variants = true,
            other => panic!("example {example}: flag {other} is not handled by the test helper"),
        }
    }
    options
}

/// Compiles one example folder as `switchyard compile` would.
pub fn compile_example(example: &str) -> Compiled {
    let loaded = switchyard_compiler::load::read_paths(&[examples_dir().join(example)]).unwrap();
    compile(&loaded.objects, &example_options(example)).expect("compiles")
}

/// A manifest of the NGINX corpus `tests/cases/nginx/<name>.yaml`, which host-sim's tests also run
/// through the real filter (`host-sim/tests/nginx_manifests.rs`).
pub fn nginx_case(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/cases/nginx")
        .join(format!("{name}.yaml"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The options that serve class `nginx` as ingress-nginx's (ROUTING.md §7).
pub fn nginx_options() -> Options {
    let mut options = Options::default();
    options.ingress_nginx.class = Some("nginx".to_owned());
    options
}

/// An HTTPProxy root `shop/p` for `p.example.com` routing `/` to `services` (YAML of the route's
/// `services:` value, flow or block), the route with `extra` (YAML lines of more route fields).
pub fn httpproxy(services: &str, extra: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: p, namespace: shop}}\nspec:\n  virtualhost: {{fqdn: p.example.com}}\n  routes:\n  - conditions: [{{prefix: /}}]\n    services:{services}{extra}---\n"
    )
}

/// Asserts that resource `kind` `namespace/name` is invalid, its status saying `field`.
pub fn assert_invalid_naming(compiled: &Compiled, (kind, namespace, name): (&str, &str, &str), field: &str) {
    let status = status_of(compiled, kind, namespace, name);
    assert_eq!(
        status.status,
        switchyard_compiler::status::Status::Invalid,
        "{status:?}"
    );
    assert!(format!("{status:?}").contains(field), "{field}: {status:?}");
}
