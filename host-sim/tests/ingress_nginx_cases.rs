//! The corpora of manifests (`tests/cases/ingress_nginx.json` over `tests/cases/ingress-nginx/`:
//! ROUTING.md §7, the §7.6 canary included, and ingress-nginx's own e2e expectations;
//! `tests/cases/access_control.json` over `tests/cases/access/`: §9 in every dialect) at two layers: natively (the
//! compiler, then the table's matcher through `switchyard explain`'s own function) and through the
//! real filter (`switchyard_filter.wasm`) under host-sim. Each case's manifests are compiled with the
//! case's `switchyard compile` flags; every request must get the case's decision (rule, cluster,
//! status, `Location`, the path and headers the backend receives) at both layers, natively also the
//! canary decision `switchyard explain` prints, and the status report must carry the case's
//! conditions.

mod common;

use std::collections::BTreeMap;

use serde_json::Value;
use switchyard_cases::{ingress_nginx_cases, manifest_cases, NginxCase, NginxProbe, Want};
use switchyard_compiler::explain::explain;
use switchyard_compiler::ingress_nginx::configmap::ControllerConfig;
use switchyard_compiler::load::{parse_text, Loaded};
use switchyard_compiler::{compile, Compiled, Options};
use switchyard_host_sim::{Request, Sim};
use switchyard_table::{ActionSpec, RouteTable, SimpleRequest, TableSpec};

/// The options `switchyard compile` would take from the case's flags (the flags the corpus uses),
/// with the debug header on so that the filter names its rule.
fn options(case: &NginxCase, loaded: &Loaded) -> Options {
    let mut options = Options {
        debug_rule_header: true,
        ..Options::default()
    };
    let mut words = case.flags.iter();
    while let Some(flag) = words.next() {
        let mut value = || {
            words
                .next()
                .unwrap_or_else(|| panic!("case {}: {flag} needs a value", case.name))
                .clone()
        };
        match flag.as_str() {
            "--ingress-nginx-class" => options.ingress_nginx.class = Some(value()),
            "--ingress-nginx-controller" => options.ingress_nginx.controller = value(),
            "--ingress-nginx-class-by-name" => options.ingress_nginx.class_by_name = true,
            "--ingress-nginx-without-class" => options.ingress_nginx.without_class = true,
            "--ingress-nginx-annotations-prefix" => options.ingress_nginx.annotations_prefix = value(),
            "--ingress-nginx-configmap" => {
                let value = value();
                let (namespace, name) = value.split_once('/').expect("NAMESPACE/NAME");
                let key = (namespace.to_owned(), name.to_owned());
                let data = loaded
                    .config_maps
                    .get(&key)
                    .unwrap_or_else(|| panic!("case {}: no ConfigMap {value} in the manifests", case.name));
                options.ingress_nginx.configmap = Some(key.clone());
                options.ingress_nginx_config = ControllerConfig::from_data(data);
            }
            "--ingress-class" => options.ingress_class = value(),
            "--controller-name" => options.controller_name = value(),
            "--empty-ingress-class" => options.empty_ingress_class = true,
            "--variant-clusters" => options.upstream_variants = true,
            other => panic!("case {}: flag {other} is not handled by the corpus runner", case.name),
        }
    }
    options
}

/// The case's manifests compiled with its flags.
fn compiled(case: &NginxCase) -> Compiled {
    let mut loaded = Loaded::default();
    parse_text(&case.manifest_text(), &case.manifests, &mut loaded)
        .unwrap_or_else(|e| panic!("case {}: {e}", case.name));
    let options = options(case, &loaded);
    compile(&loaded.objects, &options).unwrap_or_else(|e| panic!("case {}: {e}", case.name))
}

/// What one layer did with a request.
#[derive(Debug, Default)]
struct Got {
    rule: Option<String>,
    cluster: Option<String>,
    status: u16,
    location: Option<String>,
    path: String,
    headers: BTreeMap<String, String>,
    /// The canary decision as `switchyard explain` prints it; `None` from the filter, which does not
    /// say (only the native layer is held to a case's `canary`).
    canary: Option<String>,
    /// A local reply's body.
    body: Option<String>,
}

