#!/usr/bin/env python3
"""Times .wasm files side by side under `host-sim bench`: ROUNDS interleaved rounds, each running
every file once on the same table and request; prints each file's CPU ns per request, min and
median (the machine is shared: the min is the least disturbed run).

usage: side_by_side.py ROUNDS REQUESTS TABLE URL WASM...

For two modules, `host-sim bench --against` is steadier: it alternates batches of requests in one
process, so both see the machine at the same moment (rounds of whole processes here sit a second
or more apart).

Example (main's .wasm against this one, 10 rules):
  python3 host-sim/bench/table.py 10 > t.json 2> url
  python3 host-sim/bench/side_by_side.py 9 400000 t.json "$(cat url)" main.wasm \\
      target/wasm32-wasip1/release/switchyard_filter.wasm
"""
import json
import statistics
import subprocess
import sys


def cpu_ns(wasm, table, url, requests):
    out = subprocess.run(
        ["target/release/host-sim", "--wasm", wasm, "--config", table, "bench", "--requests", str(requests), url],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])["cpu_ns_per_request"]


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    rounds, requests, table, url = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    files = sys.argv[5:]
    times = {wasm: [] for wasm in files}
    for _ in range(rounds):
        for wasm in files:
            times[wasm].append(cpu_ns(wasm, table, url, requests))
    for wasm in files:
        runs = times[wasm]
        print(f"{wasm}: min {min(runs):,.0f} ns, median {statistics.median(runs):,.0f} ns over {rounds} rounds")


if __name__ == "__main__":
    main()
