// Switchyard's dashboard: renders /status and /rules, follows /events, and asks /explain.
// Plain DOM, no framework and no build step; every value is set as text, never as HTML.
"use strict";

const shown = { status: null, rules: null, explained: null };

// ---- helpers ---------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-") || key.startsWith("aria-") || key === "role") node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function $(id) {
  return document.getElementById(id);
}

function replace(id, ...children) {
  $(id).replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined));
}

const ruleId = (name) => "rule:" + name;
const resourceId = (kind, namespace, name) => "resource:" + kind + "/" + namespace + "/" + name;
const link = (id, text) => el("a", { href: "#" + encodeURIComponent(id) }, text);

function resourceLabel(r) {
  return r.kind + " " + (r.namespace ? r.namespace + "/" : "") + r.name;
}

function badge(word) {
  return el("span", { class: "badge badge-" + String(word).toLowerCase() }, word);
}

function when(ms) {
  const at = new Date(ms);
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
  const ago = seconds < 90 ? seconds + " s ago" : seconds < 5400 ? Math.round(seconds / 60) + " min ago"
    : Math.round(seconds / 3600) + " h ago";
  return el("time", { dateTime: at.toISOString(), title: at.toString() },
    at.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC"), " (" + ago + ")");
}

// Any JSON value as text or nested markup: what /status holds beyond the fields drawn specially.
function value(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v)) {
    if (v.length === 0) return "none";
    return el("ul", { class: "plain" }, v.map((item) => el("li", {}, value(item))));
  }
  if (typeof v === "object") {
    const keys = Object.keys(v);
    if (keys.length === 0) return "none";
    return el("dl", { class: "fields nested" }, keys.map((k) => [el("dt", {}, k), el("dd", {}, value(v[k]))]));
  }
  return String(v);
}

// A list of objects (or a map of name → object or text) as a table whose columns are their keys.
function objectTable(caption, rows, firstColumn) {
  const entries = Array.isArray(rows) ? rows : Object.entries(rows).map(([name, v]) =>
    typeof v === "object" && v !== null ? { [firstColumn]: name, ...v } : { [firstColumn]: name, reason: v });
  const columns = [];
  for (const row of entries) for (const key of Object.keys(row)) if (!columns.includes(key)) columns.push(key);
  return el("table", { class: "grid" },
    el("caption", {}, caption),
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", { scope: "col" }, c)))),
    el("tbody", {}, entries.map((row) => el("tr", {}, columns.map((c) => el("td", {}, value(row[c])))))));
}

// ---- overview --------------------------------------------------------------------------------

// /status fields drawn in their own places; every other field is listed as it comes.
const DRAWN = new Set(["ready", "reason", "generation", "table", "traffic", "access", "resources", "errors", "warnings",
  "warning_groups", "sources_down", "sinks_refused", "sinks", "push_log", "l4", "https"]);

