//! The routing corpus (`tests/cases/routing.json`) through the native dynamic module in a real
//! Envoy, as tests/corpus.rs runs it through the wasm filter: one Envoy, each case's table loaded
//! through ECDS in turn, every request answered by its winner's backend (the debug header naming
//! the rule) or by the 404 when no rule matches. Needs `ENVOY_BIN` and `SWITCHYARD_MODULE`.

use switchyard_cases::{routing_cases, Case, Probe};
use switchyard_e2e::{backend_name, get, ConfigForm, Envoy, FilterForm, Request};

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

/// Every case of the corpus routes every request to its expected winner's backend through the module.
#[test]
fn every_routing_case_reaches_its_winner_through_the_module() {
    let cases = routing_cases();
    let mut clusters: Vec<&str> = cases.iter().flat_map(Case::clusters).collect();
    clusters.sort_unstable();
    clusters.dedup();
    let envoy = Envoy::start_filter(
        &cases[0].table().to_string(),
        &clusters,
        ConfigForm::StringValue,
        1,
        FilterForm::Module,
    );
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
