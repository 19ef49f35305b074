#!/usr/bin/env bash
# `make run`: Envoy (envoy.yaml) with the Switchyard filter routing the examples/ table to local
# backends. Starts `switchyard watch` on the examples (it writes the ECDS file and Envoy's L4
# listeners, the LDS file, and rewrites them when a file changes), one backend per cluster of
# envoy.yaml and Envoy, sends sample requests (HTTP, TLS passthrough by SNI, TCP, an HTTPS backend
# and a gRPC backend), then serves until Ctrl-C; every process it started is stopped on the way out.
#
# ingress-nginx's `backend-protocol` (examples/001-ingress-nginx-backend-protocol): the watch runs with
# --variant-clusters, so the Ingress of `backend-protocol: HTTPS` names envoy.yaml's cluster
# `default/secure-svc:443~tls` (HTTP/1.1 over TLS) and the one of `GRPC` `default/grpc-svc:50051~h2c`
# (HTTP/2 in the clear). Behind them runs a second, small Envoy, the backends' own
# (scripts/envoy-backends.yaml, log build/run/envoy-backends.log): it terminates TLS with a
# certificate made at start (build/run/backends, no key kept in the repository) on one port, takes
# HTTP/2 only on the other, and tells the plain demo backend behind it what it saw (x-seen-protocol,
# x-seen-tls), which the samples print.
#
# Expects `make build` to have run (the filter .wasm, target/release/switchyard) and
# target/release/switchyard-demo (the Makefile builds it). ENVOY_BIN defaults to build/venv/bin/envoy;
# SWITCHYARD_BIN and SWITCHYARD_DEMO_BIN replace the two release binaries (a debug build, say).
# SWITCHYARD_FORM picks the filter: `wasm` (the default: the proxy-wasm filter, envoy.yaml) or
# `module` (the native dynamic module, target/module/libswitchyard_module.so from `make
# build-module`, for Envoy 1.40/1.41): the watch writes the ECDS file with --filter-form module and
# Envoy runs build/run/envoy-module.yaml, envoy.yaml whose ECDS subscription takes the module's type.
set -euo pipefail
cd "$(dirname "$0")/.."

ENVOY_BIN=${ENVOY_BIN:-build/venv/bin/envoy}
WASM=target/wasm32-wasip1/release/switchyard_filter.wasm
DEMO=${SWITCHYARD_DEMO_BIN:-target/release/switchyard-demo}
SWITCHYARD=${SWITCHYARD_BIN:-target/release/switchyard}
RUN=build/run
# L4 (examples/003-transport-server): the TLS passthrough listener's port (the GlobalConfiguration
# names the TCP listener's, 15353); envoy.yaml reads the LDS file.
TLS_PASSTHROUGH_PORT=10443
LDS_FILE=$RUN/lds/listeners.json
# HTTPS (ROUTING.md §8): the same port serves HTTPS from the manifests, the certificates as SDS files
# here. The Secret of examples/001-ingress-nginx-ssl-redirect (tls-secret, for foo.bar.com) is made
# at run time into its own watched folder: no key is kept in the repository.
SDS_DIR=$RUN/sds
SECRETS=$RUN/secrets
FORM=${SWITCHYARD_FORM:-wasm}
WASM_TYPE=type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm
MODULE_TYPE=type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter
MODULE=target/module/libswitchyard_module.so
# The backends' Envoy (the HTTPS and the gRPC backend of examples/001-ingress-nginx-backend-protocol)
# and its certificate (the paths scripts/envoy-backends.yaml reads).
BACKENDS_CONFIG=scripts/envoy-backends.yaml
BACKENDS_TLS=$RUN/backends

# The examples are seed scenarios; these share one Envoy without clashing: seed 002's BFE Ingresses
# (class annotation "bfe"), seed 003's host collisions (both creation orders) and NGINX's
# VirtualServer examples (cross-namespace VirtualServerRoutes, advanced routing), seed 003's
# TransportServers (a TLS passthrough host, a TCP listener), the HTTPProxy inclusions of seed 004
# (no class: --empty-ingress-class), and ingress-nginx's Ingresses (examples/001-ingress-nginx-*:
# ingress-nginx's own documented examples, the canaries and backend-protocol, --ingress-nginx-class
# nginx, which touches only the Ingresses of ingress-nginx's IngressClasses; --variant-clusters gives
# backend-protocol its clusters and names no other example's cluster differently). The other seed
# 000/001 examples exercise class flags that contradict these (other controllers, another default
# class); `switchyard compile examples/<dir> $(cat ARGS)` shows them. The documented examples each carry the same IngressClass
# `nginx` (identical copies, so that each folder compiles alone).
EXAMPLES=(examples/001-ingress-nginx-* examples/002-* examples/003-* examples/004-*)

