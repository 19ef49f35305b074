#!/usr/bin/env bash
# `make run`: Envoy (envoy.yaml) with the Switchyard filter routing the examples/ table to local
# backends. Starts `switchyard watch` on the examples (it writes the ECDS file and rewrites it when a
# file changes), one backend per cluster of envoy.yaml and Envoy, sends sample requests, then serves
# until Ctrl-C; every process it started is stopped on the way out.
#
# Expects `make build` to have run (the filter .wasm, target/release/switchyard) and
# target/release/switchyard-demo (the Makefile builds it). ENVOY_BIN defaults to build/venv/bin/envoy.
set -euo pipefail
cd "$(dirname "$0")/.."

ENVOY_BIN=${ENVOY_BIN:-build/venv/bin/envoy}
WASM=target/wasm32-wasip1/release/switchyard_filter.wasm
DEMO=target/release/switchyard-demo
SWITCHYARD=target/release/switchyard
RUN=build/run

# The examples are seed scenarios; these share one Envoy without clashing: seed 002's BFE Ingresses
# (class annotation "bfe"), the host collision of seed 003 and the HTTPProxy inclusions of seed 004
# (no class: --empty-ingress-class). The seed 000/001 examples exercise class flags that contradict
# these (other controllers, another default class); `switchyard compile examples/<dir> $(cat ARGS)` shows them.
EXAMPLES=(examples/002-* examples/003-host-collision examples/004-*)

mkdir -p "$RUN"
rm -f "$RUN/switchyard-filter.json"

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped Envoy, the backends and switchyard watch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# switchyard watch follows the example folders: it writes the ECDS file Envoy reads (before Envoy
# starts: the listener waits for it) and rewrites it on every change; its log stays on this terminal.
echo "== switchyard watch --manifests ${EXAMPLES[*]} --ingress-class bfe --empty-ingress-class --ecds-file $RUN/switchyard-filter.json"
"$SWITCHYARD" watch --manifests "${EXAMPLES[@]}" --ingress-class bfe --empty-ingress-class --debug-rule-header \
  --ecds-file "$RUN/switchyard-filter.json" --envoy-admin 127.0.0.1:9901 --wasm "$WASM" -o build/table.json \
  --listen 127.0.0.1:9102 &
pids+=($!)
for _ in $(seq 100); do [ -s "$RUN/switchyard-filter.json" ] && break; sleep 0.1; done

echo "== backends"
"$DEMO" backends envoy.yaml &
pids+=($!)
"$ENVOY_BIN" -c envoy.yaml --concurrency 2 --disable-hot-restart --log-level info --log-path "$RUN/envoy.log" &
pids+=($!)

echo "== Envoy $("$ENVOY_BIN" --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -1) with the filter (log: $RUN/envoy.log)"
"$DEMO" samples 127.0.0.1:10000 127.0.0.1:9901

cat <<TXT

Envoy listens on http://127.0.0.1:10000 (admin: http://127.0.0.1:9901, metrics: /stats?filter=wasmcustom).
Try:  curl -H 'Host: example.net' http://127.0.0.1:10000/bar/foo
Live change: edit a file under examples/ and the route moves within about 0.1 s (the push is logged
here). For example, send *.net's /bar (seed 002's host_priority2) to service1 instead of service2:
      curl -s -H 'Host: other.net' http://127.0.0.1:10000/bar | head -1   # backend: production/service2
      sed -i 's/serviceName: service2/serviceName: service1/' examples/002-host-priority/ingresses.yaml
      curl -s -H 'Host: other.net' http://127.0.0.1:10000/bar | head -1   # backend: production/service1
      git checkout examples/002-host-priority                             # and back
switchyard watch: the dashboard at http://127.0.0.1:9102/ (and /status, /table, /metrics, /readyz).
Ctrl-C stops Envoy, the backends and switchyard watch.
TXT
wait
