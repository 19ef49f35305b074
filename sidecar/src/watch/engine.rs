//! The rebuild step shared by every source: a [`Snapshot`] → the compiler → the sinks, each only
//! when its part of the output changed, logging the push count, the table's content hash (its
//! `generation`) and what changed.
//!
//! The engine keeps one [`Incremental`] compiler: a change of a few Ingresses compiles only the
//! hosts they touch, anything else everything ([`switchyard_compiler::incremental`]); the result
//! is the same table, byte for byte. Each rebuild logs the path it took, how many objects and hosts
//! it compiled and how long that took, and counts it in `switchyard_compiles_by_path_total`.
//!
//! Each rebuild hands the whole [`Output`] (the table and the L4 routes) to the sinks
//! ([`Sinks`]: each is pushed only the part it does not hold; a failed push is retried, the loop
//! asks [`Engine::needs_retry`]). The table that counts as pushed is the last one every sink this
//! replica writes took or refused: the engine counts it, logs it with what changed, and keeps it in
//! the push log. A sink refuses a table too large for it
//! ([`crate::watch::sink::error::PushError::TooLarge`]): logged once, kept in `/status` and `/readyz` until
//! that sink takes a table again, counted in `switchyard_push_refused_total`, and not retried until
//! the table changes; that sink keeps its last good table, the others get the new one.
//!
//! ingress-nginx's ConfigMap (`--ingress-nginx-configmap`, ROUTING.md §7.8) is part of the
//! compiler's options, which an [`Incremental`] keeps for its life: when the source reads it with
//! other settings than the compiler has, the engine starts a new compiler with them
//! ([`Engine::rebuild`]), whose first update compiles everything.
//!
//! With `--leader-elect`, the sinks that write to the cluster (Istio) take tables only while this
//! replica leads ([`Leader`]); a follower compiles and writes its file sinks as the leader does, and
//! the table counts as pushed once those took it. On becoming the leader it pushes the output it
//! holds to the cluster sinks at once ([`Engine::take_over`]), with no cold start.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tracing::{debug, info, warn};

use crate::flags::TableEncoding;
use crate::watch::diff::{diff, Compared};
use crate::watch::lead::leader::Leader;
use crate::watch::sink::delivery::{Occasion, Round, Sinks};
use crate::watch::sink::drift::Followed;
use crate::watch::sink::https::HttpsOutput;
use crate::watch::sink::{Output, Part, Sink};
use crate::watch::source::Snapshot;
use crate::watch::state::{PushRecord, Shared, SourceError};
use switchyard_compiler::https::LastServed;
use switchyard_compiler::incremental::{Incremental, Path};
use switchyard_compiler::ingress_nginx::configmap::ControllerConfig;
use switchyard_compiler::l4::L4Routes;
use switchyard_compiler::model::Options;
use switchyard_compiler::status::{ResourceStatus, Status};
use switchyard_compiler::upstream::Upstream;
use switchyard_table::TableSpec;

/// The warning for a cluster where every resource of the kinds classes select (Ingress, HTTPProxy and
/// NGINX's kinds: [`Kind::has_class`](switchyard_compiler::objects::Kind::has_class)) was ignored by
/// class (the table is empty though there is input: the flags and the IngressClasses disagree, most
/// likely). It counts them by kind.
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
    // ROUTING.md §7: ingress-nginx's Ingresses are ours too, with --ingress-nginx-class.
    let wanted = match &options.ingress_nginx.class {
        Some(class) => format!(
            "{wanted}, and ingress-nginx's Ingresses of class {class:?} (an IngressClass with spec.controller {:?})",
            options.ingress_nginx.controller
        ),
        None => wanted,
    };
    let mut by_kind = std::collections::BTreeMap::new();
    for status in &routable {
        *by_kind.entry(status.kind).or_insert(0usize) += 1;
    }
    let counted: Vec<String> = by_kind.iter().map(|(kind, n)| format!("{n} {kind}")).collect();
    Some(format!(
        "every resource that classes select ({}) is ignored by class, so the table is empty: this controller serves \
         {wanted} (see /status for each resource's reason)",
        counted.join(", ")
    ))
}

