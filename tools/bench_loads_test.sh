#!/usr/bin/env bash
# tools/bench imports and parses its flags (it is run by hand: see docs/benchmarks.md, "tools/bench").
set -euo pipefail
out=$(python3 tools/bench --help)
grep -q -- "--perf-dir" <<<"$out" || { echo "tools/bench --help: no --perf-dir in:"; echo "$out"; exit 1; }
echo "tools/bench loads"
