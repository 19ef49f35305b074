//! `switchyard watch --leader-elect` replicas against a real API server (a module of the envtest
//! suite): one leads, only it writes (the API server's audit log shows every write of each replica,
//! told apart by its token's uid), and it hands over when killed, stopped or cut off.
//!
//! Each test starts an API server of its own: the Lease (istio-system/switchyard, as RBAC allows)
//! and the WasmPlugin are one per cluster. Short timings keep it fast: a 3 s lease, 2 s renew
//! deadline and 250 ms retry period.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kube::Client;
use switchyard_envtest::gate::Gate;
use switchyard_envtest::watch::{eventually, eventually_async, Watch};
use switchyard_envtest::{pki, Audited, Envtest, User};

use super::{
    admin_apply, admin_get, bin, carried_table, deploy, ingress, istio_object, load_balancer, proxy,
    wait_proxy_statuses, PATIENCE,
};

/// Short leader-election timings, so that a failover takes seconds (how many is printed, a figure;
/// the tests wait at most PATIENCE).
const TIMINGS: [&str; 6] = [
    "--leader-elect-lease-duration",
    "3s",
    "--leader-elect-renew-deadline",
    "2s",
    "--leader-elect-retry-period",
    "250ms",
];
const PUBLISH: &str = "203.0.113.7";

/// A replica as `kubeconfig`'s user, watching `namespace`, writing the WasmPlugin, status and a
/// table file; `timings`: the election's flags.
fn replica_with(kubeconfig: &Path, namespace: &str, timings: &[&str]) -> Watch {
    let mut args = vec![
        "--namespaces",
        namespace,
        "--debounce-ms",
        "50",
        "--publish-address",
        PUBLISH,
        "--wasmplugin",
        "istio-system/switchyard",
        "--wasm-url",
        "oci://registry.example/switchyard-filter:0.1.0",
        // The Lease in the ServiceAccount's namespace (the kubeconfig's, as in a pod): istio-system.
        "--leader-elect",
        "--verbose",
    ];
    args.extend_from_slice(timings);
    Watch::start(&bin(), kubeconfig, &args).unwrap()
}

fn replica(kubeconfig: &Path, namespace: &str) -> Watch {
    replica_with(kubeconfig, namespace, &TIMINGS)
}

/// Whether it leads, by its `/status` (`None` when it does not answer).
fn leading(sy: &Watch) -> Option<bool> {
    sy.status()["leader"]["leading"].as_bool()
}

