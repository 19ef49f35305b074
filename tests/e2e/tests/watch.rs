//! `switchyard watch --manifests DIR --ecds-file ...` driving a real Envoy: manifests are written,
//! changed and deleted in a temporary folder, and every assertion is about which backend answered a
//! real request through Envoy, or what the watch's own `/status`, `/readyz` and `/metrics` say.
//! Needs `ENVOY_BIN`, `SWITCHYARD_WASM` and `SWITCHYARD_BIN` (`make test-envoy` sets them); fails
//! without them.

mod watch_setup;

use std::io::BufReader;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use switchyard_e2e::FilterForm;
use watch_setup::{ask, ask_on, ingress, Setup, Watch, FOLLOW_WITHIN};

fn report(what: &str, latencies: &[Duration]) {
    let max = latencies.iter().max().copied().unwrap_or_default();
    let mean = latencies.iter().sum::<Duration>() / u32::try_from(latencies.len().max(1)).unwrap();
    eprintln!(
        "{what}: change-to-routing latency over {} changes: mean {mean:?}, max {max:?}",
        latencies.len()
    );
}

#[test]
fn routing_follows_added_changed_and_deleted_manifests_within_a_second() {
    let setup = Setup::start(FilterForm::Wasm);
    assert_eq!(setup.backend("a.example"), None, "an empty folder routes nothing");
    let (code, body) = setup.watch.get("/readyz");
    assert_eq!(code, 200, "ready after the first push: {body}");

    let mut latencies = Vec::new();
    latencies.push(setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "blue")),
        "a.example",
        Some("blue"),
    ));
    latencies.push(setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "green")),
        "a.example",
        Some("green"),
    ));
    latencies.push(setup.change(
        "b.yaml",
        Some(&ingress("b", "b.example", "blue")),
        "b.example",
        Some("blue"),
    ));
    assert_eq!(
        setup.backend("a.example").as_deref(),
        Some("green"),
        "adding b.yaml leaves a.example alone"
    );
    latencies.push(setup.change("a.yaml", None, "a.example", None));
    assert_eq!(
        setup.backend("b.example").as_deref(),
        Some("blue"),
        "deleting a.yaml leaves b.example alone"
    );
    report("add, change, add, delete", &latencies);

    // Envoy can route by the new ECDS file before the watch has counted and logged its push: wait for
    // the count (the log line is written under the same lock) before reading the log and the metrics.
    setup
        .watch
        .wait_status("the fifth push counted", |s| s["generation"].as_u64() >= Some(5));
    let log = setup.watch.log();
    assert!(
        log.contains("hosts lost: a.example"),
        "the push log names the host that went away:\n{log}"
    );
    let (_, metrics) = setup.watch.get("/metrics");
    let pushes: u64 = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("switchyard_pushes_total{sink=\"ecds-file ")
                .and_then(|rest| rest.rsplit(' ').next()?.parse().ok())
        })
        .unwrap_or_else(|| panic!("no ECDS push counter in\n{metrics}"));
    assert_eq!(
        pushes, 5,
        "one push for the empty folder and one per change:\n{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l == "switchyard_resources{kind=\"Ingress\",status=\"accepted\"} 1"),
        "{metrics}"
    );
}

/// `--ecds-file filter.pb`: the watch writes the `DiscoveryResponse` in binary protobuf, Envoy
/// reads the file so by its name, and routing follows manifest changes as with the JSON file.
#[test]
fn a_pb_ecds_file_is_written_in_binary_and_envoy_routes_by_it() {
    let setup = Setup::start_binary(FilterForm::Wasm);
    let written = std::fs::read(setup.ecds_file()).unwrap();
    assert!(
        serde_json::from_slice::<serde_json::Value>(&written).is_err(),
        "{} is binary, not JSON",
        setup.ecds_file().display()
    );
    setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "blue")),
        "a.example",
        Some("blue"),
    );
    setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "green")),
        "a.example",
        Some("green"),
    );
    assert!(
        setup.ecds_stat("update_success") >= 3,
        "the empty table, then the two changes"
    );
    assert_eq!(setup.ecds_stat("update_rejected"), 0, "{}", setup.envoy.log());
}

