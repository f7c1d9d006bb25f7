"""Every figure the package draws is readable a page wide: each public `plot_*` function is drawn on small inputs and
`small_text` (01a) must find no text under `MIN_FONT_PT` once the figure is shown `PAGE_WIDTH_IN` inches wide. A new
`plot_*` function without a case here fails `test_every_plot_function_is_drawn`."""
import inspect
import json

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import disentlit  # noqa: E402
from disentlit.data import Sprites, XYSquares  # noqa: E402
from disentlit.core import small_text


def _row(loss: str, seed: int, dci: float, **more) -> dict:
    "A `results_frame` row with what the plotting functions read."
    return dict(id=f"{loss}{seed}", loss=loss, seed=seed, beta=0.0001, settings=["loss", "seed", "beta"], mig=dci / 5,
                **{"dci.disentanglement": dci}, collapsed=False, channels=3, channels_drawn=3, partial=False,
                **more)


def _rows() -> list[dict]:
    curve = lambda d: [dict(step=s, metrics={"mig": d * s / 400, "dci.disentanglement": d * s / 100},
                            channels_drawn=min(3, s // 10)) for s in (10, 20, 40)]
    return [_row(loss, s, (0.04 if loss == "mse" else 0.18) + 0.01 * s, curve=curve(0.1 + 0.01 * s))
            for loss in ("mse", "box_blur") for s in range(3)]


def _log(path, n: int = 6):
    path.write_text("".join(json.dumps(dict(step=k, loss=1 / (k + 1), recon=1 / (k + 2), kl=0.1)) + "\n"
                            for k in range(1, n)))
    return path


CASES = {
    "plot_traversals": lambda tmp: __import__("disentlit.data", fromlist=["x"]).plot_traversals(XYSquares(), pos=[0] * 6),
    "plot_distance_matrices": lambda tmp: __import__("disentlit.distances", fromlist=["x"]).plot_distance_matrices(
        __import__("disentlit.distances", fromlist=["x"]).traversal_distance_matrices(XYSquares(), n=2)),   # 6 factors
    "plot_importance_cdf": lambda tmp: __import__("disentlit.distances", fromlist=["x"]).plot_importance_cdf(
        __import__("disentlit.distances", fromlist=["x"]).factor_importance(XYSquares(), pairs=50,
                                                                            keep_samples=True)).figure,
    "plot_overlap_study": lambda tmp: __import__("disentlit.distances", fromlist=["x"]).plot_overlap_study(
        __import__("disentlit.distances", fromlist=["x"]).overlap_study(n=2)),
    "plot_headline": lambda tmp: __import__("disentlit.demo", fromlist=["x"]).plot_headline(
        {"MSE": np.eye(8), "box blur": np.eye(8)}, {"MSE": [0.04, 0.05], "box\nblur": [0.2, 0.18]}),
    "plot_tiles": lambda tmp: __import__("disentlit.traversals", fromlist=["x"]).plot_tiles(
        np.zeros((3, 9, 64, 64, 1)), ["z0", "z1", "z2"], [f"{v:+.1f}" for v in np.linspace(-2, 2, 9)])[0],
    "plot_loss_curve": lambda tmp: __import__("disentlit.runs", fromlist=["x"]).plot_loss_curve(
        _log(tmp / "log.jsonl"), "a run"),
    "plot_arms": lambda tmp: __import__("disentlit.analysis", fromlist=["x"]).plot_arms(
        _rows(), "dci.disentanglement", {"MSE": dict(loss="mse"), "box blur": dict(loss="box_blur")}).figure,
    "plot_comparison": lambda tmp: __import__("disentlit.analysis", fromlist=["x"]).plot_comparison(
        _rows(), "loss", "dci.disentanglement", reference="mse").figure,
    "plot_learning_curves": lambda tmp: __import__("disentlit.analysis", fromlist=["x"]).plot_learning_curves(
        _rows()),
    "plot_training_losses": lambda tmp: __import__("disentlit.analysis", fromlist=["x"]).plot_training_losses(
        [(r, _log(tmp / f"{r['id']}.jsonl")) for r in _rows()]),
    "plot_traversal_grid": lambda tmp: __import__("disentlit.traversals", fromlist=["x"]).plot_traversal_grid(
        dict(images=np.zeros((25, 9, 64, 64, 3)), latents=np.arange(25), kl=np.linspace(3, 0, 25),
             values=np.linspace(-2.5, 2.5, 9))),
    "plot_reconstructions": lambda tmp: __import__("disentlit.traversals", fromlist=["x"]).plot_reconstructions(
        {"MSE": _model(), "box blur": _model()}, XYSquares(), n=6),
}


def _model():
    from disentlit.family import get_framework
    return get_framework("betavae", obs_shape=XYSquares().obs_shape, latents=4, seed=0).eval()


def test_every_plot_function_is_drawn():
    import pkgutil, importlib
    names = {n for m in pkgutil.iter_modules(disentlit.__path__) if not m.name.startswith("_")
             for n, f in vars(importlib.import_module(f"disentlit.{m.name}")).items()
             if n.startswith("plot_") and inspect.isfunction(f) and f.__module__ == f"disentlit.{m.name}"}
    assert names == set(CASES), f"plot functions without a case here: {sorted(names - set(CASES))}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_figure_text_is_readable_a_page_wide(name, tmp_path):
    fig = CASES[name](tmp_path)
    try: assert small_text(fig) == [], f"{name}: text under the minimum at the page's width: {small_text(fig)[:6]}"
    finally: plt.close(fig)
