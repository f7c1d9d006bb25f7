#!/usr/bin/env bash
# Start (or resume) the science issue's sweeps from a clone pinned at the commit that added their protocols, so that
# every run of a sweep trains with the same code whatever this checkout has become since:
#   tools/pin_science.sh [PINNED_DIR]        (default ../pinned)
# The defaults are the sweeps running now (issue 45's, pinned at the commit of their amended protocols); issue 40's
# ran from 1c69d78 (mechanism_2x2_cpu, figure9_matched_cpu, paper_length_cpu) and 42245e3 (positive_control_v2_cpu).
# It clones this checkout at $PIN, copies in the state committed here (the sweeps' databases and the long runs'
# directories, see tools/snapshot_science.py), makes the clone's own virtual environment, and starts
# tools/science_sweeps.sh there under nohup (log: PINNED_DIR/science.log). At the end of a session:
#   .venv/bin/python tools/snapshot_science.py PINNED_DIR   # then commit results/ (its defaults: these sweeps)
# Issue 28's pre-registered sweep runs the same way from its own clone, pinned at the commit of its protocol:
#   PIN=f0d2eb7 SWEEPS=predict_cpu WORKERS=1 tools/pin_science.sh ../pinned_predict
#   .venv/bin/python tools/snapshot_science.py ../pinned_predict --sweep predict_cpu --carry none
set -euo pipefail
PIN=${PIN:-c95feda}                      # the commit of tcvae_cpu's and comparison_cpu's amended protocols
here="$(cd "$(dirname "$0")/.." && pwd)"
pinned="$(realpath -m "${1:-$here/../pinned}")"
if [ ! -d "$pinned/.git" ]; then
  git clone -q "$here" "$pinned"
  git -C "$pinned" checkout -q "$PIN"
fi
[ "$(git -C "$pinned" rev-parse --short=7 HEAD)" = "${PIN:0:7}" ] || { echo "$pinned is not at $PIN" >&2; exit 2; }
cp "$here/tools/science_sweeps.sh" "$pinned/tools/"
export SWEEPS=${SWEEPS:-tcvae_cpu comparison_cpu wae_cpu}
for name in $SWEEPS; do
  # a spec committed after the pin (a protocol that depends on earlier results) is data: the code stays pinned
  [ -f "$pinned/specs/$name.yaml" ] || cp "$here/specs/$name.yaml" "$pinned/specs/"
  home="$here/results"; [[ "$name" == *_pilot ]] && home="$here/results/pilots"   # pilots' records live apart
  [ -f "$home/$name.sqlite" ] && [ ! -f "$pinned/results/$name.sqlite" ] && cp "$home/$name.sqlite" "$pinned/results/"
  if [ -d "$home/${name}_runs" ]; then               # the committed state of long runs (tools/snapshot_science.py)
    mkdir -p "$pinned/results/${name}_runs"
    cp -rn "$home/${name}_runs/." "$pinned/results/${name}_runs/"
  fi
done
if [ ! -x "$pinned/.venv/bin/disentlit" ]; then
  python3 -m venv "$pinned/.venv"
  "$pinned/.venv/bin/python" "$pinned/tools/install_torch.py"      # tools/common.py's TORCH, as make install
  "$pinned/.venv/bin/pip" install -q "$pinned"
fi
cd "$pinned" && nohup tools/science_sweeps.sh > science.log 2>&1 &
echo "science sweeps started in $pinned (log: $pinned/science.log)"
