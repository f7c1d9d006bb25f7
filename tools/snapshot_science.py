"""Copy the science sweeps' state from a pinned clone into this checkout's results/, to be committed: each results
database (through SQLite's backup API, consistent while a sweep writes it), and for the long runs, whose training
spans sessions, each run directory's configuration, learning curve, log and last checkpoint, so that the next
session's sweep resumes them (`disentlit sweep ... --resume` finds them in results/NAME_runs/).

    python tools/snapshot_science.py /path/to/pinned [--carry paper_length_cpu]
"""
import argparse
import shutil
import sqlite3
from pathlib import Path

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("pinned", type=Path, help="the pinned clone whose results/ the sweeps write")
p.add_argument("--carry", action="append", default=["paper_length_cpu"],
               help="a sweep whose run directories travel with the results (repeatable)")
a = p.parse_args()
here = Path(__file__).resolve().parent.parent / "results"
for db in sorted((a.pinned / "results").glob("*.sqlite")):
    src, dst = sqlite3.connect(db), sqlite3.connect(here / db.name)
    with dst: src.backup(dst)
    src.close(); dst.close()
    print(f"{db.name}: copied")
for name in a.carry:
    for run in sorted((a.pinned / "results" / f"{name}_runs").glob("*")):
        out = here / f"{name}_runs" / run.name
        out.mkdir(parents=True, exist_ok=True)
        for f in ("config.json", "checkpoint.pt", "curve.jsonl", "log.jsonl", "result.json", "metrics.json"):
            if (run / f).exists(): shutil.copy2(run / f, out / f)
        print(f"{name}_runs/{run.name}: copied")
