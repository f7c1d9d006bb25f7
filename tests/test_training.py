"""Training runs as processes see them: a run killed mid-way resumes bit for bit; a run records its loss; compile."""
import dataclasses
import json
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from disentlit.runs import build_run, load_run, read_checkpoint, train
from disentlit.training import RunConfig

STEPS, EVERY, KILL_AT = 10, 3, 8

CHILD = textwrap.dedent("""
    import os, signal, sys
    from disentlit.runs import build_run, train
    from disentlit.training import RunConfig
    config = RunConfig.from_dict({config})
    fw, data = build_run(config)
    step_fn = fw.training_step
    calls = []
    def dying_step(*a, **k):
        calls.append(1)
        if len(calls) == {kill_at}: os.kill(os.getpid(), signal.SIGKILL)     # no clean-up, no flush: a crash
        return step_fn(*a, **k)
    fw.training_step = dying_step
    train(config, sys.argv[1], progress=False, built=(fw, data))
""")


def _config(name, **kw):
    return RunConfig(dataset="xyobject", framework=name, latents=3, model="fc", width=32, init_seed=1, steps=STEPS,
                     batch_size=16, seed=7, checkpoint_every=EVERY, **kw)


def _train(config, out_dir):
    "`train` keeping the model: (result, framework)."
    built = build_run(config)
    return train(config, out_dir, progress=False, built=built), built[0]


@pytest.mark.parametrize("name", ["betavae", "adagvae", "annealedvae", "betatcvae", "factorvae", "wae"])
def test_killed_run_resumes_bit_for_bit(tmp_path, name):
    crashed, config = tmp_path / "crashed", _config(name)
    code = CHILD.format(config=config.to_dict(), kill_at=KILL_AT)
    p = subprocess.run([sys.executable, "-c", code, str(crashed)], capture_output=True, text=True, timeout=300)
    assert p.returncode == -signal.SIGKILL, p.stderr                                 # the kill happened
    assert read_checkpoint(crashed / "checkpoint.pt")["step"] == 6              # the last checkpoint before the kill
    assert not list(crashed.glob(".*.tmp"))

    resumed, fw = _train(config, crashed)
    straight, fw_straight = _train(config, tmp_path / "straight")
    assert resumed["status"] == straight["status"] == "done" and resumed["history"][0]["step"] == 7
    for a, b in zip(fw.state_dict().values(), fw_straight.state_dict().values()):
        assert torch.equal(a, b)
    if name == "annealedvae": assert int(fw.updates) == STEPS                      # the capacity schedule resumed too
    log = lambda d: [json.loads(l) for l in (d / "log.jsonl").read_text().splitlines()]
    got, want = log(crashed), log(tmp_path / "straight")
    assert [r["step"] for r in got] == list(range(1, STEPS + 1))                       # no step twice, none missing
    assert [r["loss"] for r in got] == [r["loss"] for r in want]


def test_box_blur_run_records_its_loss_and_standardisation(tmp_path):
    for loss, standardise in [("box_blur", True), ("bce", False)]:
        config = RunConfig(dataset="xyobject", latents=2, model="fc", width=16, steps=2, batch_size=4, loss=loss,
                           loss_params={"radius": 3} if loss == "box_blur" else {})
        assert train(config, tmp_path / loss, progress=False)["status"] == "done"
        model, _, config = load_run(tmp_path / loss)
        assert model.standardise is standardise and config.loss == model.recon.name == loss
        if loss == "box_blur": assert model.recon.params["radius"] == 3


def test_a_compiled_run_trains_as_the_eager_one(tmp_path):
    "--compile (torch.compile of the loss) gives the eager run's losses to float tolerance, and records the choice."
    config = dataclasses.replace(_config("betavae"), steps=5)
    eager, _ = _train(config, tmp_path / "eager")
    compiled, _ = _train(dataclasses.replace(config, compile=True), tmp_path / "run")
    np.testing.assert_allclose([h["loss"] for h in compiled["history"]], [h["loss"] for h in eager["history"]],
                               rtol=1e-5)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["compile"] is True


def test_the_logs_survive_a_loss_that_reuses_its_output_memory():
    """CUDA graphs (`--compile` on a GPU) hand every call of the loss the same output memory; the logs kept on the
    device between copies to the host must be copies of their own, or the next step overwrites them (an H100 found
    this: results/gpu/README.md). A loss that writes its logs into the same tensors every call stands in here."""
    from disentlit.data import XYObject
    from disentlit.family import get_framework
    from disentlit.training import fit
    data = XYObject()
    build = lambda: get_framework("betavae", obs_shape=data.obs_shape, latents=3, model="fc", width=32, seed=1)
    eager = fit(build(), data, RunConfig(steps=6, batch_size=8, log_every=6), progress=False)
    fw, static = build(), {}
    loss = fw.loss
    def reusing(batch, generator=None):
        total, logs = loss(batch, generator)
        for k, v in logs.items(): static.setdefault(k, torch.empty_like(v)).copy_(v.detach())
        return total, dict(static)
    fw.loss = reusing
    reused = fit(fw, data, RunConfig(steps=6, batch_size=8, log_every=6), progress=False)
    losses = [h["loss"] for h in eager["history"]]
    assert len(set(losses)) == len(losses) == 6                  # distinct steps: a stale copy would show
    assert [h["loss"] for h in reused["history"]] == losses


def test_a_committed_run_directory_keeps_its_run_id_and_resumes_as_the_same_run():
    """A run directory in results/ (written before `RunConfig` moved and grew `device`) loads with today's code, has
    the run id it is named by, and its checkpoint's configuration is the same run as its config.json."""
    from pathlib import Path
    from disentlit.runs import checkpoint_config, read_config, same_run
    dirs = sorted((Path(__file__).resolve().parents[1] / "results").glob("*_runs/*/config.json"))
    assert len(dirs) >= 4, dirs
    for path in dirs:
        config = read_config(path.parent)
        assert config.run_id == path.parent.name and config.device is None
        if (path.parent / "checkpoint.pt").exists():
            state = read_checkpoint(path.parent / "checkpoint.pt")
            assert same_run(checkpoint_config(state, path.parent), config)
