"""Time the command-line examples of the install page, one after the other, as a user runs them, and record them.

    python tools/time_examples.py            # a scratch folder of its own; about 15 minutes on 2 idle cores
    python tools/time_examples.py --only 2   # the first two examples (a check that the tool works)

Each example runs with the venv's `disentlit` in a fresh scratch folder (its data in the folder too), after the one
before it: `evaluate` reads the run `train` made. It writes results/example_times.json: each example's command, wall
seconds and exit status, the load average when it started, and the machine (tools/common.py `provenance`). The
install page's table is printed from that file. Run it on an idle machine (pause any sweep: SIGSTOP, then SIGCONT).
`datasets --prepare dsprites` needs the network: without one it ends at once with exit status 2, and the record says
so. The sweep is not timed here (hours): the install page gives its runs' recorded durations instead. The demo is
timed by tools/time_demo.py.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import provenance     # tools/common.py (this script's own folder is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "results" / "example_times.json"
EXAMPLES = [                      # as the install page shows them; `{root}`: the repository
    "--help", "datasets", "datasets --stats xysquares --set grid_spacing=4 --json", "datasets --prepare dsprites",
    "distances --dataset xysquares --set grid_spacing=4 --json", "distances --dataset xysquares --loss box_blur",
    "train --dataset xysquares --framework betavae --loss box_blur --beta 0.0001 --latents 25 --batch-size 128 "
    "--steps 2000 --json",
    "train --dataset sprites --framework factorvae --param gamma=20 --steps 2000",
    "evaluate runs/xysquares_betavae_box_blur_seed0 --metrics mig,dci,sap --json",
    "figures --db {root}/results/figure11_cpu.sqlite --out figures",
    "bench data --json", "bench loss --json", "bench distances --json", "bench train --json", "bench metrics --json"]


def time_examples(scratch: Path, examples: list[str]) -> list[dict]:
    "Each example run in `scratch` in turn: its command line, wall seconds and exit status."
    command = Path(sys.executable).parent / "disentlit"           # the console script, as a user runs it
    env = dict(os.environ, DISENTLIT_DATA=str(scratch / "data"))
    out = []
    for example in examples:
        args = example.format(root=ROOT).split()
        start = time.perf_counter()
        p = subprocess.run([str(command), *args], cwd=scratch, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        out.append(dict(command="disentlit " + example.replace("{root}/", ""),
                        seconds=round(time.perf_counter() - start, 1), status=p.returncode,
                        error=p.stderr.strip().splitlines()[-1] if p.returncode else ""))
        print(f"{out[-1]['seconds']:8.1f} s  exit {p.returncode}  {out[-1]['command']}", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", type=int, default=None, help="time the first N examples only (not recorded)")
    p.add_argument("--note", default="", help="how the machine was kept idle, or anything else the record should say")
    args = p.parse_args(argv)
    load = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as scratch:
        examples = time_examples(Path(scratch), EXAMPLES[:args.only])
    if args.only is not None: return 0
    RECORD.write_text(json.dumps(dict(examples=examples, load_before=load, note=args.note, **provenance()),
                                 indent=1) + "\n")
    print(f"wrote {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
