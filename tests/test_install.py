"""The package as `pip install disentlit` gives it: a fresh virtual environment with the runtime dependencies only
(no dev extras), where every module imports and the console script runs."""
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import copy_checkout

ROOT = Path(__file__).resolve().parents[1]


def test_runtime_install_without_dev_extras(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py, bin_ = venv / "bin" / "python", venv / "bin"
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]  # faster
    subprocess.run(pip + ["torch==2.13.0"], check=True, timeout=900)
    src = tmp_path / "src"                                                # a copy: pip's build files stay out of the repository
    copy_checkout(ROOT, src)
    subprocess.run(pip + [str(src)], check=True, timeout=900)            # a regular (non-editable) install
    mods = [p.stem for p in (ROOT / "disentlit").glob("*.py") if not p.stem.startswith("_")]
    code = "import importlib, sys; [importlib.import_module('disentlit.' + m) for m in sys.argv[1:]]; print('ok')"
    p = subprocess.run([str(py), "-c", code, *mods], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]
    env = dict(os.environ, DISENTLIT_DATA=str(tmp_path / "data"), PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}")
    p = subprocess.run([str(bin_ / "disentlit"), "datasets", "--json"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "xysquares" in {d["name"] for d in json.loads(p.stdout)["datasets"]}
