"""Packed training as processes see it: a pack killed mid-run resumes losing and repeating nothing, packed or a run
alone; and the settings the notebook (05c_packed) does not exercise: bf16, data on the device, Table A3's networks."""
import dataclasses
import json
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

from disentlit.data import XYObject
from disentlit.distances import mse
from disentlit.family import get_framework
from disentlit.packed import fit_packed, train_packed
from disentlit.runs import build_run, read_checkpoint, train
from disentlit.training import fit, RunConfig
from sweep_helpers import DIE_AT_PACKED_STEP

STEPS, EVERY, KILL_AT = 10, 3, 8

CHILD = DIE_AT_PACKED_STEP + textwrap.dedent("""
    from disentlit.training import RunConfig
    configs = [RunConfig.from_dict(c) for c in {configs}]
    packed.train_packed(configs, sys.argv[1:], progress=False, engine={engine!r})
""")


def _configs():
    base = RunConfig(dataset="xyobject", latents=3, model="fc", width=32, init_seed=1, steps=STEPS, batch_size=16,
                     checkpoint_every=EVERY)
    return [dataclasses.replace(base, seed=7, framework_params=dict(beta=0.01)),
            dataclasses.replace(base, seed=8, loss="box_blur", loss_params=dict(radius=3)),
            dataclasses.replace(base, seed=9, framework="wae", init_seed=2)]


def _log(d):
    return [json.loads(line) for line in (d / "log.jsonl").read_text().splitlines()]


def _same_weights(a, b):
    return all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


@pytest.mark.parametrize("engine", ["vmap", "loop"])
def test_a_killed_pack_resumes_packed_or_alone_losing_and_repeating_nothing(tmp_path, engine):
    configs = _configs()
    crashed = [tmp_path / f"crashed{i}" for i in range(3)]
    code = CHILD.format(configs=[c.to_dict() for c in configs], kill_at=KILL_AT, engine=engine)
    p = subprocess.run([sys.executable, "-c", code, *map(str, crashed)], capture_output=True, text=True, timeout=300)
    assert p.returncode == -signal.SIGKILL, p.stderr                                 # the kill happened
    assert [read_checkpoint(d / "checkpoint.pt")["step"] for d in crashed] == [6, 6, 6]
    assert not [f for d in crashed for f in d.glob(".*.tmp")]
    alone = shutil.copytree(crashed[1], tmp_path / "alone")                       # resumed by `train`, below

    built = [build_run(c) for c in configs]
    resumed = train_packed(configs, crashed, progress=False, built=built, engine=engine)
    straight_built = [build_run(c) for c in configs]
    straight = train_packed(configs, [tmp_path / f"straight{i}" for i in range(3)], progress=False,
                            built=straight_built, engine=engine)
    for i, (r, s) in enumerate(zip(resumed, straight)):
        assert r["status"] == s["status"] == "done" and r["history"][0]["step"] == 7
        assert _same_weights(built[i][0], straight_built[i][0])                    # the same pack: bit for bit
        got, want = _log(crashed[i]), _log(tmp_path / f"straight{i}")
        assert [g["step"] for g in got] == list(range(1, STEPS + 1))                # no step twice, none missing
        assert got == want

    fw_alone, data = build_run(configs[1])
    r_alone = train(configs[1], alone, progress=False, built=(fw_alone, data))
    fw_solo, _ = build_run(configs[1])
    solo = train(configs[1], tmp_path / "solo", progress=False, built=(fw_solo, data))
    assert r_alone["history"][0]["step"] == 7 and [g["step"] for g in _log(alone)] == list(range(1, STEPS + 1))
    if engine == "loop":                                      # packed with `loop` then alone: `train` bit for bit
        assert _log(alone) == _log(tmp_path / "solo") and _same_weights(fw_alone, fw_solo)
    else:                                                     # the batched networks: float rounding
        for a, s in zip(_log(alone), _log(tmp_path / "solo")):
            assert a["loss"] == pytest.approx(s["loss"], rel=1e-5)
        assert solo["status"] == r_alone["status"] == "done"


class NaNAt:
    "A reconstruction loss (MSE) that returns NaN from its `at`-th call."
    name, params = "mse", {}

    def __init__(self, at): self.at, self.calls = at, 0

    def __call__(self, out, x):
        self.calls += 1
        return mse(out, x) * (float("nan") if self.calls >= self.at else 1.0)