function renderOverview(status) {
  const summary = [
    el("span", { class: status.ready ? "ready" : "not-ready" }, status.ready ? "Ready" : "Not ready"),
    " · generation ", el("strong", { id: "generation" }, status.generation),
    " · table ", el("code", { id: "table-hash" }, status.table || "—"),
    " · ", status.rules, " rules · ", status.hosts, " hosts",
  ];
  const last = (status.push_log || [])[0];
  if (last) summary.push(" · pushed ", when(last.at_unix_ms));
  const traffic = status.traffic || NO_TRAFFIC;
  if (traffic.state === "known" && traffic.total) summary.push(" · ", rateText(traffic.total));
  if (traffic.state === "unknown") summary.push(" · traffic unknown");
  replace("summary", summary);
  renderHealth(status, last);
  renderTraffic(traffic);

  const fields = Object.keys(status).filter((k) => !DRAWN.has(k));
  replace("status-fields", fields.map((k) => [el("dt", {}, k), el("dd", { "data-field": k }, value(status[k]))]));

  const problems = [];
  // ROUTING.md §9 first: the resources whose rules answer 403, then those served without an access
  // control their owners waived.
  const access = status.access || { blocked: [], waived: [] };
  for (const [key, id, caption, cls] of [
    ["blocked", "access-blocked", "Answering 403: access controls this gateway does not enforce", "problem"],
    ["waived", "access-waived", "Served without access controls their owners waived", "problem warning"]]) {
    if ((access[key] || []).length) {
      problems.push(el("div", { class: cls, id, role: key === "blocked" ? "alert" : null },
        el("h3", {}, caption),
        el("ul", {}, access[key].map((a) => el("li", { class: "access" },
          el("strong", {}, a.resource), ": ", a.fields.map((f, i) => [i ? ", " : "", el("code", {}, f)]))))));
    }
  }
  if ((status.errors || []).length) {
    problems.push(el("div", { class: "problem", id: "source-errors", role: "alert" },
      el("h3", {}, "Input that could not be read"),
      el("ul", {}, status.errors.map((e) => el("li", { class: "source-error" },
        el("code", {}, e.source), ": ", el("span", { class: "message" }, e.message))))));
  }
  // One line per kind of note, with its count; what each is about behind a click.
  const groups = status.warning_groups || [];
  if (groups.length) {
    problems.push(el("div", { class: "problem warning", id: "warnings" },
      el("h3", {}, `Warnings (${(status.warnings || []).length})`),
      el("ul", {}, groups.map((g) => el("li", { class: "warning-group" },
        g.count > 1 ? el("strong", {}, `${g.count}× `) : null, g.note,
        g.about.length ? el("details", {}, el("summary", {}, g.about.length > 1 ? `${g.about.length} resources` : "about"),
          el("ul", {}, g.about.map((a) => el("li", {}, el("code", {}, a))))) : null)))));
  }
  for (const [key, caption, column] of [["sources_down", "Sources down", "source"],
    ["sinks_refused", "Sinks refusing the newest table", "sink"]]) {
    if (status[key] && Object.keys(status[key]).length) {
      problems.push(el("div", { class: "problem" }, objectTable(caption, status[key], column)));
    }
  }
  replace("problems", problems);
}

// ---- health and traffic ----------------------------------------------------------------------

// Ready or not and why, and the table's generation: the first thing the overview says.
function renderHealth(status, last) {
  const ready = !!status.ready;
  replace("health",
    el("p", { id: "health-ready", class: ready ? "ready" : "not-ready" }, ready ? "Ready" : "Not ready",
      (status.not_ready || []).length ? [" (", status.not_ready.join(", "), ")"] : null),
    el("p", { id: "health-reason", class: "meta" }, status.reason),
    el("p", {}, "Generation ", el("strong", {}, status.generation), " of the table ",
      el("code", {}, status.table || "—"), last ? [", pushed ", when(last.at_unix_ms)] : ", not pushed yet"));
}

// /status `traffic` when the watch is older than it, or says nothing.
const NO_TRAFFIC = { state: "off", source: "none", resources: [], total: null, folded: null, unrouted: null };

function perSecond(x) {
  if (x === 0) return "0 req/s";
  if (x < 0.01) return "< 0.01 req/s";
  return (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : String(Math.round(x))) + " req/s";
}

// A share (0 to 1) as a percentage; `null`: nothing to share.
function percent(share) {
  if (share === null || share === undefined) return "—";
  const p = share * 100;
  if (p === 0) return "0 %";
  if (p < 0.1) return "< 0.1 %";
  return (p < 10 ? p.toFixed(1) : String(Math.round(p))) + " %";
}

// `12.5 req/s, 2.0 % 5xx`, or `0 req/s` without a request.
function rateText(rate) {
  return perSecond(rate.requests_per_second) + (rate.error_rate === null ? "" : ", " + percent(rate.error_rate) + " 5xx");
}

function windowText(rate) {
  const s = rate.window_seconds;
  return s >= 90 ? "over the last " + Math.round(s / 60) + " min" : "over the last " + Math.round(s) + " s";
}

// Each resource's traffic by resource id, from the /status last drawn.
let trafficOf = new Map();

function indexTraffic(traffic) {
  trafficOf = new Map(traffic.resources.map((r) => [resourceId(r.kind, r.namespace, r.name), r]));
}

