"""Sweeps under stress: a separate process killed with a signal mid-sweep, then resumed; and the Ray engine on a
real local Ray cluster."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from disentlit.store import ResultsDB
from disentlit.sweeps import run_sweep

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from sweep_helpers import slow_run  # noqa: E402

SPEC = dict(name="stress", base=dict(dataset="xyobject", steps=1), grid={"framework_params.beta": [0.1, 0.2, 0.3]}, repeats=3)

DRIVER = """
import sys; sys.path.insert(0, {here!r})
from sweep_helpers import slow_run
from disentlit.sweeps import run_sweep
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
        time.sleep(0.05)
        if db.exists():
            try:
                results = ResultsDB(db)
                try: c, running = results.counts("stress"), results.runs(status="running")
                finally: results.close()
            except Exception: continue                # the database is still being made
            # in flight: marked running *and* inside run_fn (started, not finished): the database marks a run
            # running just before run_fn begins, and a kill in that gap would leave nothing started to repeat
            inside = [r for r in running if any((out / r["id"]).glob("started.*"))
                      and not any((out / r["id"]).glob("finished.*"))]
            if c["done"] >= 3 and c["running"] == 1 and inside: break
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


RAY_SWEEP = """
import json, os, sys; sys.path.insert(0, {here!r})
import ray
from sweep_helpers import slow_run
from disentlit.store import ResultsDB
from disentlit.sweeps import run_sweep
from disentlit.engines import start_ray     # the engine's own start: tried again if a loaded machine misses Ray's 30 s
start_ray(ray, num_cpus=2, include_dashboard=False, log_to_driver=False,
          runtime_env={{"env_vars": {{"PYTHONPATH": {here!r}}}}})      # workers import sweep_helpers too
try:
    counts = run_sweep({spec!r}, {db!r}, engine="ray", run_fn=slow_run, out_root={out!r}, progress=False)
    rows = ResultsDB({db!r}).runs()
    print(json.dumps(dict(counts=counts, driver=os.getpid(), rows=[dict(status=r["status"], error=r["error"],
          pid=(r["result"] or {{}}).get("pid")) for r in rows])))
finally:
    ray.shutdown()
"""


