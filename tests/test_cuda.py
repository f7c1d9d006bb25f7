"""What only a GPU can show: the training path on CUDA. Marked `cuda`; tools/gpu_check.sh runs them with
DISENTLIT_REQUIRE_CUDA=1, which turns a missing GPU into a failure instead of a skip."""
import dataclasses
import os

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.cuda

if not torch.cuda.is_available():
    if os.environ.get("DISENTLIT_REQUIRE_CUDA") == "1":
        raise RuntimeError("DISENTLIT_REQUIRE_CUDA=1 but torch sees no CUDA GPU: "
                           f"torch {torch.__version__}, CUDA build {torch.version.cuda}")
    pytest.skip("no CUDA GPU here (tools/gpu_check.sh runs these on one)", allow_module_level=True)

from disentlit.bench import SyncCounter, host_syncs_per_step
from disentlit.data import XYObject
from disentlit.catalog import get_dataset
from disentlit.evaluation import as_encode
from disentlit.family import get_framework
from disentlit.runs import build_run, train
from disentlit.training import RunConfig, fit


def small(data, name="betavae", **kw):
    return get_framework(name, obs_shape=data.obs_shape, latents=3, model="fc", width=32, seed=1, **kw)


def test_no_host_sync_between_log_points_on_cuda():
    assert host_syncs_per_step(get_dataset("xysquares"), device="cuda") == 0


def test_a_nonfinite_step_is_no_update_on_cuda():
    data = XYObject()
    fw = small(data)
    r = fit(fw, data, RunConfig(steps=6, batch_size=8, resident=True), device="cuda", progress=False)
    before = [p.detach().clone() for p in fw.parameters()]
    opts = fw.configure_optimisers(1e-3)
    batch = data.batch(np.arange(8), device="cuda") * float("nan")
    logs = fw.training_step(batch, opts, torch.Generator("cuda").manual_seed(0))
    assert r["status"] == "done" and bool(logs["nonfinite"])
    assert all(torch.equal(a, b) for a, b in zip(before, fw.parameters()))


def test_resident_training_resumes_bit_for_bit_on_cuda(tmp_path):
    config = RunConfig(dataset="xyobject", latents=3, model="fc", width=32, init_seed=1, steps=12, batch_size=16, seed=5,
                       checkpoint_every=4, resident=True)
    run = lambda config, out: (train(config, out, device="cuda", progress=False, built=(b := build_run(config))), b[0])
    ra, a = run(config, tmp_path / "a")
    run(dataclasses.replace(config, steps=6), tmp_path / "b")
    rb, b = run(config, tmp_path / "b")
    assert ra["logs"] == rb["logs"]
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


def test_as_encode_autocasts_on_the_gpu():
    data = XYObject()
    fw = small(data).cuda()
    x = data.batch(np.arange(4), device="cuda")
    with SyncCounter():
        z16 = as_encode(fw, precision="bf16")(x)
    z32 = as_encode(fw)(x)
    assert z16.dtype == torch.float32 and z16.device.type == "cuda"
    assert not torch.equal(z16, z32)          # bf16 autocast took effect on the GPU (CPU autocast would not)


def test_auto_precision_is_fp32_on_the_gpu():
    "On CUDA `auto` resolves to float32 (bf16 measured slower there: results/gpu/bench_train.json, printed in 10a)."
    data = XYObject()
    r = fit(small(data), data, RunConfig(steps=2, batch_size=8, precision="auto", resident=True), device="cuda",
            progress=False)
    assert (r["status"], r["precision"]) == ("done", "fp32")


def test_a_compiled_run_on_cuda_records_every_step():
    """`--compile` on CUDA (CUDA graphs) trains as the eager run does and records each step's own logs: its first try
    on an H100 stopped with "accessing tensor output of CUDAGraphs that has been overwritten" (results/gpu/README.md)."""
    data = XYObject()
    run = lambda **kw: fit(small(data), data, RunConfig(steps=8, batch_size=16, resident=True, log_every=8, **kw),
                           device="cuda", progress=False)
    eager, compiled = run(), run(compile=True)
    assert compiled["status"] == "done" and len(compiled["history"]) == 8
    losses = [h["loss"] for h in eager["history"]]
    assert len(set(losses)) == 8
    np.testing.assert_allclose([h["loss"] for h in compiled["history"]], losses, rtol=1e-3)


@pytest.mark.parametrize("precision, on", [("fp32", False), ("tf32", True), ("bf16", False)])
def test_the_precision_says_whether_tf32_runs(precision, on):
    """Inside the loop, TF32 (matrix products and cuDNN convolutions) is on for 'tf32' only, 'fp32' included (PyTorch's
    default runs cuDNN convolutions in TF32), alone and packed; the program's own switches come back after."""
    from disentlit.packed import fit_packed
    flags = lambda: (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    before, seen = flags(), []
    def evaluator(framework, data):
        seen.append(flags())
        return {"seen": 1.0}
    data = XYObject()
    config = RunConfig(steps=4, batch_size=8, precision=precision, eval_every=2, resident=True)
    r = fit(small(data), data, config, device="cuda", progress=False, evaluator=evaluator)
    packed = fit_packed([small(data), small(data)], data, [config, config], device="cuda", progress=False,
                        evaluators=[evaluator, evaluator])
    assert (r["status"], r["precision"]) == ("done", precision)
    assert [p["status"] for p in packed] == ["done", "done"]
    assert len(seen) >= 3 and set(seen) == {(on, on)}
    assert flags() == before