// A list of resources with their rates, each linking to its row under Resources.
function trafficTable(id, caption, rows) {
  return el("table", { class: "grid", id },
    el("caption", {}, caption),
    el("thead", {}, el("tr", {}, ["Resource", "Requests", "5xx"].map((c) => el("th", { scope: "col" }, c)))),
    el("tbody", {}, rows.map((r) => el("tr", { "data-resource": r.kind + "/" + r.namespace + "/" + r.name },
      el("th", { scope: "row" }, link(resourceId(r.kind, r.namespace, r.name), resourceLabel(r))),
      el("td", { class: "num" }, perSecond(r.requests_per_second)),
      el("td", { class: "num" }, percent(r.error_rate))))));
}

// How many resources the overview names as the busiest and the most failing.
const TOP = 5;

function renderTraffic(traffic) {
  const says = (id, cls, ...text) => replace("traffic", el("p", { id, class: cls }, ...text));
  if (traffic.state === "off") {
    return says("traffic-off", "meta", "Traffic per resource is not shown: it is read from Envoy's stats. Run ",
      el("code", {}, "switchyard watch"), " with ", el("code", {}, "--envoy-admin ADDR:PORT"),
      " (Envoy's admin address, beside --ecds-file) to see each resource's requests per second and share of 5xx here.");
  }
  if (traffic.state === "waiting") return says("traffic-waiting", "meta", "Reading the traffic from ", traffic.source, "…");
  if (traffic.state === "unknown") {
    const why = traffic.error || "traffic unknown";
    return says("traffic-unknown", "problem warning", why.charAt(0).toUpperCase() + why.slice(1));
  }
  if (traffic.state === "measuring") {
    return says("traffic-measuring", "meta", "Measuring the traffic: the first reading was taken",
      traffic.read_at_unix_ms ? [" ", when(traffic.read_at_unix_ms)] : null, "; rates come with the next one.");
  }
  const total = traffic.total;
  const fields = [
    el("dt", {}, "Requests"), el("dd", { id: "traffic-total" }, rateText(total), " ", el("span", { class: "meta" },
      windowText(total), " (five minutes: ", rateText(total.five_minutes), ")")),
  ];
  if (traffic.unrouted) {
    fields.push(el("dt", {}, "No rule took"), el("dd", { id: "traffic-unrouted" }, rateText(traffic.unrouted),
      el("span", { class: "meta" }, " (the filter's 404, or passed through)")));
  }
  if (traffic.folded) {
    fields.push(el("dt", {}, "Folded"), el("dd", { id: "traffic-folded" }, rateText(traffic.folded),
      el("span", { class: "meta" }, " (resources beyond the gateway's --metrics-max-resources, counted together)")));
  }
  const busy = traffic.resources.filter((r) => r.requests_per_second > 0)
    .sort((a, b) => b.requests_per_second - a.requests_per_second).slice(0, TOP);
  const failing = traffic.resources.filter((r) => r.errors_per_second > 0)
    .sort((a, b) => b.error_rate - a.error_rate || b.errors_per_second - a.errors_per_second).slice(0, TOP);
  replace("traffic",
    el("dl", { class: "fields" }, fields),
    busy.length ? trafficTable("traffic-busiest", "Busiest resources, last minute", busy)
      : el("p", { id: "traffic-quiet" }, "No resource had a request in the last minute."),
    failing.length ? trafficTable("traffic-failing", "Resources answering 5xx, the highest share first", failing) : null,
    el("p", { class: "meta" }, "From ", traffic.source, ", read ", when(traffic.read_at_unix_ms), "."));
}

