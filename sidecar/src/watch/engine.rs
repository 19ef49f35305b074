//! The rebuild step shared by every source: a [`Snapshot`] → the compiler → the sinks, only when
//! the table's content changed, logging the push count, the table's content hash (its
//! `generation`) and what changed.
//!
//! The engine keeps one [`Incremental`] compiler: a change of a few Ingresses compiles only the
//! hosts they touch, anything else everything ([`switchyard_compiler::incremental`]); the result
//! is the same table, byte for byte. Each rebuild logs the path it took, how many objects and hosts
//! it compiled and how long that took, and counts it in `switchyard_compiles_by_path_total`.
//!
//! A push that fails anywhere is retried (the loop asks [`Engine::needs_retry`]); the table that
//! counts as pushed is the last one every sink took or refused. A sink refuses a table too large for
//! it ([`PushError::TooLarge`]): logged once, kept in `/status` and `/readyz` until that sink takes a
//! table again, counted in `switchyard_push_refused_total`, and not retried until the table changes;
//! that sink keeps its last good table, the others get the new one.
//!
//! With `--leader-elect`, the sinks that write to the cluster (Istio) take tables only while this
//! replica leads ([`Leader`]); a follower compiles and writes its file sinks as the leader does, and
//! the table counts as pushed once those took it. On becoming the leader it pushes the table it
//! holds to the cluster sinks at once ([`Engine::take_over`]), with no cold start.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use switchyard_table::TableSpec;
use tracing::{debug, error, info, warn};

use crate::flags::{TableEncoder, TableEncoding};
use crate::watch::diff::{diff, Compared};
use crate::watch::drift::Followed;
use crate::watch::l4::L4Sinks;
use crate::watch::leader::Leader;
use crate::watch::sinks::{PushError, Sink};
use crate::watch::source::{Snapshot, SourceError};
use crate::watch::state::{PushRecord, Shared, SinkOutcome, SinkPush};
use switchyard_compiler::incremental::{Incremental, Path};
use switchyard_compiler::model::Options;
use switchyard_compiler::status::{ResourceStatus, Status};

/// The warning for a cluster where every Ingress and HTTPProxy was ignored by class (the table is
/// empty though there is input: the flags and the IngressClasses disagree, most likely).
pub fn all_ignored_by_class(statuses: &[ResourceStatus], options: &Options) -> Option<String> {
    let routable: Vec<&ResourceStatus> = statuses.iter().filter(|s| s.kind.has_class()).collect();
    if routable.is_empty() || routable.iter().any(|s| s.status != Status::Ignored) {
        return None;
    }
    let wanted = if options.ingress_class.is_empty() {
        format!(
            "resources without a class annotation, or an IngressClass with spec.controller {:?}",
            options.controller_name
        )
    } else {
        format!(
            "resources of class {:?}, whose IngressClass has spec.controller {:?}",
            options.ingress_class,
            format!("{}/{}", options.controller_name, options.ingress_class)
        )
    };
    Some(format!(
        "every Ingress and HTTPProxy ({}) is ignored by class, so the table is empty: this controller serves {wanted} \
         (see /status for each resource's reason)",
        routable.len()
    ))
}

/// A table to push (or pushed), with the compiler's content hash of each rule when it gave them:
/// they make the push diff of a big table cheap ([`Compared`]).
#[derive(Debug, Clone)]
struct Pushable {
    table: Arc<TableSpec>,
    rule_hashes: Option<Arc<[u64]>>,
}

impl Pushable {
    fn compared(&self) -> Compared<'_> {
        Compared {
            table: &self.table,
            rule_hashes: self.rule_hashes.as_deref(),
        }
    }
}

/// Compiles and pushes.
pub struct Engine {
    compiler: Incremental,
    sinks: Vec<Sink>,
    state: Shared,
    pushed: Option<Pushable>,
    retry: Option<Pushable>,
    /// The sinks refusing the newest table as too large, with the table each still holds (`None`:
    /// none of ours), to apply again if its object is deleted or changed by someone else meanwhile.
    kept: BTreeMap<String, Option<Arc<TableSpec>>>,
    /// How the ECDS file and the Istio objects carry the table (`--table-encoding`): one encoder for
    /// every sink, which reuses what did not change since the table it encoded last.
    encoder: TableEncoder,
    /// Whether the cluster sinks may be written now.
    leader: Leader,
    /// Where the TransportServers' L4 routes go (pushed when they change, apart from the table).
    l4: L4Sinks,
}

