//! The incremental compiler against its oracle: after every change of a sequence, the table (byte
//! for byte), the statuses and the L4 routes of [`Incremental`] equal those of a full
//! [`compile`] of the same objects, and the update took the path the case expects (so a case that
//! should compile incrementally cannot pass by compiling everything).
//!
//! The cases are data ([`CASES`]): manifests by name, then steps that put or delete one; the same
//! for ingress-nginx's Ingresses (ROUTING.md §7, [`NGINX_CASES`]: servers across namespaces,
//! regex mode turned off and on, certificates from another Ingress, and what compiles in full).
//! Then every example under `examples/`, each Ingress deleted and put back; then generated
//! sequences of changes (a fixed seed) over a few colliding hosts, in both `--host-collision`
//! modes, and over ingress-nginx's Ingresses (regex mode flips among them).

mod common;

use std::collections::{BTreeMap, BTreeSet};

use switchyard_compiler::incremental::{Incremental, Path, Why};
use switchyard_compiler::load::{parse_text, Loaded};
use switchyard_compiler::model::HostCollision;
use switchyard_compiler::{compile, Objects, Options};
use switchyard_table::PathSpec;

/// Checks that `incremental`, updated to `objects`, took `expected` (when given) and gives what a
/// full compilation gives.
fn check(incremental: &mut Incremental, objects: &Objects, expected: Option<&str>, what: &str) -> Path {
    let update = incremental.update(objects).unwrap();
    if let Some(expected) = expected {
        assert_eq!(update.path.as_str(), expected, "{what}: path ({update:?})");
    }
    let got = incremental.compiled().unwrap();
    let want = compile(objects, incremental.options()).unwrap();
    assert_eq!(
        serde_json::to_string_pretty(&**got.table).unwrap(),
        serde_json::to_string_pretty(&want.table).unwrap(),
        "{what}: table"
    );
    assert_eq!(got.statuses, want.statuses, "{what}: statuses");
    assert_eq!(*got.l4, want.l4, "{what}: l4");
    update.path
}

