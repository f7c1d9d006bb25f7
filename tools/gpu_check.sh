#!/usr/bin/env bash
# The project's GPU check, on a CUDA machine, in calls of at most STEP_SECONDS (default 540) each: every call does
# what is left and resumes where the last one stopped. Parts, each done once:
#   1. the tests marked cuda (tests/test_cuda.py) with DISENTLIT_REQUIRE_CUDA=1, so that a missing GPU fails them;
#   2. `disentlit bench train --device cuda --pack 1,8,32,64 --precision fp32,tf32,bf16`: images/s of the packed
#      trainer at each K against the plain one-model loop timed in the same run, in each precision (TF32 said
#      explicitly: 'fp32' runs with it off, as PyTorch's default does not for convolutions); then fit with its loss compiled
#      (2b). Their JSON comes back as bench_train.json and bench_train_compiled.json;
#   3. the queue: the paper-scale specs of GPU_QUEUE (default: figure11_gpu's remaining seeds, then the paper-scale
#      twins of the CPU protocols, in results/gpu/README.md's order), one after another, each a sweep with `--pack PACK` (default 32: up to 32 runs of one shape trained as one batched
#      step; PACK=1 trains them one per worker, WORKERS at once, as before the packed trainer), with learning curves,
#      resuming; a spec done is marked and skipped by the next call, and its figures drawn.
# GPU_QUEUE: spec names (specs/NAME.yaml, each ending in _gpu), in order; GPU_SWEEP=NAME is a queue of one (kept for
# the calls results/gpu/README.md records). FIG11_SEEDS (default 1,2: seed 0 ran in an earlier session; FIG11_SEEDS=
# for all three) replaces figure11_gpu in the queue by those seeds of both losses, as a sweep of its own
# (figure11_gpu_seeds_1_2, ...).
# GPU_CHECK_SKIP (e.g. "bench_train", or "bench_train bench_compiled") leaves out parts measured in an earlier session
# (cuda_tests: 1, bench_train: 2, bench_compiled: 2b), so that the device time goes to the rest.
# State (checkpoints, the results databases) lives in $GPU_CHECK_STATE (default gpu_runs/, ignored by git); results are
# copied to $OUT (the device tool's output folder) or results/gpu/, to be committed: each sweep's database, and on every
# exit of part 3 (done or cut off) NAME_runs.tar.gz (NAME: the sweep's), each run's small files (config, curve, log,
# result; never a checkpoint), since the device tool brings back files from $OUT alone. Checkpoints do not come back:
# a run resumes only on the same machine (a second call while it is still warm), never in a later session.
# Exit status: 0 every part done; 3 the time ran out (call again: it resumes); 2 no CUDA GPU or a bad setting; 1 a
# part failed.
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
PACK=${PACK:-32}
QUEUE=${GPU_QUEUE:-${GPU_SWEEP:-figure11_gpu positive_control_gpu matched_gpu tcvae_gpu wae_gpu comparison_gpu}}
seeds_given=${FIG11_SEEDS+yes}
FIG11_SEEDS=${FIG11_SEEDS-1,2}         # figure11_gpu's seeds no session has finished (seed 0: results/gpu/h100_*)
for name in $QUEUE; do
  [[ "$name" =~ ^[a-z0-9_]+_gpu$ && -f "specs/$name.yaml" ]] || { echo "gpu_check: GPU_QUEUE and GPU_SWEEP must name" \
    "paper-scale specs, one of:" $(cd specs && ls *_gpu.yaml | sed 's/\.yaml$//') "; got '$name'" >&2; exit 2; }
done
[[ "$PACK" =~ ^[1-9][0-9]*$ ]] || { echo "gpu_check: PACK must be a whole number of runs, 1 or more; got '$PACK'" >&2; exit 2; }
[ -z "${FIG11_SEEDS:-}" ] || [[ "$FIG11_SEEDS" =~ ^[0-9]+(,[0-9]+)*$ ]] \
  || { echo "gpu_check: FIG11_SEEDS must be seeds such as 0 or 1,2; got '$FIG11_SEEDS'" >&2; exit 2; }
[ -z "$seeds_given" ] || [ -z "$FIG11_SEEDS" ] || [[ " $QUEUE " == *" figure11_gpu "* ]] \
  || { echo "gpu_check: FIG11_SEEDS picks seeds of figure11_gpu, which the queue ($QUEUE) does not hold" >&2; exit 2; }
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
pack_runs() {    # each run's curve and logs (small), and the figures if drawn, as one file: the tool returns 8 at most
  ( cd "$STATE" && find "${1}_runs" "$1" -type f ! -name '*.pt' 2>/dev/null | sort \
      | tar -czf - -T - ) > "$DEST/${1}_runs.tar.gz"
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
  timeout -s INT -k 20 "$(left)" "${DL[@]}" bench train --device cuda --pack 1,8,32,64 --precision fp32,tf32,bf16 --quiet --json \
    > "$STATE/bench_train.json"
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
sweep_args=(--pack "$PACK"); [ "$PACK" = 1 ] && sweep_args=(--workers "$WORKERS")
for name in $QUEUE; do
  spec=specs/$name.yaml
  if [ "$name" = figure11_gpu ] && [ -n "${FIG11_SEEDS:-}" ]; then
    # the same protocol and runs, restricted to those seeds: only the name and the seeds differ
    name="figure11_gpu_seeds_${FIG11_SEEDS//,/_}" spec="$STATE/figure11_gpu_seeds_${FIG11_SEEDS//,/_}.yaml"
    sed -e "s/^name: figure11_gpu\$/name: $name/" -e "s/^repeats: 3\$/seeds: [$FIG11_SEEDS]/" specs/figure11_gpu.yaml \
      > "$spec"
  fi
  done_part "$name" && continue
  db="$STATE/$name.sqlite"
  timeout -s INT -k 60 "$(left)" "${DL[@]}" sweep "$spec" --db "$db" "${sweep_args[@]}" --device cuda --resume
  rc=$?
  "$PYTHON" - "$db" "$DEST/$name.sqlite" <<'PY'
import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
with dst: src.backup(dst)
PY
  pack_runs "$name"
  { [ $rc -eq 124 ] || [ $rc -eq 130 ]; } && ran_out "the $name sweep"
  [ $rc -ne 0 ] && { echo "gpu_check: the $name sweep failed (status $rc)" >&2; exit 1; }
  "${DL[@]}" figures --db "$db" --out "$STATE/$name" --quiet || exit 1
  pack_runs "$name"
  touch "$STATE/$name.done"
  echo "gpu_check: $name done"
done
echo "gpu_check: every part done; results in $DEST"
