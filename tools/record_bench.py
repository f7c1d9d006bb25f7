"""Run one `disentlit bench ... --json` command and append what it printed, with the machine it ran on, to a record.

    python tools/record_bench.py results/bench/pack_cpu.jsonl -- disentlit bench train --pack 1,2,4 --precision fp32

`--json` is added to the command when it is missing. Each line of the record is one run: the command, the bench's own
JSON (`result`), the CPU model, logical cores, native bf16, the load average before and after, torch's and disentlit's
versions, the commit and the date. A notebook prints its table from the record (08b reads results/bench/pack_cpu.jsonl),
so a number about speed in the prose is never typed by hand. Ratios within one run are what such a record is for: the
bench times its baseline in the same run; absolute times differ from machine to machine and with the load.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from common import provenance     # tools/common.py (this script's own folder is on sys.path)


def run_bench(command: list[str]) -> dict:
    "The JSON the bench printed (its last line that parses, for benches that print progress before it)."
    if command[:2] != ["disentlit", "bench"]: raise SystemExit(f"a `disentlit bench ...` command, got {command!r}")
    if "--json" not in command: command = command + ["--json"]
    p = subprocess.run(command, capture_output=True, text=True)
    if p.returncode != 0: raise SystemExit(f"{' '.join(command)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    try: return json.loads(p.stdout)
    except json.JSONDecodeError: raise SystemExit(f"{' '.join(command)} printed no JSON:\n{p.stdout[-2000:]}")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage="%(prog)s RECORD [--note NOTE] -- COMMAND")
    p.add_argument("record", type=Path, help="the .jsonl file a line is appended to (made with its folder if missing)")
    p.add_argument("--note", default="", help="what the reader should know (e.g. 'a sweep running beside it')")
    if "--" not in argv: p.error("the command goes after --: -- disentlit bench ...")
    a, command = p.parse_args(argv[:argv.index("--")]), argv[argv.index("--") + 1:]
    if a.record.suffix != ".jsonl": p.error(f"the record is a .jsonl file, got {a.record}")
    before = list(os.getloadavg())
    result = run_bench(command)
    line = dict(command=" ".join(command), result=result, load_before=[round(x, 2) for x in before],
                load_after=[round(x, 2) for x in os.getloadavg()], note=a.note, **provenance())
    a.record.parent.mkdir(parents=True, exist_ok=True)
    with open(a.record, "a") as f: f.write(json.dumps(line) + "\n")
    print(f"recorded in {a.record}: {line['command']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
