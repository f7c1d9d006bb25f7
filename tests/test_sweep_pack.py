"""Packed sweeps (`disentlit sweep --pack K`, 08b_sweeps) as a user and a crash see them: the same results as a sweep
without packs, a non-finite run failing alone, a packed sweep killed mid-training resuming with every run finished
exactly once; bad `--pack` values refused; `disentlit bench train --pack` printing its ratios on a CPU."""
import json
import os
import re
import signal
import subprocess
import sys

import pytest

from disentlit.store import ResultsDB
from disentlit.sweeps import run_sweep
from sweep_helpers import DIE_AT_PACKED_STEP

STEPS = 12
BASE = dict(dataset="xyobject", framework="betavae", latents=3, model="fc", width=32, steps=STEPS, batch_size=16,
            checkpoint_every=3, framework_params=dict(beta=0.01), metrics=["mig"],
            metric_params=dict(mig=dict(num_train=300)))
SPEC = dict(name="packs", base=BASE, grid={"loss": ["mse", "box_blur"]}, seeds=[1, 2])       # 4 runs of one shape
KEEP = ("status", "step", "final", "active_latents", "collapsed", "kl_per_latent", "curve")   # not the timings


def _rows(db) -> dict:
    results = ResultsDB(db, create=False)
    try: return {r["id"]: r for r in results.runs()}
    finally: results.close()


def _close(a, b) -> bool:
    "`a` equals `b`, their numbers (in dictionaries and lists, at any depth) to float rounding: test_packed's rel=1e-5."
    if isinstance(a, dict): return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list): return isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, float) and isinstance(b, float): return a == pytest.approx(b, rel=1e-5, nan_ok=True)
    return a == b


def _same(got: dict, want: dict):
    "Each run's status, error, result and metrics as the reference's, to float rounding."
    assert sorted(got) == sorted(want)
    for rid, w in want.items():
        g = got[rid]
        assert (g["status"], g["error"]) == (w["status"], w["error"]), rid
        assert _close({k: g["result"].get(k) for k in KEEP}, {k: w["result"].get(k) for k in KEEP}), (g, w)
        assert _close(g["metrics"], w["metrics"]), (g["metrics"], w["metrics"])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    "The spec's sweep without packs (`pack=1`, today's code path): its database's runs by id."
    home = tmp_path_factory.mktemp("reference")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DISENTLIT_DATA", str(home / "data"))
        assert run_sweep(SPEC, home / "ref.sqlite", progress=False)["done"] == 4
    return _rows(home / "ref.sqlite")


def test_a_packed_sweep_records_what_a_sweep_without_packs_records(tmp_path, data_home, reference):
    "Pack 2: the same run ids, statuses, results and metrics as pack 1; each run claimed once, trained in a pack of 2."
    assert run_sweep(SPEC, tmp_path / "packed.sqlite", progress=False, pack=2) == dict(pending=0, running=0, done=4,
                                                                                      failed=0)
    rows = _rows(tmp_path / "packed.sqlite")
    _same(rows, reference)
    assert [(r["attempts"], r["result"]["packed"]) for r in rows.values()] == [(1, 2)] * 4


def test_a_non_finite_run_fails_alone_in_its_pack(tmp_path, data_home, reference):
    "A run whose loss turns non-finite is failed, with its reason; the run packed with it is done, as alone."
    spec = dict(name="nonfinite", base=BASE, arms=[{}, {"lr": 1e30}], seeds=[1])      # the first: a reference run
    assert run_sweep(spec, tmp_path / "nf.sqlite", progress=False, pack=2) == dict(pending=0, running=0, done=1,
                                                                                  failed=1)
    rows = _rows(tmp_path / "nf.sqlite")
    (good,) = [r for r in rows.values() if r["status"] == "done"]
    (bad,) = [r for r in rows.values() if r["status"] == "failed"]
    _same({good["id"]: good}, {good["id"]: reference[good["id"]]})
    assert bad["error"].startswith("non-finite loss at step 2") and bad["result"]["packed"] == 2, bad["error"]


KILLED = DIE_AT_PACKED_STEP + """
from disentlit.cli import main
sys.exit(main(["sweep", {spec!r}, "--db", {db!r}, "--pack", "2", "--quiet"]))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_killed_packed_sweep_resumes_finishing_every_run_once(tmp_path, cli, reference):
    """`disentlit sweep --pack 2` SIGKILLed at the 8th step of its second pack (the first pack done and recorded), then
    `--resume`d: every run done once, the first pack's never run again, the second's resumed from their checkpoints
    (each step logged once), every result the reference's."""
    spec, db = tmp_path / "spec.json", tmp_path / "killed.sqlite"
    spec.write_text(json.dumps(SPEC))
    code = KILLED.format(kill_at=STEPS + 8, spec=str(spec), db=str(db))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert p.returncode == -signal.SIGKILL, p.stderr                                  # the kill happened
    before = _rows(db)
    assert sorted(r["status"] for r in before.values()) == ["done", "done", "running", "running"]
    first = {rid for rid, r in before.items() if r["status"] == "done"}

    code, out, err = cli("sweep", spec, "--db", db, "--pack", "2", "--resume", "--quiet")     # (in this process)
    assert code == 0, err
    after = _rows(db)
    _same(after, reference)                                                          # nothing lost, all as uninterrupted
    assert {rid: r["attempts"] for rid, r in after.items()} == {rid: 1 if rid in first else 2 for rid in after}
    for rid in after:                                                                # no step twice, none missing
        log = [json.loads(line) for line in (tmp_path / "killed_runs" / rid / "log.jsonl").read_text().splitlines()]
        assert [rec["step"] for rec in log] == list(range(1, STEPS + 1)), rid
        assert not list((tmp_path / "killed_runs" / rid).glob(".*.tmp"))