mkdir -p "$RUN/lds"
rm -f "$RUN/switchyard-filter.json" "$LDS_FILE"
rm -rf "$RUN/tls" "$SDS_DIR" "$SECRETS" "$BACKENDS_TLS"
mkdir -p "$SECRETS"
"$DEMO" certificate foo.bar.com default tls-secret "$SECRETS/tls-secret.yaml"
"$DEMO" pem backends.internal "$BACKENDS_TLS/tls.crt" "$BACKENDS_TLS/tls.key"

# The filter form: the watch's flags for the ECDS file, Envoy's bootstrap and the filter's metrics.
case "$FORM" in
  wasm)
    FILTER_FLAGS=(--wasm "$WASM")
    ENVOY_CONFIG=envoy.yaml
    METRICS=wasmcustom
    ;;
  module)
    [ -f "$MODULE" ] || { echo "$MODULE: not built (make build-module)" >&2; exit 1; }
    FILTER_FLAGS=(--filter-form module)
    # envoy.yaml with the module's type URL in the listener's ECDS subscription, nothing else changed.
    ENVOY_CONFIG=$RUN/envoy-module.yaml
    sed "s|type_urls: \[$WASM_TYPE\]|type_urls: [$MODULE_TYPE]|" envoy.yaml >"$ENVOY_CONFIG"
    grep -q "type_urls: \[$MODULE_TYPE\]" "$ENVOY_CONFIG" || { echo "envoy.yaml: no type_urls: [$WASM_TYPE] to replace" >&2; exit 1; }
    # Envoy loads `switchyard_module` as libswitchyard_module.so from this folder.
    export ENVOY_DYNAMIC_MODULES_SEARCH_PATH=$PWD/$(dirname "$MODULE")
    METRICS=dynamicmodulescustom
    ;;
  *)
    echo "SWITCHYARD_FORM=$FORM: wasm or module" >&2
    exit 2
    ;;
esac

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped both Envoys, the backends and switchyard watch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# switchyard watch follows the example folders: it writes the ECDS file and the LDS file Envoy reads
# (before Envoy starts: Envoy needs both) and rewrites them on every change; its log stays on this
# terminal.
echo "== switchyard watch --manifests ${EXAMPLES[*]} $SECRETS --ingress-class bfe --empty-ingress-class --ingress-nginx-class nginx --variant-clusters --ecds-file $RUN/switchyard-filter.json ${FILTER_FLAGS[*]} --lds-file $LDS_FILE --sds-dir $SDS_DIR"
"$SWITCHYARD" watch --manifests "${EXAMPLES[@]}" "$SECRETS" --ingress-class bfe --empty-ingress-class --ingress-nginx-class nginx --variant-clusters --debug-rule-header \
  --ecds-file "$RUN/switchyard-filter.json" --envoy-admin 127.0.0.1:9901 "${FILTER_FLAGS[@]}" -o build/table.json \
  --lds-file "$LDS_FILE" --sds-dir "$SDS_DIR" --l4-address 127.0.0.1 --tls-passthrough-port "$TLS_PASSTHROUGH_PORT" \
  --listen 127.0.0.1:9102 --dashboard-listen 127.0.0.1:9103 &
pids+=($!)
for _ in $(seq 100); do [ -s "$RUN/switchyard-filter.json" ] && [ -s "$LDS_FILE" ] && break; sleep 0.1; done

echo "== backends"
"$DEMO" backends envoy.yaml "$RUN/tls" &
pids+=($!)
"$DEMO" backends "$BACKENDS_CONFIG" &
pids+=($!)
echo "== the backends' Envoy, $BACKENDS_CONFIG: TLS on 127.0.0.1:18032, HTTP/2 in the clear on 127.0.0.1:18033 (log: $RUN/envoy-backends.log)"
"$ENVOY_BIN" -c "$BACKENDS_CONFIG" --concurrency 1 --disable-hot-restart --log-level info --log-path "$RUN/envoy-backends.log" &
pids+=($!)
"$ENVOY_BIN" -c "$ENVOY_CONFIG" --concurrency 2 --disable-hot-restart --log-level info --log-path "$RUN/envoy.log" &
pids+=($!)

echo "== Envoy $("$ENVOY_BIN" --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -1) with the $FORM filter, $ENVOY_CONFIG (log: $RUN/envoy.log)"
"$DEMO" samples 127.0.0.1:10000 127.0.0.1:9901 "$LDS_FILE" "$RUN/tls"

cat <<TXT