#[test]
fn no_request_fails_while_twenty_changes_are_pushed() {
    let setup = Setup::routing_a_to_blue(FilterForm::Wasm);

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(std::collections::BTreeSet::new()));
    let addr = setup.envoy.addr;
    // Two clients: one opening a connection per request, one keeping a single connection alive
    // across every table swap. Bounded: each stops when told, or after two minutes.
    let clients: Vec<_> = [false, true]
        .into_iter()
        .map(|keep_alive| {
            let (stop, sent, failures, seen) = (stop.clone(), sent.clone(), failures.clone(), seen.clone());
            thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(120);
                let mut connection = None;
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    sent.fetch_add(1, Ordering::SeqCst);
                    let answer = if keep_alive {
                        let open = connection.get_or_insert_with(|| {
                            let stream = TcpStream::connect(addr).unwrap();
                            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                            BufReader::new(stream)
                        });
                        ask_on(open, "a.example")
                    } else {
                        ask(addr, "a.example")
                    };
                    match answer {
                        Ok((200, Some(backend))) => {
                            seen.lock().unwrap().insert((keep_alive, backend));
                        }
                        Ok((status, backend)) => failures
                            .lock()
                            .unwrap()
                            .push(format!("keep-alive {keep_alive}: status {status} from {backend:?}")),
                        Err(e) => failures.lock().unwrap().push(format!("keep-alive {keep_alive}: {e}")),
                    }
                }
            })
        })
        .collect();

    let mut latencies = Vec::new();
    for change in 0..20 {
        let service = if change % 2 == 0 { "green" } else { "blue" };
        latencies.push(setup.change(
            "a.yaml",
            Some(&ingress("a", "a.example", service)),
            "a.example",
            Some(service),
        ));
    }
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.join().unwrap();
    }
    report("20 changes under load", &latencies);

    let failures = failures.lock().unwrap();
    let sent = sent.load(Ordering::SeqCst);
    eprintln!(
        "requests sent through the 20 changes: {sent}, failed: {}",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {sent} requests failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(sent >= 100, "the clients kept sending ({sent} requests)");
    let both: std::collections::BTreeSet<(bool, String)> = [false, true]
        .into_iter()
        .flat_map(|k| [(k, "blue".to_owned()), (k, "green".to_owned())])
        .collect();
    assert_eq!(
        *seen.lock().unwrap(),
        both,
        "each client, the keep-alive one too, saw both backends"
    );
    let status = setup.watch.status();
    assert_eq!(
        status["generation"], 22,
        "the empty folder, the first Ingress and 20 changes: {status:#}"
    );
}

#[test]
fn an_invalid_manifest_leaves_routing_as_it_was_and_appears_in_status() {
    let setup = Setup::routing_a_to_blue(FilterForm::Wasm);
    let generation = setup.watch.status()["generation"].clone();

    // A broken edit of a routed manifest: its last good version keeps routing.
    std::fs::write(
        setup.manifest("a.yaml"),
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: a\n",
    )
    .unwrap();
    // A new manifest with a field of the wrong type: it routes nothing.
    let bad_field = ingress("c", "c.example", "green").replace("pathType: Prefix", "pathType: [Prefix]");
    std::fs::write(setup.manifest("c.yaml"), bad_field).unwrap();
    let status = setup
        .watch
        .wait_status("both errors", |s| s["errors"].as_array().is_some_and(|e| e.len() == 2));
    let errors = status["errors"].as_array().unwrap();
    assert!(errors[0]["source"].as_str().unwrap().ends_with("a.yaml"), "{status:#}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("last good version is still routed"),
        "{status:#}"
    );
    assert!(errors[1]["source"].as_str().unwrap().ends_with("c.yaml"), "{status:#}");
    assert!(
        errors[1]["message"].as_str().unwrap().contains("pathType"),
        "the error names the field: {status:#}"
    );
    assert_eq!(status["generation"], generation, "nothing was pushed: {status:#}");
    assert_eq!(setup.backend("a.example").as_deref(), Some("blue"));
    assert_eq!(setup.backend("c.example"), None);
    let (_, metrics) = setup.watch.get("/metrics");
    assert!(metrics.lines().any(|l| l == "switchyard_source_errors 2"), "{metrics}");

    // Fixing both files routes them and clears the errors.
    setup.change(
        "c.yaml",
        Some(&ingress("c", "c.example", "green")),
        "c.example",
        Some("green"),
    );
    setup.change(
        "a.yaml",
        Some(&ingress("a", "a.example", "green")),
        "a.example",
        Some("green"),
    );
    setup
        .watch
        .wait_status("no errors", |s| s["errors"].as_array().is_some_and(Vec::is_empty));
}

