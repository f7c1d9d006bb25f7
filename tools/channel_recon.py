"""Which of XYSquares' three squares a trained run draws: the pixel MSE of its reconstructions per colour channel
(each square lives in one channel), next to the MSE of the mean image, for every finished run of a sweep.
A channel's square counts as drawn when its MSE is below a third of the mean image's (the threshold is stated
wherever the count is shown; the per-channel numbers are kept so that a reader can apply another).

    python tools/channel_recon.py --db results/figure9_cpu.sqlite --runs RUNS_DIR --out results/figure9_cpu/channels.json
"""
import argparse, json
from pathlib import Path
import numpy as np, torch
from disentlit.experiments import ResultsDB
from disentlit.training import load_run

p = argparse.ArgumentParser()
p.add_argument("--db", required=True); p.add_argument("--runs", required=True); p.add_argument("--out", required=True)
p.add_argument("--n", type=int, default=2048); p.add_argument("--threads", type=int, default=1)
a = p.parse_args()
torch.set_num_threads(a.threads)
db = ResultsDB(a.db, create=False)
rows = []
for r in db.runs(status="done"):
    model, data, _ = load_run(Path(a.runs) / r["id"])
    # in the space the model trains in (standardised per channel or not): a channel's ratio to the mean image's
    # MSE is the same in either
    x = data.batch(data.sample_idx(a.n, np.random.default_rng(1234)), standardise=model.standardise)
    with torch.no_grad(): xr = model.decode(model.encode(x))
    per = ((xr - x) ** 2).mean(dim=(0, 2, 3))
    mean = ((x.mean(0, keepdim=True) - x) ** 2).mean(dim=(0, 2, 3))
    rows.append(dict(id=r["id"], config=r["config"], pixel_mse=[round(float(v), 5) for v in per],
                     mean_image_mse=[round(float(v), 5) for v in mean],
                     squares_drawn=int((per < mean / 3).sum())))
Path(a.out).write_text(json.dumps(rows, indent=1))
print(f"{len(rows)} runs -> {a.out}")