Envoy listens on http://127.0.0.1:10000 (admin: http://127.0.0.1:9901, metrics: /stats?filter=$METRICS).
Try:  curl -H 'Host: example.net' http://127.0.0.1:10000/bar/foo
ingress-nginx's documented examples (examples/001-ingress-nginx-*), as ingress-nginx served them:
      curl -s -H 'Host: rewrite.bar.com' http://127.0.0.1:10000/something/new?x=1 | head -1   # path /new?x=1
      curl -si -H 'Host: approot.bar.com' http://127.0.0.1:10000/ | grep -i location          # /app1
ingress-nginx's canaries (examples/001-ingress-nginx-canary): by header, by cookie, 20 % by weight:
      curl -s -H 'Host: shop.example.com' -H 'X-Canary: always' http://127.0.0.1:10000/ | head -1   # backend: default/shop-canary
      curl -s -H 'Host: shop.example.com' -b 'canary=always' http://127.0.0.1:10000/cart | head -1  # backend: default/cart-canary
      for i in \$(seq 20); do curl -s -H 'Host: api.example.com' http://127.0.0.1:10000/ | head -1; done | sort | uniq -c
Live change: edit a file under examples/ and the route moves within about 0.1 s (the push is logged
here). For example, send *.net's /bar (seed 002's host_priority2) to service1 instead of service2:
      curl -s -H 'Host: other.net' http://127.0.0.1:10000/bar | head -1   # backend: production/service2
      sed -i 's/serviceName: service2/serviceName: service1/' examples/002-host-priority/ingresses.yaml
      curl -s -H 'Host: other.net' http://127.0.0.1:10000/bar | head -1   # backend: production/service1
      git checkout examples/002-host-priority                             # and back
ingress-nginx's backend-protocol (examples/001-ingress-nginx-backend-protocol): HTTPS and gRPC backends
behind the backends' Envoy, which tells the backend how it was reached:
      curl -s -H 'Host: https-backend.example.com' http://127.0.0.1:10000/ | grep -E '^backend|x-seen'   # HTTP/1.1 over TLSv1.2
      curl -s -H 'Host: grpc-backend.example.com' http://127.0.0.1:10000/ | grep -E '^backend|x-seen'    # HTTP/2 in the clear (x-seen-tls empty)
      curl -s --http2-prior-knowledge http://127.0.0.1:18033/ | head -1; curl -sS http://127.0.0.1:18033/   # h2c only: HTTP/1.1 fails
HTTPS from the manifests (ROUTING.md §8) on 127.0.0.1:$TLS_PASSTHROUGH_PORT: foo.bar.com (examples/001-ingress-nginx-ssl-redirect)
is served with its Secret tls-secret, made at start in $SECRETS; other hosts with the default certificate:
      curl -sk --resolve foo.bar.com:$TLS_PASSTHROUGH_PORT:127.0.0.1 https://foo.bar.com:$TLS_PASSTHROUGH_PORT/ | head -1   # backend: default/http-svc:80
      curl -si -H 'Host: foo.bar.com' http://127.0.0.1:10000/a | grep -i location                        # https://foo.bar.com/a
      openssl s_client -connect 127.0.0.1:$TLS_PASSTHROUGH_PORT -servername foo.bar.com </dev/null 2>/dev/null | grep -E 'subject|NotAfter'
Renew it live (the new certificate reaches new handshakes in well under a second, nothing restarts):
      $DEMO certificate foo.bar.com default tls-secret $SECRETS/tls-secret.yaml
L4 (examples/003-transport-server): TLS passes through by SNI on 127.0.0.1:$TLS_PASSTHROUGH_PORT, TCP on 127.0.0.1:15353:
      openssl s_client -connect 127.0.0.1:$TLS_PASSTHROUGH_PORT -servername secure.example.com </dev/null | grep subject
      (exec 3<>/dev/tcp/127.0.0.1/15353; echo hello >&3; head -1 <&3)    # default/dns-1: hello
Make tcp-2 and the VirtualServer secure-web the older ones: tcp-2 takes the listener, secure-web
takes secure.example.com back into the HTTP table and the passthrough listener goes (no Envoy restart):
      sed -i 's/2024-02-01T00:00:00Z/2023-01-01T00:00:00Z/' examples/003-transport-server/transport.yaml
      (exec 3<>/dev/tcp/127.0.0.1/15353; echo hello >&3; head -1 <&3)    # default/dns-2: hello
      curl -s -H 'Host: secure.example.com' http://127.0.0.1:10000/ | head -1   # backend: default/secure-web
      git checkout examples/003-transport-server                          # and back
switchyard watch: the dashboard at http://127.0.0.1:9103/ (and /status, /table); /metrics, /readyz on 127.0.0.1:9102.
Ctrl-C stops both Envoys (the gateway and the backends' own), the backends and switchyard watch.
TXT
wait