/// One step of a case.
enum Step {
    /// Puts (adds or replaces) the manifest of this name; the path the update must take.
    Put(&'static str, &'static str, &'static str),
    /// Deletes the manifest of this name; the path the update must take.
    Delete(&'static str, &'static str),
}

use Step::{Delete, Put};

/// A case: its name, its options, its manifests at the start, and its steps.
struct Case {
    name: &'static str,
    collision: HostCollision,
    start: &'static [(&'static str, &'static str)],
    steps: &'static [Step],
}

const A: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: a, namespace: shop, uid: '1', creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: a, port: {number: 80}}}}\n      - {path: /api, pathType: Prefix, backend: {service: {name: a-api, port: {number: 80}}}}\n";
const B: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: b, namespace: shop, uid: '2', creationTimestamp: '2024-02-01T00:00:00Z'}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /api, pathType: Prefix, backend: {service: {name: b, port: {number: 80}}}}\n      - {path: /b, pathType: Exact, backend: {service: {name: b, port: {number: 80}}}}\n  - host: blog.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: blog, port: {number: 80}}}}\n";
const B_MOVED_HOST: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: b, namespace: shop, uid: '2', creationTimestamp: '2024-02-01T00:00:00Z'}\nspec:\n  rules:\n  - host: news.example.com\n    http:\n      paths:\n      - {path: /api, pathType: Prefix, backend: {service: {name: b, port: {number: 80}}}}\n";
const B_OTHER_NAMESPACE: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: b, namespace: blog, uid: '2', creationTimestamp: '2024-02-01T00:00:00Z'}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /api, pathType: Prefix, backend: {service: {name: b, port: {number: 80}}}}\n";
const B_OTHER_CLASS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: b, namespace: shop, uid: '2', creationTimestamp: '2024-02-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx}}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /api, pathType: Prefix, backend: {service: {name: b, port: {number: 80}}}}\n";
const C_OLDEST: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: c, namespace: web, uid: '0', creationTimestamp: '2023-01-01T00:00:00Z', annotations: {switchyard.io/router.header: 'x-canary: on'}}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /api, pathType: Prefix, backend: {service: {name: c, port: {number: 80}}}}\n";
const C_SAME_AGE_AS_A: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: c, namespace: web, uid: '0', creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /api, pathType: Prefix, backend: {service: {name: c, port: {number: 80}}}}\n";
const C_NO_TIMESTAMP: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: c, namespace: web}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /api, pathType: Prefix, backend: {service: {name: c, port: {number: 80}}}}\n";
const DEFAULT_1: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: d1, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  defaultBackend: {service: {name: fallback, port: {number: 80}}}\n";
const DEFAULT_2: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: d2, namespace: shop, creationTimestamp: '2023-01-01T00:00:00Z'}\nspec:\n  defaultBackend: {service: {name: other, port: {number: 80}}}\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: d2, port: {number: 80}}}}\n";
const PROXY: &str = "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: root, namespace: shop, creationTimestamp: '2023-06-01T00:00:00Z'}\nspec:\n  virtualhost: {fqdn: proxy.example.com}\n  routes:\n  - services: [{name: p, port: 80}]\n";
const PROXY_CHANGED: &str = "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: root, namespace: shop, creationTimestamp: '2023-06-01T00:00:00Z'}\nspec:\n  virtualhost: {fqdn: proxy.example.com}\n  routes:\n  - services: [{name: p2, port: 80}]\n";
const ON_PROXY_HOST: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: e, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: proxy.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: e, port: {number: 80}}}}\n";
const OFF_PROXY_HOST: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: e, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: elsewhere.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: e, port: {number: 80}}}}\n";
const VS: &str = "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {name: cafe, namespace: shop, creationTimestamp: '2022-01-01T00:00:00Z'}\nspec:\n  host: cafe.example.com\n  upstreams: [{name: tea, service: tea, port: 80}]\n  routes:\n  - {path: /tea, action: {pass: tea}}\n  - {path: '=/tea/exact', action: {pass: tea}}\n";
const VS_WITH_POLICY: &str = "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {name: cafe, namespace: shop, creationTimestamp: '2022-01-01T00:00:00Z'}\nspec:\n  host: cafe.example.com\n  policies: [{name: office}]\n  upstreams: [{name: tea, service: tea, port: 80}]\n  routes:\n  - {path: /tea, action: {pass: tea}}\n";
const POLICY: &str = "apiVersion: k8s.nginx.org/v1\nkind: Policy\nmetadata: {name: office, namespace: shop}\nspec:\n  accessControl: {allow: [10.0.0.0/8]}\n";
const POLICY_CHANGED: &str = "apiVersion: k8s.nginx.org/v1\nkind: Policy\nmetadata: {name: office, namespace: shop}\nspec:\n  accessControl: {deny: [10.0.0.0/8]}\n";
const ON_VS_HOST: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: f, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: cafe.example.com\n    http:\n      paths:\n      - {path: /coffee, pathType: Prefix, backend: {service: {name: f, port: {number: 80}}}}\n";
const MASTER: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: master, namespace: shop, uid: '9', creationTimestamp: '2021-01-01T00:00:00Z', annotations: {nginx.org/mergeable-ingress-type: master}}\nspec:\n  rules:\n  - host: shop.example.com\n";
const MASTER_ON_VS_HOST: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: master, namespace: shop, uid: '9', creationTimestamp: '2021-01-01T00:00:00Z', annotations: {nginx.org/mergeable-ingress-type: master}}\nspec:\n  rules:\n  - host: cafe.example.com\n";
const SERVICE: &str =
    "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: shop}\nspec:\n  ports: [{name: http, port: 8080}]\n";
const CLASS_OURS: &str = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: ours}\nspec: {controller: switchyard.io/ingress-controller}\n";
const CLASS: &str = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: other\n  annotations: {ingressclass.kubernetes.io/is-default-class: 'true'}\nspec: {controller: example.com/other}\n";

const V1: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: v, namespace: shop, resourceVersion: '1', creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: v.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: v, port: {number: 80}}}}\n";
const V2_LABELLED: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: v, namespace: shop, resourceVersion: '2', labels: {team: web}, creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: v.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: v, port: {number: 80}}}}\n";
const V3_STATUS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: v, namespace: shop, resourceVersion: '3', labels: {team: web}, creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: v.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: v, port: {number: 80}}}}\nstatus: {loadBalancer: {ingress: [{ip: 127.0.0.1}]}}\n";
const V4_PATH: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: v, namespace: shop, resourceVersion: '4', labels: {team: web}, creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: v.example.com\n    http:\n      paths:\n      - {path: /v4, pathType: Prefix, backend: {service: {name: v, port: {number: 80}}}}\n";

