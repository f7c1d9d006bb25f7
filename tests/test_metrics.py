"""Metrics as a user gets them: the installed module, scores that survive a process boundary and JSON."""
import json
import subprocess
import sys

import numpy as np
import pytest

from disentlit.data import DisentlitError
from disentlit.bench import REFERENCE_MODES, bench_metrics
from disentlit.metrics import (METRICS, IndexData, as_encode, dci, evaluate, factor_encoder,
                               metric_defaults, mig, sap)

SMALL = dict(mig=dict(num_train=600), dci=dict(num_train=600, num_test=300), sap=dict(num_train=600, num_test=300),
             beta_vae=dict(num_train=200, num_eval=100), factor_vae=dict(num_train=200, num_eval=100, num_variance_estimate=600))

SCRIPT = """
import json, numpy as np
from disentlit.metrics import IndexData, factor_encoder, evaluate
space = IndexData(["a", "b", "c"], [6, 7, 8])
noise = np.random.default_rng(1).normal(size=(len(space), 3)) * 0.3
enc = factor_encoder(space, lambda pos: pos + noise[space.pos_to_idx(pos)])
r = evaluate(enc, space, seed=5, params=json.loads('%s'))
print(json.dumps({m: {k: v for k, v in r[m].items() if isinstance(v, float)} for m in r if m != "info"}))
"""


def _scores_in_fresh_process():
    p = subprocess.run([sys.executable, "-c", SCRIPT % json.dumps(SMALL)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_same_seed_same_scores_across_processes():
    "Determinism under a seed does not depend on process state (hash seeds, thread pools, import order)."
    a, b = _scores_in_fresh_process(), _scores_in_fresh_process()
    assert a == b
    assert set(a) == set(METRICS)


def test_evaluate_result_is_json_serialisable():
    space = IndexData(["a", "b"], [5, 6])
    r = evaluate(factor_encoder(space), space, params=SMALL)
    text = json.dumps(r, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    back = json.loads(text)
    assert back["mig"]["mig"] == pytest.approx(r["mig"]["mig"])
    assert back["info"]["encoded"] <= len(space)


def test_reference_defaults():
    "The defaults of disentanglement_lib's unsupervised_study_v1 metric configs."
    assert metric_defaults("mig") == dict(num_train=10_000, bins=20)
    assert metric_defaults("dci")["num_train"] == 10_000 and metric_defaults("dci")["num_test"] == 5_000
    assert metric_defaults("sap") == dict(num_train=10_000, num_test=5_000, continuous=False)
    bv = metric_defaults("beta_vae")
    assert (bv["batch_size"], bv["num_train"], bv["num_eval"]) == (64, 10_000, 5_000)
    fv = metric_defaults("factor_vae")
    assert (fv["batch_size"], fv["num_train"], fv["num_eval"], fv["num_variance_estimate"], fv["prune_threshold"]) == \
        (64, 10_000, 5_000, 10_000, 0.05)


@pytest.mark.parametrize("call, message", [
    (lambda z, y: mig(z, y[:-1]), "same number of rows"),
    (lambda z, y: dci(np.where(z > 1.5, np.nan, z), y, mode="fast"), "finite"),
    (lambda z, y: sap(z[:1], y[:1]), "at least 2 samples"),
    (lambda z, y: evaluate(lambda x: x, IndexData(["a"], [3]), ("mig", "nope")), "accepted: mig, dci, sap, beta_vae, factor_vae"),
    (lambda z, y: bench_metrics(reference="approx"), "accepted: scaled, full, none"),
])
def test_bad_input_is_a_disentlit_error(call, message):
    rng = np.random.default_rng(0)
    z, y = rng.normal(size=(50, 3)), rng.integers(0, 4, (50, 2))
    with pytest.raises(DisentlitError, match=message.replace("(", r"\(")):
        call(z, y)


def test_dedup_false_encodes_every_draw_with_the_same_scores():
    "A real network on XYSquares: encoding every draw in draw order (the reference's way) gives the suite's scores."
    import torch
    from disentlit.data import XYSquares
    from disentlit.models import EncoderConv64
    assert REFERENCE_MODES == ("scaled", "full", "none")
    data = XYSquares()
    torch.manual_seed(0)
    encode = as_encode(EncoderConv64(3, 6))
    params = dict(mig=dict(num_train=600), dci=dict(num_train=400, num_test=200), sap=dict(num_train=400, num_test=200),
                  beta_vae=dict(batch_size=8, num_train=100, num_eval=50),
                  factor_vae=dict(batch_size=8, num_train=100, num_eval=50, num_variance_estimate=600))
    once = evaluate(encode, data, params=params, batch_size=256)
    every = evaluate(encode, data, params=params, batch_size=256, dedup=False)
    assert every["info"]["encoded"] == every["info"]["draws"] == once["info"]["draws"]
    assert once["info"]["encoded"] < once["info"]["draws"]
    for m in METRICS:
        for key, v in once[m].items():
            if isinstance(v, float): assert every[m][key] == pytest.approx(v, abs=1e-6), (m, key)