// A resource's traffic cell in the Resources table.
function trafficCell(r, traffic) {
  const id = resourceId(r.kind, r.namespace, r.name);
  const own = trafficOf.get(id);
  if (own) {
    return el("td", { class: "traffic num", "data-rps": own.requests_per_second,
      "data-error-rate": own.error_rate === null ? "" : own.error_rate,
      title: windowText(own) + "; five minutes: " + rateText(own.five_minutes) },
    perSecond(own.requests_per_second), own.error_rate === null ? null : [el("br"), percent(own.error_rate) + " 5xx"]);
  }
  const words = { off: "—", waiting: "…", unknown: "unknown", measuring: "measuring…" }[traffic.state];
  if (words) return el("td", { class: "traffic meta" }, words);
  if (!rulesOf.has(id)) return el("td", { class: "traffic meta", title: "no rule of the live table" }, "—");
  return traffic.folded
    ? el("td", { class: "traffic meta", title: "idle, or counted under folded (beyond the gateway's --metrics-max-resources)" },
      "no requests of its own")
    : el("td", { class: "traffic meta" }, "no requests");
}

// ---- hosts and rules -------------------------------------------------------------------------

function actionCell(action) {
  if (action.type === "direct_response") {
    return el("td", {}, "local reply ", el("strong", {}, action.status), action.body ? [" ", el("q", {}, action.body)] : null);
  }
  if (action.type === "redirect") {
    return el("td", {}, "redirect ", el("strong", {}, action.status), " to ", el("code", {}, action.url));
  }
  const notes = [];
  if (action.rewrite_prefix) notes.push(el("li", {}, "rewrite prefix to ", el("code", {}, action.rewrite_prefix)));
  if (action.rewrite_regex) {
    const r = action.rewrite_regex;
    notes.push(el("li", { class: "rewrite-regex" }, "rewrite path matching ", el("code", {}, r.pattern), " to ",
      el("code", {}, r.path)));
    for (const h of r.headers) notes.push(el("li", {}, "then set ", el("code", {}, h)));
  }
  for (const h of action.set_headers) notes.push(el("li", {}, "set ", el("code", {}, h)));
  for (const h of action.remove_headers) notes.push(el("li", {}, "remove ", el("code", {}, h)));
  return el("td", {}, "route", notes.length ? el("ul", { class: "plain" }, notes) : null);
}

function backendsCell(action) {
  if (action.type !== "route") return el("td", {}, "—");
  return el("td", {}, el("ul", { class: "plain" }, action.backends.map((b) =>
    el("li", {}, el("code", {}, b.cluster), action.backends.length > 1 || b.weight !== 1
      ? " weight " + b.weight + " (" + b.percent + " %)" : null)).concat(action.canary
    ? [el("li", { class: "canary" }, "canary ", el("code", {}, action.canary.cluster), " by ",
      action.canary.steps.join(", then "))]
    : [])));
}

function ruleRow(rule) {
  const resource = rule.resource;
  return el("tr", { id: ruleId(rule.name), class: "rule", "data-rule": rule.name },
  el("td", { class: "num" }, rule.position),
  el("th", { scope: "row" }, resource
    ? [link(resourceId(resource.kind, resource.namespace, resource.name), resourceLabel(resource)),
      el("span", { class: "rule-index" }, rule.name.slice(rule.name.lastIndexOf("#")))]
    : rule.name),
  el("td", {}, el("span", { class: "path-kind" }, rule.path.type.replace(/_/g, " ")), " ", el("code", {}, rule.path.value)),
  el("td", {}, rule.conditions.length
    ? el("ul", { class: "plain" }, rule.conditions.map((c) => el("li", {}, el("code", {}, c)))) : "—"),
  backendsCell(rule.action),
  actionCell(rule.action));
}

// A big table (10,000 hosts) is drawn a page at a time: the first hosts and resources that pass the
// filters, and a button for more. Filters work on the data, so whatever they find is drawn.
const PAGE = { hosts: 200, resources: 500 };
const limit = { hosts: PAGE.hosts, resources: PAGE.resources };

function more(id, kind, drawn, total, what, redraw) {
  if (drawn >= total) {
    replace(id, total === 0 ? "Nothing matches the filter." : null);
    return;
  }
  replace(id, "Showing " + drawn + " of " + total + " " + what + ". ",
    el("button", { type: "button", class: "more", onclick: () => {
      limit[kind] += PAGE[kind];
      redraw();
    } }, "Show " + Math.min(PAGE[kind], total - drawn) + " more"));
}