fn identity(sy: &Watch) -> String {
    sy.status()["leader"]["identity"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// `switchyard_leader` from `/metrics`.
fn leader_metric(sy: &Watch) -> Option<u8> {
    let metrics = sy.get("/metrics").body;
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("switchyard_leader "))
        .and_then(|v| v.parse().ok())
}

/// Waits until exactly one of `replicas` leads; returns its index.
async fn one_leader(replicas: &[&Watch]) -> usize {
    eventually(
        "exactly one replica leads",
        PATIENCE,
        || {
            let roles: Vec<Option<bool>> = replicas.iter().map(|r| leading(r)).collect();
            let leaders: Vec<usize> = (0..roles.len()).filter(|i| roles[*i] == Some(true)).collect();
            (leaders.len() == 1 && roles.iter().all(Option::is_some)).then(|| leaders[0])
        },
        || replicas.iter().map(|r| r.log()).collect::<Vec<_>>().join("\n----\n"),
    )
    .await
}

/// Waits until `sy` leads; the time it took from `since`.
async fn leads(sy: &Watch, since: Instant, within: Duration) -> Duration {
    let check = || (leading(sy) == Some(true)).then(|| since.elapsed());
    eventually("the replica leads", within, check, || sy.log()).await
}

/// The Lease as the admin sees it.
async fn lease(client: &Client) -> serde_json::Value {
    admin_get(client, "coordination.k8s.io/v1", "Lease", "istio-system", "switchyard").await
}

/// Every write other than the Lease's was received while its writer held the Lease (the last
/// successful Lease write the API server received before it was its writer's); the number of
/// writes of each replica (by uid).
fn writes_only_from_the_leader(audit: &[Audited]) -> BTreeMap<String, usize> {
    let mut holder: Option<&str> = None;
    let mut writes = BTreeMap::new();
    for write in audit {
        if write.resource == "leases" {
            if (200..300).contains(&write.code) {
                holder = Some(&write.uid);
            }
            continue;
        }
        assert_eq!(
            holder,
            Some(write.uid.as_str()),
            "{write:?} was written while the Lease was held by {holder:?}; the audit log:\n{audit:#?}"
        );
        *writes.entry(write.uid.clone()).or_insert(0) += 1;
    }
    writes
}

/// Waits until the WasmPlugin routes `host`.
async fn plugin_routes(client: &Client, host: &str, log: impl Fn() -> String) {
    let check = async || {
        let plugin = istio_object(client, "WasmPlugin").await;
        // The table in its compact form (the default --table-encoding), decoded.
        let table = carried_table("WasmPlugin", &plugin).unwrap_or_default();
        match table.to_string().contains(host) {
            true => Ok(()),
            false => Err(format!("{}", table["generation"])),
        }
    };
    eventually_async(&format!("the WasmPlugin routes {host}"), PATIENCE, check, log).await;
}

/// Waits until the Ingress `name` carries our load balancer.
async fn balanced(client: &Client, namespace: &str, name: &str, log: impl Fn() -> String) {
    let check = async || {
        let lb = load_balancer(client, namespace, name).await;
        match lb["ingress"][0]["ip"] == PUBLISH {
            true => Ok(()),
            false => Err(lb.to_string()),
        }
    };
    eventually_async(
        &format!("Ingress {namespace}/{name}'s load balancer"),
        PATIENCE,
        check,
        log,
    )
    .await;
}

/// A cluster with the WasmPlugin, an Ingress and a root HTTPProxy in a namespace of its own.
async fn cluster(env: &Envtest) -> (Client, String) {
    let admin = env.admin().await;
    let ns = env.namespace("replicas").await;
    admin_apply(&admin, &deploy("istio/wasmplugin.yaml")).await;
    admin_apply(&admin, &ingress(&ns, "web", "web.example", "web")).await;
    admin_apply(&admin, &proxy(&ns, "root", Some("root.example"), &[], None)).await;
    (admin, ns)
}

#[tokio::test]
async fn replicas_elect_one_leader_which_alone_writes_and_hands_over_when_killed_or_stopped() {
    let env = Envtest::start().await.unwrap();
    let (admin, ns) = cluster(&env).await;
    let mut replicas = vec![
        replica(&env.kubeconfig(User::Replica(0)), &ns),
        replica(&env.kubeconfig(User::Replica(1)), &ns),
    ];
    for r in &mut replicas {
        r.ready(PATIENCE).await.unwrap();
    }
    let first = one_leader(&[&replicas[0], &replicas[1]]).await;
    let leader = replicas.remove(first);
    let follower = replicas.remove(0);
    let all_logs = |a: &Watch, b: &Watch| format!("{}\n----\n{}", a.log(), b.log());
    // Both compile and write their own table file; the follower is ready (it can take over).
    for r in [&leader, &follower] {
        eventually(
            "web.example in the table file",
            PATIENCE,
            || r.routes("web.example", None).then_some(()),
            || r.log(),
        )
        .await;
    }
    // The follower knows who leads (from its next read of the Lease) and says so in /readyz.
    let holder = identity(&leader);
    eventually(
        "the follower sees the leader",
        PATIENCE,
        || (follower.status()["leader"]["holder"] == holder.as_str()).then_some(()),
        || follower.log(),
    )
    .await;
    let readyz = follower.readyz();
    assert_eq!(readyz.code, 200, "{}", readyz.body);
    let following = format!("following (Lease istio-system/switchyard held by {holder})");
    assert!(readyz.body.contains(&following), "{}", readyz.body);
    assert_eq!((leader_metric(&leader), leader_metric(&follower)), (Some(1), Some(0)));
    // Only the leader writes, and it writes everything.
    plugin_routes(&admin, "web.example", || leader.log()).await;
    wait_proxy_statuses(&admin, &leader, &ns, &[("root", "valid")]).await;
    balanced(&admin, &ns, "web", || leader.log()).await;
    assert_eq!(lease(&admin).await["spec"]["holderIdentity"], identity(&leader));

    // SIGKILL: the follower takes over once the lease expires, and pushes what the cluster holds
    // now, a change made during the gap included.
    let killed = Instant::now();
    leader.kill().unwrap();
    admin_apply(&admin, &ingress(&ns, "gap", "gap.example", "gap")).await;
    let took = leads(&follower, killed, PATIENCE).await;
    plugin_routes(&admin, "gap.example", || follower.log()).await;
    let routed = killed.elapsed();
    balanced(&admin, &ns, "gap", || follower.log()).await;
    // How soon (about the lease duration) is a figure, printed below, not a bound: `leads` waited at
    // most PATIENCE, which a busy machine does not reach by accident.
    println!("SIGKILL failover (3s lease): the follower led {took:?} after the kill; the change made during the gap was in the WasmPlugin {routed:?} after it");

    // A new replica follows; SIGTERM on the leader hands the Lease over at once (released).
    let mut next = replica(&env.kubeconfig(User::Replica(first as u8)), &ns);
    next.ready(PATIENCE).await.unwrap();
    assert_eq!(leading(&next), Some(false), "{}", all_logs(&next, &follower));
    let stopped = Instant::now();
    follower.terminate();
    let handed = leads(&next, stopped, PATIENCE).await;
    let log = follower.log();
    let status = follower.wait().unwrap();
    assert!(status.success(), "{status}\n{log}");
    // Released, not waited out: the leader says so as it stops (how soon the other led is the
    // figure printed below).
    assert!(log.contains("released Lease istio-system/switchyard"), "{log}");
    println!("SIGTERM handover (3s lease, 250ms retry period): the other replica led {handed:?} after the signal");
    admin_apply(&admin, &ingress(&ns, "after", "after.example", "after")).await;
    plugin_routes(&admin, "after.example", || next.log()).await;
    let lease = lease(&admin).await;
    assert_eq!(lease["spec"]["holderIdentity"], identity(&next));
    assert!(lease["spec"]["leaseTransitions"].as_i64() >= Some(2), "{lease}");

    // The audit log: no write of one replica while another held the Lease; both wrote.
    let writes = writes_only_from_the_leader(&env.audit());
    assert_eq!(writes.len(), 2, "{writes:?}");
    assert!(
        writes.keys().all(|uid| uid.starts_with("uid-switchyard-replica-")),
        "{writes:?}"
    );
    next.stop().unwrap();
}

#[tokio::test]
async fn a_leader_cut_off_from_the_api_server_steps_down_before_the_other_takes_over() {
    let env = Envtest::start().await.unwrap();
    let (admin, ns) = cluster(&env).await;
    let gate = Gate::start(env.port()).unwrap();
    let mut cut_off = replica(&env.kubeconfig_via(User::Replica(0), gate.port()).unwrap(), &ns);
    cut_off.ready(PATIENCE).await.unwrap();
    eventually(
        "the first replica leads",
        PATIENCE,
        || (leading(&cut_off) == Some(true)).then_some(()),
        || cut_off.log(),
    )
    .await;
    let mut other = replica(&env.kubeconfig(User::Replica(1)), &ns);
    other.ready(PATIENCE).await.unwrap();
    plugin_routes(&admin, "web.example", || cut_off.log()).await;
    assert_eq!(leading(&other), Some(false));

    gate.cut();
    let cut = Instant::now();
    let (mut stepped_down, mut took_over) = (None, None);
    while stepped_down.is_none() || took_over.is_none() {
        if stepped_down.is_none() && leading(&cut_off) == Some(false) {
            stepped_down = Some(cut.elapsed());
        }
        if took_over.is_none() && leading(&other) == Some(true) {
            took_over = Some(cut.elapsed());
        }
        assert!(
            cut.elapsed() < PATIENCE,
            "{stepped_down:?} {took_over:?}\n{}\n----\n{}",
            cut_off.log(),
            other.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (stepped_down, took_over) = (stepped_down.unwrap(), took_over.unwrap());
    assert!(
        stepped_down < took_over,
        "stepped down {stepped_down:?} after the cut, the other took over {took_over:?} after it\n{}",
        cut_off.log()
    );
    assert!(
        cut_off.log().contains("stepped down, no longer writing"),
        "{}",
        cut_off.log()
    );
    let error = &cut_off.status()["leader"]["error"];
    assert_eq!(error["reason"], "NoAnswer", "{error}");
    assert!(
        error["message"].as_str().is_some_and(|e| e.contains("did not answer")),
        "{error}"
    );
    println!("network cut (3s lease, 2s renew deadline): the leader stepped down {stepped_down:?} after the cut, the other replica led {took_over:?} after it");
    admin_apply(&admin, &ingress(&ns, "cut", "cut.example", "cut")).await;
    plugin_routes(&admin, "cut.example", || other.log()).await;

    // Back on the network: it follows, and is ready to take over again.
    gate.restore();
    cut_off.ready(PATIENCE).await.unwrap();
    eventually(
        "cut.example in the cut-off replica's table",
        PATIENCE,
        || cut_off.routes("cut.example", None).then_some(()),
        || format!("{}\n{}", cut_off.get("/metrics").body, cut_off.log()),
    )
    .await;
    assert_eq!((leading(&cut_off), leading(&other)), (Some(false), Some(true)));
    eventually(
        "the cut-off replica reads the Lease again",
        PATIENCE,
        || cut_off.status()["leader"]["error"].is_null().then_some(()),
        || cut_off.log(),
    )
    .await;
    let writes = writes_only_from_the_leader(&env.audit());
    assert!(writes.contains_key(&pki::replica_uid(1)), "{writes:?}");
}

/// Failover times with the shipped timings (15 s lease, 10 s renew deadline, 2 s retry period):
/// three SIGKILLs (the follower leads, and the WasmPlugin routes a change made during the gap) and
/// three SIGTERMs (handed over).
#[tokio::test]
#[ignore = "benchmark: make bench-kubernetes"]
async fn bench_failover_with_the_default_timings() {
    let env = Envtest::start().await.unwrap();
    let (admin, ns) = cluster(&env).await;
    let start = |n: u8| (n, replica_with(&env.kubeconfig(User::Replica(n)), &ns, &[]));
    let mut replicas = vec![start(0), start(1)];
    for round in 0..6 {
        for (_, r) in &mut replicas {
            r.ready(PATIENCE).await.unwrap();
        }
        let first = one_leader(&[&replicas[0].1, &replicas[1].1]).await;
        let (uid, leader) = replicas.remove(first);
        let follower = &replicas[0].1;
        let signal = if round < 3 { "SIGKILL" } else { "SIGTERM" };
        let sent = Instant::now();
        let wall = k8s_openapi::jiff::Timestamp::now();
        let stopping = if round < 3 {
            leader.kill().unwrap();
            None
        } else {
            leader.terminate();
            Some(leader)
        };
        let host = format!("round-{round}.example");
        admin_apply(&admin, &ingress(&ns, &format!("round-{round}"), &host, "web")).await;
        let led = leads(follower, sent, Duration::from_secs(40)).await;
        plugin_routes(&admin, &host, || follower.log()).await;
        // The leader's last renewal before the signal, from the audit log.
        let renewed = env
            .audit()
            .iter()
            .filter(|w| w.resource == "leases" && w.uid == pki::replica_uid(uid) && (200..300).contains(&w.code))
            .filter_map(|w| w.received.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .filter(|t| *t < wall)
            .max()
            .map(|t| wall.duration_since(t).unsigned_abs());
        println!(
            "{signal} failover, round {round}: the follower led {led:?} after the signal (which came {renewed:?} after the leader's last renewal); the WasmPlugin routed the change made meanwhile {:?} after it",
            sent.elapsed()
        );
        if let Some(stopping) = stopping {
            stopping.wait().unwrap();
        }
        replicas.push(start(uid));
    }
}

/// deploy/rbac.yaml's grant of the Lease (its Role and RoleBinding `switchyard-leader-election`),
/// in `namespace` instead of istio-system.
fn lease_grant_in(namespace: &str) -> String {
    let documents = switchyard_envtest::manifests::documents(&deploy("rbac.yaml")).unwrap();
    let grant: Vec<String> = documents
        .into_iter()
        .filter(|d| d["metadata"]["name"] == "switchyard-leader-election")
        .map(|mut d| {
            d["metadata"]["namespace"] = namespace.into();
            d.to_string()
        })
        .collect();
    assert_eq!(grant.len(), 2, "deploy/rbac.yaml's Role and RoleBinding for the Lease");
    grant.join("\n---\n")
}

/// Out of cluster, with a kubeconfig that names no namespace, the Lease is `default/switchyard`,
/// which deploy/rbac.yaml does not grant: the replica compiles, but could never take over, so it is
/// not ready; `/status` says why in words (`CannotLead`, `Forbidden`), the log says it once (not on
/// every retry) and once more when it clears (the grant given in `default`), then it leads.
#[tokio::test]
async fn a_replica_that_may_not_read_its_lease_is_not_ready_says_why_once_and_leads_once_granted() {
    let env = Envtest::shared().await;
    let admin = env.admin().await;
    let ns = env.namespace("forbidden-lease").await;
    admin_apply(&admin, &ingress(&ns, "web", "web.example", "web")).await;
    let kubeconfig = env.kubeconfig_without_namespace(User::Switchyard).unwrap();
    let mut args = vec![
        "--namespaces",
        ns.as_str(),
        "--debounce-ms",
        "50",
        "--leader-elect",
        "--verbose",
    ];
    args.extend_from_slice(&TIMINGS);
    let mut sy = Watch::start(&bin(), &kubeconfig, &args).unwrap();
    let readyz = eventually(
        "compiled, and /readyz 503 for the Lease",
        PATIENCE,
        || {
            let answer = sy.readyz();
            (sy.routes("web.example", None) && answer.code == 503 && answer.body.contains("Lease"))
                .then_some(answer.body)
        },
        || sy.log(),
    )
    .await;
    assert!(
        readyz.contains("cannot take over: Lease default/switchyard: Forbidden"),
        "{readyz}"
    );
    let status = sy.status();
    assert_eq!(status["not_ready"], serde_json::json!(["CannotLead"]), "{status:#}");
    assert_eq!(status["leader"]["lease"], "default/switchyard");
    assert_eq!(status["leader"]["error"]["reason"], "Forbidden", "{status:#}");
    assert_eq!(status["leader"]["leading"], false);
    // Retried every 250 ms meanwhile: still one line.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(sy.readyz().code, 503);
    let warnings = |log: &str| {
        log.lines()
            .filter(|l| l.contains(" WARN "))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let log = sy.log();
    assert_eq!(warnings(&log).len(), 1, "{log}");
    assert!(warnings(&log)[0].contains("Lease default/switchyard"), "{log}");

    admin_apply(&admin, &lease_grant_in("default")).await;
    leads(&sy, Instant::now(), PATIENCE).await;
    sy.ready(PATIENCE).await.unwrap();
    let log = sy.log();
    assert_eq!(warnings(&log).len(), 1, "{log}");
    let cleared: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("Lease default/switchyard: read and written again"))
        .collect();
    assert_eq!(cleared.len(), 1, "{log}");
    assert!(sy.status()["leader"]["error"].is_null());
    sy.stop().unwrap();
}
