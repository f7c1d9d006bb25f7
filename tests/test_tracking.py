"""`--track` end to end, through the installed command and the real libraries in their local modes (W&B offline: no
network, no account): what `train` and `sweep` reported, read back from the files the libraries wrote and compared
with the run directories and the results database; a tracker that fails is one warning and the runs go on; a tracker
not installed is one line and exit status 2."""
import json
import os
import subprocess
import sys

import pytest

from disentlit.store import ResultsDB

try: import wandb  # noqa: F401
except ImportError: wandb = None
try: import tensorboard  # noqa: F401
except ImportError: tensorboard = None
needs_wandb = pytest.mark.skipif(wandb is None, reason="the wandb extra is not installed: pip install 'disentlit[wandb]' "
                                 "(make install installs it with the dev extras)")
needs_tensorboard = pytest.mark.skipif(tensorboard is None, reason="the tensorboard extra is not installed: pip install "
                                       "'disentlit[tensorboard]' (make install installs it with the dev extras)")

TINY = ["--dataset", "xyobject", "--framework", "betavae", "--latents", "3", "--model", "fc", "--width", "32",
        "--steps", "6", "--batch-size", "16",
        "--log-every", "3", "--eval-every", "3", "--metrics", "mig", "--metric-param", 'mig={"num_train": 200}']
SPEC = dict(name="tracked", base=dict(dataset="xyobject", framework="betavae", latents=3, model="fc", width=32,
                                      steps=6, batch_size=16,
                                      log_every=3, metrics=["mig"], metric_params=dict(mig=dict(num_train=200))),
            grid={"loss": ["mse", "box_blur"]})


@pytest.fixture
def offline(tmp_path, monkeypatch, data_home):
    "W&B offline, its settings and caches in the test's folder."
    monkeypatch.setenv("WANDB_MODE", "offline")
    for key in ("CONFIG", "CACHE", "DATA"): monkeypatch.setenv(f"WANDB_{key}_DIR", str(tmp_path / "wandb_home"))
    return tmp_path


@needs_tensorboard
def test_train_tracked_with_tensorboard(offline, cli):
    "`train --track tensorboard --json`: stdout is the one JSON object; the event file holds what the run directory does."
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    out = offline / "run"
    code, stdout, stderr = cli("train", *TINY, "--track", "tensorboard", "--out", str(out), "--json", "--quiet")
    assert code == 0 and stderr == "", stderr
    r = json.loads(stdout)
    acc = EventAccumulator(str(out / "tensorboard"), size_guidance=dict(scalars=0, images=0)); acc.Reload()
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [e.step for e in acc.Scalars("train/loss")] == [3, 6]
    assert [e.value for e in acc.Scalars("train/loss")] == pytest.approx([x["loss"] for x in log if x["step"] % 3 == 0])
    assert [e.step for e in acc.Scalars("curve/mig")] == [3, 6]
    assert acc.Scalars("final/mig")[0].value == pytest.approx(r["curve"][-1]["metrics"]["mig"])
    assert acc.Scalars("final/loss")[0].value == pytest.approx(r["final"]["loss"])
    assert [i.step for i in acc.Images("traversals")] == [6] and (out / "traversals.png").exists()


@needs_wandb
def test_sweep_tracked_with_wandb_offline(offline, cli):
    """`sweep --track wandb` (offline): one W&B run per run, grouped under the sweep, its final metrics the database's,
    its configuration the run's; run again with --resume, nothing more is reported."""
    from disentlit.config import RunConfig
    from disentlit.tracking import wandb_logged
    (spec := offline / "tracked.json").write_text(json.dumps(SPEC))
    db = offline / "tracked.sqlite"
    code, stdout, stderr = cli("sweep", str(spec), "--db", str(db), "--track", "wandb", "--quiet")
    assert code == 0 and stderr == "", stderr
    rows = ResultsDB(db).runs()
    assert len(rows) == 2
    for row in rows:
        run_dir = offline / "tracked_runs" / row["id"]
        config, history, summary = wandb_logged(run_dir, wait=60)       # the process ended: the file is whole
        assert RunConfig.from_dict({k: v for k, v in config.items() if k != "_wandb"}) == RunConfig.from_dict(
            row["config"])
        assert {f"final/{m}": summary[f"final/{m}"] for m in row["metrics"]} == {
            f"final/{m}": v for m, v in row["metrics"].items()}
        assert [s for s, _ in history["train/loss"]] == [3, 6] and history["traversals/_type"] == [(6, "image-file")]
    assert cli("sweep", str(spec), "--db", str(db), "--track", "wandb", "--resume", "--quiet")[0] == 0
    assert all(len(list((offline / "tracked_runs" / r["id"] / "wandb").glob("offline-run-*"))) == 1 for r in rows)


@needs_wandb
def test_a_failing_tracker_is_one_warning_and_the_runs_go_on(offline, cli, monkeypatch):
    "W&B refusing every run of a sweep (a project name it does not accept): one warning line, every run done."
    monkeypatch.setenv("WANDB_PROJECT", "lab/vae")
    (spec := offline / "tracked.json").write_text(json.dumps(SPEC))
    code, stdout, stderr = cli("sweep", str(spec), "--db", str(offline / "t.sqlite"), "--track", "wandb", "--quiet")
    assert code == 0, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("disentlit: warning: tracking with wandb failed (") and \
        stderr.endswith("the run goes on without it\n"), stderr
    assert ResultsDB(offline / "t.sqlite").counts("tracked") == dict(pending=0, running=0, done=2, failed=0)


@pytest.mark.parametrize("name", ["wandb", "tensorboard"])
def test_a_tracker_not_installed_says_how_to_install(tmp_path, name):
    "`train --track NAME` with NAME's package missing: one line naming the extra, exit status 2, nothing trained."
    code = (f"import sys; sys.modules[{name!r}] = None\n"           # makes the import fail, as when it is not installed
            "from disentlit.cli import main\n"
            f"sys.exit(main(['train'] + {TINY!r} + ['--track', {name!r}, '--out', {str(tmp_path / 'run')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert (p.returncode, p.stderr) == (2, f"disentlit: error: tracking with {name} needs {name}: pip install "
                                           f"'disentlit[{name}]'\n")
    assert not (tmp_path / "run").exists()
