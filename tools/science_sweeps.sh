#!/usr/bin/env bash
# The science issue's sweeps, in the order their protocols give, each resumed where it stopped. It runs in a clone
# pinned at the commit that added their specs, with its own virtual environment, so that edits to the working copy
# never change a running experiment: tools/pin_science.sh makes that clone and starts this script there.
# Under nice, so that the machine's other work keeps priority. The databases are in results/ of the clone.
set -u
cd "$(dirname "$0")/.."
export DISENTLIT_PROGRESS=lines
# A sweep that ends with a failed run (or fails itself) does not hold up the next; the last such status is returned.
status=0
for spec in ${SWEEPS:-tcvae_cpu comparison_cpu wae_cpu}; do
  nice -n 19 .venv/bin/disentlit sweep "specs/$spec.yaml" --db "results/$spec.sqlite" --workers "${WORKERS:-2}" --resume \
    || status=$?
done
exit $status
