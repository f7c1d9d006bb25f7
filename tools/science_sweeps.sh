#!/usr/bin/env bash
# The science issue's sweeps, in the order their protocols give, each resumed where it stopped. Run it from a pinned
# clone with its own virtual environment, so that edits to the working copy never change a running experiment:
#   git clone /path/to/disentlit pinned && cd pinned && python3 -m venv .venv \
#     && .venv/bin/pip install torch==2.13.0 && .venv/bin/pip install . && nohup tools/science_sweeps.sh &
# Under nice, so that the machine's other work keeps priority. The databases are in results/ of the clone.
set -u
cd "$(dirname "$0")/.."
export DISENTLIT_PROGRESS=lines
for spec in ${SWEEPS:-mechanism_2x2_cpu figure9_matched_cpu paper_length_cpu}; do
  nice -n 19 .venv/bin/disentlit sweep "specs/$spec.yaml" --db "results/$spec.sqlite" --workers "${WORKERS:-2}" --resume \
    || exit $?
done