function renderRules() {
  const rules = shown.rules;
  if (!rules) {
    replace("rules-meta", "No table pushed yet.");
    replace("host-list");
    replace("hosts-more");
    return;
  }
  replace("rules-meta", "Generation ", rules.generation, " (table ", el("code", {}, rules.table), "): ",
    rules.rules, " rules for ", rules.hosts.length, " host patterns; a request no rule matches ",
    rules.no_route === "pass" ? "passes through untouched." : "gets a 404.");
  const wanted = $("rule-filter").value.trim().toLowerCase();
  const matching = [];
  for (const h of rules.hosts) {
    const host = h.host === null ? "*" : h.host;
    const own = !wanted || host.toLowerCase().includes(wanted) ? h.rules : h.rules.filter((r) => ruleText(r).includes(wanted));
    if (own.length) matching.push({ host: h.host, rules: own, all: h.rules.length, ingressNginx: h.ingress_nginx });
  }
  const drawn = matching.slice(0, limit.hosts);
  replace("host-list", drawn.map((h, i) => {
    const name = h.host === null ? "Any host (catch-all)" : h.host;
    const headingId = "host-heading-" + i;
    const count = h.rules.length === h.all ? h.all + (h.all === 1 ? " rule" : " rules") : h.rules.length + " of " + h.all + " rules";
    return el("section", { class: "host", "data-host": h.host === null ? "*" : h.host, "aria-labelledby": headingId },
      el("h3", { id: headingId }, name, " ", el("span", { class: "count" }, "(" + count + ")")),
      serverMode(h.ingressNginx),
      el("table", { class: "grid rules" },
        el("caption", { class: "visually-hidden" }, "Rules for " + name + " in priority order"),
        el("thead", {}, el("tr", {}, ["Position", "Resource", "Path", "Conditions", "Backends", "Action"]
          .map((c) => el("th", { scope: "col" }, c)))),
        el("tbody", {}, h.rules.map(ruleRow))));
  }));
  more("hosts-more", "hosts", drawn.length, matching.length, "hosts", renderRules);
}

// The mode of a host's ingress-nginx server (ROUTING.md §7.3, §7.4), when its Ingresses route it.
function serverMode(mode) {
  if (!mode) return null;
  return el("p", { class: "meta server-mode" }, "ingress-nginx server: ", mode.regex
    ? [el("strong", {}, "regex mode"), ", turned on by ", el("code", {}, mode.turned_on_by),
      " (every path a case-insensitive regex anchored at its start, longest path first)"]
    : "plain paths (no regex mode)");
}

function ruleText(rule) {
  return (rule.name + " " + (rule.resource ? resourceLabel(rule.resource) : "")).toLowerCase();
}

// ---- resources -------------------------------------------------------------------------------

function fillSelect(id, words, label) {
  const select = $(id);
  const chosen = select.value;
  select.replaceChildren(el("option", { value: "" }, label), ...words.map((w) => el("option", { value: w }, w)));
  select.value = words.includes(chosen) ? chosen : "";
}

// Each resource's rules, by resource id (made again when the table changes).
let rulesOf = new Map();

function indexRules() {
  rulesOf = new Map();
  for (const host of shown.rules ? shown.rules.hosts : []) {
    for (const rule of host.rules) {
      if (!rule.resource) continue;
      const key = resourceId(rule.resource.kind, rule.resource.namespace, rule.resource.name);
      if (!rulesOf.has(key)) rulesOf.set(key, []);
      rulesOf.get(key).push({ ...rule, host: host.host });
    }
  }
  for (const own of rulesOf.values()) own.sort((a, b) => a.position - b.position);
}

function resourceText(r) {
  return [r.kind, r.namespace, r.name, r.status, ...r.conditions.flatMap((c) => [c.reason, c.message])]
    .join(" ").toLowerCase();
}