/// Compiles and pushes.
pub struct Engine {
    compiler: Incremental,
    sinks: Sinks,
    state: Shared,
    /// The newest output compiled (what a retry, a take-over or a repair pushes).
    latest: Option<Arc<Output>>,
    /// The output whose table counts as pushed last (every sink this replica writes answered it).
    pushed: Option<Arc<Output>>,
    /// Whether the cluster sinks may be written now.
    leader: Leader,
    /// Why `--default-certificate` is not served, as last logged.
    default_problem: std::sync::Mutex<Option<String>>,
}

impl Engine {
    /// An engine pushing to `sinks`.
    pub fn new(options: Options, sinks: Vec<Sink>, state: Shared) -> Engine {
        let sinks = Sinks::new(sinks);
        state.lock().l4_sinks = sinks.names(Part::L4);
        Engine {
            compiler: Incremental::new(options),
            sinks,
            state,
            latest: None,
            pushed: None,
            leader: Leader::always(),
            default_problem: Default::default(),
        }
    }

    /// The same engine, writing its cluster sinks only while `leader` says so.
    pub fn led_by(self, leader: Leader) -> Engine {
        Engine { leader, ..self }
    }

    /// The gate of its cluster sinks.
    pub fn leader(&self) -> &Leader {
        &self.leader
    }

    /// Just became the leader: pushes the output it holds to the cluster sinks (a failure is
    /// retried like any failed push).
    pub async fn take_over(&mut self) {
        let Some(latest) = self.latest.clone() else { return };
        let round = self.sinks.take_over(&latest, &self.leader, &self.state).await;
        self.settle(&latest, round);
    }

    /// The engine, writing the plugin configuration of its sinks in `encoding`.
    pub fn with_encoding(self, encoding: TableEncoding) -> Engine {
        Engine {
            sinks: self.sinks.with_encoding(encoding),
            ..self
        }
    }

    /// The compiler's options.
    pub fn options(&self) -> &Options {
        self.compiler.options()
    }

    /// The state it records into.
    pub fn state(&self) -> Shared {
        self.state.clone()
    }

    /// ROUTING.md §8: each host's certificate, from the Secrets of `input` (the one warning of an
    /// unusable `--default-certificate` logged when it appears or changes).
    fn https(&self, input: &Snapshot, table: &TableSpec, statuses: &[ResourceStatus]) -> HttpsOutput {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        // What the last output served: the fallback of an ingress-nginx Secret updated to unusable
        // content (ROUTING.md §8.2).
        let empty = LastServed::default();
        let previous = self.latest.as_ref().map_or(&empty, |l| &l.https.certificates);
        let options = self.compiler.options();
        let plan = switchyard_compiler::https::plan(&input.objects, table, statuses, (now, options), previous);
        let mut logged = self.default_problem.lock().unwrap_or_else(|e| e.into_inner());
        if plan.default_problem != *logged {
            if let Some(problem) = &plan.default_problem {
                warn!("{problem}");
            }
            logged.clone_from(&plan.default_problem);
        }
        HttpsOutput::new(plan, &input.objects.secrets, previous)
    }

    /// The clusters of `table` and `l4` with their endpoints, when a sink gives Envoy its clusters
    /// (`--clusters-dir`), or the variant clusters beside Istio's (`--istio-clusters`); none
    /// otherwise. The clusters left out for a missing CA are logged when
    /// they change.
    fn upstream(&self, input: &Snapshot, table: &TableSpec, l4: &L4Routes) -> Upstream {
        if self.sinks.names(Part::Clusters).is_empty() {
            return Upstream::default();
        }
        let upstream = match self.sinks.variants_only() {
            true => switchyard_compiler::upstream::plan_variants(&input.objects, table, l4),
            false => switchyard_compiler::upstream::plan(&input.objects, table, l4, self.compiler.options()),
        };
        let before = self
            .latest
            .as_ref()
            .map(|l| l.upstream.missing_ca.as_slice())
            .unwrap_or_default();
        if upstream.missing_ca != before && !upstream.missing_ca.is_empty() {
            warn!(
                clusters = ?upstream.missing_ca,
                "no cluster for these backends: their certificate is to be checked against a CA Secret that does \
                 not exist or holds no ca.crt; their requests fail (Envoy answers 503) until it does"
            );
        }
        upstream
    }

    /// Whether the last push failed and should be tried again.
    pub fn needs_retry(&self) -> bool {
        self.sinks.needs_retry()
    }

