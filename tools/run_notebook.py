"""Execute a notebook in its own folder and save it with its outputs, so that the site shows what it printed and drew.

    python tools/run_notebook.py nbs/09_reproduction.ipynb            # every cell keeps its output
    python tools/run_notebook.py --shown nbs/02_distances.ipynb       # only the cells that showed an output before
    python tools/run_notebook.py --shown --no-slow nbs/08e_demo.ipynb  # `#| slow` cells left as they are, not run
    python tools/run_notebook.py nbs/12_predict.ipynb --figures results/predict_cpu   # and save its named figures

nbdev_test executes every notebook but keeps nothing; the reproduction's readings refer to tables and figures that
its cells print from the committed databases, so after the databases change it is executed again and saved (then
`nbdev_clean`, which keeps outputs). The other notebooks keep the outputs of chosen cells only (their figures and key
tables); `--shown` refreshes those, and
the cells that print, display or draw (tools/common.py's `shows`, which the docs check uses), and leaves every other cell without output. Stops at the first cell that raises,
writing nothing. `--figures DIR` also writes the figure of each cell named with Quarto's `#| label: fig-NAME` to
DIR/NAME.png (the PNG the notebook now shows, byte for byte), so that results/ holds the figures a reading refers to.

Every figure a cell draws is measured as it becomes a PNG: the picture keeps what `disentlit.core.small_text` found
in it, in the text chunk `save_figure` writes (`FIGURE_TEXT_KEY`), and the site's check reads that verdict.
"""
import base64
import json
import os
import sys
from pathlib import Path

from execnb.nbio import read_nb, write_nb
from execnb.shell import CaptureShell

from common import cell_options, shows   # tools/common.py: a cell's options, and whether it shows anything
from disentlit.core import FIGURE_TEXT_KEY, small_text


def measuring(shell: CaptureShell) -> CaptureShell:
    "`shell`, its figures' PNGs keeping what `small_text` finds in each (as a PNG `save_figure` writes does)."
    from matplotlib.figure import Figure
    png = shell.display_formatter.formatters["image/png"]
    draw = png.lookup_by_type(Figure)                 # IPython's (retina) PNG of a figure; it passes metadata on
    png.for_type(Figure, lambda fig: draw(fig, metadata={FIGURE_TEXT_KEY: json.dumps(small_text(fig))}))
    return shell


def named_figures(nb) -> dict:
    "The PNG each cell labelled `#| label: fig-NAME` shows, by NAME (its last, if it shows several)."
    out = {}
    for cell in nb.cells:
        label = str(cell_options("".join(cell.source)).get("label", ""))
        pngs = [o["data"]["image/png"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if label.startswith("fig-") and cell.cell_type == "code" and pngs:
            out[label[4:]] = base64.b64decode("".join(pngs[-1]))
    return out


args = sys.argv[1:]
shown_only, no_slow = "--shown" in args, "--no-slow" in args
figures = None
if "--figures" in args:
    i = args.index("--figures")
    if i + 1 >= len(args): sys.exit("--figures needs a folder\n" + __doc__)
    figures = Path(args.pop(i + 1)).resolve(); args.pop(i)
paths = [a for a in args if a not in ("--shown", "--no-slow")]
if len(paths) != 1: sys.exit(__doc__)
path = Path(paths[0]).resolve()
os.chdir(path.parent)
nb = read_nb(path)
had = [bool(c.get("outputs")) or (c.cell_type == "code" and shows("".join(c.source)) is not None) for c in nb.cells]
cells = nb.cells                                  # the slow cells keep what they had: they are not run
nb.cells = [c for c in cells if not (no_slow and c.cell_type == "code" and c.source.lstrip().startswith("#| slow"))]
for cell in nb.cells:                             # a cell that now shows nothing keeps nothing (execnb leaves the
    if cell.cell_type == "code": cell["outputs"] = []  # old outputs of a cell with none; a moved cell's would stay)
measuring(CaptureShell()).run_all(nb, exc_stop=True)  # outputs land on the cell objects themselves
nb.cells = cells
if shown_only:
    for cell, keep in zip(nb.cells, had):
        if cell.cell_type == "code" and not keep: cell["outputs"] = []
write_nb(nb, path)
print(f"executed and saved {path}" + (" (outputs of the cells that had them)" if shown_only else ""))
if figures is not None:
    named = named_figures(read_nb(path))
    if not named: sys.exit(f"no cell of {path.name} is labelled `#| label: fig-NAME` and draws: nothing to save")
    figures.mkdir(parents=True, exist_ok=True)
    for name, png in named.items():
        (figures / f"{name}.png").write_bytes(png)
        print(f"saved {figures / name}.png")