impl Engine {
    /// An engine pushing to `sinks`.
    pub fn new(options: Options, sinks: Vec<Sink>, state: Shared) -> Engine {
        Engine {
            compiler: Incremental::new(options),
            sinks,
            state,
            pushed: None,
            retry: None,
            kept: BTreeMap::new(),
            encoder: TableEncoding::default().encoder(),
            leader: Leader::always(),
            l4: L4Sinks::default(),
        }
    }

    /// The same engine, pushing the L4 routes to `l4`.
    pub fn with_l4(self, l4: L4Sinks) -> Engine {
        self.state.lock().l4_sinks = l4.names();
        Engine { l4, ..self }
    }

    /// The same engine, writing its cluster sinks only while `leader` says so.
    pub fn led_by(self, leader: Leader) -> Engine {
        Engine { leader, ..self }
    }

    /// The gate of its cluster sinks.
    pub fn leader(&self) -> &Leader {
        &self.leader
    }

    /// Whether `sink` may be written now: file sinks always, cluster sinks while leading.
    fn writable(&self, sink: &Sink) -> bool {
        !sink.writes_to_cluster() || self.leader.is_leader()
    }

    /// Just became the leader: pushes the table it holds to the cluster sinks (a failure is
    /// retried like any failed push).
    pub async fn take_over(&mut self) {
        self.l4.take_over(&self.leader, &self.state).await;
        let Some(held) = self.pushed.clone() else { return };
        let table = held.table.clone();
        let config = match self.encoder.plugin_config(&table) {
            Ok(config) => config,
            Err(e) => return self.not_pushed(&table, &e),
        };
        let mut failures = Vec::new();
        for i in 0..self.sinks.len() {
            let sink = &self.sinks[i];
            if !sink.writes_to_cluster() || !self.leader.is_leader() {
                continue;
            }
            let (name, result) = (sink.name(), sink.push(&config, "").await);
            if result.is_ok() {
                info!(sink = %name, table = %table.generation, "leading: pushed the table held");
            }
            if let Err(e) = self.record(&name, &table, true, result) {
                failures.push(e);
            }
        }
        if !failures.is_empty() {
            self.state.lock().push_error = Some(failures.join("; "));
            self.retry = Some(held);
        }
    }

    /// The engine, writing the plugin configuration of its sinks in `encoding`.
    pub fn with_encoding(mut self, encoding: TableEncoding) -> Engine {
        self.encoder = encoding.encoder();
        self
    }

    /// The compiler's options.
    pub fn options(&self) -> &Options {
        self.compiler.options()
    }

    /// The state it records into.
    pub fn state(&self) -> Shared {
        self.state.clone()
    }

    /// Whether the last push failed and should be tried again.
    pub fn needs_retry(&self) -> bool {
        self.retry.is_some() || self.l4.needs_retry()
    }

