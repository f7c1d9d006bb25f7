"""The landing page's headline figure and table, and its two traversal grids, drawn by the library from the committed
databases.

    python tools/headline.py            # writes nbs/images/headline.png and prints the table for nbs/index.ipynb
    python tools/headline.py --pair     # writes the traversals of Sprites' and XYSquares' typical runs (below)

The figure: what each loss perceives along one XYSquares factor (the MSE: every step equally far; the box blur:
nearer positions look nearer), and what a beta-VAE learns with each (DCI disentanglement of every run of the
reproduction's 2x2 control, results/mechanism_2x2_cpu.sqlite). The table: the same runs' medians, ranges and the
planned comparisons. tests/test_tools.py checks that the index shows exactly the table this prints, so the landing
page cannot drift from the databases.

The pair: the positive control's typical run on Sprites beside the matched sweep's typical box-blur run on XYSquares
(`disentlit.analysis.typical_run`, the rule 09b fixed before the control's verdict), each run's own traversal grid
(committed as results/pictured/SWEEP_ID.png, copied from the pinned clone's run folder), titled with its scores. It
goes to the landing page (nbs/images/) and, as package data, to the demo's report (disentlit/assets/).
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DB = ROOT / "results" / "mechanism_2x2_cpu.sqlite"
from disentlit.demo import PAIR  # noqa: E402  the pair's file name, in nbs/images/ and disentlit/assets/
FIGURE = ROOT / "nbs" / "images" / "headline.png"
PAIR_KEY = "disentlit:runs"                               # the PNG chunk naming the pictured runs
PICTURED = {   # what the pair shows: the typical run of which runs, with which title
    "sprites": dict(sweep="positive_control_v2_cpu", only={},
                    title="Sprites (the procedural dSprites), beta-VAE, BCE,\n"
                          "beta_lit {beta_lit:.0f}, seed {seed}: MIG {mig:.3f}, DCI {dci:.3f}"),
    "xysquares": dict(sweep="matched_cpu", only={"loss": "box_blur"},
                      title="XYSquares (spacing 8), beta-VAE, box blur,\n"
                            "beta {beta:g}, seed {seed}: MIG {mig:.3f}, DCI {dci:.3f}"),
}
METRICS = {"dci.disentanglement": "DCI disentanglement", "mig": "MIG"}
ARMS = {"MSE": dict(loss="mse", beta=0.0001, scale=None),
        "MSE x 3969 (the box blur's weight)": dict(loss="mse", beta=0.0001, scale=3969),
        "box blur": dict(loss="box_blur", beta=0.0001)}


def arm_rows(db: Path = DB) -> dict[str, list[dict]]:
    "The runs of each arm of the headline (beta-VAE, 25 latents, beta 1e-4, 2,000 steps of 128)."
    from disentlit.statistics import matching
    from disentlit.analysis import results_frame
    rows = results_frame(db)
    return {name: matching(rows, settings) for name, settings in ARMS.items()}


def table(db: Path = DB) -> str:
    "The headline table as Markdown: per arm the median and range of each metric, then the box blur against each."
    import numpy as np
    from disentlit.statistics import contrast
    from disentlit.analysis import results_frame
    arms, rows = arm_rows(db), results_frame(db)
    n = {len(v) for v in arms.values()}
    head = f"| $\\beta$-VAE on XYSquares, 2,000 steps of 128 ({'/'.join(map(str, sorted(n)))} seeds) | " + \
        " | ".join(arms) + " |"
    lines = [head, "|---" * (len(arms) + 1) + "|"]
    for key, label in METRICS.items():
        cells = []
        for runs in arms.values():
            v = [r[key] for r in runs]
            cells.append(f"{np.median(v):.3f} ({min(v):.3f}-{max(v):.3f})")
        lines.append(f"| {label}: median (range) | " + " | ".join(cells) + " |")
    lines += ["", "| the box blur against | " + " | ".join(METRICS.values()) + " |", "|---" * (len(METRICS) + 1) + "|"]
    for ref in ("MSE", "MSE x 3969 (the box blur's weight)"):
        cells = []
        for key in METRICS:
            e = contrast(rows, key, ARMS[ref], ARMS["box blur"])
            cells.append(f"{e['difference']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}], exact p {e['p']:.3f}")
        lines.append(f"| {ref} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def medians(db: Path = DB) -> dict:
    "Metric -> arm -> the median of its runs, rounded as `disentlit.demo.REPRODUCTION` quotes them."
    import numpy as np
    keys = {"MSE": "mse", "MSE x 3969 (the box blur's weight)": "mse x 3969", "box blur": "box_blur"}
    arms = arm_rows(db)
    return {m: {keys[a]: round(float(np.median([r[m] for r in runs])), 3) for a, runs in arms.items()} for m in METRICS}


def figure(path: Path = FIGURE, db: Path = DB):
    "Draw the headline figure (6.4 inches wide, the demo's `plot_headline`) to `path`."
    import matplotlib
    matplotlib.use("Agg")
    from disentlit.catalog import get_dataset
    from disentlit.core import save_figure
    from disentlit.demo import plot_headline
    from disentlit.distances import traversal_distance_matrices
    from disentlit.losses import get_loss
    data = get_dataset("xysquares")
    perceived = {loss: traversal_distance_matrices(data, n=64, distance=get_loss(loss).distance,
                                                   factors=["x_R"])["x_R"]["pcv"] for loss in ("mse", "box_blur")}
    labels = {"MSE": "MSE", "MSE x 3969 (the box blur's weight)": "MSE\nx 3969", "box blur": "box\nblur"}
    fig = plot_headline({"MSE: every step\nlooks equally far": perceived["mse"],
                         "box blur: nearer positions\nlook nearer": perceived["box_blur"]},
                        {labels[a]: [r["dci.disentanglement"] for r in runs] for a, runs in arm_rows(db).items()},
                        title="what a beta-VAE learns\n(5 seeds each)")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=110)                       # its text measured, as the site's check wants
    return path


def grid(name: str, run: str) -> Path:
    "The committed traversal grid of run `run` of the pair's `name` (a key of `PICTURED`)."
    return ROOT / "results" / "pictured" / f"{PICTURED[name]['sweep']}_{run}.png"


def pictured() -> dict[str, dict]:
    "Dataset -> the `results_frame` row of its typical run (`typical_run`), as the pair pictures it."
    from disentlit.analysis import results_frame, typical_run
    out = {}
    for name, p in PICTURED.items():
        rows = results_frame(ROOT / "results" / f"{p['sweep']}.sqlite")
        out[name] = typical_run([r for r in rows if all(r[k] == v for k, v in p["only"].items())])
    return out


def pair(path: Path = ROOT / "nbs" / "images" / PAIR):
    "Draw the pair of traversal grids to `path` (6.4 inches wide); the PNG names its runs (`PAIR_KEY`)."
    import json
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from disentlit.core import save_figure
    runs = pictured()
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.8))
    for ax, (name, r) in zip(axes, runs.items()):
        ax.imshow(plt.imread(grid(name, r["id"]))); ax.axis("off")
        ax.set_title(PICTURED[name]["title"].format(beta_lit=r["beta"] * 64 * 64 / r["latents"], beta=r["beta"],
                                                    seed=r["seed"], mig=r["mig"], dci=r["dci.disentanglement"]),
                     fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=150, metadata={PAIR_KEY: json.dumps({k: r["id"] for k, r in runs.items()})})
    return path


if __name__ == "__main__":
    if "--pair" in sys.argv:
        import shutil
        shutil.copyfile(pair(), ROOT / "disentlit" / "assets" / PAIR)
        print(f"wrote nbs/images/{PAIR} and disentlit/assets/{PAIR}", file=sys.stderr)
        sys.exit()
    if "--table" not in sys.argv: print(f"wrote {figure()}", file=sys.stderr)
    print(table())
