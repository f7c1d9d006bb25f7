"""Measure what each optional extra adds to a default install, and record it for the install page.

    python tools/measure_extras.py           # a default install, then each extra layered over it (a few minutes)

A default install (`pip install` of tools/common.py's TORCH and `pip install ROOT`, no extra) goes into a fresh virtual
environment; then, for each extra of settings.ini, another fresh one whose `.pth` file names the default install's
`site-packages` (layered: what the default install holds is not installed again) gets the extra's requirements
(`pip install --no-compile`, pip's cache off). Recorded per extra in results/extras.json: its requirements, the
packages pip installed, their size on disk (MB) and pip's wall seconds, with the load average and the machine
(tools/common.py `provenance`); the install page's table is printed from that file.
"""
from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from common import TORCH, provenance   # tools/common.py (this script's own folder is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "results" / "extras.json"
EXTRAS = ("ray", "submitit", "tensorboard", "wandb")


def site_packages(venv: Path) -> Path:
    "The `site-packages` folder of a virtual environment made by this Python."
    rel = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))
    return venv / rel


def pip(venv: Path, *args: str) -> float:
    "Run the venv's pip; its wall seconds."
    start = time.perf_counter()
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", "--no-cache-dir",
                    *args], check=True)
    return time.perf_counter() - start


def size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink()) / 2 ** 20


def measure(work: Path) -> dict:
    "The default install, then each extra layered over it."
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "settings.ini")
    base = work / "default"
    subprocess.run([sys.executable, "-m", "venv", str(base)], check=True)
    pip(base, TORCH)
    pip(base, str(ROOT))
    out = {}
    for extra in EXTRAS:
        venv = work / extra
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        site = site_packages(venv)
        before = {p.name for p in site.iterdir()}
        (site / "default_install.pth").write_text(str(site_packages(base)) + "\n")
        requirements = cfg["DEFAULT"][f"{extra}_requirements"].split()
        seconds = pip(venv, *requirements)
        new = [p for p in site.iterdir() if p.name not in before and p.name != "default_install.pth"]
        out[extra] = dict(requirements=requirements, seconds=round(seconds, 1),
                          packages=sorted(p.name.removesuffix(".dist-info") for p in new if p.suffix == ".dist-info"),
                          mb=round(sum(size_mb(p) if p.is_dir() else p.stat().st_size / 2 ** 20 for p in new), 1))
        print(f"{extra}: {out[extra]['mb']} MB, {len(out[extra]['packages'])} packages, {seconds:.0f} s", flush=True)
    return out


def main() -> int:
    load = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as work:
        extras = measure(Path(work))
    RECORD.write_text(json.dumps(dict(extras=extras, torch_spec=TORCH, python=sys.version.split()[0], load_before=load,
                                      **provenance()), indent=1) + "\n")
    print(f"wrote {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