def test_ray_engine_on_a_local_cluster(tmp_path):
    """The ray engine on a local cluster, driven from a process of its own: Ray leaves its threads and its SIGTERM
    handler in the process that started it (one left in a pytest worker once hung a later test's forked pool)."""
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'disentlit[ray]'")
    spec = dict(SPEC, name="ray", grid={"framework_params.beta": [0.1, 0.2], "framework_params.fail": [False, True]}, repeats=2)
    code = RAY_SWEEP.format(here=str(HERE), spec=spec, db=str(tmp_path / "ray.sqlite"), out=str(tmp_path / "runs"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)   # 3 starts at most
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["counts"] == dict(pending=0, running=0, done=4, failed=4)
    assert all("asked to fail" in row["error"] for row in r["rows"] if row["status"] == "failed")
    pids = {row["pid"] for row in r["rows"] if row["status"] == "done"}
    assert r["driver"] not in pids and None not in pids              # the runs ran in Ray workers, not in the driver


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


# checkpoint_every=5: the log reaches its file at each checkpoint, so that a kill "in training" (10 lines logged, no
# result yet) has steps 10 to 40 to land in, and the killed runs resume from a checkpoint
# model="fc": what is killed and resumed is the sweep's bookkeeping, which a small network exercises as Table A3's does
REAL = dict(name="real", base=dict(dataset="xyobject", framework="betavae", latents=3, model="fc", width=32, steps=40,
                                   batch_size=16, framework_params=dict(beta=0.01), metrics=["mig", "dci"],
                                   checkpoint_every=5,
                                   metric_params=dict(mig=dict(num_train=300), dci=dict(num_train=300, num_test=150))),
            grid={"loss": ["mse", "box_blur"]}, repeats=1)
KEEP = ("status", "step", "final", "active_latents", "collapsed", "kl_per_latent", "dci_mode")   # not the timings


def _results(db) -> dict:
    return {r["id"]: ({k: r["result"].get(k) for k in KEEP}, r["metrics"]) for r in ResultsDB(db).runs()}


def _phase(runs_root: Path, phase: str, lines: int = 10) -> bool:
    """Whether some run directory is in `phase` right now: mid-training (`lines` steps logged, at least), trained but
    not scored, or drawing its figures."""
    for d in runs_root.glob("*") if runs_root.exists() else []:
        has = lambda name: (d / name).exists()
        if phase == "training" and has("log.jsonl") and not has("result.json") and \
                len((d / "log.jsonl").read_text().splitlines()) >= lines: return True
        if phase == "trained" and has("result.json") and not has("metrics.json"): return True
        if phase == "figures" and has("metrics.json") and not has("traversals.png"): return True
    return False


@pytest.fixture(scope="module")
def real_sweep(tmp_path_factory):
    "The spec of two real runs, and the database of their sweep run uninterrupted: (spec file, database)."
    import json
    home = tmp_path_factory.mktemp("real")
    (spec := home / "real.json").write_text(json.dumps(REAL))
    subprocess.run(["disentlit", "sweep", str(spec), "--db", str(home / "reference.sqlite")], check=True,
                   capture_output=True)
    return spec, home / "reference.sqlite"


def test_real_runs_killed_at_every_stage_end_as_an_uninterrupted_sweep(tmp_path, real_sweep):
    """SIGKILL a sweep of real runs in training, once training is done, while it writes its figures, and at a random
    step of the next run's training, resuming each time; then every run's result equals an uninterrupted sweep's,
    `final` included. Each kill is asserted to have happened."""
    import random
    spec, reference = real_sweep
    db, runs_root, kills = tmp_path / "killed.sqlite", tmp_path / "killed_runs", []
    at = random.Random(0).randint(1, REAL["base"]["steps"] - 1)                # the random step: a moment, not a time
    for phase in ("training", "trained", "figures", "random", "end"):
        argv = ["disentlit", "sweep", str(spec), "--db", str(db)] + (["--resume"] if db.exists() else [])
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while proc.poll() is None:
            if phase != "end" and _phase(runs_root, "training" if phase == "random" else phase,
                                         at if phase == "random" else 10):
                proc.send_signal(signal.SIGKILL); proc.wait(); kills.append(phase)
                break
            time.sleep(0.01)
        else: assert proc.returncode == 0, proc.stderr.read()
    assert kills == ["training", "trained", "figures", "random"], f"kills landed in {kills}: a stage was not tested"
    assert ResultsDB(db).counts("real") == dict(pending=0, running=0, done=2, failed=0)
    assert _results(db) == _results(reference)                       # `final` included, bit for bit
    for r in ResultsDB(db).runs():                                    # no half-written file is left behind
        files = list((runs_root / r["id"]).iterdir())
        assert not [f for f in files if ".tmp" in f.name], files
        for png in (f for f in files if f.suffix == ".png"): assert png.read_bytes().endswith(b"IEND\xaeB`\x82"), png


def test_figures_killed_while_writing_leave_no_broken_file(tmp_path, real_sweep):
    """Kill `disentlit figures` while it writes a file (its temporary file is in the folder), four times: every PNG it
    leaves is whole, and a run to the end writes them all and clears what the killed ones left. Each kill is asserted
    to have happened."""
    db, out, kills = real_sweep[1], tmp_path / "figs", 0
    for k in range(4):
        proc = subprocess.Popen(["disentlit", "figures", "--db", str(db), "--out", str(out)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while proc.poll() is None:
            if list(out.glob(".*.tmp")):                            # a file half written: now
                proc.send_signal(signal.SIGKILL); proc.wait(); kills += 1
                break
            time.sleep(0.005)
        for png in out.glob("*.png"): assert png.read_bytes().endswith(b"IEND\xaeB`\x82"), png
    assert kills == 4, f"{kills} of 4 runs of figures were killed while writing"
    subprocess.run(["disentlit", "figures", "--db", str(db), "--out", str(out)], check=True, capture_output=True)
    assert {"figure11_loss.png", "effects.csv", "results.csv"} <= {p.name for p in out.iterdir()}
    assert not [p for p in out.iterdir() if ".tmp" in p.name]


SIGNALLED = """
import sys; sys.path.insert(0, {here!r})
import disentlit.sweeps as sweeps
from sweep_helpers import slow_run
sweeps.run = slow_run                       # the command's default run function, slow and countable
from disentlit.cli import main
sys.exit(main(["sweep", {spec!r}, "--db", {db!r}, "--runs", {out!r}, "--workers", "2", "--quiet"]))
"""
SMALL = dict(name="stress", base=dict(dataset="xyobject", steps=1), grid={"framework_params.beta": [0.1, 0.2]}, repeats=2)


def _alive(pid: int) -> bool:
    "Whether process `pid` exists and is not a zombie (a zombie has ended, only its exit status is left)."
    try: return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError: return False
    except OSError:
        try: os.kill(pid, 0); return True
        except ProcessLookupError: return False


def _in_flight(db: Path, out: Path, n: int, timeout: float = 240) -> list[int]:
    "The process ids of the `n` workers once each is inside a run (marked running and started, not finished)."
    deadline = time.time() + timeout
    while time.time() < deadline:
        time.sleep(0.05)
        if not db.exists(): continue
        try:
            results = ResultsDB(db)
            try: running = results.runs(status="running")
            finally: results.close()
        except Exception: continue                   # the database is still being made
        inside = [r for r in running if any((out / r["id"]).glob("started.*"))
                  and not any((out / r["id"]).glob("finished.*"))]
        if len(inside) == n: return [r["pid"] for r in inside]
    raise AssertionError(f"{n} workers never had a run in flight")


@pytest.mark.parametrize("sig, status, says", [(signal.SIGTERM, 143, "disentlit: terminated\n"),
                                               (signal.SIGINT, 130, "disentlit: interrupted\n"),
                                               (signal.SIGKILL, -signal.SIGKILL, "")], ids=["TERM", "INT", "KILL"])
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_signalled_sweep_leaves_no_worker_and_no_running_run(tmp_path, monkeypatch, sig, status, says):
    """SIGTERM, Ctrl-C or SIGKILL to a sweep with two workers, each in a run: the sweep ends (130/143 and one line), its
    workers end with it (killed outright too), every run it held goes back to pending, and the resumed sweep finishes
    every run exactly once."""
    import json
    spec, db, out = tmp_path / "s.json", tmp_path / "s.sqlite", tmp_path / "runs"
    spec.write_text(json.dumps(SMALL))
    code = SIGNALLED.format(here=str(HERE), spec=str(spec), db=str(db), out=str(out))
    env = dict(os.environ, SLOW_RUN_SECONDS="60", PYTHONPATH=str(HERE))     # the workers import sweep_helpers too
    # Ctrl-C as a terminal delivers it, whatever this suite inherited: a shell that starts a job in the background
    # (`make test &`, nohup) leaves SIGINT ignored, the child would inherit that, and rightly go on ignoring it
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers = _in_flight(db, out, 2)
    assert all(_alive(pid) for pid in workers) and proc.pid not in workers
    proc.send_signal(sig)
    proc.wait(timeout=120)
    deadline = time.time() + 30
    while any(_alive(pid) for pid in workers) and time.time() < deadline: time.sleep(0.05)
    assert not [pid for pid in workers if _alive(pid)], "a worker outlived its sweep"
    err = proc.stderr.read()                                            # the workers' stderr too: all closed now
    assert (proc.returncode, err) == (status, says), (proc.returncode, err)   # one line, no traceback, no warning
    counts = ResultsDB(db).counts("stress")
    assert counts["running"] == 0 and counts["pending"] >= 2, counts   # the two runs in flight went back

    monkeypatch.setenv("SLOW_RUN_SECONDS", "0.05")
    assert run_sweep(SMALL, db, resume=True, run_fn=slow_run, out_root=out, progress=False) == \
        dict(pending=0, running=0, done=4, failed=0)
    finished = _markers(out, "finished")
    assert set(finished) == {r["id"] for r in ResultsDB(db).runs()} and set(finished.values()) == {1}, finished
