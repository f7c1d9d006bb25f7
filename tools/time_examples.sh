#!/usr/bin/env bash
# Times the README's command-line examples, one after the other, in a scratch folder (default: a new temporary one),
# with the project's venv; prints one line per example: seconds, exit status, command (tab-separated).
#   tools/time_examples.sh [SCRATCH]        (the README's timings were taken this way, on an idle machine)
# `datasets --prepare dsprites` needs the network: without it, it ends at once with exit status 2.
# The sweep is not timed here: it takes hours (see nbs/09_reproduction.ipynb for its runs' durations);
# `figures` is timed on the committed results/figure11_cpu.sqlite instead.
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$ROOT/.venv/bin:$PATH"
SCRATCH="${1:-$(mktemp -d)}"
mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 2
export DISENTLIT_DATA="$SCRATCH/data"
t() {
  local s e rc
  s=$(date +%s.%N); "$@" > /dev/null 2>> "$SCRATCH/stderr.log"; rc=$?; e=$(date +%s.%N)
  printf "%.1f\t%s\t%s\n" "$(echo "$e - $s" | bc)" "$rc" "$*"
}
t disentlit --help
t disentlit datasets
t disentlit datasets --stats xysquares --set grid_spacing=4 --json
t disentlit datasets --prepare dsprites
t disentlit distances --dataset xysquares --set grid_spacing=4 --json
t disentlit distances --dataset xysquares --loss box_blur
t disentlit train --dataset xysquares --framework betavae --loss box_blur --beta 0.0001 --latents 25 --batch-size 128 --steps 2000 --json
t disentlit train --dataset sprites --framework factorvae --param gamma=20 --steps 2000
t disentlit evaluate runs/xysquares_betavae_box_blur_seed0 --metrics mig,dci,sap --json
t disentlit figures --db "$ROOT/results/figure11_cpu.sqlite" --out figures
t disentlit bench data --json
t disentlit bench loss --json
t disentlit bench distances --json
t disentlit bench train --json
t disentlit bench metrics --json
t disentlit demo --out demo