const CASES: &[Case] = &[
    Case {
        name: "only_what_the_compiler_reads_is_a_change",
        collision: HostCollision::Merge,
        start: &[("a", A), ("v", V1)],
        steps: &[
            Put("v", V2_LABELLED, "unchanged"),
            Put("v", V3_STATUS, "unchanged"),
            Put("v", V4_PATH, "incremental"),
            Put("v", V1, "incremental"),
        ],
    },
    Case {
        name: "merged_ingresses_on_one_host",
        collision: HostCollision::Merge,
        start: &[("a", A), ("b", B)],
        steps: &[
            Delete("b", "incremental"),
            Put("b", B, "incremental"),
            Put("c", C_OLDEST, "incremental"),
            Put("b", B_MOVED_HOST, "incremental"),
            Put("b", B_OTHER_NAMESPACE, "incremental"),
            Put("b", B_OTHER_CLASS, "incremental"),
            Put("c", C_SAME_AGE_AS_A, "incremental"),
            Put("c", C_NO_TIMESTAMP, "incremental"),
            Put("c", C_NO_TIMESTAMP, "unchanged"),
            Delete("a", "incremental"),
            Delete("c", "incremental"),
            Delete("b", "incremental"),
            Put("a", A, "incremental"),
        ],
    },
    Case {
        name: "the_oldest_ingress_wins_a_host_alone",
        collision: HostCollision::Winner,
        start: &[("a", A), ("b", B)],
        steps: &[
            Put("c", C_OLDEST, "incremental"),
            Delete("c", "incremental"),
            Put("b", B_MOVED_HOST, "incremental"),
            Put("b", B, "incremental"),
            Put("c", C_SAME_AGE_AS_A, "incremental"),
            Put("c", C_NO_TIMESTAMP, "incremental"),
            Delete("a", "incremental"),
            Put("b", B_OTHER_CLASS, "incremental"),
        ],
    },
    Case {
        name: "default_backends_share_the_rules_without_a_host",
        collision: HostCollision::Merge,
        start: &[("a", A), ("d1", DEFAULT_1)],
        steps: &[
            Put("d2", DEFAULT_2, "incremental"),
            Delete("d1", "incremental"),
            Put("d1", DEFAULT_1, "incremental"),
            Delete("d2", "incremental"),
        ],
    },
    Case {
        name: "an_httpproxy_host_is_compiled_in_full",
        collision: HostCollision::Merge,
        start: &[("a", A), ("proxy", PROXY), ("e", OFF_PROXY_HOST)],
        steps: &[
            Put("b", B, "incremental"),
            Put("e", ON_PROXY_HOST, "full"),
            Put("e", OFF_PROXY_HOST, "full"),
            Put("proxy", PROXY_CHANGED, "full"),
            Delete("b", "incremental"),
        ],
    },
    Case {
        name: "a_virtualserver_host_is_compiled_in_full",
        collision: HostCollision::Merge,
        start: &[("vs", VS), ("a", A)],
        steps: &[
            Put("f", ON_VS_HOST, "full"),
            Put("b", B, "incremental"),
            Delete("f", "full"),
            Delete("vs", "full"),
            Put("f", ON_VS_HOST, "incremental"),
        ],
    },
    Case {
        name: "a_master_ingress_without_paths_is_a_member_of_its_hosts_group",
        collision: HostCollision::Merge,
        start: &[("a", A), ("b", B)],
        steps: &[
            Put("master", MASTER, "incremental"),
            Delete("a", "incremental"),
            Delete("b", "incremental"),
            Put("b", B, "incremental"),
            Delete("master", "incremental"),
            Put("master", MASTER, "incremental"),
        ],
    },
    Case {
        name: "a_master_ingress_without_paths_competes_alone_as_a_winner",
        collision: HostCollision::Winner,
        start: &[("a", A), ("b", B)],
        steps: &[
            Put("master", MASTER, "incremental"),
            Delete("master", "incremental"),
            Put("master", MASTER, "incremental"),
            Delete("a", "incremental"),
        ],
    },
    Case {
        name: "a_master_ingress_older_than_a_virtualserver_is_compiled_in_full",
        collision: HostCollision::Merge,
        start: &[("vs", VS), ("f", ON_VS_HOST)],
        steps: &[
            Put("master", MASTER_ON_VS_HOST, "full"),
            Delete("vs", "full"),
            Put("vs", VS, "full"),
            Delete("master", "full"),
        ],
    },
    Case {
        name: "a_policy_a_virtualserver_references_is_compiled_in_full_when_it_changes",
        collision: HostCollision::Merge,
        start: &[("vs", VS_WITH_POLICY), ("a", A)],
        steps: &[
            Put("policy", POLICY, "full"),
            Put("policy", POLICY_CHANGED, "full"),
            Put("b", B, "incremental"),
            Delete("policy", "full"),
        ],
    },
    Case {
        name: "services_and_classes_that_stay_are_read_from_the_last_compile",
        collision: HostCollision::Merge,
        start: &[("service", SERVICE), ("class", CLASS_OURS), ("a", A)],
        steps: &[
            Put("b", B, "incremental"),
            Put("b", B_OTHER_CLASS, "incremental"),
            Delete("a", "incremental"),
            Put("a", A, "incremental"),
        ],
    },
    Case {
        name: "services_and_classes_reach_every_ingress",
        collision: HostCollision::Merge,
        start: &[("a", A), ("b", B)],
        steps: &[
            Put("service", SERVICE, "full"),
            Put("b", B_MOVED_HOST, "incremental"),
            Put("class", CLASS, "full"),
            Delete("class", "full"),
            Delete("service", "full"),
        ],
    },
];

