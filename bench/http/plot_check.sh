#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest's check of the benchmark's pictures (bench.http_plot; docs/performance.md, "The run"):
# draws the data files of the run that docs/ shows with bench/http/plot.gp into a temporary folder
# and checks that the four SVGs are there, are SVG, and name every target and server of the data.
#
#   bench/http/plot_check.sh GNUPLOT DATA_PREFIX     (DATA_PREFIX.tsv and DATA_PREFIX.idle.tsv)
set -euo pipefail
gnuplot="$1" prefix="$2"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$prefix.tsv" "$work/run.tsv"
cp "$prefix.idle.tsv" "$work/run.idle.tsv"
"$gnuplot" -e "out='$work/run'" "$here/plot.gp"
fail=0
for kind in rps cpu latency idle; do
  svg="$work/run.$kind.svg"
  if [[ ! -s "$svg" ]] || ! grep -q '<svg' "$svg"; then
    echo "plot_check: $kind: no SVG drawn" >&2
    fail=1
  fi
done
# Every target of the load table is labelled in the three load pictures, every server in the idle one.
while IFS=$'\t' read -r target _; do
  for kind in rps cpu latency; do
    grep -q ">$target<" "$work/run.$kind.svg" || { echo "plot_check: $kind: no label $target" >&2; fail=1; }
  done
done < <(grep -v -e '^#' -e '^target' "$prefix.tsv")
while IFS=$'\t' read -r server _; do
  grep -q ">$server<" "$work/run.idle.svg" || { echo "plot_check: idle: no label $server" >&2; fail=1; }
done < <(grep -v -e '^#' -e '^server' "$prefix.idle.tsv")
(( fail == 0 )) && echo "plot_check: 4 pictures, every target labelled"
exit "$fail"