// Sorts the resources in place: as /status lists them, the busiest first, or the most 5xx first
// (resources without traffic last, in their order).
function ordered(resources, order) {
  if (!order) return;
  const of = (r) => trafficOf.get(resourceId(r.kind, r.namespace, r.name));
  const key = order === "busiest" ? (t) => [t.requests_per_second, 0] : (t) => [t.error_rate || 0, t.errors_per_second];
  const keys = new Map(resources.map((r) => [r, of(r) ? key(of(r)) : [-1, -1]]));
  resources.sort((a, b) => keys.get(b)[0] - keys.get(a)[0] || keys.get(b)[1] - keys.get(a)[1]);
}

function renderResources() {
  const resources = shown.status ? shown.status.resources || [] : [];
  const unique = (xs) => [...new Set(xs)].sort();
  fillSelect("resource-kind", unique(resources.map((r) => r.kind)), "All kinds");
  fillSelect("resource-status", unique(resources.map((r) => r.status)), "All statuses");
  const wanted = $("resource-filter").value.trim().toLowerCase();
  const kind = $("resource-kind").value;
  const status = $("resource-status").value;
  const matching = resources.filter((r) => (!kind || r.kind === kind) && (!status || r.status === status)
    && (!wanted || resourceText(r).includes(wanted)));
  ordered(matching, $("resource-order").value);
  const traffic = (shown.status && shown.status.traffic) || NO_TRAFFIC;
  const drawn = matching.slice(0, limit.resources);
  replace("resource-rows", drawn.map((r) => {
    const id = resourceId(r.kind, r.namespace, r.name);
    const own = rulesOf.get(id) || [];
    return el("tr", { id, class: "resource", "data-kind": r.kind, "data-status": r.status },
      el("td", {}, r.kind), el("td", {}, r.namespace || "—"), el("th", { scope: "row" }, r.name),
      el("td", {}, badge(r.status)),
      trafficCell(r, traffic),
      el("td", {}, r.conditions.length ? el("ul", { class: "plain conditions" }, r.conditions.map((c) =>
        el("li", {}, badge(c.type), " ", el("strong", { class: "reason" }, c.reason), ": ", c.message))) : "—"),
      el("td", {}, own.length ? el("ul", { class: "plain" }, own.map((rule) =>
        el("li", {}, link(ruleId(rule.name), rule.name), " ",
          el("span", { class: "meta" }, (rule.host === null ? "any host" : rule.host) + " " + rule.path.value))))
        : "—"));
  }));
  more("resources-more", "resources", drawn.length, matching.length, "resources", renderResources);
}

// ---- L4 routes -------------------------------------------------------------------------------

// A route of a TransportServer as a table row (a host-less route on a TCP/UDP listener takes every
// connection the listener's SNI chains do not).
function l4Row(route, listener) {
  const row = listener ? { listener: listener.name, port: listener.port, protocol: listener.protocol } : {};
  return { ...row, host: route.host || (listener ? "any" : "—"), cluster: route.cluster, resource: route.resource };
}

function renderL4(status) {
  const l4 = status.l4 || { sinks: [], passthrough: [], listeners: [] };
  replace("l4-sinks", l4.sinks.length
    ? ["Pushed to ", l4.sinks.join(", "), "."]
    : "No L4 sink (--lds-file, --istio-gateway): these routes are compiled but pushed nowhere.");
  const tables = [];
  if (l4.passthrough.length) {
    tables.push(objectTable("TLS passthrough hosts (passed through by SNI)", l4.passthrough.map((r) => l4Row(r))));
  }
  const routes = l4.listeners.flatMap((listener) => listener.routes.map((r) => l4Row(r, listener)));
  if (routes.length) tables.push(objectTable("TCP and UDP listeners", routes));
  replace("l4-routes", tables.length ? tables : el("p", {}, "No TransportServer routes."));
}

// ---- HTTPS ------------------------------------------------------------------------------------

// What a host is served with: its Secret, the default certificate, or nothing (handshakes fail).
function served(s) {
  if (s === "default") return "the default certificate";
  if (s === "refused") return "none: handshakes naming it fail";
  // `{"secret": {"secret": {"namespace", "name"}, "fingerprint"}}`.
  const named = s.secret && s.secret.secret;
  return named ? `Secret ${named.namespace}/${named.name}` : JSON.stringify(s);
}

