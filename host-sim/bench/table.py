#!/usr/bin/env python3
"""Writes a route table (table/README.md's format) with N rules, for `host-sim bench`.

usage: table.py N > table.json
       table.py --regex-mode N > table.json
       table.py --canary N > table.json
       table.py --policy N > table.json


Rules are in priority order, as the compiler writes them: per host (svc<i>.example.net), ten
segment-prefix paths /api/v<j>, the first of each host's paths guarded by a header condition, then
a wildcard host and a catch-all. The bench request, http://svc<mid>.example.net/api/v3/items?id=1,
matches a rule in the middle of the table.

With --regex-mode, one ingress-nginx host in regex mode (ROUTING.md §7.4) with N locations, as the
compiler writes them: each `(?i)(?:P).*`, longest path string first; two thirds plain paths
(`/api/v<j>/items/list`), a third with `rewrite-target` (`/r<j>(/|$)(.*)` -> `/$2`, with
x-forwarded-prefix), shorter so tried after every plain one; the root `/` last. The bench request,
http://rx.example/R<mid>/items/42?id=1, is rewritten by the middle one of those, about the 80th
location tried.

With --canary, the N-rule table whose bench rule (svc<mid>.example.net /api/v3) has an ingress-nginx
canary (ROUTING.md §7.6) by header `X-Canary`, by cookie `canary` and 10 in 100 by weight, as the
compiler writes it. Its request (printed as the URL and host-sim's -H/--cookie arguments) carries
the header and the cookie with values that decide nothing (`X-Canary: maybe`, `canary=later`,
among other cookies), so every step runs: the header, the cookie, then the weight.

With --policy, the N-rule table with every rule under the policy `switchyard compile
--ingress-nginx-class nginx --gateway-routes` writes for an Ingress with `enable-cors: "true"`,
`whitelist-source-range: 0.0.0.0/0` and `limit-rps: "10000000"` (issue 46's full policy: ingress-
nginx's default body limit, an allowed range, CORS with its defaults, a rate limit, and the gateway
route of its default timeouts and retries, which adds the CORS headers: the same on every
response, docs/routing.md "CORS"); the rate limit's zone is each rule's own, its rate more than
host-sim can send, so that it never fills up (`bench` refuses a run whose answer changes).
"""
import json
import sys


def regex_mode(n):
    """The table and the request URL of an ingress-nginx host of n locations in regex mode."""
    paths = []
    for j in range(n - 1):
        if j % 3 == 0:
            paths.append((f"/r{j}(/|$)(.*)", j, True))
        else:
            paths.append((f"/api/v{j}/items/list", j, False))
    paths.sort(key=lambda p: (len(p[0]), p[0]), reverse=True)
    paths.append(("/", n, False))
    rules = []
    for i, (path, j, rewrite) in enumerate(paths):
        route = {"backends": [{"cluster": f"ns/svc{j}:80"}]}
        if rewrite:
            route["rewrite_regex"] = {
                "pattern": f"(?i)^{path}",
                "path": "/$2",
                "headers": [{"name": "x-forwarded-prefix", "value": f"/r{j}"}],
            }
        rules.append({
            "name": f"Ingress/ns/rx{j}#{i}",
            "host": "rx.example",
            "path": {"type": "regex", "value": f"(?i)(?:{path}).*"},
            "action": {"route": route},
        })
    mid = 3 * ((n - 1) // 6)
    return {"version": 1, "generation": f"bench-regex-mode-{n}", "rules": rules}, \
        f"http://rx.example/R{mid}/items/42?id=1"


if sys.argv[1] == "--regex-mode":
    table, url = regex_mode(int(sys.argv[2]))
    json.dump(table, sys.stdout)
    print()
    print(url, file=sys.stderr)
    sys.exit(0)

def plain(n):
    """The table of n rules and its bench URL."""
    rules = []
    hosts = max(1, -(-(n - 2) // 10))
    for i in range(hosts):
        for j in range(10):
            if len(rules) >= n - 2:
                break
            rule = {
                "name": f"Ingress/ns{i}/svc{i}#{j}",
                "host": f"svc{i}.example.net",
                "path": {"type": "segment_prefix", "value": f"/api/v{j}"},
                "action": {"route": {"backends": [{"cluster": f"ns{i}/svc{i}-v{j}:80"}]}},
            }
            if j == 0:
                rule["conditions"] = [{"on": "header", "name": "x-canary", "match": "present"}]
            rules.append(rule)
    rules.append({
        "name": "HTTPProxy/default/wild#0",
        "host": "*.example.net",
        "path": {"type": "prefix", "value": "/"},
        "action": {"route": {"backends": [{"cluster": "default/wild:80"}]}},
    })
    rules.append({
        "name": "Ingress/default/fallback#0",
        "path": {"type": "segment_prefix", "value": "/"},
        "action": {"route": {"backends": [{"cluster": "default/fallback:80"}]}},
    })
    table = {"version": 1, "generation": f"bench-{n}", "rules": rules[:max(n, 2)]}
    return table, f"http://svc{hosts // 2}.example.net/api/v3/items?id=1", hosts // 2


if sys.argv[1] == "--canary":
    table, url, mid = plain(int(sys.argv[2]))
    table["generation"] = f"bench-canary-{sys.argv[2]}"
    bench_rule = next(r for r in table["rules"] if r["name"] == f"Ingress/ns{mid}/svc{mid}#3")
    bench_rule["action"]["route"]["canary"] = {
        "cluster": f"ns{mid}/svc{mid}-canary:80",
        "header": {"name": "X-Canary"},
        "cookie": "canary",
        "weight": 10,
    }
    json.dump(table, sys.stdout)
    print()
    # Words for host-sim's command line (no spaces inside one).
    print(f"{url} -H X-Canary:maybe --cookie session=abc --cookie canary=later --cookie theme=dark",
          file=sys.stderr)
    sys.exit(0)

# What the compiler writes for the Ingress --policy describes (its zone set per rule below).
FULL_POLICY = {
    "max_body_bytes": 1048576,
    "allow": ["0.0.0.0/0"],
    "route": "timeout=0ms+idle=60000ms+upstream-idle=60000ms"
             "+retry=connect-failure,reset,refused-stream+retries=2+idempotent+other-host+headers=b518cc837a6aeabe",
    "cors": {
        "allow_origin": ["*"],
        "allow_methods": "GET, PUT, POST, DELETE, PATCH, OPTIONS",
        "allow_headers": "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,"
                         "Content-Type,Range,Authorization",
        "allow_credentials": True,
        "max_age": 1728000,
        "by_route": True,
    },
    "rate_limit": {
        "zone": "",
        "per_second": {"requests": 10000000, "burst": 50000000},
        "status": 503,
        "in_flight_status": 503,
    },
}

if sys.argv[1] == "--policy":
    table, url, _ = plain(int(sys.argv[2]))
    table["generation"] = f"bench-policy-{sys.argv[2]}"
    for rule in table["rules"]:
        policy = json.loads(json.dumps(FULL_POLICY))
        policy["rate_limit"]["zone"] = rule["name"].split("#")[0].split("/", 1)[1]
        rule["policy"] = policy
    json.dump(table, sys.stdout)
    print()
    print(url, file=sys.stderr)
    sys.exit(0)

table, url, _ = plain(int(sys.argv[1]))
json.dump(table, sys.stdout)
print()
print(url, file=sys.stderr)
