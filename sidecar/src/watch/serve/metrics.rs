//! `/metrics`: the state in Prometheus' text exposition format (version 0.0.4), written by hand:
//! a dozen gauges and counters do not need a metrics library.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::watch::state::State;

/// Renders the metrics. Deterministic: labels sorted.
pub fn render(state: &State) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, String)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    };
    let one = |value: String| vec![(String::new(), value)];
    let pushes: Vec<(String, String)> = state
        .pushes
        .iter()
        .map(|(sink, c)| (format!("{{sink=\"{}\"}}", escape(sink)), c.ok.to_string()))
        .collect();
    let failures: Vec<(String, String)> = state
        .pushes
        .iter()
        .map(|(sink, c)| (format!("{{sink=\"{}\"}}", escape(sink)), c.failed.to_string()))
        .collect();
    let refused: Vec<(String, String)> = state
        .pushes
        .iter()
        .map(|(sink, c)| {
            let labels = format!("{{reason=\"too_large\",sink=\"{}\"}}", escape(sink));
            (labels, c.refused.to_string())
        })
        .collect();
    metric("switchyard_pushes_total", "counter", "Tables pushed, by sink.", &pushes);
    metric(
        "switchyard_push_failures_total",
        "counter",
        "Pushes that failed (and were retried), by sink.",
        &failures,
    );
    metric(
        "switchyard_push_refused_total",
        "counter",
        "Tables a sink refused (not retried until the table changes), by sink and reason.",
        &refused,
    );
    metric(
        "switchyard_envoy_refused_total",
        "counter",
        "Endpoints updates Envoy refused over ADS (--ads-listen); it keeps the last good ones.",
        &one(state.envoy_refused.0.to_string()),
    );
    metric(
        "switchyard_table_generation",
        "gauge",
        "Distinct tables pushed since start.",
        &one(state.tables_pushed.to_string()),
    );
    metric(
        "switchyard_compiles_total",
        "counter",
        "Compilations run.",
        &one(state.compiles.to_string()),
    );
    let by_path: Vec<(String, String)> = state
        .compiles_by_path
        .iter()
        .map(|(path, n)| (format!("{{path=\"{path}\"}}"), n.to_string()))
        .collect();
    metric(
        "switchyard_compiles_by_path_total",
        "counter",
        "Compilations by the path they took: full (everything), incremental (the Ingresses that changed and their hosts), unchanged (nothing to compile).",
        &by_path,
    );
    metric(
        "switchyard_compile_seconds_total",
        "counter",
        "Seconds spent compiling.",
        &one(format!("{:.6}", state.compile_seconds_total)),
    );
    metric(
        "switchyard_compile_seconds_last",
        "gauge",
        "Seconds the last compilation took.",
        &one(format!("{:.6}", state.compile_seconds_last)),
    );
    metric(
        "switchyard_rules",
        "gauge",
        "Rules in the table last pushed.",
        &one(state.rules.to_string()),
    );
    metric(
        "switchyard_hosts",
        "gauge",
        "Distinct hosts in the table last pushed.",
        &one(state.hosts.to_string()),
    );
    let mut by_status: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for s in state.statuses.iter() {
        *by_status.entry((s.kind.as_str(), s.status.as_str())).or_default() += 1;
    }
    let resources: Vec<(String, String)> = by_status
        .iter()
        .map(|((kind, status), n)| (format!("{{kind=\"{kind}\",status=\"{status}\"}}"), n.to_string()))
        .collect();
    metric(
        "switchyard_resources",
        "gauge",
        "Resources by kind and status, from the last compilation.",
        &resources,
    );
    metric(
        "switchyard_source_errors",
        "gauge",
        "Inputs that cannot be read now (manifests that do not parse).",
        &one(state.errors.len().to_string()),
    );
    metric(
        "switchyard_sources_down",
        "gauge",
        "Sources that are down now.",
        &one(state.down.len().to_string()),
    );
    metric(
        "switchyard_ready",
        "gauge",
        "1 when /readyz answers 200.",
        &one(u8::from(state.readiness().is_ok()).to_string()),
    );
    metric(
        "switchyard_leader",
        "gauge",
        "1 when this replica writes status, events, load balancers and Istio objects (always without --leader-elect).",
        &one(u8::from(state.leadership.leading).to_string()),
    );
    let writes = vec![
        ("{result=\"ok\"}".to_owned(), state.status_writes.ok.to_string()),
        ("{result=\"failed\"}".to_owned(), state.status_writes.failed.to_string()),
    ];
    metric(
        "switchyard_status_writes_total",
        "counter",
        "Status writes to the API server (Kubernetes mode).",
        &writes,
    );
    metric(
        "switchyard_internal_errors_total",
        "counter",
        "Internal errors (a table or document that does not serialize or validate): logged, nothing pushed.",
        &one(state.internal_errors.to_string()),
    );
    out
}

fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::state::PushCount;
    use switchyard_compiler::status::{ResourceStatus, Status};

    #[test]
    fn pushes_rules_and_resources_by_status_are_exposed() {
        let mut state = State {
            tables_pushed: 2,
            rules: 5,
            ..State::default()
        };
        state.pushes.insert(
            "ecds-file".into(),
            PushCount {
                ok: 2,
                failed: 1,
                refused: 3,
            },
        );
        let status = |name: &str, status| ResourceStatus {
            nginx: None,
            kind: switchyard_compiler::objects::Kind::Ingress,
            namespace: "a".into(),
            name: name.into(),
            status,
            conditions: vec![],
        };
        state.statuses = vec![
            status("x", Status::Accepted),
            status("y", Status::Accepted),
            status("z", Status::Rejected),
        ]
        .into();
        let text = render(&state);
        for line in [
            "switchyard_pushes_total{sink=\"ecds-file\"} 2",
            "switchyard_push_failures_total{sink=\"ecds-file\"} 1",
            "switchyard_push_refused_total{reason=\"too_large\",sink=\"ecds-file\"} 3",
            "switchyard_rules 5",
            "switchyard_resources{kind=\"Ingress\",status=\"accepted\"} 2",
            "switchyard_resources{kind=\"Ingress\",status=\"rejected\"} 1",
            "switchyard_ready 1",
            "switchyard_leader 1",
            "switchyard_internal_errors_total 0",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
    }
}
