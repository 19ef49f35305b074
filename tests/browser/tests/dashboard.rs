//! The dashboard of `switchyard watch --dashboard-listen` in a real headless Chromium (over WebDriver), against
//! a watch on a folder of real files: what the page shows is compared with what the watch wrote (its
//! table file, its `/status`) and with what `switchyard explain` prints for the same table.
//! `make test-browser` runs it; it needs SWITCHYARD_BIN, CHROMIUM_BIN and CHROMEDRIVER_BIN.

use std::path::Path;

use serde_json::{json, Value};
use switchyard_browser::{eventually, repo_root, Browser, StatsStandIn, Watch};

const INGRESS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  rules:\n  - host: HOST\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";

/// The page's hosts, each with its rules' names, in the order shown.
const PAGE_HOSTS: &str = "return [...document.querySelectorAll('#host-list section.host')].map(s => \
    ({host: s.dataset.host, rules: [...s.querySelectorAll('tr.rule')].map(r => r.dataset.rule)}));";

/// The page's resources table.
const PAGE_RESOURCES: &str = "return [...document.querySelectorAll('#resource-rows tr.resource')].map(r => \
    ({kind: r.dataset.kind, namespace: r.cells[1].textContent, name: r.cells[2].textContent, \
      status: r.cells[3].textContent, traffic: r.cells[4].textContent, conditions: r.cells[5].textContent, \
      rules: [...r.cells[6].querySelectorAll('a')].map(a => a.textContent)}));";

/// The table hash the page shows (`null` before it shows one).
const PAGE_TABLE: &str = "const t = document.getElementById('table-hash'); return t && t.textContent;";