def test_a_non_finite_packed_run_keeps_its_last_good_checkpoint(tmp_path):
    "As 05b's run alone: the NaN run stops at step 6 with its checkpoint of step 6 kept; the others finish."
    configs = _configs()
    built = [build_run(c) for c in configs]
    built[1][0].recon = NaNAt(7)
    dirs = [tmp_path / f"run{i}" for i in range(3)]
    results = train_packed(configs, dirs, progress=False, built=built)
    assert [(r["status"], r["step"]) for r in results] == [("done", STEPS), ("nonfinite", 6), ("done", STEPS)]
    kept = read_checkpoint(dirs[1] / "checkpoint.pt")
    assert kept["step"] == 6
    assert all(torch.equal(kept["model"][k], v) for k, v in built[1][0].state_dict().items())   # frozen at step 6
    alone = train(configs[0], tmp_path / "alone", progress=False)                # the others: as they train alone
    assert _log(dirs[0]) == _log(tmp_path / "alone") and alone["logs"] == results[0]["logs"]
    assert json.loads((dirs[1] / "result.json").read_text())["status"] == "nonfinite"
    assert "the checkpoint of the last good state is kept" in results[1]["message"]
    assert _log(dirs[1])[-1]["status"] == "nonfinite" and _log(dirs[1])[-1]["step"] == 7


def _small(seed, **kw):
    return get_framework("betavae", obs_shape=(64, 64, 1), latents=3, model="fc", width=32, seed=seed, **kw)


@pytest.mark.parametrize("setting", [dict(precision="bf16"), dict(resident=True)])
def test_bf16_and_data_on_the_device_pack_as_fit_trains_them(setting):
    "bf16 autocast around the batched networks, and batches drawn on the device: the loop engine is fit bit for bit."
    data = XYObject()
    configs = [RunConfig(steps=3, batch_size=8, seed=s, **setting) for s in (1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                          # bf16 emulated on this CPU: SlowPrecisionWarning
        alone = [fit(_small(s, beta=b), data, c, progress=False) for s, b, c in zip((1, 2), (1e-3, 1.0), configs)]
        looped = fit_packed([_small(s, beta=b) for s, b in ((1, 1e-3), (2, 1.0))], data, configs, progress=False,
                            engine="loop")
        vmapped = fit_packed([_small(s, beta=b) for s, b in ((1, 1e-3), (2, 1.0))], data, configs, progress=False,
                             engine="vmap")
    for a, lo, v in zip(alone, looped, vmapped):
        assert lo["history"] == a["history"] and lo["precision"] == a["precision"]
        for ha, hv in zip(a["history"], v["history"]):
            assert hv["loss"] == pytest.approx(ha["loss"], rel=1e-2 if setting.get("precision") else 1e-5)


def test_table_a3_networks_pack_within_the_spread_of_two_single_runs():
    """Grouped convolutions (vmap over EncoderConv64 / DecoderConv64): losses to float rounding, weights within the
    spread of the same run alone nudged by one float32 step (measured here: about 2.6 x lr after 3 steps)."""
    data = XYObject()
    make = lambda seed: get_framework("betavae", obs_shape=data.obs_shape, latents=4, seed=seed)
    configs = [RunConfig(steps=3, batch_size=4, seed=s) for s in (1, 2)]
    alone = [make(s) for s in (1, 2)]
    r_alone = [fit(f, data, c, progress=False) for f, c in zip(alone, configs)]
    nudged = make(1)
    with torch.no_grad():
        for p in nudged.parameters(): p.copy_(torch.nextafter(p, torch.full_like(p, float("inf"))))
    fit(nudged, data, configs[0], progress=False)
    distance = lambda a, b: max((p - q).abs().max().item() for p, q in zip(a.state_dict().values(),
                                                                          b.state_dict().values()))
    spread = distance(alone[0], nudged)
    packed = [make(s) for s in (1, 2)]
    r_packed = fit_packed(packed, data, configs, progress=False, engine="vmap")
    for a, p, fa, fp in zip(r_alone, r_packed, alone, packed):
        for ha, hp in zip(a["history"], p["history"]):
            assert hp["loss"] == pytest.approx(ha["loss"], rel=1e-5)
        assert distance(fa, fp) <= spread, (distance(fa, fp), spread)
