#!/usr/bin/env python3
"""Writes a route table (table/README.md's format) with N rules, for `host-sim bench`.

usage: table.py N > table.json

Rules are in priority order, as the compiler writes them: per host (svc<i>.example.net), ten
segment-prefix paths /api/v<j>, the first of each host's paths guarded by a header condition, then
a wildcard host and a catch-all. The bench request, http://svc<mid>.example.net/api/v3/items?id=1,
matches a rule in the middle of the table.
"""
import json
import sys

n = int(sys.argv[1])
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
json.dump({"version": 1, "generation": f"bench-{n}", "rules": rules[:max(n, 2)]}, sys.stdout)
print()
print(f"http://svc{hosts // 2}.example.net/api/v3/items?id=1", file=sys.stderr)
