//! The routing corpus (`tests/cases/routing.json`: ROUTING.md §4, which rule wins) through the real
//! filter in a real Envoy: one Envoy for the whole corpus, each case's table loaded through ECDS in
//! turn, every request sent over HTTP and answered by its winner's backend (the debug header naming
//! the rule), or by the filter's 404 when no rule matches. The same corpus runs natively
//! (table/tests/corpus.rs) and under host-sim (host-sim/tests/corpus.rs). Needs `ENVOY_BIN` and
//! `SWITCHYARD_WASM` (`make test-envoy` sets them).

use switchyard_cases::{routing_cases, Case, Probe};
use switchyard_e2e::{backend_name, get, ConfigForm, Envoy, Request};

fn request(probe: &Probe) -> Request {
    let request = get(probe.authority(), probe.path()).method(&probe.method);
    probe
        .headers
        .iter()
        .fold(request, |request, (name, value)| request.header(name, value))
}

/// What Envoy answered to `probe`, when it is not what the case expects.
fn failure(envoy: &Envoy, case: &Case, probe: &Probe) -> Option<String> {
    let response = envoy.send(&request(probe));
    let (backend, rule) = (response.backend(), response.header("x-switchyard-rule"));
    let ok = match &probe.want {
        Some(want) => {
            let expected = case.cluster_of(want).map(backend_name);
            backend == expected.as_deref() && rule == Some(want.as_str())
        }
        None => response.status == 404 && backend.is_none(),
    };
    (!ok).then(|| {
        format!(
            "want {:?}, got status {} backend {backend:?} rule {rule:?}",
            probe.want, response.status
        )
    })
}

/// Every case of the corpus routes every request to its expected winner's backend in Envoy.
#[test]
fn every_routing_case_reaches_its_winner_in_envoy() {
    let cases = routing_cases();
    let mut clusters: Vec<&str> = cases.iter().flat_map(Case::clusters).collect();
    clusters.sort_unstable();
    clusters.dedup();
    let envoy = Envoy::start(&cases[0].table().to_string(), &clusters);
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        if i > 0 && !envoy.update_table(&case.table().to_string(), ConfigForm::StringValue) {
            failures.push(format!("{}: Envoy refused the table", case.name));
            continue;
        }
        for probe in &case.probes {
            if let Some(why) = failure(&envoy, case, probe) {
                failures.push(format!("{}: {probe}: {why}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
