"""Sweeps under stress: a separate process killed with a signal mid-sweep, then resumed; and the Ray engine on a
real local Ray cluster."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from disentlit.experiments import ResultsDB, run_sweep

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sweep_helpers import slow_run  # noqa: E402

SPEC = dict(name="stress", base=dict(dataset="xyobject", steps=1), grid={"framework_params.beta": [0.1, 0.2, 0.3]}, repeats=3)

DRIVER = """
import sys; sys.path.insert(0, {here!r})
from sweep_helpers import slow_run
from disentlit.experiments import run_sweep
run_sweep({spec!r}, {db!r}, run_fn=slow_run, out_root={out!r}, progress=False)
"""


def _markers(out_root: Path, kind: str) -> dict:
    return {d.name: len(list(d.glob(f"{kind}.*"))) for d in out_root.iterdir() if d.is_dir()}


def test_kill_and_resume_loses_nothing_and_repeats_nothing(tmp_path):
    db, out = tmp_path / "r.sqlite", tmp_path / "runs"
    code = DRIVER.format(here=str(HERE), spec=SPEC, db=str(db), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ, SLOW_RUN_SECONDS="0.5"))
    deadline = time.time() + 120
    while time.time() < deadline:                         # wait until some runs are done and one is in flight
        time.sleep(0.1)
        if db.exists():
            try: c = ResultsDB(db).counts("stress")
            except Exception: continue
            if c["done"] >= 3 and c["running"] == 1: break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = ResultsDB(db).counts("stress")
    assert before["done"] >= 3 and before["running"] == 1 and before["pending"] > 0, before
    done_before = {r["id"] for r in ResultsDB(db).runs(status="done")}

    counts = run_sweep(SPEC, db, resume=True, run_fn=slow_run, out_root=out, progress=False)
    assert counts == dict(pending=0, running=0, done=9, failed=0)
    finished = _markers(out, "finished")
    assert set(finished) == {r["id"] for r in ResultsDB(db).runs()}
    assert all(finished[rid] == 1 for rid in done_before), "a run finished before the kill was run again"
    assert all(n == 1 for n in finished.values()), finished          # every run finished exactly once
    started = _markers(out, "started")
    assert sorted(started.values()).count(2) == 1                    # only the killed run started twice
    assert all(r["attempts"] == started[r["id"]] for r in ResultsDB(db).runs())


def test_ray_engine_on_a_local_cluster(tmp_path):
    ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'disentlit[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(HERE)}})      # workers import sweep_helpers too
    try:
        spec = dict(SPEC, name="ray", grid={"framework_params.beta": [0.1, 0.2], "framework_params.fail": [False, True]}, repeats=2)
        counts = run_sweep(spec, tmp_path / "ray.sqlite", engine="ray", run_fn=slow_run, out_root=tmp_path / "runs", progress=False)
        assert counts == dict(pending=0, running=0, done=4, failed=4)
        rows = ResultsDB(tmp_path / "ray.sqlite").runs()
        assert all("asked to fail" in r["error"] for r in rows if r["status"] == "failed")
        pids = {r["result"]["pid"] for r in rows if r["status"] == "done"}
        assert os.getpid() not in pids                               # the runs ran in Ray workers, not in the driver
    finally:
        ray.shutdown()


def test_ray_engine_without_ray_says_how_to_install(tmp_path):
    "With Ray missing, `--engine ray` is one line on stderr naming the install command, and exit status 2."
    spec = tmp_path / "s.json"
    spec.write_text('{"name": "x", "base": {"dataset": "xyobject", "steps": 1}}')
    code = ("import sys; sys.modules['ray'] = None\n"              # makes `import ray` fail, as when it is not installed
            "from disentlit.cli import main\n"
            f"sys.exit(main(['sweep', {str(spec)!r}, '--db', {str(tmp_path / 'x.sqlite')!r}, '--engine', 'ray']))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "pip install 'disentlit[ray]'" in p.stderr, p.stderr