    /// Compiles `input`, records the status, and pushes the table if its content changed. Returns the
    /// statuses (the compiler's and the source's), for status write-back.
    pub async fn rebuild(&mut self, input: &Snapshot) -> Vec<ResourceStatus> {
        let started = Instant::now();
        let update = self.compiler.update(&input.objects);
        let seconds = started.elapsed().as_secs_f64();
        let (update, compiled) = match (update, self.compiler.compiled()) {
            (Ok(update), Some(compiled)) => (update, compiled),
            (result, _) => {
                // Never expected (only serialising can fail): keep serving, and reporting, the last table.
                let why = result
                    .err()
                    .map_or_else(|| "no compilation".to_owned(), |e| e.to_string());
                self.state.internal_error(&format!("{why}; nothing pushed"));
                return self.state.lock().statuses.clone();
            }
        };
        let ms = seconds * 1e3;
        match update.path {
            Path::Unchanged => debug!(ms, "compiled: unchanged input"),
            Path::Incremental => info!(
                path = "incremental",
                ingresses = update.objects,
                hosts = update.hosts,
                ms,
                "compiled the Ingresses that changed and their hosts"
            ),
            Path::Full(why) => info!(
                path = "full",
                ingresses = update.objects,
                hosts = update.hosts,
                ms,
                "compiled everything: {}",
                why.as_str()
            ),
        }
        let mut statuses = compiled.statuses.clone();
        statuses.extend(input.statuses.iter().cloned());
        let class_warning = all_ignored_by_class(&statuses, self.compiler.options());
        let new_errors: Vec<SourceError> = {
            let mut state = self.state.lock();
            match (&state.class_warning, &class_warning) {
                (None, Some(warning)) => warn!("{warning}"),
                (Some(_), None) => info!("some resources are ours again: the table is no longer empty by class"),
                _ => {}
            }
            state.class_warning = class_warning;
            let new_errors = input
                .errors
                .iter()
                .filter(|e| !state.errors.contains(e))
                .cloned()
                .collect();
            state.compiles += 1;
            *state.compiles_by_path.entry(update.path.as_str()).or_default() += 1;
            state.compile_seconds_total += seconds;
            state.compile_seconds_last = seconds;
            state.statuses = statuses.clone();
            state.errors = input.errors.clone();
            state.warnings = input.warnings.clone();
            new_errors
        };
        // Each error once, when it appears (it stays in /status until fixed).
        for e in &new_errors {
            warn!(source = %e.source, "{}", e.message);
        }
        // With a failed push pending, some sinks may hold a newer table than `pushed`: push anyway.
        let unchanged = self.retry.is_none()
            && self
                .pushed
                .as_ref()
                .is_some_and(|p| p.table.generation == compiled.table.generation);
        let l4 = compiled.l4.clone();
        if unchanged {
            debug!(table = %compiled.table.generation, seconds, "recompiled: table unchanged, nothing pushed");
        } else {
            let next = Pushable {
                table: Arc::new(compiled.table.clone()),
                rule_hashes: Some(Arc::from(self.compiler.rule_hashes())),
            };
            self.push(next).await;
        }
        self.l4.push(&l4, &self.leader, &self.state).await;
        statuses
    }

    /// The objects the sinks write to the cluster, for [`crate::watch::drift`] to follow: the Istio
    /// sinks' and the L4 Istio sink's.
    pub fn followed(&self) -> Vec<Followed> {
        let istio = self.sinks.iter().filter_map(|s| match s {
            Sink::Istio(istio) => Some(istio.followed()),
            _ => None,
        });
        istio.chain(self.l4.followed()).collect()
    }

    /// Pushes the table last pushed again to the sink named `name` (or, when it refused that one as
    /// too large, the table it kept), whose object was deleted or changed by someone else; a failure
    /// is retried like any failed push.
    pub async fn repair(&mut self, name: &str) {
        // The leader repairs; a follower's drift is the leader's to handle.
        if !self.leader.is_leader() || self.l4.repair(name, &self.leader, &self.state).await {
            return;
        }
        let (table, newest) = match self.kept.get(name) {
            Some(kept) => (kept.clone(), false),
            None => (self.pushed.as_ref().map(|p| p.table.clone()), true),
        };
        let Some(table) = table else { return };
        let Some(sink) = self.sinks.iter().find(|s| s.name() == name) else {
            return;
        };
        let result = match self.encoder.plugin_config(&table) {
            Ok(config) => sink.push(&config, "").await,
            Err(e) => Err(PushError::Failed(e)),
        };
        if let Ok(()) = result {
            info!(sink = %name, table = %table.generation, "deleted or changed by someone else: applied again");
        }
        if let Err(e) = self.record(name, &table, newest, result) {
            self.state.lock().push_error = Some(e);
            // A retry pushes to every sink: the newest table (a refusing sink refuses it again).
            self.retry = self.pushed.clone();
        }
    }