def test_workers_claim_packs_of_their_own(tmp_path, monkeypatch):
    """`workers=2` with `pack=2`: each worker process claims whole packs; every run executed once, in a pack of 2, a
    failing run failed alone (a group run function, `slow_pack`, that sleeps and counts)."""
    sys.path.insert(0, os.path.dirname(__file__))
    from sweep_helpers import slow_pack
    monkeypatch.setenv("SLOW_RUN_SECONDS", "0.2")
    spec = dict(name="w", base=dict(dataset="xyobject", steps=1),
                grid={"framework_params.fail": [False, True]}, repeats=3)                  # 6 runs, 3 failing
    counts = run_sweep(spec, tmp_path / "w.sqlite", run_fn=slow_pack, out_root=tmp_path / "runs", progress=False,
                       pack=2, workers=2)
    assert counts == dict(pending=0, running=0, done=3, failed=3)
    rows = _rows(tmp_path / "w.sqlite")
    assert all(r["attempts"] == 1 and (r["status"] == "failed") == r["config"]["framework_params"]["fail"]
               for r in rows.values())
    marks = {rid: [p.name.split(".")[1] for p in (tmp_path / "runs" / rid).glob("pack.*")] for rid in rows}
    assert marks == {rid: ["2"] for rid in rows}, marks                               # each once, in a pack of 2
    assert {p.name.split(".")[2] for p in (tmp_path / "runs").glob("*/pack.*")} != {str(os.getpid())}   # in workers


@pytest.mark.parametrize("denormals, flushing", [(None, 1.0), ("keep", 0.0)])
def test_workers_flush_denormals_in_every_thread(tmp_path, monkeypatch, denormals, flushing):
    """Each worker process flushes denormal numbers from its start, so threads its runs start flush too (05a; late in
    training they made a step several times slower); `DISENTLIT_DENORMALS=keep` leaves them."""
    sys.path.insert(0, os.path.dirname(__file__))
    from sweep_helpers import threads_flush
    if denormals: monkeypatch.setenv("DISENTLIT_DENORMALS", denormals)
    spec = dict(name="f", base=dict(dataset="xyobject", steps=1), repeats=2)
    counts = run_sweep(spec, tmp_path / "f.sqlite", run_fn=threads_flush, out_root=tmp_path / "runs", progress=False,
                       workers=2)
    assert counts == dict(pending=0, running=0, done=2, failed=0)
    assert [r["metrics"]["flushing"] for r in _rows(tmp_path / "f.sqlite").values()] == [flushing, flushing]


@pytest.mark.parametrize("argv, says", [
    (["sweep", "SPEC", "--db", "DB", "--pack", "0"], "pack must be an integer >= 1, got 0"),
    (["sweep", "SPEC", "--db", "DB", "--pack", "-3"], "pack must be an integer >= 1, got -3"),
    (["sweep", "SPEC", "--db", "DB", "--pack", "two"], "argument --pack: invalid int value: 'two'"),
    (["sweep", "SPEC", "--db", "DB", "--pack", "1.5"], "argument --pack: invalid int value: '1.5'"),
    (["sweep", "SPEC", "--db", "DB", "--pack", "2", "--engine", "ray"],
     "pack 2: the ray engine trains each run alone; pack > 1 goes with the local engine (pack 1 with any)"),
    (["sweep", "SPEC", "--db", "DB", "--pack", "2", "--engine", "submitit"], "goes with the local engine"),
    (["sweep", "SPEC", "--db", "DB", "--pack", "2", "--track", "wandb"], "W&B keeps one run per process"),
    (["bench", "train", "--pack", "0,4"], "pack must be a comma-separated list of whole numbers in 1..512 such as 1,4,8"),
    (["bench", "train", "--pack", "4,4"], "pack size 4 is listed twice in '4,4'"),
    (["bench", "train", "--pack", "2", "--compile"], "pack goes without compile"),
    (["bench", "train", "--pack", "2", "--framework", "factorvae"], "cannot train packed; accepted: ae, vae, betavae"),
    (["bench", "data", "--pack", "2"], "--pack goes with bench train, not bench data")])
def test_bad_pack_values_exit_2_naming_what_is_accepted(tmp_path, cli, argv, says):
    (spec := tmp_path / "spec.json").write_text(json.dumps(SPEC))
    argv = [str(spec) if a == "SPEC" else str(tmp_path / "x.sqlite") if a == "DB" else a for a in argv]
    code, out, err = cli(*argv)
    assert code == 2 and says in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "x.sqlite").exists()                                      # refused before anything is made


def test_bench_train_pack_prints_its_ratios_on_a_cpu(cli):
    "`bench train --pack 1,2` on a CPU, small: a line per pack size with its images/s and its ratios."
    argv = ["bench", "train", "--pack", "1,2", "--precision", "fp32", "--batch-size", "4", "--steps", "2", "--repeats",
            "1", "--device", "cpu", "--quiet"]
    code, out, err = cli(*argv)
    assert code == 0, err
    assert out.startswith("fit_packed (loop) vs the plain loop and fit alone: betavae"), out
    for k in (1, 2):
        assert re.search(rf"^  K={k}: +[\d.]+ img/s   ratio [\d.]+x the plain loop, [\d.]+x fit alone \(medians "
                         rf"[\d.]+x, [\d.]+x\)$", out, re.M), out