/// The objects of manifests (text by name).
fn objects_of(manifests: &BTreeMap<&str, &str>) -> Objects {
    let mut loaded = Loaded::default();
    for (name, text) in manifests {
        parse_text(text, name, &mut loaded).unwrap();
    }
    loaded.objects
}

/// Options with ingress-nginx's Ingresses served (`--ingress-nginx-class nginx`).
fn nginx_options(collision: HostCollision) -> Options {
    let mut options = Options {
        host_collision: collision,
        ..Options::default()
    };
    options.ingress_nginx.class = Some("nginx".to_owned());
    options
}

#[test]
fn every_case_compiles_incrementally_to_what_a_full_compile_gives() {
    for case in CASES {
        let options = Options {
            host_collision: case.collision,
            ..Options::default()
        };
        run_case(case, options);
    }
}

#[test]
fn every_ingress_nginx_case_compiles_incrementally_to_what_a_full_compile_gives() {
    for case in NGINX_CASES {
        run_case(case, nginx_options(case.collision));
    }
}

/// Runs a case's steps with `options`, each against the oracle.
fn run_case(case: &Case, options: Options) {
    {
        let mut manifests: BTreeMap<&str, &str> = case.start.iter().copied().collect();
        let mut incremental = Incremental::new(options);
        let first = check(&mut incremental, &objects_of(&manifests), Some("full"), case.name);
        assert_eq!(first, Path::Full(Why::First));
        for (i, step) in case.steps.iter().enumerate() {
            let expected = match step {
                Put(name, text, path) => {
                    manifests.insert(name, text);
                    path
                }
                Delete(name, path) => {
                    manifests.remove(name);
                    path
                }
            };
            check(
                &mut incremental,
                &objects_of(&manifests),
                Some(expected),
                &format!("{} step {i}", case.name),
            );
        }
    }
}

