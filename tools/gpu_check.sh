#!/usr/bin/env bash
# The project's GPU check, on a CUDA machine, in calls of at most STEP_SECONDS (default 540) each: every call does
# what is left and resumes where the last one stopped. Parts, each done once:
#   1. the tests marked cuda (tests/test_cuda.py) with DISENTLIT_REQUIRE_CUDA=1, so that a missing GPU fails them;
#   2. `disentlit bench train --device cuda`: images/s of fit against a plain loop on the same GPU, host syncs per
#      step, Table A4's projected GPU-hours (fp32 and bf16); then the same in fp32 with the loss compiled (2b);
#   3. specs/figure11_gpu.yaml: beta-VAE at the paper's scale (57,600 steps of 256), MSE and box blur, 3 seeds, with
#      learning curves, WORKERS (default 6: every run at once, so that a sweep cut off by the time has every run at
#      about the same step) runs sharing the GPU; then its figures. FIG11_SEEDS (e.g. 0, or 1,2) runs only those seeds
#      of both losses, as a sweep of their own (figure11_gpu_seeds_0, ...): six runs at once need about 17 minutes
#      (results/gpu/README.md), more than a session's device time, so a later session can finish one seed instead.
# GPU_SWEEP (default figure11_gpu) names part 3's spec, specs/GPU_SWEEP.yaml: the paper-scale twins of the CPU protocols
# queue there (results/gpu/README.md gives their order); FIG11_SEEDS applies to figure11_gpu only.
# GPU_CHECK_SKIP (e.g. "bench_train", or "bench_train bench_compiled") leaves out parts measured in an earlier session
# (cuda_tests: 1, bench_train: 2, bench_compiled: 2b), so that the device time goes to the rest: a fresh machine's start
# and parts 1-2b took 2-2.5 of its 15 minutes, and one seed of part 3 needs about 12 (results/gpu/README.md).
# State (checkpoints, the results database) lives in $GPU_CHECK_STATE (default gpu_runs/, ignored by git); results are
# copied to $OUT (the device tool's output folder) or results/gpu/, to be committed: the database, and on every exit
# of part 3 (done or cut off) NAME_runs.tar.gz (NAME: the sweep's), each run's small files (config, curve, log,
# result; never a checkpoint), since the device tool brings back files from $OUT alone.
# Exit status: 0 every part done; 3 the time ran out (call again: it resumes); 2 no CUDA GPU; 1 a part failed.
# On the device tool's machines fastcore is missing: carry it as a wheel in .whl/ (the tool's README says how); this
# script installs what .whl/ holds into /tmp/site first.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}              # the device tool's machines: python3 holds PyTorch
STEP_SECONDS=${STEP_SECONDS:-540}
WORKERS=${WORKERS:-6}
STATE=${GPU_CHECK_STATE:-gpu_runs}
DEST=${OUT:-results/gpu}
t_end=$(( $(date +%s) + STEP_SECONDS ))
left() { echo $(( t_end - $(date +%s) )); }
name=${GPU_SWEEP:-figure11_gpu}          # part 3's sweep, unless FIG11_SEEDS picks seeds (checked first)
spec=specs/$name.yaml
[[ "$name" =~ ^[a-z0-9_]+_gpu$ && -f "$spec" ]] || { echo "gpu_check: GPU_SWEEP must name a paper-scale spec, one of:" \
  $(cd specs && ls *_gpu.yaml | sed 's/\.yaml$//') "; got '$name'" >&2; exit 2; }
[ -z "${FIG11_SEEDS:-}" ] || [[ "$FIG11_SEEDS" =~ ^[0-9]+(,[0-9]+)*$ ]] \
  || { echo "gpu_check: FIG11_SEEDS must be seeds such as 0 or 1,2; got '$FIG11_SEEDS'" >&2; exit 2; }
[ -z "${FIG11_SEEDS:-}" ] || [ "$name" = figure11_gpu ] \
  || { echo "gpu_check: FIG11_SEEDS picks seeds of figure11_gpu, not of $name" >&2; exit 2; }
for part in ${GPU_CHECK_SKIP:-}; do
  case "$part" in cuda_tests|bench_train|bench_compiled) ;;
    *) echo "gpu_check: GPU_CHECK_SKIP takes cuda_tests, bench_train, bench_compiled; got '$part'" >&2; exit 2;;
  esac
