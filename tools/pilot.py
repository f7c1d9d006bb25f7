"""Pilot runs: learning curves, KL per latent, active latents and scores at milestones, to choose a CPU budget (see nbs/09_reproduction.ipynb)."""
import json, sys, time, argparse
from pathlib import Path
import numpy as np, torch
from disentlit.data_files import get_dataset
from disentlit.models import framework_for, kl_normal
from disentlit.training import fit
from disentlit.losses import get_loss
from disentlit.metrics import evaluate

p = argparse.ArgumentParser()
p.add_argument("--dataset", default="xysquares"); p.add_argument("--set", action="append", default=[])
p.add_argument("--framework", default="betavae"); p.add_argument("--loss", default="mse")
p.add_argument("--beta", type=float, default=1e-4); p.add_argument("--latents", type=int, default=25)
p.add_argument("--batch-size", type=int, default=128); p.add_argument("--milestones", default="250,500,1000,2000,4000")
p.add_argument("--seed", type=int, default=0); p.add_argument("--threads", type=int, default=1)
p.add_argument("--exact-at-end", action="store_true"); p.add_argument("--out", required=True)
a = p.parse_args()
torch.set_num_threads(a.threads)
params = {k: int(v) for k, v in (s.split("=") for s in a.set)}
data = get_dataset(a.dataset, **params); data.channel_stats()
fw = framework_for(data, a.framework, latents=a.latents, recon=get_loss(a.loss), beta=a.beta, seed=a.seed)
name = f"{a.dataset}{''.join(f'_{k}{v}' for k, v in params.items())}_{a.framework}_{a.loss}_b{a.beta:g}_bs{a.batch_size}_s{a.seed}"
run_dir = Path(a.out) / name
rec_path = Path(a.out) / f"{name}.jsonl"
eval_idx = data.sample_idx(2048, np.random.default_rng(1234))
x_eval = data.batch(eval_idx, standardise=fw.standardise)
miles = [int(m) for m in a.milestones.split(",")]
done = {json.loads(l)["step"] for l in rec_path.read_text().splitlines()} if rec_path.exists() else set()
for i, m in enumerate(miles):
    if m in done: continue
    t0 = time.time()
    r = fit(fw, data, m, a.batch_size, seed=a.seed, out_dir=run_dir, checkpoint_every=min(miles), progress=False)
    train_s = time.time() - t0
    fw.eval()
    with torch.no_grad():
        mu, logvar = fw.encoder(x_eval)
        kl = kl_normal(mu, logvar).mean(0).numpy()
        var_mu = mu.var(0).numpy()
        rec = fw.recon(fw.decoder(mu), x_eval).mean().item()
    last = i == len(miles) - 1
    t1 = time.time()
    sc = evaluate(fw.encode, data, ["mig", "dci"], seed=a.seed, standardise=fw.standardise, fast=not (last and a.exact_at_end))
    hist = [h for h in r["history"]]
    out = dict(step=m, name=name, framework=a.framework, loss=a.loss, beta=a.beta, batch_size=a.batch_size, seed=a.seed,
               dataset=a.dataset, dataset_params=params, train_seconds=round(train_s, 1), eval_seconds=round(time.time() - t1, 1),
               recon_eval_mean=rec, kl_per_latent=[round(float(v), 4) for v in kl], kl_total=float(kl.sum()),
               var_mu=[round(float(v), 4) for v in var_mu], active_kl01=int((kl > 0.1).sum()), active_var01=int((var_mu > 0.01).sum()),
               train_last=hist[-1] if hist else None,
               mig=sc["mig"]["mig"] if "mig" in sc["mig"] else sc["mig"], dci=sc["dci"]["disentanglement"],
               dci_completeness=sc["dci"]["completeness"], dci_info_test=sc["dci"]["informativeness_test"], dci_mode=sc["dci"]["mode"])
    fw.train()
    with open(rec_path, "a") as f: f.write(json.dumps(out) + "\n")
    print(json.dumps({k: out[k] for k in ("name", "step", "recon_eval_mean", "kl_total", "active_kl01", "mig", "dci", "train_seconds", "eval_seconds")}), flush=True)