// ingress-nginx's Ingresses (class annotation `nginx`): host a.example.com shared by `na` (shop)
// and `nb` (blog, which turns regex mode on), c.example.com with TLS.
const N_A: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: na, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx, nginx.ingress.kubernetes.io/app-root: /app}}\nspec:\n  rules:\n  - host: a.example.com\n    http:\n      paths:\n      - {path: /api, pathType: Prefix, backend: {service: {name: na, port: {number: 80}}}}\n      - {path: /static/, pathType: Prefix, backend: {service: {name: na, port: {number: 80}}}}\n      - {path: /, pathType: Exact, backend: {service: {name: na, port: {number: 80}}}}\n";
const N_A_BACKEND: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: na, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx, nginx.ingress.kubernetes.io/app-root: /app}}\nspec:\n  rules:\n  - host: a.example.com\n    http:\n      paths:\n      - {path: /api, pathType: Prefix, backend: {service: {name: na-v2, port: {number: 80}}}}\n      - {path: /static/, pathType: Prefix, backend: {service: {name: na, port: {number: 80}}}}\n      - {path: /, pathType: Exact, backend: {service: {name: na, port: {number: 80}}}}\n";
const N_B: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: nb, namespace: blog, creationTimestamp: '2024-02-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx, nginx.ingress.kubernetes.io/use-regex: 'true', nginx.ingress.kubernetes.io/rewrite-target: /$2, nginx.ingress.kubernetes.io/x-forwarded-prefix: /b}}\nspec:\n  rules:\n  - host: a.example.com\n    http:\n      paths:\n      - {path: '/b(/|$)(.*)', pathType: ImplementationSpecific, backend: {service: {name: nb, port: {number: 80}}}}\n      - {path: /api, pathType: Prefix, backend: {service: {name: nb, port: {number: 80}}}}\n";
const N_B_PLAIN: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: nb, namespace: blog, creationTimestamp: '2024-02-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx}}\nspec:\n  rules:\n  - host: a.example.com\n    http:\n      paths:\n      - {path: /b, pathType: Prefix, backend: {service: {name: nb, port: {number: 80}}}}\n      - {path: /api, pathType: Prefix, backend: {service: {name: nb, port: {number: 80}}}}\n";
const N_B_ON_SHOP: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: nb, namespace: blog, creationTimestamp: '2024-02-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx}}\nspec:\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n      - {path: /b, pathType: Prefix, backend: {service: {name: nb, port: {number: 80}}}}\n";
const N_C: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: nc, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx, nginx.ingress.kubernetes.io/upstream-vhost: internal}}\nspec:\n  tls: [{hosts: [c.example.com], secretName: c}]\n  rules:\n  - host: c.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: nc, port: {number: 80}}}}\n";
const N_C_NO_TLS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: nc, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx, nginx.ingress.kubernetes.io/upstream-vhost: internal}}\nspec:\n  rules:\n  - host: c.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: nc, port: {number: 80}}}}\n";
const N_C_OURS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: nc, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z'}\nspec:\n  rules:\n  - host: c.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: nc, port: {number: 80}}}}\n";
// Another host's Ingress whose TLS section lists a.example.com: a's server gets HTTPS redirects.
const N_D_CERTIFIES_A: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: nd, namespace: web, creationTimestamp: '2024-03-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx}}\nspec:\n  tls: [{hosts: [a.example.com, d.example.com]}]\n  rules:\n  - host: d.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: nd, port: {number: 80}}}}\n";
const N_W_WILDCARD_CERT: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: nw, namespace: web, creationTimestamp: '2024-03-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx}}\nspec:\n  tls: [{hosts: ['*.example.com']}]\n  rules:\n  - host: w.example.com\n    http:\n      paths:\n      - {path: /w, pathType: Exact, backend: {service: {name: nw, port: {number: 80}}}}\n";
const N_ALIAS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: nx, namespace: web, creationTimestamp: '2024-03-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx, nginx.ingress.kubernetes.io/server-alias: alias.example.com}}\nspec:\n  rules:\n  - host: x.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: nx, port: {number: 80}}}}\n";
const N_CATCH_ALL: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: ncatch, namespace: web, creationTimestamp: '2024-03-01T00:00:00Z', annotations: {kubernetes.io/ingress.class: nginx}}\nspec:\n  defaultBackend: {service: {name: fallback, port: {number: 80}}}\n";

const NGINX_CASES: &[Case] = &[
    Case {
        name: "ingress_nginx_servers_compile_server_by_server",
        collision: HostCollision::Merge,
        start: &[("na", N_A), ("nb", N_B), ("nc", N_C), ("a", A)],
        steps: &[
            // Regex mode of a.example.com off, then on again: both Ingresses' rules change.
            Put("nb", N_B_PLAIN, "incremental"),
            Put("nb", N_B, "incremental"),
            Put("na", N_A_BACKEND, "incremental"),
            Put("nc", N_C_NO_TLS, "incremental"),
            Put("nc", N_C, "incremental"),
            Put("nd", N_D_CERTIFIES_A, "incremental"),
            Put("nb", N_B_PLAIN, "incremental"),
            Delete("nd", "incremental"),
            Put("nw", N_W_WILDCARD_CERT, "incremental"),
            Put("nc", N_C_NO_TLS, "incremental"),
            Delete("nw", "incremental"),
            // Switchyard's own Ingresses change incrementally beside them.
            Put("b", B, "incremental"),
            Delete("a", "incremental"),
            Put("a", A, "incremental"),
            Delete("na", "incremental"),
            Put("na", N_A, "incremental"),
            Delete("nb", "incremental"),
            Delete("na", "incremental"),
            Put("nb", N_B, "incremental"),
            Put("na", N_A, "incremental"),
        ],
    },
    Case {
        name: "ingress_nginx_changes_beyond_their_servers_compile_in_full",
        collision: HostCollision::Merge,
        start: &[("na", N_A), ("nb", N_B), ("nc", N_C), ("a", A)],
        steps: &[
            // Onto a host of Switchyard's Ingresses, and back.
            Put("nb", N_B_ON_SHOP, "full"),
            Put("nb", N_B, "full"),
            // A server-alias claims a host only if unclaimed.
            Put("nx", N_ALIAS, "full"),
            Put("nb", N_B_PLAIN, "incremental"),
            Delete("nx", "full"),
            // From ingress-nginx's class to Switchyard's, then Switchyard's alone.
            Put("nc", N_C_OURS, "full"),
            Delete("nc", "incremental"),
            Put("nc", N_C, "incremental"),
            // The catch-all server shares the rules without a host with Switchyard's.
            Put("ncatch", N_CATCH_ALL, "full"),
            Put("d1", DEFAULT_1, "full"),
            Put("nb", N_B, "incremental"),
            Delete("ncatch", "full"),
            Delete("d1", "incremental"),
        ],
    },
    Case {
        name: "ingress_nginx_servers_contend_alone_as_winners",
        collision: HostCollision::Winner,
        start: &[("na", N_A), ("nb", N_B), ("a", A), ("b", B)],
        steps: &[
            Put("nb", N_B_PLAIN, "incremental"),
            Put("nb", N_B, "incremental"),
            Delete("a", "incremental"),
            Put("nb", N_B_ON_SHOP, "full"),
        ],
    },
];