    /// Compiles `input`, records the status, and pushes the output to the sinks that do not hold it.
    /// Returns the statuses (the compiler's and the source's, shared with the state), for status
    /// write-back.
    pub async fn rebuild(&mut self, input: &Snapshot) -> Arc<[ResourceStatus]> {
        if let Some(config) = &input.ingress_nginx_config {
            self.configure_ingress_nginx(config);
        }
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
        let https = self.https(input, compiled.table, compiled.statuses);
        // One copy of the 10,000 statuses (with what HTTPS found), shared by the state and the caller.
        let mut own = compiled.statuses.to_vec();
        https.plan.annotate(&mut own);
        let statuses: Arc<[ResourceStatus]> = own.into_iter().chain(input.statuses.iter().cloned()).collect();
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
            state.l4 = compiled.l4.clone();
            state.https = Arc::new(https.plan.clone());
            new_errors
        };
        // Each error once, when it appears (it stays in /status until fixed).
        for e in &new_errors {
            warn!(source = %e.source, "{}", e.message);
        }
        // The compiler's own table, shared: never copied here (the compiler's next change copies
        // it while this one is still pushed; one table is held between changes, not two).
        let latest = self.latest.as_ref();
        let (table, rule_hashes) = match latest.filter(|l| l.table.generation == compiled.table.generation) {
            Some(latest) => (latest.table.clone(), latest.rule_hashes.clone()),
            None => (compiled.table.clone(), Some(Arc::from(self.compiler.rule_hashes()))),
        };
        let l4 = match latest.filter(|l| *l.l4 == *compiled.l4) {
            Some(latest) => latest.l4.clone(),
            None => Arc::new(compiled.l4.clone()),
        };
        let https = match latest.filter(|l| *l.https == https) {
            Some(latest) => latest.https.clone(),
            None => Arc::new(https),
        };
        let upstream = self.upstream(input, &table, &l4);
        let upstream = match latest.filter(|l| *l.upstream == upstream) {
            Some(latest) => latest.upstream.clone(),
            None => Arc::new(upstream),
        };
        let output = Arc::new(Output {
            table,
            rule_hashes,
            l4,
            https,
            upstream,
        });
        self.latest = Some(output.clone());
        if !self.sinks.needs_retry() && self.pushed.as_ref().is_some_and(|p| Part::Table.same(p, &output)) {
            debug!(table = %output.table.generation, seconds, "recompiled: table unchanged, nothing pushed");
        }
        let round = self
            .sinks
            .push(&output, Occasion::Change, &self.leader, &self.state)
            .await;
        self.settle(&output, round);
        statuses
    }

    /// Compiles with ingress-nginx's ConfigMap `config` from now on (ROUTING.md §7.8): a new
    /// compiler when it differs from the options' (the options are fixed for an [`Incremental`]'s
    /// life), nothing otherwise.
    fn configure_ingress_nginx(&mut self, config: &ControllerConfig) {
        let options = self.compiler.options();
        if options.ingress_nginx_config == *config {
            return;
        }
        let name = options
            .ingress_nginx
            .configmap
            .as_ref()
            .map_or_else(String::new, |(namespace, name)| format!(" {namespace}/{name}"));
        info!(
            ssl_redirect = config.ssl_redirect,
            force_ssl_redirect = config.force_ssl_redirect,
            http_redirect_code = config.http_redirect_code,
            preserve_trailing_slash = config.preserve_trailing_slash,
            no_tls_redirect_locations = %config.no_tls_redirect_locations.join(","),
            "ingress-nginx's ConfigMap{name} {}: compiling everything with it",
            if self.compiler.compiled().is_some() { "changed" } else { "read" }
        );
        let options = Options {
            ingress_nginx_config: config.clone(),
            ..options.clone()
        };
        self.compiler = Incremental::new(options);
    }

    /// The objects the sinks write to the cluster, for [`crate::watch::sink::drift`] to follow.
    pub fn followed(&self) -> Vec<Followed> {
        self.sinks.followed()
    }

    /// Pushes the newest output again to the sink named `name` (or, when it refused that table as too
    /// large, the output it took last), whose object was deleted or changed by someone else; a
    /// failure is retried like any failed push.
    pub async fn repair(&mut self, name: &str) {
        // The leader repairs; a follower's drift is the leader's to handle.
        if !self.leader.is_leader() {
            return;
        }
        let Some(latest) = self.latest.clone() else { return };
        if let Some(round) = self.sinks.repair(name, &latest, &self.leader, &self.state).await {
            self.settle(&latest, round);
        }
    }

    /// Pushes the newest output again to the sinks whose push failed.
    pub async fn retry(&mut self) {
        if let Some(latest) = self.latest.clone() {
            let round = self
                .sinks
                .push(&latest, Occasion::Change, &self.leader, &self.state)
                .await;
            self.settle(&latest, round);
        }
    }

    /// Counts `output`'s table as pushed once every sink this replica writes answered it, when it is
    /// new or a failed push was pending: the push log line, `/status`, `/readyz` and the metrics.
    fn settle(&mut self, output: &Arc<Output>, round: Round) {
        if let Some(why) = &round.not_encoded {
            self.state
                .internal_error(&format!("table {}: {why}; not pushed", output.table.generation));
            return;
        }
        let new = !self.pushed.as_ref().is_some_and(|p| Part::Table.same(p, output));
        if !round.table_answered || !(new || round.was_failing) {
            return;
        }
        let table = &output.table;
        // The compiler validated every rule with the table's own checks; the table is indexed only
        // when the dashboard asks for it (`Shared::live_index`), not on every push.
        let hosts = table.host_count();
        let change = diff(self.pushed.as_deref().map(compared), compared(output)).summary();
        let sinks = round.outcomes.len();
        let mut state = self.state.lock();
        state.tables_pushed += 1;
        state.table_hash = table.generation.clone();
        state.rules = table.rules.len();
        state.hosts = hosts;
        let record = PushRecord {
            generation: state.tables_pushed,
            table: table.generation.clone(),
            at_unix_ms: unix_ms(SystemTime::now()),
            rules: table.rules.len(),
            hosts,
            change: change.clone(),
            sinks: round.outcomes,
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
            match (sinks, self.sinks.carry_the_table()) {
                (_, false) => "compiled (no table sinks)",
                (0, true) => "compiled, held for a take-over (following)",
                _ => "pushed",
            },
        );
        state.table = Some(table.clone());
        drop(state);
        self.pushed = Some(output.clone());
    }
}

