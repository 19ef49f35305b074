//! The routing corpus (`tests/cases/routing.json`: ROUTING.md §4, which rule wins) through the real
//! filter (`switchyard_filter.wasm`) under host-sim: each case's table is configured into one
//! simulator, and every request must leave with its winner's cluster in `x-route-cluster` and the
//! winner named by the debug header, or get the filter's 404 when no rule matches. The same corpus
//! runs natively (table/tests/corpus.rs) and in Envoy (tests/e2e/tests/corpus.rs).

mod common;

use switchyard_cases::{routing_cases, Case, Probe};
use switchyard_host_sim::{Request, Sim};

fn request(probe: &Probe) -> Request {
    let request = Request::new(&probe.method, &probe.url);
    probe
        .headers
        .iter()
        .fold(request, |request, (name, value)| request.header(name, value))
}

/// What the filter did with `probe`, when it is not what the case expects.
fn failure(sim: &mut Sim, case: &Case, probe: &Probe) -> Option<String> {
    let outcome = sim.request(request(probe));
    if let Some(error) = &outcome.error {
        return Some(format!("the filter failed: {error:?}"));
    }
    let (cluster, rule) = (
        outcome.request_header("x-route-cluster"),
        outcome.response_header("x-switchyard-rule"),
    );
    let ok = match &probe.want {
        Some(want) => cluster == case.cluster_of(want) && rule == Some(want.as_str()),
        None => outcome.local_status() == Some(404) && cluster.is_none(),
    };
    (!ok).then(|| {
        format!(
            "want {:?}, got cluster {cluster:?}, rule {rule:?}, local status {:?}",
            probe.want,
            outcome.local_status()
        )
    })
}

/// Every case of the corpus routes every request to its expected winner in the filter.
#[test]
fn every_routing_case_picks_its_winner_in_the_filter() {
    let mut sim = Sim::load(common::filter_wasm()).expect("the filter loads");
    let cases = routing_cases();
    let mut failures = Vec::new();
    for case in &cases {
        if !sim.configure(case.table().to_string()) {
            failures.push(format!(
                "{}: the filter refused the table: {:?}",
                case.name,
                sim.take_logs()
            ));
            continue;
        }
        for probe in &case.probes {
            if let Some(why) = failure(&mut sim, case, probe) {
                failures.push(format!("{}: {probe}: {why}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