done
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 DISENTLIT_DATA="$PWD/$STATE/data"
# the command line as an array, not a shell function: `timeout` runs programs, and a function is none
DL=("$PYTHON" -c 'import sys; from disentlit.cli import main; sys.exit(main(sys.argv[1:]))')
"$PYTHON" - <<'PY' || exit 2
import sys
try: import torch
except ImportError: sys.exit(f"gpu_check: no PyTorch in {sys.executable}; set PYTHON to a Python that has it")
if not torch.cuda.is_available():
    sys.exit(f"gpu_check: CUDA asked for, but torch {torch.__version__} (CUDA build {torch.version.cuda}) sees no GPU")
print(f"gpu_check: {torch.cuda.get_device_name()}, torch {torch.__version__}")
PY
mkdir -p "$STATE" "$DEST"
done_part() { [ -f "$STATE/$1.done" ]; }
for part in ${GPU_CHECK_SKIP:-}; do touch "$STATE/$part.done"; done     # a part skipped counts as done
if [ -n "${FIG11_SEEDS:-}" ]; then
  # the same protocol and runs, restricted to those seeds: only the name and the seeds differ
  name="figure11_gpu_seeds_${FIG11_SEEDS//,/_}" spec="$STATE/figure11_gpu_seeds_${FIG11_SEEDS//,/_}.yaml"
  sed -e "s/^name: figure11_gpu\$/name: $name/" -e "s/^repeats: 3\$/seeds: [$FIG11_SEEDS]/" specs/figure11_gpu.yaml \
    > "$spec"
fi
pack_runs() {    # each run's curve and logs (small), and the figures if drawn, as one file: the tool returns 8 at most
  ( cd "$STATE" && find "${name}_runs" "$name" -type f ! -name '*.pt' 2>/dev/null | sort \
      | tar -czf - -T - ) > "$DEST/${name}_runs.tar.gz"
}
ran_out() { echo "gpu_check: the time ran out in $1; call again to resume" >&2; exit 3; }

if ! done_part cuda_tests; then
  DISENTLIT_REQUIRE_CUDA=1 timeout -s INT -k 20 "$(left)" "$PYTHON" -m pytest -q -m cuda tests/test_cuda.py \
    > "$DEST/cuda_tests.txt" 2>&1
  rc=$?; cat "$DEST/cuda_tests.txt"
  [ $rc -eq 124 ] && ran_out "the cuda tests"
  [ $rc -ne 0 ] && { echo "gpu_check: the cuda tests failed (status $rc)" >&2; exit 1; }
  touch "$STATE/cuda_tests.done"
fi
if ! done_part bench_train; then
  timeout -s INT -k 20 "$(left)" "${DL[@]}" bench train --device cuda --quiet --json > "$STATE/bench_train.json"
  rc=$?
  [ $rc -eq 124 ] && ran_out "bench train"
  [ $rc -ne 0 ] && { echo "gpu_check: bench train failed (status $rc)" >&2; exit 1; }
  cp "$STATE/bench_train.json" "$DEST/bench_train.json"
  touch "$STATE/bench_train.done"
fi
# 2b. the same with fit's loss compiled (torch.compile, CUDA graphs on CUDA): the step is launch-bound on a GPU
# (results/gpu/README.md), so this says whether compiling would let Figure 11 fit a session. Its failure is a finding,
# recorded in bench_train_compiled.txt, and does not stop the check.
if ! done_part bench_compiled; then
  timeout -s INT -k 20 "$(left)" "${DL[@]}" bench train --device cuda --compile --precision fp32 --quiet --json \
    > "$STATE/bench_train_compiled.json" 2> "$STATE/bench_train_compiled.txt"
  rc=$?
  [ $rc -eq 124 ] && ran_out "bench train --compile"
  echo "exit status $rc" >> "$STATE/bench_train_compiled.txt"
  cp "$STATE/bench_train_compiled.json" "$STATE/bench_train_compiled.txt" "$DEST/"
  touch "$STATE/bench_compiled.done"
fi
db="$STATE/$name.sqlite"
timeout -s INT -k 60 "$(left)" "${DL[@]}" sweep "$spec" --db "$db" --workers "$WORKERS" --device cuda --resume
rc=$?
"$PYTHON" - "$db" "$DEST/$name.sqlite" <<'PY'
import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
with dst: src.backup(dst)
PY
pack_runs
[ $rc -eq 124 ] || [ $rc -eq 130 ] && ran_out "the $name sweep"
[ $rc -ne 0 ] && { echo "gpu_check: the $name sweep failed (status $rc)" >&2; exit 1; }
"${DL[@]}" figures --db "$db" --out "$STATE/$name" --quiet || exit 1
pack_runs
echo "gpu_check: every part done; results in $DEST"