function renderHttps(status) {
  const https = status.https || { hosts: [], default: "default" };
  const made = https.default === "default";
  replace("https-default", [
    "Default certificate: ", made ? "made at start (CN Kubernetes Ingress Controller Fake Certificate)" : served(https.default),
    https.default_problem ? ` — ${https.default_problem}` : "",
  ]);
  const rows = https.hosts.map((h) => ({
    host: h.host, certificate: served(h.served), versions: `${h.versions.min}–${h.versions.max}`,
    "decided by": h.decided_by, why: h.why,
  }));
  replace("https-hosts", rows.length ? objectTable("Hosts with a certificate of their own", rows)
    : el("p", {}, "Every host is served with the default certificate."));
}

// ---- push log --------------------------------------------------------------------------------

function renderPushes(status) {
  const sinks = status.sinks || {};
  replace("sinks", Object.keys(sinks).length ? objectTable("Pushes per sink since the watch started", sinks, "sink") : null);
  replace("push-rows", (status.push_log || []).map((p) => el("tr", {},
    el("th", { scope: "row", class: "num" }, p.generation), el("td", {}, el("code", {}, p.table)),
    el("td", {}, when(p.at_unix_ms)), el("td", { class: "num" }, p.rules), el("td", { class: "num" }, p.hosts),
    el("td", {}, el("ul", { class: "plain" }, p.sinks.map((s) => el("li", {}, s.sink, " ", badge(s.outcome))))),
    el("td", {}, p.change))));
}

// ---- explain ---------------------------------------------------------------------------------

function lines(id) {
  return $(id).value.split("\n").map((l) => l.trim()).filter((l) => l.length > 0);
}

let explainSeq = 0;

async function explain(asked) {
  shown.explained = asked;
  const seq = ++explainSeq;
  let answer;
  try {
    const response = await ask("/explain", { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify(asked) });
    answer = await response.json();
  } catch (e) {
    answer = { error: "the watch did not answer: " + e.message };
  }
  if (seq !== explainSeq) return; // a newer request was asked meanwhile
  if (answer.error) {
    replace("explain-result", el("p", { class: "problem", role: "alert", id: "explain-error" }, answer.error));
    return;
  }
  const d = answer.decision;
  const winner = d.rule
    ? el("p", { id: "explain-winner", class: "winner", "data-rule": d.rule, "data-cluster": d.cluster || "",
      "data-status": d.status },
    "Winner: ", link(ruleId(d.rule), d.rule), " → ",
    d.cluster ? ["cluster ", el("code", {}, d.cluster), ", upstream path ", el("code", {}, d.path)]
      : ["local reply ", el("strong", {}, d.status)])
    : el("p", { id: "explain-winner", class: "winner none", "data-rule": "", "data-cluster": "", "data-status": d.status },
      "No rule matches: ", d.status === 404 ? "the filter answers 404." : "the request passes through untouched.");
  const losers = answer.losers.length
    ? el("table", { class: "grid", id: "explain-losers" },
      el("caption", {}, "Other candidates (host and path matched) and why they lost"),
      el("thead", {}, el("tr", {}, ["Position", "Rule", "Why it lost"].map((c) => el("th", { scope: "col" }, c)))),
      el("tbody", {}, answer.losers.map((l) => el("tr", {}, el("td", { class: "num" }, l.position),
        el("th", { scope: "row" }, link(ruleId(l.rule), l.rule)), el("td", {}, l.why)))))
    : el("p", {}, "No other rule matched host and path.");
  replace("explain-result",
    el("p", { class: "meta" }, "On generation ", answer.generation, " (table ",
      el("code", { id: "explain-table" }, answer.table), ")"),
    winner, answer.winner_detail ? el("p", { class: "meta" }, answer.winner_detail) : null,
    d.policy ? el("p", { id: "explain-policy", class: "problem" }, "Answered by its policy: ", d.policy) : null,
    answer.policies && answer.policies.length
      ? el("ul", { id: "explain-policies" }, answer.policies.map((p) => el("li", {}, p))) : null,
    losers,
    el("details", {}, el("summary", {}, "As switchyard explain prints it"), el("pre", { id: "explain-text" }, answer.text)));
}

