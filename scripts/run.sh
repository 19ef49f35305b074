#!/usr/bin/env bash
# `make run`: Envoy (envoy.yaml) with the Switchyard filter routing the examples/ table to local
# backends. Compiles the table, starts one backend per cluster of envoy.yaml and Envoy, sends sample
# requests, then serves until Ctrl-C; every process it started is stopped on the way out.
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
echo "== switchyard compile ${EXAMPLES[*]} --ingress-class bfe --empty-ingress-class --debug-rule-header -o build/table.json"
"$SWITCHYARD" compile "${EXAMPLES[@]}" --ingress-class bfe --empty-ingress-class --debug-rule-header \
  -o build/table.json 2> "$RUN/compile.log"
grep -E '^\s*(table|Ingress|HTTPProxy|IngressClass):' "$RUN/compile.log" || true
"$DEMO" ecds "$WASM" build/table.json "$RUN/switchyard-filter.json"

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped Envoy and the backends"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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
Edit examples/, then swap the table without a restart:
      $SWITCHYARD compile ${EXAMPLES[*]} --ingress-class bfe --empty-ingress-class -o build/table.json \\
        && $DEMO ecds $WASM build/table.json $RUN/switchyard-filter.json
Ctrl-C stops Envoy and the backends.
TXT
wait