    /// Counts and logs one sink's answer; `Err` (what to report) when the push is to be retried.
    /// `newest`: `table` is the newest table (not a refusing sink's kept one, applied again).
    fn record(
        &mut self,
        name: &str,
        table: &TableSpec,
        newest: bool,
        result: Result<(), PushError>,
    ) -> Result<(), String> {
        match &result {
            Ok(()) if !newest => {}
            Ok(()) => drop(self.kept.remove(name)),
            // Refused first now: it holds the table every sink took last.
            Err(PushError::TooLarge(_)) => {
                if !self.kept.contains_key(name) {
                    self.kept
                        .insert(name.to_owned(), self.pushed.as_ref().map(|p| p.table.clone()));
                }
            }
            Err(PushError::Failed(_)) => {}
        }
        let mut state = self.state.lock();
        if !matches!(result, Err(PushError::Failed(_))) {
            state.sink_answered(name);
        }
        let count = state.pushes.entry(name.to_owned()).or_default();
        match result {
            Ok(()) => {
                count.ok += 1;
                if newest && state.refused.remove(name).is_some() {
                    info!(sink = %name, table = %table.generation, "takes tables again");
                }
                Ok(())
            }
            Err(PushError::TooLarge(e)) => {
                count.refused += 1;
                error!(sink = %name, table = %table.generation, "refused: {e}");
                state
                    .refused
                    .insert(name.to_owned(), format!("table {}: {e}", table.generation));
                Ok(())
            }
            Err(PushError::Failed(e)) => {
                count.failed += 1;
                state.sink_failed(name, &format!("table {}: push", table.generation), &e.to_string());
                Err(format!("{name}: {e}"))
            }
        }
    }

    /// Pushes the table whose push failed last time again.
    pub async fn retry(&mut self) {
        if let Some(next) = self.retry.take() {
            self.push(next).await;
        }
        self.l4.retry(&self.leader, &self.state).await;
    }

    /// A table that cannot be pushed at all: logged, counted, and `/readyz` says so until a push
    /// succeeds.
    fn not_pushed(&self, table: &TableSpec, why: &str) {
        self.state
            .internal_error(&format!("table {}: {why}; not pushed", table.generation));
        self.state.lock().push_error = Some(format!("internal error: {why}"));
    }

    /// Pushes `next` to every sink this replica writes.
    async fn push(&mut self, next: Pushable) {
        let table = next.table.clone();
        // The compiler validated every rule with the table's own checks; the table is indexed only
        // when the dashboard asks for it (`Shared::live_index`), not on every push.
        let hosts = table.host_count();
        // The indented JSON only for a table file (`-o`): 36 MB for 100,000 rules, some 100 ms.
        let pretty = match self.sinks.iter().any(|s| matches!(s, Sink::TableFile(_))) {
            true => TableEncoding::Json
                .file_text(&table)
                .map_err(|e| format!("cannot serialize the table: {e}")),
            false => Ok(String::new()),
        };
        let (config, pretty) = match (self.encoder.plugin_config(&table), pretty) {
            (Ok(config), Ok(pretty)) => (config, pretty),
            (Err(e), _) | (_, Err(e)) => return self.not_pushed(&table, &e),
        };
        let mut failures = Vec::new();
        let mut results = Vec::with_capacity(self.sinks.len());
        for sink in &self.sinks {
            if self.writable(sink) {
                results.push((sink.name(), sink.push(&config, &pretty).await));
            }
        }
        let sinks = results.len();
        let mut outcomes = Vec::with_capacity(sinks);
        for (name, result) in results {
            let outcome = match &result {
                Err(PushError::TooLarge(_)) => SinkOutcome::Refused,
                _ => SinkOutcome::Ok,
            };
            match self.record(&name, &table, true, result) {
                Ok(()) => outcomes.push(SinkPush { sink: name, outcome }),
                Err(e) => failures.push(e),
            }
        }
        let mut state = self.state.lock();
        if !failures.is_empty() {
            state.push_error = Some(failures.join("; "));
            self.retry = Some(next);
            return;
        }
        let change = diff(self.pushed.as_ref().map(Pushable::compared), next.compared()).summary();
        state.tables_pushed += 1;
        state.table_hash = table.generation.clone();
        state.rules = table.rules.len();
        state.hosts = hosts;
        state.push_error = None;
        let record = PushRecord {
            generation: state.tables_pushed,
            table: table.generation.clone(),
            at_unix_ms: unix_ms(SystemTime::now()),
            rules: table.rules.len(),
            hosts,
            change: change.clone(),
            sinks: outcomes,
        };
        state.log_push(record);
        info!(
            generation = state.tables_pushed,
            table = %table.generation,
            rules = table.rules.len(),
            hosts,
            sinks,
            "{}: {change}",
            // A follower whose sinks all write to the cluster only holds the table, for a take-over.
            match (sinks, self.sinks.is_empty()) {
                (_, true) => "compiled (no table sinks)",
                (0, false) => "compiled, held for a take-over (following)",
                _ => "pushed",
            },
        );
        state.table = Some(table.clone());
        drop(state);
        self.pushed = Some(next);
        self.retry = None;
    }
}