/// `--envoy-admin`: a push to the ECDS file counts only once Envoy's admin stats say it was applied
/// or rejected. A storm of edits (one every 30 ms) is delivered, each push settled by Envoy, and the
/// last edit routes; a second watch whose ECDS file this Envoy does not read writes its file but never
/// counts the push (it waits for Envoy; without `--envoy-admin` it would count it at once).
#[test]
fn paced_pushes_wait_for_envoy_to_apply_them_and_lose_no_edit() {
    let setup = Setup::start_with(true, FilterForm::Wasm);
    let pushes = |watch: &Watch| -> u64 {
        let (_, metrics) = watch.get("/metrics");
        metrics
            .lines()
            .filter(|l| l.starts_with("switchyard_pushes_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    let settled = || setup.ecds_stat("update_success") + setup.ecds_stat("update_rejected");
    for i in 0..40 {
        let service = if i % 2 == 0 { "blue" } else { "green" };
        let extra = ingress(&format!("extra{i}"), &format!("e{i}.example"), "blue");
        let text = format!("{}---\n{extra}", ingress("shop", "shop.example", service));
        std::fs::write(setup.manifest("shop.yaml"), text).unwrap();
        thread::sleep(Duration::from_millis(30));
    }
    // The last edit (i = 39: shop.example to green, e39.example added) routes. Green alone is not
    // enough: an earlier odd edit is green too, and the watch would still push the last one (the
    // second watch below would then see Envoy settle that push and count its own).
    let deadline = Instant::now() + FOLLOW_WITHIN;
    while setup.backend("shop.example").as_deref() != Some("green")
        || setup.backend("e39.example").as_deref() != Some("blue")
    {
        assert!(
            Instant::now() < deadline,
            "the last edit never routed\n{}",
            setup.watch.log()
        );
        thread::sleep(Duration::from_millis(20));
    }
    let log = setup.watch.log();
    assert!(!log.contains("push failed"), "{log}");
    assert!(settled() >= pushes(&setup.watch), "{log}");

    let other = setup.dir.join("other");
    std::fs::create_dir_all(other.join("ecds")).unwrap();
    std::fs::create_dir_all(other.join("manifests")).unwrap();
    std::fs::copy(setup.manifest("shop.yaml"), other.join("manifests/shop.yaml")).unwrap();
    let admin = format!("127.0.0.1:{}", setup.envoy.admin.port());
    let waiting = Watch::start_with(&other, setup.form, setup.ecds, &["--envoy-admin".to_owned(), admin]);
    thread::sleep(Duration::from_secs(2));
    assert!(other.join("ecds/filter.json").is_file());
    assert_eq!(pushes(&waiting), 0, "{}", waiting.log());
}

/// The dashboard's traffic per resource (issue "Which Ingress served this request") read from the
/// real Envoy beside the watch, in both filter forms: after known traffic, `/status` `traffic`
/// gives the Ingress a request rate, without 5xx, and counts a request no rule took as unrouted.
#[test]
fn status_traffic_gives_each_ingress_its_rate_from_the_envoy_beside_the_watch() {
    for form in [FilterForm::Wasm, FilterForm::Module] {
        let setup = Setup::reading_traffic(form, "200ms");
        setup.change(
            "a.yaml",
            Some(&ingress("a", "a.example", "blue")),
            "a.example",
            Some("blue"),
        );
        // A first reading is only a starting point: traffic keeps coming until two have seen it.
        let status = setup
            .watch
            .wait_status_for("the Ingress's traffic", Duration::from_secs(30), |status| {
                for _ in 0..5 {
                    setup.backend("a.example");
                }
                let _ = ask(setup.envoy.addr, "nobody.example");
                let traffic = &status["traffic"];
                let a = (traffic["resources"].as_array().into_iter().flatten())
                    .find(|r| r["kind"] == "Ingress" && r["namespace"] == "shop" && r["name"] == "a");
                let busy = a.is_some_and(|a| a["requests_per_second"].as_f64().unwrap_or(0.0) > 0.0);
                let unrouted = traffic["unrouted"]["requests_per_second"].as_f64().unwrap_or(0.0) > 0.0;
                busy && unrouted
            });
        let a = (status["traffic"]["resources"].as_array().into_iter().flatten())
            .find(|r| r["name"] == "a")
            .cloned()
            .unwrap_or_default();
        assert_eq!(a["errors_per_second"], 0.0, "{form:?}: {a:#}");
        assert_eq!(status["traffic"]["state"], "known", "{form:?}: {:#}", status["traffic"]);
    }
}