#[test]
fn every_example_survives_each_ingress_deleted_and_put_back() {
    let mut examples: Vec<_> = std::fs::read_dir(common::examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    examples.sort();
    assert!(examples.len() >= 10, "{examples:?}");
    for dir in examples {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let objects = switchyard_compiler::load::read_paths(std::slice::from_ref(&dir))
            .unwrap()
            .objects;
        let mut incremental = Incremental::new(common::example_options(&name));
        check(&mut incremental, &objects, Some("full"), &name);
        for i in 0..objects.ingresses.len() {
            let mut fewer = objects.clone();
            fewer.ingresses.remove(i);
            check(&mut incremental, &fewer, None, &format!("{name} without Ingress #{i}"));
            check(
                &mut incremental,
                &objects,
                None,
                &format!("{name} with Ingress #{i} back"),
            );
        }
        check(&mut incremental, &objects, Some("unchanged"), &name);
    }
}

/// A small deterministic generator (a 64-bit LCG): the same sequence on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// A generated Ingress: a few rules over three hosts and four paths (so hosts collide and rules
/// repeat), ages from three timestamps (so they tie), sometimes a default backend, a class of
/// another controller or a router header.
fn generated_ingress(rng: &mut Lcg, name: usize) -> String {
    let namespace = ["shop", "blog"][rng.below(2)];
    let created = ["2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"][rng.below(3)];
    let mut annotations = Vec::new();
    if rng.below(8) == 0 {
        annotations.push("kubernetes.io/ingress.class: nginx".to_owned());
    }
    if rng.below(5) == 0 {
        annotations.push(format!("switchyard.io/router.header: 'x-v: {}'", rng.below(2)));
    }
    let mut text = format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: ing{name}\n  namespace: {namespace}\n  uid: 'u{}'\n  creationTimestamp: '{created}'\n  annotations: {{{}}}\nspec:\n",
        rng.below(3),
        annotations.join(", ")
    );
    if rng.below(4) == 0 {
        text.push_str("  defaultBackend: {service: {name: fallback, port: {number: 80}}}\n");
    }
    text.push_str("  rules:\n");
    for _ in 0..1 + rng.below(3) {
        let host = ["a.example.com", "b.example.com", "*.example.com", "proxy.example.com"][rng.below(4)];
        text.push_str(&format!("  - host: '{host}'\n    http:\n      paths:\n"));
        for _ in 0..1 + rng.below(3) {
            let path = ["/", "/api", "/api/v1", "/static"][rng.below(4)];
            let kind = ["Prefix", "Exact"][rng.below(2)];
            text.push_str(&format!(
                "      - {{path: {path}, pathType: {kind}, backend: {{service: {{name: s{}, port: {{number: 80}}}}}}}}\n",
                rng.below(3)
            ));
        }
    }
    text
}

