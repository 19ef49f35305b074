#!/usr/bin/env python3
"""Counts the instructions a request costs under `host-sim bench`, with valgrind's callgrind:
unlike a time, the count is the same from one run to the next whatever else the machine does, so
a difference of a few hundred instructions between two .wasm files (or two tables) shows where
a timed side-by-side run is lost in the noise. A request's count is the difference between a run
of 5,000 requests and one of 2,000, over 3,000 (loading, compiling and configuring cancel out).
Each pair runs once first to fill host-sim's compile cache for valgrind's CPU (its own key).

usage: instructions.py URL WASM,TABLE [WASM,TABLE ...]

Example (main's .wasm against this one, 10 rules; then a rule with a policy against one without):
  python3 host-sim/bench/table.py 10 > t.json 2> url
  python3 host-sim/bench/table.py --policy 10 > tp.json 2> /dev/null
  python3 host-sim/bench/instructions.py "$(cat url)" main.wasm,t.json new.wasm,t.json new.wasm,tp.json

Needs valgrind (Debian's package) and target/release/host-sim.
"""
import re
import subprocess
import sys


def instructions(wasm, table, url, requests):
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         "target/release/host-sim", "--wasm", wasm, "--config", table, "bench", "--requests", str(requests), url],
        check=True, capture_output=True, text=True,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    if not found:
        sys.exit(f"valgrind printed no instruction count for {wasm} on {table}:\n{run.stderr}")
    return int(found.group(1).replace(",", ""))


def main():
    if len(sys.argv) < 3 or any("," not in pair for pair in sys.argv[2:]):
        sys.exit(__doc__)
    url = sys.argv[1]
    first = None
    for pair in sys.argv[2:]:
        wasm, table = pair.split(",", 1)
        instructions(wasm, table, url, 10)
        per_request = (instructions(wasm, table, url, 5000) - instructions(wasm, table, url, 2000)) / 3000
        first = per_request if first is None else first
        print(f"{wasm} on {table}: {per_request:,.0f} instructions per request "
              f"({per_request - first:+,.0f} against the first)")


if __name__ == "__main__":
    main()
