"""Metrics as a user gets them: the installed module, scores that survive a process boundary and JSON."""
import json
import subprocess
import sys

import numpy as np
import pytest

from disentlit.core import DisentlitError
from disentlit.bench_metrics import REFERENCE_MODES, bench_metrics
from disentlit.metrics import METRICS, dci, mig, sap
from disentlit.evaluation import IndexData, as_encode, evaluate, factor_encoder, metric_defaults

SMALL = dict(mig=dict(num_train=600), dci=dict(num_train=600, num_test=300), sap=dict(num_train=600, num_test=300),
             beta_vae=dict(num_train=200, num_eval=100), factor_vae=dict(num_train=200, num_eval=100, num_variance_estimate=600))

SCRIPT = """
import json, numpy as np
from disentlit.evaluation import IndexData, factor_encoder, evaluate
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


# ---- the newer metrics: modularity and explicitness, IRS, DCI-ES, InfoMEC, UDR ----

from disentlit.metrics import METRIC_NAMES, NEW_METRICS
from disentlit.newer_metrics import dci_es, infomec, irs, loss_capacity, modularity_explicitness
from disentlit.evaluation import metric_plan, udr


def _grid(*sizes):
    return np.array(np.meshgrid(*[np.arange(s) for s in sizes], indexing="ij")).reshape(len(sizes), -1).T


def _known(seed=7):
    "Four factors on a balanced grid, and four representations of them with known answers."
    rng = np.random.default_rng(seed)
    y = np.repeat(_grid(3, 4, 5, 2), 6, axis=0)[rng.permutation(720)]
    unit = (y - y.mean(0)) / y.std(0)
    q = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    return y, dict(identity=unit, permuted=-unit[:, [3, 1, 0, 2]], rotated=unit @ q.T, noise=rng.normal(size=(720, 4)))


def test_new_metrics_agree_with_straightforward_implementations_of_their_definitions():
    "bench's loops over latents, factors and values, and scikit-learn's estimators called once per pair, agree."
    from disentlit.bench_metrics import (naive_infomec_nmi, naive_irs, naive_loss_capacity,
                                         naive_modularity_explicitness, naive_udr_spearman)
    rng = np.random.default_rng(11)
    y = rng.integers(0, [3, 7, 4], (1200, 3))
    z = np.c_[y @ rng.normal(size=(3, 3)) + 0.4 * rng.normal(size=(1200, 3)), rng.normal(size=1200)]
    tr, te = (z[:800], y[:800]), (z[800:], y[800:])
    fast, slow = modularity_explicitness(*tr, *te), naive_modularity_explicitness(*tr, *te)
    assert all(fast[k] == pytest.approx(v, abs=1e-9) for k, v in slow.items())
    assert irs(*tr)["irs"] == pytest.approx(naive_irs(*tr), abs=1e-12)
    assert irs(*tr, diff_quantile=1.0)["irs"] == pytest.approx(naive_irs(*tr, diff_quantile=1.0), abs=1e-12)
    # DCI-ES's probes: truncations of one greedy tree are the trees grown to each depth until two splits tie exactly,
    # which happens in the small nodes of deep trees (two latents parting the same few samples): then only the
    # tie-breaking differs (see 06a_newer_metrics)
    fast_lc, slow_lc = loss_capacity(*tr, *te)[0], naive_loss_capacity(*tr, *te)
    np.testing.assert_allclose(fast_lc[:, :2], slow_lc[:, :2], atol=1e-9)           # depths 1 and 2
    np.testing.assert_allclose(fast_lc, slow_lc, atol=0.05)
    np.testing.assert_allclose(infomec(*tr)["nmi"], naive_infomec_nmi(*tr), atol=1e-6)
    reps = [z, z[:, [2, 0, 3, 1]] * [1, -1, 2, 1], z + rng.normal(size=z.shape)]
    np.testing.assert_allclose(udr(reps, correlation="spearman")["model_scores"], naive_udr_spearman(reps), atol=1e-9)


def test_perfect_and_permuted_codes_score_the_maximum_and_rotations_less():
    y, reps = _known()
    for name in ("identity", "permuted"):
        assert modularity_explicitness(reps[name], y)["modularity"] > 0.999
        assert irs(reps[name], y)["irs"] == pytest.approx(1, abs=1e-12)
    assert modularity_explicitness(reps["rotated"], y)["modularity"] < 0.9
    assert irs(reps["rotated"], y)["irs"] < 0.85
    es = {k: dci_es(v, y, mode="fast")["explicitness"] for k, v in reps.items()}
    assert es["identity"] == pytest.approx(es["permuted"], abs=1e-12) and es["rotated"] < es["identity"]
    # every DCI-ES probe reads a perfect code without error; noise is no more informative than the mean
    r = dci_es(reps["identity"], y, mode="fast")
    assert np.allclose(r["lowest_loss"], 0, atol=1e-12) and r["size"] == 1
    assert dci_es(reps["noise"], y, mode="fast")["informativeness_es"] < 0.1


def test_infomec_on_many_valued_factors():
    "Factors of 20 values, so that one rotated latent cannot single out every grid point."
    rng = np.random.default_rng(5)
    y = rng.integers(0, 20, (2000, 3))
    unit = (y - y.mean(0)) / y.std(0)
    q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    ident, rot, noise = infomec(unit, y), infomec(unit @ q.T, y), infomec(rng.normal(size=(2000, 3)), y)
    assert min(ident["infom"], ident["infoc"], ident["infoe"]) > 0.95
    assert np.allclose(np.diag(ident["nmi"]), 1, atol=0.03) and (ident["nmi"] - np.diag(np.diag(ident["nmi"]))).max() < 0.03
    assert rot["infoe"] > 0.95 and rot["infom"] < 0.8 and rot["infoc"] < 0.8
    assert noise["nmi"].max() < 0.03 and noise["infoe"] < 0.05


def test_udr_lasso_shrinks_a_copy_by_alpha():
    "The same continuous representation twice: each Lasso weight of a standardised copy is exactly 1 - alpha."
    z = np.random.default_rng(2).normal(size=(3000, 4))
    for alpha in (0.1, 0.3):
        assert udr([z, z[:, ::-1]], alpha=alpha)["model_scores"] == pytest.approx([1 - alpha] * 2, abs=1e-9)


def test_every_metric_name_is_accepted_and_udr_is_refused_by_evaluate():
    assert METRIC_NAMES == METRICS + NEW_METRICS and set(NEW_METRICS) == {"modularity", "irs", "dci_es", "infomec"}
    assert set(metric_plan(",".join(METRIC_NAMES))) == set(METRIC_NAMES)
    assert metric_plan("dci_es", fast=False)["dci_es"]["mode"] == "exact"
    with pytest.raises(DisentlitError, match="accepted: mig, dci, sap, beta_vae, factor_vae, modularity, irs, dci_es, infomec"):
        metric_plan("irs,udr")
    space = IndexData(["a", "b", "c"], [4, 5, 6])
    r = evaluate(factor_encoder(space), space, NEW_METRICS, params=dict(
        modularity=dict(num_train=600, num_test=300), irs=dict(num_train=600), dci_es=dict(num_train=600, num_test=300),
        infomec=dict(num_train=600)))
    assert r["irs"]["irs"] == pytest.approx(1) and r["dci_es"]["size"] == 1 and r["modularity"]["modularity"] > 0.99
    json.dumps(r, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))


def test_defaults_of_the_newer_metrics():
    "disentanglement_lib's configurations (modularity_explicitness.gin, the sample irs.gin); InfoMEC's code's k."
    assert metric_defaults("modularity") == dict(num_train=10_000, num_test=5_000, bins=20)
    assert metric_defaults("irs") == dict(num_train=10_000, bins=20, diff_quantile=0.99)
    assert metric_defaults("infomec") == dict(num_train=10_000, n_neighbors=10)
    assert metric_defaults("dci_es")["num_train"] == 10_000


@pytest.mark.parametrize("call, message", [
    (lambda: irs(np.ones((4, 2)), [[0], [1], [0], [1]], diff_quantile=1.5), "diff_quantile must be a number in"),
    (lambda: modularity_explicitness(np.ones((9, 2)), np.arange(9)), "at least 2 factors"),
    (lambda: infomec(np.ones((9, 2)), np.c_[np.arange(9), np.arange(9)], n_neighbors=0), "n_neighbors must be"),
    (lambda: dci_es(np.ones((9, 2)), np.c_[np.arange(9)], depths=(1,)), "at least 2 increasing"),
    (lambda: udr([np.ones((5, 2))]), "at least 2 models"),
    (lambda: udr([np.ones((5, 2)), np.ones((6, 2))]), "same observations"),
    (lambda: udr([np.ones((5, 2))] * 2, correlation="kendall"), "accepted: lasso, spearman"),
])
def test_bad_input_to_the_newer_metrics(call, message):
    with pytest.raises(DisentlitError, match=message):
        call()