#[test]
fn generated_changes_compile_incrementally_to_what_a_full_compile_gives() {
    for (seed, collision) in [(1, HostCollision::Merge), (2, HostCollision::Winner)] {
        let mut rng = Lcg(seed);
        let options = Options {
            host_collision: collision,
            ..Options::default()
        };
        // An HTTPProxy on one of the hosts: changes there compile in full.
        let mut manifests: BTreeMap<String, String> = BTreeMap::from([("proxy".to_owned(), PROXY.to_owned())]);
        for i in 0..6 {
            manifests.insert(format!("ing{i}"), generated_ingress(&mut rng, i));
        }
        let objects = |manifests: &BTreeMap<String, String>| {
            objects_of(&manifests.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
        };
        let mut incremental = Incremental::new(options);
        check(&mut incremental, &objects(&manifests), Some("full"), "start");
        let mut paths: BTreeMap<&str, usize> = BTreeMap::new();
        for step in 0..300 {
            let name = rng.below(10);
            match rng.below(4) {
                0 => drop(manifests.remove(&format!("ing{name}"))),
                _ => drop(manifests.insert(format!("ing{name}"), generated_ingress(&mut rng, name))),
            }
            let path = check(
                &mut incremental,
                &objects(&manifests),
                None,
                &format!("{collision:?} step {step}"),
            );
            *paths.entry(path.as_str()).or_default() += 1;
        }
        assert!(
            paths.get("incremental").copied().unwrap_or_default() >= 100,
            "{paths:?}"
        );
        assert!(paths.get("full").copied().unwrap_or_default() >= 10, "{paths:?}");
    }
}

/// A generated ingress-nginx Ingress: a rule or two over three hosts, paths that repeat (so
/// `PathTaken` has work), `use-regex` or a `rewrite-target` now and then (regex mode turned on and
/// off as Ingresses change), TLS sections that certify their own or other hosts (a wildcard among
/// them), the redirects and headers; rarely an alias, a catch-all default backend, a canary, or
/// Switchyard's class instead.
fn generated_nginx_ingress(rng: &mut Lcg, name: usize) -> String {
    let namespace = ["shop", "blog", "web"][rng.below(3)];
    let created = ["2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"][rng.below(3)];
    let prefix = "nginx.ingress.kubernetes.io";
    let mut annotations = Vec::new();
    let mut class_name = false;
    match rng.below(40) {
        0 => {}                     // Switchyard's
        1 | 2 => class_name = true, // ingressClassName: nginx
        _ => annotations.push("kubernetes.io/ingress.class: nginx".to_owned()),
    }
    let regex = rng.below(3) == 0;
    if regex {
        match rng.below(2) {
            0 => annotations.push(format!("{prefix}/use-regex: 'true'")),
            _ => annotations.push(format!("{prefix}/rewrite-target: /$2")),
        }
    }
    let mut maybe = |odds: usize, annotation: String| {
        if rng.below(odds) == 0 {
            annotations.push(annotation);
        }
    };
    maybe(6, format!("{prefix}/x-forwarded-prefix: /p"));
    maybe(6, format!("{prefix}/app-root: /app"));
    maybe(8, format!("{prefix}/ssl-redirect: 'false'"));
    maybe(8, format!("{prefix}/force-ssl-redirect: 'true'"));
    maybe(8, format!("{prefix}/upstream-vhost: internal"));
    maybe(10, format!("{prefix}/proxy-body-size: 8m"));
    maybe(80, format!("{prefix}/server-alias: alias.example.com"));
    maybe(80, format!("{prefix}/from-to-www-redirect: 'true'"));
    maybe(30, format!("{prefix}/canary: 'true'"));
    let mut text = format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: ing{name}\n  namespace: {namespace}\n  uid: 'u{}'\n  creationTimestamp: '{created}'\n  annotations: {{{}}}\nspec:\n",
        rng.below(3),
        annotations.join(", ")
    );
    if class_name {
        text.push_str("  ingressClassName: nginx\n");
    }
    let hosts = [
        "a.example.com",
        "b.example.com",
        "c.example.com",
        "d.example.com",
        "e.example.com",
        "proxy.example.com",
    ];
    if rng.below(5) == 0 {
        let certified = ["a.example.com", "b.example.com", "'*.example.com'"][rng.below(3)];
        text.push_str(&format!("  tls: [{{hosts: [{certified}]}}]\n"));
    }
    if rng.below(80) == 0 {
        // A catch-all server's default backend.
        text.push_str("  defaultBackend: {service: {name: fallback, port: {number: 80}}}\n");
        return text;
    }
    text.push_str("  rules:\n");
    // proxy.example.com (an HTTPProxy's) rarely; a second rule now and then.
    let host_count = if rng.below(40) == 0 { 6 } else { 5 };
    for _ in 0..1 + rng.below(4) / 3 {
        let host = hosts[rng.below(host_count)];
        text.push_str(&format!("  - host: '{host}'\n    http:\n      paths:\n"));
        for _ in 0..1 + rng.below(3) {
            let (path, kind) = match (regex, rng.below(5)) {
                (true, 0) => ("'/s(/|$)(.*)'", "ImplementationSpecific"),
                (_, 0) => ("/", "Exact"),
                (_, 1) => ("/api", "Prefix"),
                (_, 2) => ("/static/", "Prefix"),
                (_, 3) => ("/", "Prefix"),
                _ => ("/api/v1", "Exact"),
            };
            text.push_str(&format!(
                "      - {{path: {path}, pathType: {kind}, backend: {{service: {{name: s{}, port: {{number: 80}}}}}}}}\n",
                rng.below(3)
            ));
        }
    }
    text
}