/// Every file of the example folders `names`, as (path under the watched folder, text).
fn examples(names: &[&str]) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for name in names {
        let dir = repo_root().join("examples").join(name);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                let file = path.file_name().unwrap().to_string_lossy();
                files.push((format!("{name}/{file}"), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    files
}

/// The table's rules grouped by host in table order, the catch-all (`*`) last: what the page lists.
fn hosts_of(table: &Value) -> Value {
    let mut hosts: Vec<(String, Vec<String>)> = Vec::new();
    let mut any = Vec::new();
    for rule in table["rules"].as_array().unwrap() {
        let name = rule["name"].as_str().unwrap().to_owned();
        match rule["host"].as_str() {
            None => any.push(name),
            Some(host) => match hosts.iter_mut().find(|(h, _)| h == host) {
                Some((_, rules)) => rules.push(name),
                None => hosts.push((host.to_owned(), vec![name])),
            },
        }
    }
    if !any.is_empty() {
        hosts.push(("*".to_owned(), any));
    }
    hosts
        .into_iter()
        .map(|(host, rules)| json!({"host": host, "rules": rules}))
        .collect()
}

/// Opens the dashboard and waits until it shows the table the watch wrote last.
async fn open(browser: &Browser, watch: &Watch) {
    browser.client.goto(&watch.url()).await.unwrap();
    showing_the_table_file(browser, watch).await;
}

/// Waits until the page shows the table in the watch's table file; returns that table.
async fn showing_the_table_file(browser: &Browser, watch: &Watch) -> Value {
    eventually("the page to show the table file's table", || async {
        let table = watch.table();
        let shown = browser.js(PAGE_TABLE, vec![]).await;
        (shown == table["generation"]).then_some(table)
    })
    .await
}

fn status(watch: &Watch) -> Value {
    let response = switchyard_e2e::send(watch.addr, &switchyard_e2e::get("switchyard", "/status")).unwrap();
    serde_json::from_str(&response.body).unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn the_page_lists_the_example_hosts_and_rules() {
    let watch = Watch::start(
        &examples(&[
            "001-default-class-ours",
            "003-host-collision",
            "004-same-namespace",
            "004-across-namespaces",
        ]),
        &[],
    );
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    let table = watch.table();

    // Hosts → rules in priority order, exactly the table's, the catch-all last.
    let shown = browser.js(PAGE_HOSTS, vec![]).await;
    assert_eq!(shown, hosts_of(&table), "the page's hosts and rules");
    for host in [
        "cafe.example.com",
        "pub.example.com",
        "root.bar.com",
        "ns-root.bar.com",
        "api-test.ifuryst.com",
    ] {
        assert!(
            shown.as_array().unwrap().iter().any(|h| h["host"] == host),
            "{host}: {shown:#}"
        );
    }

    // Resources: every one of /status with its status and conditions, and links to its rules.
    let status = status(&watch);
    let rows = browser.js(PAGE_RESOURCES, vec![]).await;
    let resources = status["resources"].as_array().unwrap();
    assert_eq!(rows.as_array().unwrap().len(), resources.len(), "{rows:#}");
    for (row, resource) in rows.as_array().unwrap().iter().zip(resources) {
        assert_eq!(row["kind"], resource["kind"]);
        assert_eq!(row["name"], resource["name"]);
        assert_eq!(row["status"], resource["status"]);
        for condition in resource["conditions"].as_array().unwrap() {
            let text = row["conditions"].as_str().unwrap();
            assert!(
                text.contains(condition["reason"].as_str().unwrap())
                    && text.contains(condition["message"].as_str().unwrap()),
                "{condition} in {text}"
            );
        }
        let own: Vec<&Value> = table["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["name"])
            .filter(|n| {
                n.as_str().unwrap().split('#').next()
                    == Some(&format!(
                        "{}/{}/{}",
                        resource["kind"].as_str().unwrap(),
                        resource["namespace"].as_str().unwrap(),
                        resource["name"].as_str().unwrap()
                    ))
            })
            .collect();
        assert_eq!(
            row["rules"].as_array().unwrap().iter().collect::<Vec<_>>(),
            own,
            "{row}"
        );
    }
    // Every other top-level /status field is listed as it comes (`leader`, and whatever comes next).
    let listed = browser
        .js(
            "return [...document.querySelectorAll('#status-fields > dd')].map(d => d.dataset.field);",
            vec![],
        )
        .await;
    let drawn_elsewhere = [
        "ready",
        "reason",
        "generation",
        "table",
        "traffic",
        "access",
        "resources",
        "errors",
        "warnings",
        "warning_groups",
        "sources_down",
        "sinks_refused",
        "sinks",
        "push_log",
        "l4",
        "https",
    ];
    let mut expected: Vec<&str> = status
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .filter(|k| !drawn_elsewhere.contains(k))
        .collect();
    expected.sort_unstable();
    let mut listed: Vec<&str> = listed.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    listed.sort_unstable();
    assert_eq!(listed, expected);
    assert!(listed.contains(&"leader"), "{listed:?}");

    // The overview opens with health (ready, why, the generation), then the traffic, before any
    // list of notes; without --envoy-admin it says how to see the traffic.
    let order = browser
        .js(
            "return [...document.getElementById('overview').children].map(c => c.id);",
            vec![],
        )
        .await;
    assert_eq!(
        order,
        json!(["overview-heading", "health", "traffic", "problems", "status-fields"])
    );
    let health = browser
        .js(
            "return ['health-ready', 'health-reason'].map(id => document.getElementById(id).textContent);",
            vec![],
        )
        .await;
    assert_eq!(health, json!(["Ready", status["reason"]]));
    assert_eq!(status["traffic"]["state"], "off");
    let off = browser
        .js("return document.getElementById('traffic-off').textContent;", vec![])
        .await;
    assert!(off.as_str().unwrap().contains("--envoy-admin ADDR:PORT"), "{off}");
    assert!(
        rows.as_array().unwrap().iter().all(|r| r["traffic"] == "—"),
        "no traffic without a source: {rows:#}"
    );

    let taken = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "cafe-ingress-2")
        .expect("cafe-ingress-2 is listed");
    assert_eq!(taken["status"], "rejected");
    assert!(taken["conditions"].as_str().unwrap().contains("HostTaken"), "{taken}");

    // A rule links to its resource, and the resource back to its rules.
    let rule = "VirtualServer/default/cafe-virtual-server#0";
    browser.click(&format!("tr[data-rule=\"{rule}\"] th a")).await;
    let target = browser.target("the resource row as the target").await;
    assert_eq!(target, "resource:VirtualServer/default/cafe-virtual-server");
    browser.click("tr.resource:target td:last-child a").await;
    let target = browser.target("the rule row as the target").await;
    assert_eq!(target, format!("rule:{rule}"));

    // The filter keeps the hosts and resources asked for.
    browser.type_into("rule-filter", "pub.example").await;
    let visible = browser
        .js(
            "return [...document.querySelectorAll('#host-list section.host:not([hidden])')].map(s => s.dataset.host);",
            vec![],
        )
        .await;
    assert_eq!(visible, json!(["pub.example.com"]));
    browser.type_into("rule-filter", "").await;

    // `make test-browser` runs from the repository's root, cargo runs tests from this crate's folder.
    if let Some(path) = std::env::var_os("DASHBOARD_SCREENSHOT") {
        screenshot(&browser, &repo_root().join(path)).await;
    }
    browser.close().await;
}

/// The picture in docs/dashboard.md: an explanation with losers, then the whole page.
async fn screenshot(browser: &Browser, path: &Path) {
    browser
        .type_into("explain-url", "http://root.bar.com/service2/blog")
        .await;
    browser.click("#explain-submit").await;
    browser
        .until(
            "an explanation",
            "return document.getElementById('explain-losers') !== null;",
        )
        .await;
    browser.client.set_window_size(1280, 1900).await.unwrap();
    browser.js("window.scrollTo(0, 0);", vec![]).await;
    let png = browser.client.screenshot().await.unwrap();
    std::fs::write(path, png).unwrap();
}

/// With `--dashboard-token-file`, the page asks for the token (a form, no script), refuses a wrong
/// one, and after the right one shows the live table; `/table` needs it too (401 without, 200 with).
#[tokio::test(flavor = "current_thread")]
async fn the_dashboard_asks_for_its_token_and_shows_the_table_after_sign_in() {
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, "s3cret-t0ken\n").unwrap();
    let watch = Watch::start(
        &examples(&["001-default-class-ours"]),
        &["--dashboard-token-file", token_file.to_str().unwrap()],
    );
    let table = |headers: &[(&str, &str)]| {
        let mut request = switchyard_e2e::get("switchyard", "/table");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        switchyard_e2e::send(watch.addr, &request).unwrap().status
    };
    assert_eq!(table(&[]), 401);
    assert_eq!(table(&[("authorization", "Bearer wrong")]), 401);
    assert_eq!(table(&[("authorization", "Bearer s3cret-t0ken")]), 200);

    let browser = Browser::start().await;
    browser.client.goto(&watch.url()).await.unwrap();
    browser
        .until(
            "the login form",
            "return document.getElementById('login-form') !== null;",
        )
        .await;
    assert_eq!(
        browser.js("return document.getElementById('host-list');", vec![]).await,
        Value::Null,
        "no table before the token"
    );
    browser.type_into("token", "guess").await;
    browser.click("#login-form button").await;
    let problem = browser
        .until(
            "the wrong token refused",
            "const p = document.getElementById('login-problem'); return p && p.textContent || null;",
        )
        .await;
    assert_eq!(problem, "That is not the dashboard's token.");
    browser.type_into("token", "s3cret-t0ken").await;
    browser.click("#login-form button").await;
    showing_the_table_file(&browser, &watch).await;
    let shown = browser.js(PAGE_HOSTS, vec![]).await;
    assert_eq!(
        shown,
        hosts_of(&watch.table()),
        "the page's hosts and rules after sign in"
    );
    browser.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_edited_manifest_appears_without_reload() {
    let watch = Watch::start(&[("web.yaml".into(), INGRESS.replace("HOST", "a.example"))], &[]);
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    assert_eq!(
        browser.js(PAGE_HOSTS, vec![]).await,
        json!([{"host": "a.example", "rules": ["Ingress/shop/web#0"]}])
    );
    // A mark that a reload would wipe out.
    browser.js("window.sameDocument = 'yes';", vec![]).await;

    watch.write("web.yaml", INGRESS.replace("HOST", "b.example"));
    let shown = browser
        .until(
            "b.example in the hosts",
            &format!(
                "const hosts = (() => {{ {PAGE_HOSTS} }})(); return hosts.some(h => h.host === 'b.example') && hosts;"
            ),
        )
        .await;
    assert_eq!(
        shown,
        json!([{"host": "b.example", "rules": ["Ingress/shop/web#0"]}]),
        "a.example is gone"
    );
    assert_eq!(
        browser.js("return window.sameDocument;", vec![]).await,
        "yes",
        "the page was reloaded"
    );
    showing_the_table_file(&browser, &watch).await;
    assert_eq!(
        browser
            .js("return document.getElementById('generation').textContent;", vec![])
            .await,
        "2"
    );
    let newest = browser
        .js("const row = document.querySelector('#push-rows tr'); return [row.cells[0].textContent, row.cells[6].textContent];", vec![])
        .await;
    assert_eq!(newest[0], "2");
    assert!(
        newest[1]
            .as_str()
            .unwrap()
            .contains("hosts gained: b.example; hosts lost: a.example"),
        "{newest}"
    );
    browser.close().await;
}

/// One of seed 002's requests.
struct Case {
    /// The example folder (examples/) whose table it is asked of.
    example: &'static str,
    url: &'static str,
    /// As the seed writes them for curl.
    headers: &'static [&'static str],
    cookies: &'static [&'static str],
    /// The rule the seed says wins, by its resource: `Ingress/<namespace>/<name>#`.
    winner: &'static str,
}

const SEED_002: &[Case] = &[
    Case {
        example: "002-host-priority",
        url: "http://example.net/bar",
        headers: &[],
        cookies: &[],
        winner: "Ingress/production/host_priority1#",
    },
    Case {
        example: "002-path-priority",
        url: "http://example.net/bar/foo",
        headers: &["Key: value"],
        cookies: &[],
        winner: "Ingress/production/path_priority1#",
    },
    Case {
        example: "002-cond-priority",
        url: "http://example.net/bar/foo",
        headers: &["Key: value"],
        cookies: &[],
        winner: "Ingress/production/cond_priority1#",
    },
    Case {
        example: "002-cond-priority",
        url: "http://example.net/bar/foo",
        headers: &[],
        cookies: &[],
        winner: "Ingress/production/cond_priority2#",
    },
    Case {
        example: "002-multi-cond-priority",
        url: "http://example.net/bar/foo",
        headers: &["Header-key: value"],
        cookies: &["cookie-key: value"],
        winner: "Ingress/production/multi_cond_priority2#",
    },
];

#[tokio::test(flavor = "current_thread")]
async fn the_explain_form_gives_the_cli_winner_for_seed_002() {
    let seed = |name: &str| examples(&[name]).remove(0).1;
    let watch = Watch::start(
        &[("seed.yaml".into(), seed(SEED_002[0].example))],
        &["--ingress-class", "bfe"],
    );
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    for Case {
        example,
        url,
        headers,
        cookies,
        winner,
    } in SEED_002
    {
        // The folder holds one example at a time; the page follows it.
        watch.write("seed.yaml", seed(example));
        let table = eventually("the example's table", || async {
            let table = watch.table();
            table.to_string().contains(winner).then_some(table)
        })
        .await;
        eventually("the page on the example's table", || async {
            (browser.js(PAGE_TABLE, vec![]).await == table["generation"]).then_some(())
        })
        .await;

        browser.type_into("explain-url", url).await;
        browser.type_into("explain-method", "GET").await;
        browser.type_into("explain-headers", &headers.join("\n")).await;
        browser.type_into("explain-cookies", &cookies.join("\n")).await;
        browser.click("#explain-submit").await;

        let mut args = vec![url.to_string()];
        args.extend(headers.iter().flat_map(|h| ["-H".to_owned(), h.to_string()]));
        args.extend(cookies.iter().flat_map(|c| ["--cookie".to_owned(), c.to_string()]));
        let cli = watch.explain_cli(&args);
        let cli_text = watch.explain_cli_text(&args);
        let text = browser
            .until(
                &format!("{example}: the CLI's explanation\n{cli_text}"),
                &format!(
                    "const pre = document.getElementById('explain-text'); return pre && pre.textContent === {} && pre.textContent;",
                    serde_json::to_string(&cli_text).unwrap()
                ),
            )
            .await;
        assert_eq!(text, cli_text.as_str());
        let shown = browser
            .js(
                "const w = document.getElementById('explain-winner'); \
                 return {rule: w.dataset.rule, cluster: w.dataset.cluster, status: Number(w.dataset.status), \
                         table: document.getElementById('explain-table').textContent};",
                vec![],
            )
            .await;
        assert_eq!(shown["rule"], cli["rule"], "{example} {url}");
        assert_eq!(shown["cluster"], cli["cluster"], "{example} {url}");
        assert_eq!(shown["status"], cli["status"], "{example} {url}");
        assert_eq!(
            shown["table"], table["generation"],
            "explained on the table the CLI read"
        );
        assert!(
            shown["rule"].as_str().unwrap().starts_with(winner),
            "{example}: the seed says {winner} wins, the page says {}",
            shown["rule"]
        );
    }

    // A malformed header: the form says what the CLI says (the form still holds the last case).
    let last = &SEED_002[SEED_002.len() - 1];
    browser.type_into("explain-headers", "Key value").await;
    browser.click("#explain-submit").await;
    let mut args = vec![last.url.to_owned(), "-H".to_owned(), "Key value".to_owned()];
    args.extend(last.cookies.iter().flat_map(|c| ["--cookie".to_owned(), c.to_string()]));
    let cli = watch.explain_cli_error(&args);
    let shown = browser
        .until(
            "the error",
            "const e = document.getElementById('explain-error'); return e && e.textContent;",
        )
        .await;
    assert_eq!(shown, cli.as_str());
    browser.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_broken_manifest_shows_its_error() {
    let watch = Watch::start(&[("web.yaml".into(), INGRESS.replace("HOST", "a.example"))], &[]);
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    let no_errors = "return document.querySelectorAll('#source-errors .source-error').length;";
    assert_eq!(browser.js(no_errors, vec![]).await, 0);

    watch.write("web.yaml", "kind: Ingress\nspec: [\n");
    watch.write(
        "new.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: x}\nspec: {rules: 7}\n",
    );
    let shown = browser
        .until(
            "two errors on the page",
            "const rows = [...document.querySelectorAll('#source-errors .source-error')]; \
             return rows.length === 2 && rows.map(r => [r.querySelector('code').textContent, r.querySelector('.message').textContent]);",
        )
        .await;
    let status = status(&watch);
    let expected: Vec<Value> = status["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!([e["source"], e["message"]]))
        .collect();
    assert_eq!(shown, json!(expected), "the page shows /status's errors");
    let text = shown.to_string();
    assert!(
        text.contains("web.yaml") && text.contains("its last good version is still routed"),
        "{text}"
    );
    assert!(
        text.contains("new.yaml") && text.contains("it routes nothing"),
        "{text}"
    );
    // The last good version of web.yaml still routes, and the page still lists it.
    assert_eq!(browser.js(PAGE_HOSTS, vec![]).await[0]["host"], "a.example");

    watch.write("web.yaml", INGRESS.replace("HOST", "a.example"));
    std::fs::remove_file(watch.manifests().join("new.yaml")).unwrap();
    browser
        .until(
            "the errors gone",
            "return document.getElementById('source-errors') === null;",
        )
        .await;
    browser.close().await;
}

/// Repeated warnings read once (issue "Which Ingress served this request"): three Ingresses of the
/// old API are one line, the note with its count, the Ingresses behind a click.
#[tokio::test(flavor = "current_thread")]
async fn repeated_warnings_are_one_line_with_a_count_and_their_resources_behind_a_click() {
    let old = |name: &str| {
        (
            format!("{name}.yaml"),
            format!(
                "apiVersion: networking.k8s.io/v1beta1\nkind: Ingress\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  rules:\n  - host: {name}.example\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{serviceName: web, servicePort: 80}}}}\n"
            ),
        )
    };
    let watch = Watch::start(&[old("a"), old("b"), old("c")], &[]);
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    let shown = browser
        .until(
            "the grouped warnings",
            "const rows = [...document.querySelectorAll('#warnings .warning-group')]; \
             return rows.length > 0 && rows.map(r => [r.firstChild.textContent, r.querySelectorAll('details li').length]);",
        )
        .await;
    let rows = shown.as_array().unwrap();
    assert_eq!(rows.len(), 2, "two notes, not six lines: {shown}");
    for row in rows {
        assert_eq!(row[0], "3× ", "{shown}");
        assert_eq!(row[1], 3, "the three Ingresses behind the click: {shown}");
    }
    assert_eq!(status(&watch)["warnings"].as_array().unwrap().len(), 6);
    browser.close().await;
}

/// ROUTING.md §9 on the dashboard: an Ingress with an access control this gateway does not enforce
/// is listed first among the problems, with its field, as /status lists it; once its owner waives
/// the field it moves to the waived list.
#[tokio::test(flavor = "current_thread")]
async fn an_access_control_not_enforced_is_shown_as_blocking_then_as_waived() {
    let protected = INGRESS.replace("HOST", "admin.example").replace(
        "metadata: {name: web, namespace: shop}",
        "metadata:\n  name: web\n  namespace: shop\n  annotations: {nginx.ingress.kubernetes.io/whitelist-source-range: 10.0.0.0/8}",
    );
    let watch = Watch::start(&[("web.yaml".into(), protected.clone())], &[]);
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    let listed = |id: &str| {
        format!(
            "const p = document.getElementById('{id}'); \
             return p !== null && [...p.querySelectorAll('li.access')].map(li => li.textContent);"
        )
    };
    let blocked = browser.until("the blocked list", &listed("access-blocked")).await;
    let field = "nginx.ingress.kubernetes.io/whitelist-source-range";
    assert_eq!(blocked, json!([format!("Ingress shop/web: {field}")]));
    assert_eq!(
        status(&watch)["access"]["blocked"],
        json!([{"resource": "Ingress shop/web", "fields": [field]}])
    );
    let first = "return document.querySelector('#problems > div').id;";
    assert_eq!(browser.js(first, vec![]).await, "access-blocked", "listed first");

    let waived = protected.replace(
        "annotations: {",
        "annotations: {switchyard.io/serve-without-access-control: whitelist-source-range, ",
    );
    watch.write("web.yaml", waived);
    let shown = browser.until("the waived list", &listed("access-waived")).await;
    assert_eq!(shown, json!([format!("Ingress shop/web: {field}")]));
    assert_eq!(
        browser
            .js("return document.getElementById('access-blocked');", vec![])
            .await,
        Value::Null
    );
    browser.close().await;
}

/// The L4 tables as the page shows them, once there are two: (caption, rows of cell texts).
const PAGE_L4: &str = "const tables = [...document.querySelectorAll('#l4-routes table')].map(t => \
      [t.caption.textContent, [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent))]); \
      return tables.length === 2 && tables;";

#[tokio::test(flavor = "current_thread")]
async fn the_page_lists_the_l4_routes_of_the_transport_servers_and_where_they_are_pushed() {
    let lds = tempfile::tempdir().unwrap();
    let lds_file = lds.path().join("listeners.json");
    let watch = Watch::start(
        &examples(&["003-transport-server"]),
        &["--lds-file", lds_file.to_str().unwrap()],
    );
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    let l4 = &status(&watch)["l4"];
    assert_eq!(
        l4["sinks"],
        json!([format!("lds-file {}", lds_file.display())]),
        "{l4:#}"
    );

    // Exactly /status's routes: the passthrough host the TransportServer took from the VirtualServer,
    // and the TCP listener the older TransportServer won.
    let passthrough: Vec<Value> = l4["passthrough"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!([r["host"], r["cluster"], r["resource"]]))
        .collect();
    let mut listeners = Vec::new();
    for listener in l4["listeners"].as_array().unwrap() {
        for r in listener["routes"].as_array().unwrap() {
            let host = r["host"].as_str().unwrap_or("any");
            listeners.push(json!([
                listener["name"],
                listener["port"].to_string(),
                listener["protocol"],
                host,
                r["cluster"],
                r["resource"]
            ]));
        }
    }
    assert_eq!(passthrough.len(), 1, "{l4:#}");
    assert_eq!(passthrough[0][0], "secure.example.com");
    assert_eq!(passthrough[0][2], "TransportServer/default/secure-passthrough");
    assert_eq!(listeners.len(), 1, "{l4:#}");
    assert_eq!(listeners[0][5], "TransportServer/default/tcp-1");
    let shown = browser.until("the L4 tables", PAGE_L4).await;
    assert_eq!(
        shown,
        json!([
            ["TLS passthrough hosts (passed through by SNI)", passthrough],
            ["TCP and UDP listeners", listeners]
        ])
    );
    let sinks = browser
        .js("return document.getElementById('l4-sinks').textContent;", vec![])
        .await;
    assert!(sinks.as_str().unwrap().contains("lds-file"), "{sinks}");

    // The TransportServers gone: the page says there are none, without a reload.
    std::fs::remove_file(watch.manifests().join("003-transport-server/transport.yaml")).unwrap();
    browser
        .until(
            "no L4 routes",
            "return document.getElementById('l4-routes').textContent === 'No TransportServer routes.';",
        )
        .await;
    browser.close().await;
}

/// Envoy's counters as its admin endpoint writes them, for the `n`-th reading: each reading adds 8
/// 2xx and 2 5xx answers of Ingress shop/web, 1 5xx of Ingress shop/broken, 3 requests of folded
/// resources and 2 that no rule took.
fn envoy_stats(n: u64) -> String {
    let line = |kind: &str, namespace: &str, resource: &str, backend: &str, class: &str, count: u64| {
        format!(
            "switchyard_resource_requests_total{{kind=\"{kind}\",namespace=\"{namespace}\",resource=\"{resource}\",\
             backend=\"{backend}\",status_class=\"{class}\"}} {count}\n"
        )
    };
    [
        "# TYPE switchyard_resource_requests_total counter\n".to_owned(),
        line("Ingress", "shop", "web", "shop/web_80", "2xx", 8 * n),
        line("Ingress", "shop", "web", "shop/web_80", "5xx", 2 * n),
        line("Ingress", "shop", "broken", "shop/broken_80", "5xx", n),
        line("folded", "folded", "folded", "folded", "2xx", 3 * n),
        line("none", "none", "none", "none", "4xx", 2 * n),
    ]
    .concat()
}

/// The traffic cell of a resource's row: `[data-rps, data-error-rate, text]` (`false` before the
/// page shows a rate there).
fn traffic_cell(resource: &str) -> String {
    format!(
        "const td = document.querySelector('tr[id=\"resource:{resource}\"] td.traffic'); \
         return td !== null && td.dataset.rps !== undefined && [td.dataset.rps, td.dataset.errorRate, td.textContent];"
    )
}

/// Issue 47: each resource's requests per second and share of 5xx beside it under Resources, and
/// the overview's total, busiest and most failing resources, as `/status` `traffic` has them, read
/// with `--envoy-admin` from a stand-in for Envoy's admin endpoint ([`StatsStandIn`]: the filter's
/// metrics land separately; a real Envoy's are tested in tests/e2e). When Envoy stops answering,
/// the page says that the traffic is unknown, and why, instead of showing none.
#[tokio::test(flavor = "current_thread")]
async fn each_resource_shows_its_request_rate_and_share_of_5xx_read_from_envoy() {
    let envoy = StatsStandIn::start(envoy_stats);
    let admin = envoy.addr.to_string();
    let ecds = tempfile::tempdir().unwrap();
    let ecds_file = ecds.path().join("switchyard-filter.json");
    let broken = INGRESS
        .replace("HOST", "broken.example")
        .replace("name: web", "name: broken");
    let watch = Watch::start(
        &[
            ("web.yaml".into(), INGRESS.replace("HOST", "web.example")),
            ("broken.yaml".into(), broken),
        ],
        &[
            "--ecds-file",
            ecds_file.to_str().unwrap(),
            "--envoy-admin",
            &admin,
            "--traffic-every",
            "1s",
        ],
    );
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    let web = "Ingress/shop/web";
    let cell = browser.until("shop/web's traffic", &traffic_cell(web)).await;

    // The stand-in was asked for the one counter only, and /status has each resource's rates.
    assert_eq!(
        envoy
            .asked()
            .iter()
            .filter(|p| p.starts_with("/stats/prometheus"))
            .collect::<Vec<_>>()[0],
        "/stats/prometheus?filter=switchyard_resource_requests_total"
    );
    let traffic = status(&watch)["traffic"].clone();
    assert_eq!(traffic["state"], "known", "{traffic:#}");
    assert!(traffic["source"].as_str().unwrap().contains(&admin), "{traffic:#}");
    let of = |traffic: &Value, name: &str| {
        traffic["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {traffic:#}"))
    };
    assert_eq!(of(&traffic, "web")["error_rate"], 0.2);
    assert_eq!(of(&traffic, "broken")["error_rate"], 1.0);
    assert!(of(&traffic, "web")["requests_per_second"].as_f64().unwrap() > 0.0);
    assert_eq!(traffic["total"]["error_rate"], 0.1875, "3 of 16: {traffic:#}");
    assert!(
        traffic["folded"]["requests_per_second"].as_f64().unwrap() > 0.0,
        "{traffic:#}"
    );
    assert!(
        traffic["unrouted"]["requests_per_second"].as_f64().unwrap() > 0.0,
        "{traffic:#}"
    );

    // Beside each resource, the rate /status has (read again: the readings go on every second),
    // and its share of 5xx.
    assert!(cell[2].as_str().unwrap().contains("20 % 5xx"), "{cell}");
    eventually("shop/web's rate on the page as /status has it", || async {
        let before = of(&status(&watch)["traffic"], "web");
        let cell = browser.js(&traffic_cell(web), vec![]).await;
        let after = of(&status(&watch)["traffic"], "web");
        let shown: f64 = cell[0].as_str()?.parse().ok()?;
        let same = |r: &Value| r["requests_per_second"].as_f64() == Some(shown);
        (same(&before) && same(&after)).then_some(())
    })
    .await;
    let broken_cell = browser.js(&traffic_cell("Ingress/shop/broken"), vec![]).await;
    assert_eq!(broken_cell[1], "1", "{broken_cell}");
    assert!(broken_cell[2].as_str().unwrap().contains("100 % 5xx"), "{broken_cell}");

    // The overview: the total, the busiest resources and those answering 5xx, the highest share
    // first; folded resources and requests no rule took apart.
    let overview = browser
        .js(
            "const rows = id => [...document.querySelectorAll('#' + id + ' tbody tr')].map(r => r.dataset.resource); \
             return {total: document.getElementById('traffic-total').textContent, busiest: rows('traffic-busiest'), \
               failing: rows('traffic-failing'), folded: document.getElementById('traffic-folded') !== null, \
               unrouted: document.getElementById('traffic-unrouted') !== null, \
               summary: document.getElementById('summary').textContent};",
            vec![],
        )
        .await;
    assert!(overview["total"].as_str().unwrap().contains("19 % 5xx"), "{overview}");
    assert_eq!(overview["busiest"], json!([web, "Ingress/shop/broken"]), "{overview}");
    assert_eq!(overview["failing"], json!(["Ingress/shop/broken", web]), "{overview}");
    assert_eq!(
        (overview["folded"].clone(), overview["unrouted"].clone()),
        (json!(true), json!(true))
    );
    assert!(overview["summary"].as_str().unwrap().contains("19 % 5xx"), "{overview}");

    // Ordered by traffic: the busiest first, then the most 5xx first.
    let names = "return [...document.querySelectorAll('#resource-rows tr.resource')].map(r => r.cells[2].textContent);";
    assert_eq!(
        browser.js(names, vec![]).await,
        json!(["broken", "web"]),
        "as /status lists them"
    );
    browser
        .client
        .find(fantoccini::Locator::Id("resource-order"))
        .await
        .unwrap()
        .select_by_value("busiest")
        .await
        .unwrap();
    assert_eq!(browser.js(names, vec![]).await, json!(["web", "broken"]));
    browser
        .client
        .find(fantoccini::Locator::Id("resource-order"))
        .await
        .unwrap()
        .select_by_value("failing")
        .await
        .unwrap();
    assert_eq!(browser.js(names, vec![]).await, json!(["broken", "web"]));

    // Envoy stops answering: the traffic is unknown, and why; no resource shows a rate.
    envoy.stop();
    let unknown = browser
        .until(
            "the traffic unknown",
            "const p = document.getElementById('traffic-unknown'); return p && p.textContent;",
        )
        .await;
    assert!(
        unknown
            .as_str()
            .unwrap()
            .starts_with(&format!("Traffic unknown: Envoy admin {admin}: ")),
        "{unknown}"
    );
    let cell = browser
        .js(
            &format!("return document.querySelector('tr[id=\"resource:{web}\"] td.traffic').textContent;"),
            vec![],
        )
        .await;
    assert_eq!(cell, "unknown");
    assert_eq!(status(&watch)["traffic"]["resources"], json!([]));
    browser.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn every_field_has_a_label_and_every_table_a_caption_and_header_cells() {
    let watch = Watch::start(&examples(&["003-host-collision"]), &[]);
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    browser.type_into("explain-url", "http://cafe.example.com/").await;
    browser.click("#explain-submit").await;
    browser
        .until(
            "an explanation",
            "return document.getElementById('explain-winner') !== null;",
        )
        .await;
    let problems = browser
        .js(
            "return { \
               unlabelled: [...document.querySelectorAll('input, select, textarea')].filter(f => f.labels.length === 0).map(f => f.id), \
               uncaptioned: [...document.querySelectorAll('table')].filter(t => !t.caption || !t.caption.textContent.trim()).length, \
               without_scope: [...document.querySelectorAll('th')].filter(th => !['col', 'row'].includes(th.scope)).map(th => th.textContent), \
               tables: document.querySelectorAll('table').length, \
               lang: document.documentElement.lang };",
            vec![],
        )
        .await;
    assert_eq!(problems["unlabelled"], json!([]), "{problems}");
    assert_eq!(problems["uncaptioned"], 0, "{problems}");
    assert_eq!(problems["without_scope"], json!([]), "{problems}");
    assert_eq!(problems["lang"], "en");
    assert!(problems["tables"].as_u64().unwrap() >= 4, "{problems}");
    browser.close().await;
}

/// `make bench-dashboard`: the dashboard on 10,000 Ingresses (10,000 rules, 10,000 hosts): the size
/// and time of `/rules` and `/status`, the page's first full render, an edit reaching the page, and
/// an explanation. Figures in BENCHMARKS.md; timings through WebDriver are good to about 50 ms.
#[tokio::test(flavor = "current_thread")]
#[ignore = "a benchmark: make bench-dashboard"]
async fn bench_the_dashboard_with_10000_rules() {
    use std::time::Instant;
    const N: usize = 10_000;
    let many: String = (0..N - 1)
        .map(|i| {
            INGRESS
                .replace("HOST", &format!("h{i:05}.example.com"))
                .replace("name: web", &format!("name: web{i:05}"))
        })
        .collect::<Vec<_>>()
        .join("---\n");
    let edited = |host: &str| INGRESS.replace("HOST", host).replace("name: web", "name: edited");
    let watch = Watch::start(
        &[
            ("many.yaml".into(), many),
            ("edited.yaml".into(), edited("edit-a.example.com")),
        ],
        &[],
    );
    let get = |path: &str| {
        let started = Instant::now();
        let response = switchyard_e2e::send(watch.addr, &switchyard_e2e::get("switchyard", path)).unwrap();
        assert_eq!(response.status, 200);
        (response.body.len(), started.elapsed())
    };
    for path in ["/rules", "/status"] {
        let runs: Vec<(usize, std::time::Duration)> = (0..5).map(|_| get(path)).collect();
        let mut times: Vec<f64> = runs.iter().map(|(_, t)| t.as_secs_f64() * 1000.0).collect();
        times.sort_by(f64::total_cmp);
        println!("GET {path}: {} bytes, median {:.1} ms (of 5)", runs[0].0, times[2]);
    }
    let browser = Browser::start().await;
    let started = Instant::now();
    browser.client.goto(&watch.url()).await.unwrap();
    browser
        .until(
            "the first page of hosts and resources",
            &format!(
                "return document.getElementById('hosts-more').textContent.startsWith('Showing 200 of {N} hosts') \
                 && document.getElementById('resources-more').textContent.startsWith('Showing 500 of ');"
            ),
        )
        .await;
    println!(
        "page load to the first 200 of {N} hosts and 500 resources drawn: {:?}",
        started.elapsed()
    );

    let started = Instant::now();
    browser.type_into("rule-filter", "h04242").await;
    browser
        .until(
            "the filtered host",
            "const s = document.querySelectorAll('#host-list section.host'); \
             return s.length === 1 && s[0].dataset.host === 'h04242.example.com';",
        )
        .await;
    println!("filter to one host of {N}: {:?}", started.elapsed());

    watch.write("edited.yaml", edited("edit-b.example.com"));
    let started = Instant::now();
    let table = eventually("the edit in the table file", || async {
        let table = watch.table();
        table.to_string().contains("edit-b.example.com").then_some(table)
    })
    .await;
    let written = started.elapsed();
    eventually("the page on the edited table", || async {
        (browser.js(PAGE_TABLE, vec![]).await == table["generation"]).then_some(())
    })
    .await;
    println!(
        "an edit to the table file {written:?}, to the page (status, rules, redraw) {:?}",
        started.elapsed()
    );

    let timed = browser
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; const times = []; \
             (async () => { for (let i = 0; i < 5; i++) { const t = performance.now(); \
               const r = await fetch('/explain', {method: 'POST', body: JSON.stringify({url: 'http://h04242.example.com/x'})}); \
               await r.json(); times.push(performance.now() - t); } \
               times.sort((a, b) => a - b); done(times[2]); })();",
            vec![],
        )
        .await
        .unwrap();
    println!(
        "POST /explain from the page: median {:.1} ms (of 5)",
        timed.as_f64().unwrap()
    );

    browser.type_into("explain-url", "http://h04242.example.com/x").await;
    let started = Instant::now();
    browser.click("#explain-submit").await;
    browser
        .until(
            "the explanation",
            "return document.getElementById('explain-winner') !== null;",
        )
        .await;
    println!("explain form round trip: {:?}", started.elapsed());
    browser.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_big_table_is_drawn_a_page_at_a_time_and_a_link_reaches_a_rule_not_drawn() {
    let ingresses: Vec<(String, String)> = (0..250)
        .map(|i| {
            let text = INGRESS
                .replace("HOST", &format!("h{i:03}.example.com"))
                .replace("name: web", &format!("name: web{i:03}"));
            (format!("web{i:03}.yaml"), text)
        })
        .collect();
    let watch = Watch::start(&ingresses, &[]);
    let browser = Browser::start().await;
    let table = eventually("all 250 rules in the table file", || async {
        let table = watch.table();
        (table["rules"].as_array().unwrap().len() == 250).then_some(table)
    })
    .await;
    open(&browser, &watch).await;
    let sections = "return document.querySelectorAll('#host-list section.host').length;";
    assert_eq!(browser.js(sections, vec![]).await, 200);
    let note = browser
        .js("return document.getElementById('hosts-more').textContent;", vec![])
        .await;
    assert!(note.as_str().unwrap().starts_with("Showing 200 of 250 hosts"), "{note}");
    browser.click("#hosts-more button").await;
    assert_eq!(browser.js(sections, vec![]).await, 250);

    // Back to the first page; the last host's rule is not drawn, its resource's row links to it.
    browser.type_into("rule-filter", "x").await;
    browser.type_into("rule-filter", "").await;
    assert_eq!(browser.js(sections, vec![]).await, 200);
    let last = hosts_of(&table)[249]["rules"][0].as_str().unwrap().to_owned();
    let (resource, _) = last.split_once('#').unwrap();
    let drawn = format!(
        "return document.getElementById({}) !== null;",
        json!(format!("rule:{last}"))
    );
    assert_eq!(
        browser.js(&drawn, vec![]).await,
        false,
        "{last} is beyond the first page"
    );
    browser
        .click(&format!("tr[id=\"resource:{resource}\"] td:last-child a"))
        .await;
    let target = browser.target("the rule as the target").await;
    assert_eq!(target, format!("rule:{last}"));
    browser.close().await;
}

/// The HTTPS section (ROUTING.md §8): a host with its own Secret is listed with it, its versions and
/// who decided; the default certificate is said to be made at start; the Secret's key appears
/// nowhere on the page.
#[tokio::test(flavor = "current_thread")]
async fn the_page_says_which_certificate_each_https_host_is_served_with() {
    let certificate = switchyard_e2e::https::TestCertificate::new(&["secure.example"]);
    let tls = INGRESS.replace("HOST", "secure.example").replace(
        "spec:\n",
        "spec:\n  tls: [{hosts: [secure.example], secretName: secure-tls}]\n",
    );
    let manifests = [
        ("web.yaml".to_owned(), tls),
        ("secret.yaml".to_owned(), certificate.secret("shop", "secure-tls")),
    ];
    let watch = Watch::start(&manifests, &[]);
    let browser = Browser::start().await;
    open(&browser, &watch).await;
    let rows = "const t = document.querySelector('#https-hosts table'); \
        return t !== null && [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent));";
    let shown = browser.until("the HTTPS hosts", rows).await;
    let row = &shown[0];
    assert_eq!(row[0], "secure.example");
    assert_eq!(row[1], "Secret shop/secure-tls");
    assert_eq!(row[2], "1.2–1.3");
    assert_eq!(row[3], "Ingress/shop/web");
    let default = browser
        .js("return document.getElementById('https-default').textContent;", vec![])
        .await;
    assert!(default.as_str().unwrap().contains("made at start"), "{default}");
    let page = browser.js("return document.body.innerHTML;", vec![]).await;
    assert!(!page.as_str().unwrap().contains("PRIVATE KEY"));
    assert!(!status(&watch).to_string().contains("PRIVATE KEY"));
    browser.close().await;
}
