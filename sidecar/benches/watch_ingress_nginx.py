#!/usr/bin/env python3
"""`make bench-watch-ingress-nginx`: `switchyard watch --manifests` over the 10,000 ingress-nginx
Ingresses of compiler/benches/ingress_nginx.rs (the same generator, written as 10,000 JSON files
and an IngressClass; `switchyard compile --ingress-nginx-class nginx` of them gives the bench's
51,786 rules), one Ingress edited at a time (a backend on a host outside and inside regex mode;
regex mode turned off and on again on a host of four Ingresses and on a host of one): the
sidecar's CPU (all threads, /proc/<pid>/task/*/schedstat) from idle before the edit to idle after
the new table reached the ECDS file (its `pushed` log line), as sidecar/tests/bench_incremental.rs
measures it; medians. With PLAIN=1 the same Ingresses are Switchyard's own (no class, no
annotations, no --ingress-nginx-class), for comparison.

Usage: watch_ingress_nginx.py SWITCHYARD_BIN ROUNDS [ENCODING]"""
import json, os, shutil, subprocess, sys, time, tempfile

INGRESSES, SHARED = 10_000, 1_000


def host_of(i):
    return i % SHARED if i < 4 * SHARED else SHARED + (i - 4 * SHARED)


def ingress(i, variant):
    h = host_of(i)
    host = f"app{h}.team{h % 37}.example.com"
    namespace = f"team-{i // SHARED if i < 4 * SHARED else i % 50}"
    first_of_host = not (SHARED <= i < 4 * SHARED)
    ann = {}
    put = lambda k, v: ann.__setitem__(f"nginx.ingress.kubernetes.io/{k}", v)
    regex_on = h % 3 == 0 and first_of_host and variant != "noregex"
    if regex_on:
        put("use-regex", "true")
        put("rewrite-target", "/$2")
        if h % 2 == 0:
            put("x-forwarded-prefix", "/svc")
    if h % 11 == 0:
        put("force-ssl-redirect", "true")
    if h % 7 == 2 and first_of_host:
        put("app-root", "/app")
    if h % 13 == 3:
        put("upstream-vhost", "internal.example.com")
    if i % 4 == 0:
        put("proxy-body-size", "8m")
    service = lambda p: f"svc-{i}-v2" if (p == 0 and variant == "backend") else f"svc-{i}-{p}"
    backend = lambda p, port: {"service": {"name": service(p), "port": {"number": port}}}
    k = i // SHARED % 4
    if regex_on:
        paths = [
            {"path": f"/svc{k}(/|$)(.*)", "pathType": "ImplementationSpecific", "backend": backend(0, 80)},
            {"path": f"/api{k}/v[0-9]+/", "pathType": "ImplementationSpecific", "backend": backend(1, 8080)},
        ]
    else:
        paths = [
            {"path": f"/svc{k}", "pathType": "Prefix", "backend": backend(0, 80)},
            {"path": f"/static{k}/", "pathType": "Prefix", "backend": backend(1, 8080)},
            {"path": f"/healthz{k}", "pathType": "Exact", "backend": backend(2, 8081)},
        ]
    spec = {"rules": [{"host": host, "http": {"paths": paths}}]}
    if h % 5 == 1:
        spec["tls"] = [{"hosts": [host], "secretName": f"tls-{h}"}]
    if os.environ.get("PLAIN"):
        ann.clear()
    elif i % 2 == 0:
        spec["ingressClassName"] = "nginx"
    else:
        ann["kubernetes.io/ingress.class"] = "nginx"
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": f"ing-{i}", "namespace": namespace, "uid": f"{i:08}",
                     "creationTimestamp": f"2024-01-{1 + i % 28:02}T{i % 24:02}:00:00Z",
                     "annotations": ann},
        "spec": spec,
    }


def cpu_ns(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(open(f"/proc/{pid}/task/{task}/schedstat").read().split()[0])
        except OSError:
            pass
    return total


def idle(pid):
    last = cpu_ns(pid)
    while True:
        time.sleep(0.3)
        now = cpu_ns(pid)
        if now - last < 1_000_000:
            return now
        last = now


def log_lines(log):
    text = open(log).read() if os.path.exists(log) else ""
    lines = text.splitlines()
    return sum(" pushed: " in l for l in lines), [l for l in lines if "path=" in l and "compiled" in l]


def main():
    binary, rounds = sys.argv[1], int(sys.argv[2])
    encoding = sys.argv[3] if len(sys.argv) > 3 else "compact"
    root = tempfile.mkdtemp(prefix="watch-nginx-")
    manifests = os.path.join(root, "manifests")
    os.mkdir(manifests)
    for i in range(INGRESSES):
        json.dump(ingress(i, "base"), open(os.path.join(manifests, f"ing-{i}.json"), "w"))
    json.dump({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
               "spec": {"controller": "k8s.io/ingress-nginx"}}, open(os.path.join(manifests, "class.json"), "w"))
    log = os.path.join(root, "watch.log")
    ecds = os.path.join(root, "ecds.json")
    args = [binary, "watch", "--manifests", manifests, "--ecds-file", ecds, "--wasm", "/nonexistent/f.wasm",
            "--table-encoding", encoding] + ([] if os.environ.get("PLAIN") else ["--ingress-nginx-class", "nginx"])
    proc = subprocess.Popen(args, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        started = time.time()
        while log_lines(log)[0] == 0:
            if proc.poll() is not None or time.time() - started > 300:
                print(open(log).read()[-3000:])
                raise SystemExit("no first push")
            time.sleep(0.05)
        start_cpu = idle(proc.pid)
        print(f"{encoding}: first table after {time.time() - started:.1f} s, {start_cpu / 1e6:.0f} ms CPU; "
              f"ECDS {os.path.getsize(ecds)} bytes")
        cases = [("backend, host outside regex mode (ing-4001)", 4001, "backend"),
                 ("backend, host in regex mode (ing-4500)", 4500, "backend"),
                 ("regex mode off/on, host of 4 Ingresses (ing-300)", 300, "noregex"),
                 ("regex mode off/on, host of 1 Ingress (ing-4500)", 4500, "noregex")]
        figures = {name: [] for name, _, _ in cases}
        for r in range(rounds):
            for name, i, variant in cases:
                for version in (variant, "base"):
                    before = idle(proc.pid)
                    pushed, compiles = log_lines(log)
                    t0 = time.time()
                    json.dump(ingress(i, version), open(os.path.join(manifests, f"ing-{i}.json"), "w"))
                    while log_lines(log)[0] == pushed:
                        if time.time() - t0 > 120:
                            raise SystemExit(f"no push after editing ing-{i}")
                        time.sleep(0.005)
                    wall = (time.time() - t0) * 1e3
                    after = idle(proc.pid)
                    line = (log_lines(log)[1][len(compiles):] or [""])[0]
                    cpu = (after - before) / 1e6
                    figures[name].append((cpu, wall))
                    print(f"  {name} -> {version}: {cpu:.1f} ms CPU, pushed after {wall:.0f} ms | {line[-160:]}")
        for name, values in figures.items():
            cpus = sorted(c for c, _ in values)
            walls = sorted(w for _, w in values)
            print(f"{encoding}, {name}: median {cpus[len(cpus) // 2]:.0f} ms of sidecar CPU "
                  f"(min {cpus[0]:.0f}, max {cpus[-1]:.0f}); ECDS written after median {walls[len(walls) // 2]:.0f} ms")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(root, ignore_errors=True)


main()
