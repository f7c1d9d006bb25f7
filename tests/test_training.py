"""Training runs as processes see them: a run killed mid-way resumes bit for bit; run directories load back."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from disentlit.core import DisentlitError
from disentlit.data import XYObject
from disentlit.family import get_framework
from disentlit.training import fit, load_run, read_checkpoint

STEPS, EVERY, KILL_AT = 10, 3, 8

CHILD = textwrap.dedent("""
    import os, signal, sys
    from disentlit.data import XYObject
    from disentlit.family import get_framework
    from disentlit.training import fit
    data = XYObject()
    fw = get_framework("{name}", obs_shape=data.obs_shape, latents=3, model="fc", width=32, seed=1)
    step_fn = fw.training_step
    calls = []
    def dying_step(*a, **k):
        calls.append(1)
        if len(calls) == {kill_at}: os.kill(os.getpid(), signal.SIGKILL)     # no clean-up, no flush: a crash
        return step_fn(*a, **k)
    fw.training_step = dying_step
    fit(fw, data, {steps}, batch_size=16, seed=7, out_dir=sys.argv[1], checkpoint_every={every}, progress=False)
""")


def _framework(name):
    data = XYObject()
    return data, get_framework(name, obs_shape=data.obs_shape, latents=3, model="fc", width=32, seed=1)


@pytest.mark.parametrize("name", ["betavae", "adagvae", "annealedvae", "betatcvae", "factorvae", "wae"])
def test_killed_run_resumes_bit_for_bit(tmp_path, name):
    crashed = tmp_path / "crashed"
    code = CHILD.format(name=name, kill_at=KILL_AT, steps=STEPS, every=EVERY)
    p = subprocess.run([sys.executable, "-c", code, str(crashed)], capture_output=True, text=True, timeout=300)
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert read_checkpoint(crashed / "checkpoint.pt")["step"] == 6                   # the last checkpoint before the kill
    assert not list(crashed.glob(".*.tmp"))

    data, fw = _framework(name)
    resumed = fit(fw, data, STEPS, batch_size=16, seed=7, out_dir=crashed, checkpoint_every=EVERY, progress=False)
    data, fw_straight = _framework(name)
    straight = fit(fw_straight, data, STEPS, batch_size=16, seed=7, out_dir=tmp_path / "straight", checkpoint_every=EVERY, progress=False)

    assert resumed["status"] == straight["status"] == "done"
    for a, b in zip(fw.state_dict().values(), fw_straight.state_dict().values()):
        assert torch.equal(a, b)
    if name == "annealedvae": assert int(fw.updates) == STEPS                      # the capacity schedule resumed too
    log = lambda d: [json.loads(l) for l in (d / "log.jsonl").read_text().splitlines()]
    got, want = log(crashed), log(tmp_path / "straight")
    assert [r["step"] for r in got] == list(range(1, STEPS + 1))                       # no step twice, none missing
    assert [r["loss"] for r in got] == [r["loss"] for r in want]


def test_same_seed_same_losses_to_the_bit():
    runs = []
    for _ in range(2):
        data, fw = _framework("betavae")
        runs.append([h["loss"] for h in fit(fw, data, 5, batch_size=16, seed=3, progress=False)["history"]])
    assert runs[0] == runs[1]


def test_load_run_round_trip_and_errors(tmp_path):
    data, fw = _framework("adagvae")
    fit(fw, data, 3, batch_size=8, out_dir=tmp_path / "run", progress=False)
    model, data2, config = load_run(tmp_path / "run")
    assert config.framework == "adagvae" and data2.name == "xyobject" and not model.training
    x = data.batch([0, 1, 2], standardise=True)
    with torch.no_grad():
        assert torch.equal(model.encode(x), fw.eval().encode(x))
    with pytest.raises(DisentlitError, match="no checkpoint"):
        (tmp_path / "run" / "checkpoint.pt").rename(tmp_path / "elsewhere.pt")
        load_run(tmp_path / "run")
    (tmp_path / "run" / "checkpoint.pt").write_bytes((tmp_path / "elsewhere.pt").read_bytes()[:1000])   # truncated
    with pytest.raises(DisentlitError, match="corrupt checkpoint"):
        load_run(tmp_path / "run")


def test_box_blur_run_records_its_loss_and_standardisation(tmp_path):
    from disentlit.losses import get_loss
    data = XYObject()
    for loss, standardise in [("box_blur", True), ("bce", False)]:
        fw = get_framework("betavae", obs_shape=data.obs_shape, latents=2, model="fc", width=16, recon=get_loss(loss, **({"radius": 3} if loss == "box_blur" else {})))
        r = fit(fw, data, 2, batch_size=4, out_dir=tmp_path / loss, progress=False)
        assert r["status"] == "done"
        model, _, config = load_run(tmp_path / loss)
        assert model.standardise is standardise and config.loss == model.recon.name == loss
        if loss == "box_blur": assert model.recon.params["radius"] == 3


def test_a_compiled_run_trains_as_the_eager_one(tmp_path):
    "--compile (torch.compile of the loss) gives the eager run's losses to float tolerance, and records the choice."
    data, eager = _framework("betavae")
    _, compiled = _framework("betavae")
    a = fit(eager, data, 5, batch_size=16, seed=3, progress=False)
    b = fit(compiled, data, 5, batch_size=16, seed=3, progress=False, compile=True, out_dir=tmp_path / "run")
    np.testing.assert_allclose([h["loss"] for h in b["history"]], [h["loss"] for h in a["history"]], rtol=1e-5)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["compile"] is True