#[test]
fn generated_ingress_nginx_changes_compile_incrementally_to_what_a_full_compile_gives() {
    const CLASS_NGINX: &str = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\nspec: {controller: k8s.io/ingress-nginx}\n";
    for (seed, collision) in [(3, HostCollision::Merge), (4, HostCollision::Winner)] {
        let mut rng = Lcg(seed);
        // An HTTPProxy on one of the hosts, and two of Switchyard's Ingresses: changes there
        // compile in full.
        let mut manifests: BTreeMap<String, String> = BTreeMap::from([
            ("proxy".to_owned(), PROXY.to_owned()),
            ("class".to_owned(), CLASS_NGINX.to_owned()),
            ("a".to_owned(), A.to_owned()),
            ("b".to_owned(), B.to_owned()),
        ]);
        for i in 0..8 {
            manifests.insert(format!("ing{i}"), generated_nginx_ingress(&mut rng, i));
        }
        let objects = |manifests: &BTreeMap<String, String>| {
            objects_of(&manifests.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
        };
        let mut incremental = Incremental::new(nginx_options(collision));
        check(&mut incremental, &objects(&manifests), Some("full"), "start");
        let mut paths: BTreeMap<&str, usize> = BTreeMap::new();
        let mut whys: BTreeMap<String, usize> = BTreeMap::new();
        let (mut regex_mode, mut flips) = (regex_mode_hosts(&incremental), 0);
        for step in 0..400 {
            let name = rng.below(12);
            match rng.below(5) {
                0 => drop(manifests.remove(&format!("ing{name}"))),
                _ => drop(manifests.insert(format!("ing{name}"), generated_nginx_ingress(&mut rng, name))),
            }
            let path = check(
                &mut incremental,
                &objects(&manifests),
                None,
                &format!("{collision:?} step {step}"),
            );
            *paths.entry(path.as_str()).or_default() += 1;
            *whys.entry(format!("{path:?}")).or_default() += 1;
            let now = regex_mode_hosts(&incremental);
            if path == Path::Incremental && now != regex_mode {
                flips += 1;
            }
            regex_mode = now;
        }
        eprintln!("{collision:?}: {whys:?}, {flips} incremental updates turned a host's regex mode on or off");
        assert!(flips >= 20, "{flips}");
        assert!(
            paths.get("incremental").copied().unwrap_or_default() >= 100,
            "{paths:?}"
        );
        assert!(paths.get("full").copied().unwrap_or_default() >= 10, "{paths:?}");
    }
}

/// The hosts in regex mode in the last table: those with a rule of ingress-nginx's regex form
/// (`(?i)(?:P).*`, ROUTING.md §7.4).
fn regex_mode_hosts(incremental: &Incremental) -> BTreeSet<Option<String>> {
    let rules = &incremental.compiled().unwrap().table.rules;
    rules
        .iter()
        .filter(|r| matches!(&r.path, PathSpec::Regex(p) if p.starts_with("(?i)(?:")))
        .map(|r| r.host.clone())
        .collect()
}

/// The per-resource metrics' fold follows the rules in both compilers: past
/// `--metrics-max-resources`, the resources after the limit in name order are counted as `folded`,
/// and an update moves the fold (and the table's generation) as a full compilation does.
#[test]
fn the_metrics_fold_follows_the_resources_in_both_compilers() {
    let options = Options {
        metrics_max_resources: 1,
        ..Options::default()
    };
    let mut incremental = Incremental::new(options);
    let fold = |incremental: &Incremental| incremental.compiled().unwrap().table.metrics_fold.clone();
    let a = BTreeMap::from([("a.yaml", A)]);
    check(&mut incremental, &objects_of(&a), None, "a alone");
    assert_eq!(fold(&incremental), None);
    let generation = incremental.compiled().unwrap().table.generation.clone();
    let both = BTreeMap::from([("a.yaml", A), ("proxy.yaml", PROXY)]);
    check(&mut incremental, &objects_of(&both), None, "a and an HTTPProxy");
    let folded = fold(&incremental).unwrap();
    assert_eq!((folded.last_own.as_str(), folded.folded), ("HTTPProxy/shop/root", 1));
    assert_ne!(incremental.compiled().unwrap().table.generation, generation);
    let c = BTreeMap::from([("a.yaml", A), ("proxy.yaml", PROXY), ("b.yaml", B)]);
    check(
        &mut incremental,
        &objects_of(&c),
        Some("incremental"),
        "an Ingress more, incrementally",
    );
    assert_eq!(fold(&incremental).map(|f| f.folded), Some(2));
    check(&mut incremental, &objects_of(&a), None, "a alone again");
    assert_eq!(fold(&incremental), None);
}