/// `output`'s table, for the push diff.
fn compared(output: &Output) -> Compared<'_> {
    Compared {
        table: &output.table,
        rule_hashes: output.rule_hashes.as_deref(),
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
    use crate::watch::block_on;
    use crate::watch::state::{PushRecord, SinkOutcome};
    use switchyard_compiler::load::{parse_text, Loaded};

    const INGRESS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n  - host: HOST\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";

    /// The warning counts the ignored resources by kind, NGINX's kinds included, and says nothing
    /// while one resource is ours.
    #[test]
    fn the_all_ignored_warning_counts_every_kind_that_classes_select() {
        const VIRTUAL_SERVER: &str = "apiVersion: k8s.nginx.org/v1\nkind: VirtualServer\nmetadata: {name: NAME, namespace: shop}\nspec:\n  ingressClassName: nginx\n  host: NAME.example\n  upstreams: [{name: web, service: web, port: 80}]\n  routes: [{path: /, action: {pass: web}}]\n";
        let mut loaded = Loaded::default();
        let ingress = INGRESS
            .replace("HOST", "a.example")
            .replace("spec:\n", "spec:\n  ingressClassName: nginx\n");
        parse_text(&ingress, "web.yaml", &mut loaded).unwrap();
        for name in ["one", "two"] {
            parse_text(&VIRTUAL_SERVER.replace("NAME", name), "vs.yaml", &mut loaded).unwrap();
        }
        let options = Options::default();
        let compiled = switchyard_compiler::compile(&loaded.objects, &options).unwrap();
        let warning = all_ignored_by_class(&compiled.statuses, &options).unwrap();
        assert!(
            warning.starts_with("every resource that classes select (1 Ingress, 2 VirtualServer) is ignored by class"),
            "{warning}"
        );

        let mut ours = Loaded::default();
        parse_text(&INGRESS.replace("HOST", "b.example"), "ours.yaml", &mut ours).unwrap();
        parse_text(&VIRTUAL_SERVER.replace("NAME", "one"), "vs.yaml", &mut ours).unwrap();
        let compiled = switchyard_compiler::compile(&ours.objects, &options).unwrap();
        assert_eq!(all_ignored_by_class(&compiled.statuses, &options), None);
        let mut nginx = options.clone();
        nginx.ingress_nginx.class = Some("nginx".into());
        let compiled = switchyard_compiler::compile(&loaded.objects, &nginx).unwrap();
        // No IngressClass `nginx` exists: ingress-nginx's class takes no Ingress either (§7.1).
        let warning = all_ignored_by_class(&compiled.statuses, &nginx).unwrap();
        assert!(
            warning.contains("ingress-nginx's Ingresses of class \"nginx\""),
            "{warning}"
        );
    }

    fn input(host: &str) -> Snapshot {
        let mut loaded = Loaded::default();
        parse_text(&INGRESS.replace("HOST", host), "web.yaml", &mut loaded).unwrap();
        Snapshot {
            objects: std::sync::Arc::new(loaded.objects),
            ..Snapshot::default()
        }
    }

    /// ROUTING.md §7.8 in the watch: a change of ingress-nginx's ConfigMap reaches the table (the
    /// options change, so the engine compiles with a new compiler), as a full compile with those
    /// settings makes it.
    #[test]
    fn a_change_of_ingress_nginxs_configmap_reaches_the_table() {
        const TLS: &str = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\nspec: {controller: k8s.io/ingress-nginx}\n---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  ingressClassName: nginx\n  tls: [{hosts: [secure.example], secretName: tls}]\n  rules:\n  - host: secure.example\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";
        let mut loaded = Loaded::default();
        parse_text(TLS, "web.yaml", &mut loaded).unwrap();
        let objects = std::sync::Arc::new(loaded.objects);
        let snapshot = |data: &[(&str, &str)]| Snapshot {
            objects: objects.clone(),
            ingress_nginx_config: Some(ControllerConfig::from_data(
                &data.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            )),
            ..Snapshot::default()
        };
        let mut options = Options::default();
        options.ingress_nginx.class = Some("nginx".into());
        options.ingress_nginx.configmap = Some(("ingress-nginx".into(), "ingress-nginx-controller".into()));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.json");
        let mut engine = Engine::new(options.clone(), vec![Sink::TableFile(file.clone())], Shared::default());
        let names = || -> Vec<String> {
            let table: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            let rules = table["rules"].as_array().unwrap();
            rules.iter().map(|r| r["name"].as_str().unwrap().to_owned()).collect()
        };
        let redirects = |names: &[String]| names.iter().filter(|n| n.ends_with(".https-redirect")).count();
        block_on(engine.rebuild(&snapshot(&[])));
        assert!(redirects(&names()) > 0, "ssl-redirect is on by default: {:?}", names());
        block_on(engine.rebuild(&snapshot(&[("ssl-redirect", "false")])));
        assert_eq!(redirects(&names()), 0, "{:?}", names());
        assert!(!engine.options().ingress_nginx_config.ssl_redirect);
        let full = switchyard_compiler::compile(
            &objects,
            &Options {
                ingress_nginx_config: snapshot(&[("ssl-redirect", "false")]).ingress_nginx_config.unwrap(),
                ..options
            },
        )
        .unwrap();
        let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(written, serde_json::to_value(&full.table).unwrap());
        block_on(engine.rebuild(&snapshot(&[])));
        assert!(redirects(&names()) > 0, "back to the defaults");
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
        let ecds = crate::watch::sink::ecds::EcdsFile {
            path: dir.path().join("ecds.json"),
            filter_name: "switchyard".into(),
            filter: crate::watch::sink::ecds::EcdsFilter::Wasm {
                wasm: "/w/f.wasm".into(),
                runtime: "envoy.wasm.runtime.v8".into(),
            },
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
                let written = std::fs::read(&ecds.path).unwrap();
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
        let metrics = crate::watch::serve::metrics::render(&state);
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
        // A file where its folder should be: the push fails until the folder can be made.
        std::fs::write(dir.path().join("later"), "").unwrap();
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

        std::fs::remove_file(dir.path().join("later")).unwrap();
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
        let settings = crate::watch::sink::istio::IstioSettings {
            selector: Default::default(),
            wasm_url: "oci://registry.example/switchyard:1".into(),
            wasm_path: String::new(),
            filter_name: "switchyard".into(),
            runtime: "envoy.wasm.runtime.v8".into(),
        };
        let mut sink = crate::watch::sink::istio::IstioSink::new(
            kube::Client::try_from(config).unwrap(),
            crate::watch::sink::istio::IstioKind::WasmPlugin,
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