/// How `got` differs from `want`, if it does.
fn differs(want: &Want, got: &Got) -> Option<String> {
    let mut wrong = Vec::new();
    if want.status != got.status {
        wrong.push(format!("status {} (want {})", got.status, want.status));
    }
    if want.rule_none && got.rule.is_some() {
        wrong.push(format!("rule {:?} (want none)", got.rule));
    }
    if want.rule.is_some() && want.rule != got.rule {
        wrong.push(format!("rule {:?} (want {:?})", got.rule, want.rule));
    }
    if want.cluster != got.cluster {
        wrong.push(format!("cluster {:?} (want {:?})", got.cluster, want.cluster));
    }
    if want.location.is_some() && want.location != got.location {
        wrong.push(format!("Location {:?} (want {:?})", got.location, want.location));
    }
    if let Some(path) = &want.path {
        if *path != got.path {
            wrong.push(format!("upstream path {:?} (want {path:?})", got.path));
        }
    }
    for (name, value) in &want.headers {
        if got.headers.get(name) != Some(value) {
            wrong.push(format!("header {name}: {:?} (want {value:?})", got.headers.get(name)));
        }
    }
    for name in &want.absent_headers {
        if let Some(value) = got.headers.get(name) {
            wrong.push(format!("header {name}: {value:?} (want it absent)"));
        }
    }
    if let Some(body) = &want.body {
        if !got.body.as_deref().is_some_and(|b| b.contains(body.as_str())) {
            wrong.push(format!("body {:?} (want it to contain {body:?})", got.body));
        }
    }
    if let (Some(want), Some(got)) = (&want.canary, &got.canary) {
        if want != got {
            wrong.push(format!("canary decision {got:?} (want {want:?})"));
        }
    }
    (!wrong.is_empty()).then(|| format!("got {}; the decision: {got:?}", wrong.join(", ")))
}

fn simple_request(probe: &NginxProbe) -> SimpleRequest {
    probe.headers.iter().fold(
        SimpleRequest::from_url(&probe.url).method(&probe.method),
        |r, (name, value)| r.header(name, value),
    )
}

/// The native decision: `switchyard explain`'s function over the compiled table, and the headers
/// the winner's action sets.
fn native(table: &RouteTable, probe: &NginxProbe) -> Got {
    let request = simple_request(probe);
    let explanation = explain(table, &request);
    let decision = explanation.decision;
    // The Host the backend receives is the request's unless the winner sets `:authority`.
    let mut headers = BTreeMap::from([(":authority".to_owned(), probe.authority().to_owned())]);
    if let Some(winner) = table.route(&request, 0) {
        if let ActionSpec::Route(route) = winner.rule.action() {
            for header in &route.set_headers {
                headers.insert(header.name.to_ascii_lowercase(), header.value.clone());
            }
            if let Some(done) = winner.rule.rewrite(probe.path()) {
                for (name, value) in done.headers {
                    headers.insert(name.to_owned(), value);
                }
            }
        }
    }
    Got {
        rule: decision.rule,
        cluster: decision.cluster,
        status: decision.status,
        location: decision.location,
        path: decision.path,
        headers,
        // explain says `None` where no canary decided: the case's `canary` is then missed.
        canary: Some(decision.canary.unwrap_or_else(|| "(no canary decision)".to_owned())),
        body: decision.body,
    }
}

/// The filter's decision under host-sim.
fn filtered(sim: &mut Sim, probe: &NginxProbe) -> Result<Got, String> {
    let request = probe
        .headers
        .iter()
        .fold(Request::new(&probe.method, &probe.url), |r, (name, value)| {
            r.header(name, value)
        });
    let outcome = sim.request(request);
    if let Some(error) = &outcome.error {
        return Err(format!("the filter failed: {error:?}"));
    }
    if let Some(reply) = &outcome.local_response {
        return Ok(Got {
            rule: reply.header("x-switchyard-rule").map(str::to_owned),
            cluster: None,
            status: u16::try_from(reply.status).unwrap_or(u16::MAX),
            location: reply.header("location").map(str::to_owned),
            path: probe.path().to_owned(),
            headers: BTreeMap::new(),
            canary: None,
            body: Some(String::from_utf8_lossy(&reply.body).into_owned()),
        });
    }
    let mut headers = BTreeMap::new();
    let names = probe
        .want
        .headers
        .iter()
        .map(|(name, _)| name)
        .chain(&probe.want.absent_headers);
    for name in names {
        if let Some(value) = outcome.request_header(name) {
            headers.insert(name.clone(), value.to_owned());
        }
    }
    Ok(Got {
        rule: outcome.response_header("x-switchyard-rule").map(str::to_owned),
        cluster: outcome.request_header("x-route-cluster").map(str::to_owned),
        status: 200,
        location: None,
        path: outcome.request_header(":path").unwrap_or_default().to_owned(),
        headers,
        canary: None,
        body: None,
    })
}

