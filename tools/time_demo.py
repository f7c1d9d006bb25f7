"""Measure `make demo`'s main job as a user runs it, and record the measurement for the README and 08e to state.

    python tools/time_demo.py                 # runs `disentlit demo --json` in a scratch folder (tens of minutes)
    python tools/time_demo.py --from OUT.json # records a run made by hand: the JSON `disentlit demo --json` printed

It writes results/demo_time.json: the demo's own recorded seconds (the `seconds` of its report), its steps, the
machine (CPU model, logical cores, whether it has native bf16), the load average when it started, torch's and
disentlit's versions and the commit. Run it on an idle machine (pause any sweep: SIGSTOP, then SIGCONT); the index's
"Start here" and 08e print the time from this file (`disentlit.demo.stated_time`), and tests/test_tools.py checks
that the README says what the file holds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import provenance     # tools/common.py (this script's own folder is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "results" / "demo_time.json"


def record(report: dict, load: list[float] | None, note: str = "") -> dict:
    """The measurement, from the demo's report (its stdout under --json) and the load average when it started (None:
    not taken)."""
    from disentlit.demo import DEMO_BATCH
    if report.get("counts", {}).get("done") != 2: raise SystemExit(f"the demo did not finish both runs: {report.get('counts')}")
    return dict(seconds=report["seconds"], steps=report["steps"], batch_size=DEMO_BATCH,
                load_before=None if load is None else [round(x, 2) for x in load], note=note, **provenance())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="given", metavar="JSON", help="record this finished run instead of running one")
    p.add_argument("--load", default=None, help="with --from: the load average when that run started, as 'a,b,c'")
    p.add_argument("--steps", type=int, default=None, help="with --from: its steps, if its report does not say")
    p.add_argument("--note", default="", help="how the machine was kept idle, or anything else the record should say")
    args = p.parse_args(argv)
    if args.given:
        text, load = Path(args.given).read_text(), [float(x) for x in args.load.split(",")] if args.load else None
    else:
        load = list(os.getloadavg())
        with tempfile.TemporaryDirectory() as scratch:
            command = Path(sys.executable).parent / "disentlit"          # the console script, as `make demo` runs it
            run = subprocess.run([str(command), "demo", "--out", str(Path(scratch) / "demo"), "--json", "--quiet"],
                                 capture_output=True, text=True)
            if run.returncode != 0: raise SystemExit(run.stderr[-3000:])
            text = run.stdout
    report = json.loads(next(line for line in text.splitlines() if line.startswith("{")))
    if args.steps is not None: report.setdefault("steps", args.steps)
    if "steps" not in report: raise SystemExit("the demo's report does not say its steps: give --steps")
    RECORD.write_text(json.dumps(record(report, load, args.note), indent=1) + "\n")
    print(f"wrote {RECORD}: {RECORD.read_text()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
