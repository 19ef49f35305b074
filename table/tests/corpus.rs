//! The routing corpus (`tests/cases/routing.json`: ROUTING.md §4, which rule wins) through the
//! native matcher: each case's table, in the order the compiler would write it, must give every
//! request its expected winner. The same corpus runs through the filter under host-sim and in Envoy.

use switchyard_cases::{routing_cases, Case, Probe};
use switchyard_table::{RouteTable, SimpleRequest};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn request(probe: &Probe) -> SimpleRequest {
    let request = SimpleRequest::get(probe.authority(), probe.path()).method(&probe.method);
    probe
        .headers
        .iter()
        .fold(request, |request, (name, value)| request.header(name, value))
}

/// The failures of one case, each naming the case, the request, and what won instead.
fn failures(case: &Case) -> Vec<String> {
    let table = match RouteTable::from_json(case.table().to_string().as_bytes()) {
        Ok(table) => table,
        Err(e) => return vec![format!("{}: the table is refused: {e}", case.name)],
    };
    case.probes
        .iter()
        .filter_map(|probe| {
            let got = table.route(&request(probe), 0).map(|d| d.rule.name().to_owned());
            (got != probe.want).then(|| format!("{}: {probe}: want {:?}, got {got:?}", case.name, probe.want))
        })
        .collect()
}

/// Every case of the corpus routes every request to its expected winner.
#[test]
fn every_routing_case_picks_its_winner_natively() {
    let cases = routing_cases();
    assert!(cases.len() >= 30, "the corpus lost cases: {}", cases.len());
    let failures: Vec<String> = cases.iter().flat_map(failures).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A table counts its distinct hosts without being indexed exactly as its index does (the sidecar
/// logs the count of every push without indexing the table): every corpus case, and one whose host
/// names differ only in case.
#[test]
fn a_table_counts_its_hosts_as_its_index_does() {
    use switchyard_table::TableSpec;
    let mut tables: Vec<TableSpec> = routing_cases()
        .iter()
        .map(|case| TableSpec::from_value(case.table()).unwrap())
        .collect();
    let mut mixed = tables.iter().find(|t| t.rules.len() >= 2).cloned().unwrap();
    mixed.rules[0].host = Some("Shop.Example.com".to_owned());
    mixed.rules[1].host = Some("shop.example.COM".to_owned());
    tables.push(mixed);
    for spec in tables {
        let counted = spec.host_count();
        let indexed = RouteTable::try_from(spec).unwrap().host_count();
        assert_eq!(counted, indexed);
    }
}