/// The case's conditions that the status report does not carry as it says.
fn condition_failures(case: &NginxCase, compiled: &Compiled) -> Vec<String> {
    let statuses = serde_json::to_value(&compiled.statuses).unwrap();
    let conditions_of = |resource: &str| -> Vec<Value> {
        statuses
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| {
                let id = format!(
                    "{}/{}/{}",
                    s["kind"].as_str().unwrap_or_default(),
                    s["namespace"].as_str().unwrap_or_default(),
                    s["name"].as_str().unwrap_or_default()
                );
                id == resource
            })
            .flat_map(|s| s["conditions"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let mut failures = Vec::new();
    for want in &case.conditions {
        let of = conditions_of(&want.resource);
        let same_reason: Vec<&Value> = of.iter().filter(|c| c["reason"] == want.reason.as_str()).collect();
        let listed = case
            .conditions
            .iter()
            .filter(|c| c.resource == want.resource && c.reason == want.reason)
            .count();
        if same_reason.len() != listed {
            failures.push(format!(
                "{}: {} {} condition(s), want {listed}: {of:?}",
                want.resource,
                same_reason.len(),
                want.reason
            ));
        }
        if !same_reason
            .iter()
            .any(|c| c["message"].as_str().unwrap_or_default().contains(&want.contains))
        {
            failures.push(format!(
                "{}: no {} condition saying {:?}: {of:?}",
                want.resource, want.reason, want.contains
            ));
        }
    }
    failures.dedup();
    failures
}

/// The table's rules, one line each, for a failure's message.
fn dump(table: &TableSpec) -> String {
    table
        .rules
        .iter()
        .map(|r| format!("  {}", serde_json::to_string(r).unwrap()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every case, natively: the compiled table decides every request as the case says, and the
/// status report carries the case's conditions.
#[test]
fn every_manifest_case_decides_natively() {
    let mut failures = Vec::new();
    for case in manifest_cases() {
        let compiled = compiled(&case);
        let table = RouteTable::try_from(compiled.table.clone())
            .unwrap_or_else(|e| panic!("case {}: the compiled table does not load: {e}", case.name));
        let mut wrong: Vec<String> = case
            .requests
            .iter()
            .filter_map(|probe| differs(&probe.want, &native(&table, probe)).map(|why| format!("{probe}: {why}")))
            .collect();
        wrong.extend(condition_failures(&case, &compiled));
        if !wrong.is_empty() {
            failures.push(format!(
                "{} ({}):\n  {}\n table:\n{}",
                case.name,
                case.manifests,
                wrong.join("\n  "),
                dump(&compiled.table)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every case through the real filter: the compiled table configured into it, every request gets
/// the case's decision.
#[test]
fn every_manifest_case_decides_in_the_filter() {
    let mut sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    let mut failures = Vec::new();
    for case in manifest_cases() {
        let compiled = compiled(&case);
        if !sim.configure(serde_json::to_string(&compiled.table).unwrap()) {
            failures.push(format!(
                "{}: the filter refused the table: {:?}",
                case.name,
                sim.take_logs()
            ));
            continue;
        }
        for probe in &case.requests {
            let why = match filtered(&mut sim, probe) {
                Ok(got) => differs(&probe.want, &got),
                Err(error) => Some(error),
            };
            if let Some(why) = why {
                failures.push(format!("{}: {probe}: {why}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The corpus covers every part of §7 it claims (a guard against a case file left out).
#[test]
fn the_corpus_covers_routing_md_section_7() {
    let cases = ingress_nginx_cases();
    for section in [
        "§7.1", "§7.2", "§7.3", "§7.4", "§7.5", "§7.6", "§7.6.1", "§7.6.2", "§7.6.3", "§7.7", "§7.8", "§7.9",
    ] {
        assert!(
            cases.iter().any(|c| c.about.contains(section)),
            "no case pins {section}"
        );
    }
    assert!(
        cases.iter().any(|c| c.about.contains("test/e2e/")),
        "no case from ingress-nginx's own e2e tests"
    );
    assert!(
        cases.iter().any(|c| c.about.contains("test/e2e/annotations/canary.go")),
        "no case from ingress-nginx's canary e2e tests"
    );
}