/// Milliseconds since the Unix epoch (0 for a clock set before it).
fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_compiler::load::{parse_text, Loaded};

    const INGRESS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n  - host: HOST\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";

    fn input(host: &str) -> Snapshot {
        let mut loaded = Loaded::default();
        parse_text(&INGRESS.replace("HOST", host), "web.yaml", &mut loaded).unwrap();
        Snapshot {
            objects: std::sync::Arc::new(loaded.objects),
            ..Snapshot::default()
        }
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn the_same_table_is_pushed_once() {
        let dir = tempfile::tempdir().unwrap();
        let state = Shared::default();
        let mut engine = Engine::new(
            Options::default(),
            vec![Sink::TableFile(dir.path().join("t.json"))],
            state.clone(),
        );
        block_on(async {
            engine.rebuild(&input("a.example")).await;
            engine.rebuild(&input("a.example")).await;
            assert_eq!(state.lock().tables_pushed, 1);
            engine.rebuild(&input("b.example")).await;
        });
        let state = state.lock();
        assert_eq!((state.tables_pushed, state.compiles), (2, 3));
        assert_eq!(state.pushes.values().map(|c| c.ok).sum::<u64>(), 2);
    }

    /// `ingresses` Ingresses of 50 paths each over 10 hosts; Ingress `changed` routes to other services.
    fn cluster(ingresses: usize, changed: Option<usize>) -> Snapshot {
        let mut loaded = Loaded::default();
        for i in 0..ingresses {
            let service = if changed == Some(i) { "other" } else { "web" };
            let mut yaml = format!(
                "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: app{i}, namespace: shop}}\nspec:\n  rules:\n  - host: h{}.example\n    http:\n      paths:\n",
                i % 10
            );
            for j in 0..50 {
                yaml.push_str(&format!(
                    "      - {{path: /app{i}/p{j}, pathType: Prefix, backend: {{service: {{name: {service}{j}, port: {{number: 80}}}}}}}}\n"
                ));
            }
            parse_text(&yaml, &format!("app{i}.yaml"), &mut loaded).unwrap();
        }
        Snapshot {
            objects: std::sync::Arc::new(loaded.objects),
            ..Snapshot::default()
        }
    }

    /// The engine keeps one encoder for its sinks, which reuses the chunks of the last table: what
    /// the ECDS file gets is, table after table, exactly a fresh encoding of each.
    #[test]
    fn each_table_reaches_the_sinks_exactly_as_a_fresh_encoding_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let ecds = crate::watch::ecds::EcdsFile {
            path: dir.path().join("ecds.json"),
            filter_name: "switchyard".into(),
            wasm: "/w/f.wasm".into(),
            runtime: "envoy.wasm.runtime.v8".into(),
            admin: None,
        };
        let state = Shared::default();
        let mut engine = Engine::new(Options::default(), vec![Sink::Ecds(ecds.clone())], state.clone());
        let inputs = [
            cluster(40, None),
            cluster(40, Some(17)),
            cluster(41, Some(17)),
            cluster(39, None),
            cluster(40, Some(3)),
            input("a.example"),
            cluster(40, None),
        ];
        block_on(async {
            for (i, snapshot) in inputs.iter().enumerate() {
                engine.rebuild(snapshot).await;
                // The engine compiles incrementally; a full compile is the oracle.
                let compiled = switchyard_compiler::compile(&snapshot.objects, &Options::default()).unwrap();
                let fresh = TableEncoding::Compact.plugin_config(&compiled.table).unwrap();
                let written = std::fs::read_to_string(&ecds.path).unwrap();
                assert!(
                    written == ecds.document(&fresh).unwrap(),
                    "table {i}: not a fresh encoding's text"
                );
            }
        });
        assert_eq!(state.lock().tables_pushed, inputs.len() as u64);
    }

    #[test]
    fn each_rebuild_counts_the_path_its_compile_took_and_the_table_is_a_full_compiles() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.json");
        let state = Shared::default();
        let mut engine = Engine::new(Options::default(), vec![Sink::TableFile(file.clone())], state.clone());
        block_on(async {
            engine.rebuild(&input("a.example")).await;
            engine.rebuild(&input("a.example")).await;
            engine.rebuild(&input("b.example")).await;
        });
        let state = state.lock();
        let paths: Vec<(&str, u64)> = state.compiles_by_path.iter().map(|(p, n)| (*p, *n)).collect();
        assert_eq!(paths, [("full", 1), ("incremental", 1), ("unchanged", 1)]);
        let metrics = crate::watch::metrics::render(&state);
        assert!(
            metrics.contains("switchyard_compiles_by_path_total{path=\"incremental\"} 1"),
            "{metrics}"
        );
        let full = switchyard_compiler::compile(&input("b.example").objects, &Options::default()).unwrap();
        let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(written, serde_json::to_value(&full.table).unwrap());
    }

    #[test]
    fn a_failed_push_is_retried_and_readiness_says_so_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("later").join("t.json");
        let state = Shared::default();
        let mut engine = Engine::new(Options::default(), vec![Sink::TableFile(target.clone())], state.clone());
        block_on(engine.rebuild(&input("a.example")));
        assert!(engine.needs_retry());
        let reason = state.lock().readiness().unwrap_err();
        assert!(
            reason.contains("the last push failed") && reason.contains("later"),
            "{reason}"
        );
        assert_eq!(state.lock().tables_pushed, 0);

        std::fs::create_dir(dir.path().join("later")).unwrap();
        block_on(engine.retry());
        assert!(!engine.needs_retry());
        assert!(std::fs::read_to_string(&target).unwrap().contains("a.example"));
        let state = state.lock();
        assert_eq!(state.tables_pushed, 1);
        assert!(state.readiness().is_ok(), "{:?}", state.readiness());
        let count = state.pushes.values().next().copied().unwrap();
        assert_eq!((count.ok, count.failed), (1, 1));
    }

    #[test]
    fn going_back_to_the_pushed_table_after_a_partial_failure_pushes_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let (good, flaky_dir) = (dir.path().join("good.json"), dir.path().join("flaky"));
        std::fs::create_dir(&flaky_dir).unwrap();
        let sinks = vec![Sink::TableFile(good.clone()), Sink::TableFile(flaky_dir.join("t.json"))];
        let state = Shared::default();
        let mut engine = Engine::new(Options::default(), sinks, state.clone());
        block_on(async {
            engine.rebuild(&input("a.example")).await;
            std::fs::remove_dir_all(&flaky_dir).unwrap();
            // b.example reaches the first sink only.
            engine.rebuild(&input("b.example")).await;
            assert!(std::fs::read_to_string(&good).unwrap().contains("b.example"));
            // Back to a.example, the table counted as pushed: the first sink must get it again.
            engine.rebuild(&input("a.example")).await;
        });
        assert!(
            std::fs::read_to_string(&good).unwrap().contains("a.example"),
            "the first sink was left on b.example"
        );
    }

    /// A WasmPlugin sink allowing 100 bytes, whose API server (a closed port) is never reached:
    /// the refusal comes before any request.
    fn tiny_wasmplugin() -> Sink {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let settings = crate::watch::istio::IstioSettings {
            selector: Default::default(),
            wasm_url: "oci://registry.example/switchyard:1".into(),
            wasm_path: String::new(),
            filter_name: "switchyard".into(),
            runtime: "envoy.wasm.runtime.v8".into(),
        };
        let mut sink = crate::watch::istio::IstioSink::new(
            kube::Client::try_from(config).unwrap(),
            crate::watch::istio::IstioKind::WasmPlugin,
            "istio-system".into(),
            "switchyard".into(),
            settings,
        );
        sink.max_bytes = 100;
        Sink::Istio(sink)
    }

    /// An engine pushing to a WasmPlugin that refuses every table (100 bytes at most) and to `file`.
    fn refusing_and_file(file: &std::path::Path, state: &Shared) -> Engine {
        let sinks = vec![tiny_wasmplugin(), Sink::TableFile(file.to_path_buf())];
        Engine::new(Options::default(), sinks, state.clone())
    }

    #[test]
    fn a_follower_writes_its_files_not_the_cluster_and_takes_over_with_the_table_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.json");
        let state = Shared::default();
        let leader = Leader::elected();
        let plugin = "wasmplugin istio-system/switchyard";
        block_on(async {
            let sinks = vec![tiny_wasmplugin(), Sink::TableFile(file.clone())];
            let mut engine = Engine::new(Options::default(), sinks, state.clone()).led_by(leader.clone());
            engine.rebuild(&input("a.example")).await;
            assert!(std::fs::read_to_string(&file).unwrap().contains("a.example"));
            {
                let state = state.lock();
                assert_eq!(state.tables_pushed, 1, "taken by every sink this replica writes");
                assert!(!state.pushes.contains_key(plugin), "{:?}", state.pushes);
                assert!(state.readiness().is_ok(), "{:?}", state.readiness());
            }
            engine.repair(plugin).await;
            assert!(!state.lock().pushes.contains_key(plugin), "a follower repairs nothing");
            // Leading: the table held goes to the cluster sink (refused there before any request:
            // this one allows 100 bytes), with no rebuild.
            leader.lead_until(std::time::Instant::now() + std::time::Duration::from_secs(60));
            engine.take_over().await;
            assert_eq!(state.lock().pushes[plugin].refused, 1);
        });
    }

    #[test]
    fn a_table_too_large_for_a_sink_is_refused_there_only_and_not_retried_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.json");
        let state = Shared::default();
        block_on(async {
            let mut engine = refusing_and_file(&file, &state);
            engine.rebuild(&input("a.example")).await;
            assert!(!engine.needs_retry(), "a refused table is not retried");
            assert!(std::fs::read_to_string(&file).unwrap().contains("a.example"));
            {
                let state = state.lock();
                assert_eq!(state.tables_pushed, 1);
                let reason = state.readiness().unwrap_err();
                assert!(
                    reason.contains("wasmplugin istio-system/switchyard refused the newest table")
                        && reason.contains("limit of 100 bytes"),
                    "{reason}"
                );
                let count = state.pushes["wasmplugin istio-system/switchyard"];
                assert_eq!((count.ok, count.failed, count.refused), (0, 0, 1));
            }
            // The same table: not tried again.
            engine.rebuild(&input("a.example")).await;
            assert_eq!(state.lock().pushes["wasmplugin istio-system/switchyard"].refused, 1);
            // A new table is tried again (and refused again: still too large).
            engine.rebuild(&input("b.example")).await;
            assert_eq!(state.lock().pushes["wasmplugin istio-system/switchyard"].refused, 2);
            assert!(std::fs::read_to_string(&file).unwrap().contains("b.example"));
        });
    }

    #[test]
    fn the_push_log_says_what_each_sink_did_with_each_table_and_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.json");
        let shared = Shared::default();
        block_on(async {
            let mut engine = refusing_and_file(&file, &shared);
            engine.rebuild(&input("a.example")).await;
            engine.rebuild(&input("a.example")).await;
            engine.rebuild(&input("b.example")).await;
        });
        let state = shared.lock();
        let table_hash = state.table_hash.clone();
        let log: Vec<&PushRecord> = state.push_log.iter().collect();
        assert_eq!(
            log.iter().map(|p| p.generation).collect::<Vec<_>>(),
            [1, 2],
            "an unchanged table is not logged"
        );
        let outcomes: Vec<(&str, SinkOutcome)> = log[1].sinks.iter().map(|s| (s.sink.as_str(), s.outcome)).collect();
        assert_eq!(
            outcomes,
            [
                ("wasmplugin istio-system/switchyard", SinkOutcome::Refused),
                (format!("table-file {}", file.display()).as_str(), SinkOutcome::Ok)
            ]
        );
        assert_eq!(log[1].table, state.table_hash);
        assert!(
            log[1]
                .change
                .ends_with("hosts gained: b.example; hosts lost: a.example"),
            "{}",
            log[1].change
        );
        drop(state);
        let (live, pushed) = shared.live_index().expect("a table was pushed").expect("it validates");
        assert_eq!((live.generation(), pushed), (table_hash.as_str(), 2));
        let state = shared.lock();
        let status = state.status_json();
        assert_eq!(status["push_log"][0]["generation"], 2, "newest first in /status");
    }
}
