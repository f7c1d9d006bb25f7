"""Copy the science sweeps' state from a pinned clone into this checkout's results/, to be committed: each results
database (through SQLite's backup API, consistent while a sweep writes it), and for the long runs, whose training
spans sessions, each run directory's configuration, learning curve, log and last checkpoint (for a finished run, its
result, its latent means of the shared sample and its traversal picture instead of the checkpoint), so that the next
session's sweep resumes them (`disentlit sweep ... --resume` finds them in results/NAME_runs/).

    python tools/snapshot_science.py /path/to/pinned [--sweep NAME ...] [--carry NAME ...]

Only the named sweeps' databases are copied (default: the sweeps tools/science_sweeps.sh runs), never the others in
results/, which this checkout may have changed since the clone was made. A pilot sweep's (a name ending in _pilot) go
to results/pilots/, where the readings look for pilots.
"""
import argparse
import shutil
import sqlite3
from pathlib import Path

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("pinned", type=Path, help="the pinned clone whose results/ the sweeps write")
RUNNING = ["tcvae_cpu", "comparison_cpu", "wae_cpu"]     # the sweeps tools/pin_science.sh starts by default
p.add_argument("--sweep", action="append", help="a sweep whose database to copy (repeatable; default: "
               + ", ".join(RUNNING) + ")")
p.add_argument("--carry", action="append", help="a sweep whose run directories travel with the results, "
               "or none (repeatable; default: the same sweeps)")
a = p.parse_args()
a.sweep = a.sweep or RUNNING
a.carry = [c for c in (a.carry or RUNNING) if c != "none"]
results = Path(__file__).resolve().parent.parent / "results"
def home(name: str) -> Path: return results / "pilots" if name.endswith("_pilot") else results
for name in a.sweep:
    db = a.pinned / "results" / f"{name}.sqlite"
    if not db.exists(): print(f"{db.name}: not started"); continue
    home(name).mkdir(exist_ok=True)
    src, dst = sqlite3.connect(db), sqlite3.connect(home(name) / db.name)
    with dst: src.backup(dst)
    src.close(); dst.close()
    print(f"{db.name}: copied")
for name in a.carry:
    for run in sorted((a.pinned / "results" / f"{name}_runs").glob("*")):
        out = home(name) / f"{name}_runs" / run.name
        if run.is_file():                                # the folder's own mark (.disentlit): copied as it is
            out.parent.mkdir(parents=True, exist_ok=True); shutil.copy2(run, out); continue
        out.mkdir(parents=True, exist_ok=True)
        finished = (run / "result.json").exists()       # its result is whole: the checkpoint (15 MB) is not needed
        # latents.npz: the shared sample's latent means and KLs (13's TC and UDR read them), written at the end;
        # traversals.png: what each latent draws (~50 KB), for the readings to show without the checkpoint
        for f in (".disentlit", "config.json", "checkpoint.pt", "curve.jsonl", "log.jsonl", "result.json",
                  "metrics.json", "latents.npz", "traversals.png"):
            if (run / f).exists() and not (finished and f == "checkpoint.pt"): shutil.copy2(run / f, out / f)
        if finished: (out / "checkpoint.pt").unlink(missing_ok=True)
        print(f"{name}_runs/{run.name}: copied" + (" (finished: no checkpoint)" if finished else ""))