// ---- live ------------------------------------------------------------------------------------

// Every request of the page: a 401 means the token (--dashboard-token-file) is missing or has changed,
// so the page goes to the login form.
async function ask(path, init) {
  const response = await fetch(path, init);
  if (response.status === 401) {
    location.assign("/login");
    throw new Error("the dashboard asks for its token");
  }
  return response;
}

async function getJson(path) {
  const response = await ask(path, { cache: "no-store" });
  if (response.status === 503) return null;
  if (!response.ok) throw new Error(path + ": HTTP " + response.status);
  return response.json();
}

let refreshing = null;
let again = false;

// One refresh at a time; a change during one runs one more after it.
async function refresh() {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      again = false;
      const response = await ask("/status", { cache: "no-store" });
      if (!response.ok) throw new Error("/status: HTTP " + response.status);
      const text = await response.text();
      const status = JSON.parse(text);
      const stale = !shown.rules || shown.rules.generation !== status.generation || shown.rules.table !== status.table;
      if (!stale && text === shown.statusText) continue; // nothing new to draw
      const rules = stale ? await getJson("/rules") : shown.rules;
      const tableChanged = shown.rules && rules && shown.rules.table !== rules.table;
      shown.status = status;
      shown.statusText = text;
      indexTraffic(status.traffic || NO_TRAFFIC);
      renderOverview(status);
      if (stale) {
        shown.rules = rules;
        indexRules();
        renderRules();
      }
      renderHttps(status);
      renderL4(status);
      renderResources();
      renderPushes(status);
      if (tableChanged && shown.explained) await explain(shown.explained);
    } while (again);
  })();
  try {
    await refreshing;
  } catch (e) {
    setLive("error", "Could not read the watch: " + e.message);
  } finally {
    refreshing = null;
  }
}

function setLive(state, text) {
  const live = $("live");
  live.className = "live " + state;
  live.textContent = text;
}

function follow() {
  const events = new EventSource("/events");
  events.addEventListener("open", () => setLive("connected", "Live"));
  events.addEventListener("change", () => refresh());
  events.addEventListener("error", () => setLive("disconnected", "Disconnected: reconnecting…"));
}

// Filters draw again from the first page.
function refilter(kind, draw) {
  return () => {
    limit[kind] = PAGE[kind];
    draw();
  };
}

// A link to a rule or resource that is not drawn (beyond the page, or filtered out) first sets the
// filter to it, so that it is drawn before the browser goes there.
function reveal(event) {
  const a = event.target.closest("a[href^='#rule'], a[href^='#resource']");
  if (!a) return;
  const id = decodeURIComponent(a.getAttribute("href").slice(1));
  if (document.getElementById(id)) return;
  if (id.startsWith("rule:")) {
    $("rule-filter").value = id.slice("rule:".length).split("#")[0];
    refilter("hosts", renderRules)();
  } else {
    const [kind, namespace, name] = id.slice("resource:".length).split("/");
    $("resource-kind").value = "";
    $("resource-status").value = "";
    $("resource-filter").value = [kind, namespace, name].join(" ").toLowerCase();
    refilter("resources", renderResources)();
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const kind of ["input", "change"]) {
    $("rule-filter").addEventListener(kind, refilter("hosts", renderRules));
    for (const id of ["resource-filter", "resource-kind", "resource-status", "resource-order"]) {
      $(id).addEventListener(kind, refilter("resources", renderResources));
    }
  }
  document.addEventListener("click", reveal);
  $("explain-form").addEventListener("submit", (event) => {
    event.preventDefault();
    explain({ url: $("explain-url").value.trim(), method: $("explain-method").value.trim() || "GET",
      headers: lines("explain-headers"), cookies: lines("explain-cookies") });
  });
  refresh();
  follow();
  // "… s ago" stays true without a change to announce.
  setInterval(() => {
    if (shown.status) {
      renderOverview(shown.status);
      renderPushes(shown.status);
    }
  }, 30000);
});
