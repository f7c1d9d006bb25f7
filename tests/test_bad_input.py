"""Bad input across every subcommand: exit status 2, one line on stderr, no traceback, and nothing changed on disk.

The cases run in this process through `disentlit.cli.main` (a fresh process per case would cost two seconds each); a
traceback there would surface as an exception, which fails the test. A few run through the console script too.
"""
import contextlib
import io
import json
import os
import shutil
import sqlite3
import stat

import pytest

from disentlit.cli import main

TINY = ["--dataset", "xyobject", "--framework", "betavae", "--latents", "2", "--steps", "2", "--batch-size", "4"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    "A data directory, a finished tiny run, a results database, specs good and bad, and files in the way."
    w = tmp_path_factory.mktemp("world")
    data = w / "data"
    data.mkdir()
    env = {"DISENTLIT_DATA": str(data)}
    with _env(env), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["train", *TINY, "--out", str(w / "run")]) == 0
        spec = dict(name="tiny", base=dict(dataset="xyobject", framework="betavae", latents=2, model="fc", width=16,
                                           steps=2, batch_size=4,
                                           metrics=["mig"], metric_params=dict(mig=dict(num_train=50))))
        (w / "tiny.json").write_text(json.dumps(spec))
        assert main(["sweep", str(w / "tiny.json"), "--db", str(w / "tiny.sqlite")]) == 0
    (w / "blocker").write_text("a file where a folder should be")
    (w / "binary.yaml").write_bytes(bytes(range(256)) * 4)
    (w / "list.yaml").write_text("- just\n- a list\n")
    (w / "notes.sqlite").write_text("my notes, not a database")
    (w / "readonly.sqlite").write_bytes((w / "tiny.sqlite").read_bytes())
    os.chmod(w / "readonly.sqlite", stat.S_IREAD)
    (w / "readonly_dir").mkdir()
    os.chmod(w / "readonly_dir", stat.S_IREAD | stat.S_IEXEC)
    spec["base"]["latents"] = 3                                          # the same sweep name, other runs
    (w / "tiny_changed.json").write_text(json.dumps(spec))
    (w / "twice.yaml").write_text("name: tiny\nname: other\nbase: {dataset: xyobject}\n")
    (w / "twice.json").write_text('{"name": "t", "base": {"steps": 1, "steps": 2}}')
    (w / "huge.yaml").write_text("name: huge\nrepeats: 1000000000\nbase: {dataset: xyobject}\n")
    bomb = ["name: bomb", "a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    (w / "bomb.yaml").write_text("\n".join(bomb + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]"
                                                   for i in range(1, 12)]))
    shutil.copytree(w / "run", w / "unfinished")                          # as a run killed at step 2 of 9 leaves it
    config = w / "unfinished" / "config.json"
    config.write_text(config.read_text().replace('"steps": 2', '"steps": 9'))
    with contextlib.closing(sqlite3.connect(w / "foreign.sqlite")) as con:   # a runs table of another program
        con.executescript("CREATE TABLE meta (key, value); CREATE TABLE runs (id, name, score);")
    (w / "described.json").write_text(json.dumps(dict(spec, name="described", description=5)))
    (w / "engines_unknown.json").write_text(json.dumps(dict(spec, engines=dict(slurm=dict(partition="gpu")))))
    (w / "engines_bad.json").write_text(json.dumps(dict(spec, engines=dict(submitit=dict(walltime=60)))))
    base = spec["base"]                                                   # specs that contradict themselves (issue 41)
    for name, bad in dict(arm_seed=dict(arms=[{"seed": 5}], repeats=2), base_seed=dict(base=dict(base, seed=7), repeats=2),
                          beta_twice=dict(base={**base, "framework_params.beta": 1.0, "framework_params": {"beta": 2.0}}),
                          dci_mode=dict(base=dict(base, metrics=["mig", "dci"], metric_params={"dci": {"mode": "nosuch"}})),
                          mig_huge=dict(base=dict(base, metric_params={"mig": {"num_train": 10 ** 12}}))).items():
        (w / f"{name}.json").write_text(json.dumps(dict(spec, name=name, **bad)))
    (w / "damaged.sqlite").write_bytes((w / "tiny.sqlite").read_bytes())
    with contextlib.closing(sqlite3.connect(w / "damaged.sqlite")) as con:   # garbage in a JSON column
        con.execute("UPDATE runs SET metrics='{\"mig\": [1'"); con.commit()
    (w / "oddversion.sqlite").write_bytes((w / "tiny.sqlite").read_bytes())
    with contextlib.closing(sqlite3.connect(w / "oddversion.sqlite")) as con:
        con.execute("UPDATE meta SET value='two' WHERE key='schema_version'"); con.commit()
    return w


@contextlib.contextmanager
def _env(values: dict):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try: yield
    finally:
        for k, v in old.items():
            if v is None: os.environ.pop(k, None)
            else: os.environ[k] = v


def spec_with(world, name: str, **base) -> str:
    "A copy of the tiny spec with `base` settings changed."
    spec = json.loads((world / "tiny.json").read_text())
    spec["base"].update(base)
    path = world / f"{name}.json"
    path.write_text(json.dumps(spec))
    return str(path)


def _snapshot(root) -> dict:
    "Every file under `root` with its size and modification time, and every database's rows."
    out = {}
    for dirpath, _, files in os.walk(root):
        out[dirpath] = "folder"                                       # a folder made and left empty counts too
        for f in files:
            if f.endswith(("-wal", "-shm")): continue                  # SQLite's own companions of a WAL database
            p = os.path.join(dirpath, f)
            st = os.stat(p)
            out[p] = (st.st_size, st.st_mtime_ns)
            if f.endswith(".sqlite") and not any(n in f for n in ("notes", "foreign", "oddversion")):
                with contextlib.closing(sqlite3.connect(f"file:{p}?mode=ro&immutable=1", uri=True)) as con:
                    out[p + "#rows"] = con.execute("SELECT id, status, metrics, result FROM runs ORDER BY id").fetchall()
    return out


ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def C(*argv, says="", env=None):
    "One case: the arguments (`{w}` stands for the world folder), what the error must say, extra environment."
    read_only = any("readonly" in a for a in [*argv, *(env or {}).values()])
    marks = [pytest.mark.skipif(ROOT, reason="root writes read-only files and folders anyway")] if read_only else []
    return pytest.param(list(argv), says, env or {}, id=" ".join(argv)[:80], marks=marks)


CASES = [
    # the parser
    C("teleport", says="invalid choice"), C("train", says="required"), C("train", "--dataset", "xyobject", says="--framework"),
    C("train", *TINY, "--steps", "many", says="invalid int"), C("sweep", says="required"), C("figures", says="--db"),
    C("evaluate", says="RUN_DIR"), C("bench", says="required: what"), C("bench", "quantum", says="invalid choice"),
    C("distances", says="--dataset"), C("datasets", "--stats", says="expected one argument"),
    # datasets
    C("datasets", "--stats", "mnist", says="accepted: xysquares"), C("datasets", "--stats", "xysquares", "--set", "grid_spacing=0", says="grid_spacing must be an integer >= 1"),
    C("datasets", "--stats", "xysquares", "--set", "grid_spacing", says="KEY=VALUE"),
    C("datasets", "--stats", "xysquares", "--set", "num_squares=4", says="num_squares must be 1, 2 or 3"),
    C("datasets", "--stats", "xysquares", "--set", "grid_size=9", says="1..8"),
    C("datasets", "--stats", "xysquares", "--set", "colour=red", says="grid_spacing"),
    C("datasets", "--stats", "xysquares", "--set", "rgb=maybe", says="rgb must be true or false"),
    C("datasets", "--stats", "xysquares", "--set", "square_size=100", says="square_size"),
    C("datasets", "--stats", "xysquares", "--set", "image_size=-4", says="image_size"),
    C("datasets", "--stats", "sprites", "--set", "grid_spacing=2", says="accepted: (none)"),
    C("distances", "--dataset", "sprites", "--set", "grid_spacing=2", says="accepted: (none)"),
    C("datasets", "--stats", "dsprites", says="--prepare dsprites"), C("datasets", "--prepare", "nope", says="smallnorb"),
    C("datasets", "--prepare", "xysquares", says="synthetic"),
    C("datasets", "--prepare", "dsprites", "--source", "/nonexistent/dsprites.npz", says="dsprites"),
    C("datasets", "--prepare", "dsprites", "--source", "{w}/binary.yaml", says="dsprites"),
    C("datasets", "--set", "grid_spacing=4", says="--set goes with --stats"),
    C("datasets", "--source", "/x", says="--source and --force go with --prepare NAME"),
    C("datasets", "--stats", "", says="unknown dataset ''"),
    C("datasets", "--stats", "xysquares", "--set", "square_size=true", says="square_size must be an integer >= 1, got True"),
    C("datasets", "--force", says="--source and --force go with --prepare NAME"),
    C("datasets", "--prepare", "dsprites", "--stats", "sprites", says="--prepare goes alone"),
    C("datasets", "--stats", "xysquares", "--set", "image_size=100000", says="would take about 7.7 TB of memory"),
    C("distances", "--dataset", "xysquares", "--set", "image_size=100000", says="would take about 7.7 TB of memory"),
    C("datasets", "--prepare", "dsprites", says="DISENTLIT_DATA", env={"DISENTLIT_DATA": "{w}/blocker/data"}),
    C("datasets", "--stats", "sprites", says="DISENTLIT_DATA", env={"DISENTLIT_DATA": "{w}/blocker"}),
    C("datasets", "--stats", "sprites", says="DISENTLIT_DATA", env={"DISENTLIT_DATA": "{w}/readonly_dir/data"}),
    # distances
    C("distances", "--dataset", "xysquares", "--pairs", "0", says="--pairs must be >= 1"),
    C("distances", "--dataset", "xysquares", "--pairs", "-5", says="--pairs must be >= 1"),
    C("distances", "--dataset", "xysquares", "--pairs", str(10 ** 13), says="--pairs must be at most"),
    C("distances", "--dataset", "xysquares", "--loss", "l1", says="accepted: mse, bce, box_blur"),
    C("distances", "--dataset", "xysquares", "--seed", "-1", says="--seed must be"),
    C("distances", "--dataset", "xysquares", "--seed", str(2 ** 70), says="--seed must be"),
    C("distances", "--dataset", "xysquares", "--set", "grid_spacing=0", says=">= 1"),
    C("distances", "--dataset", "nope", says="accepted: xysquares"), C("distances", "--dataset", "dsprites", says="--prepare dsprites"),
    C("distances", "--dataset", "xysquares", "--pairs", "ten", says="invalid int"),
    # predict
    C("predict", says="--dataset"),
    C("predict", "--dataset", "xysquares", "--traversals", "0", says="--traversals must be >= 1"),
    C("predict", "--dataset", "xysquares", "--traversals", "-3", says="--traversals must be >= 1"),
    C("predict", "--dataset", "xysquares", "--traversals", str(10 ** 6), says="--traversals must be at most 10,000"),
    C("predict", "--dataset", "xysquares", "--traversals", "many", says="invalid int"),
    C("predict", "--dataset", "xysquares", "--loss", "l1", says="accepted: mse, bce, box_blur"),
    C("predict", "--dataset", "xysquares", "--loss", "box_blur", "--loss-param", "radius=-1", says="radius must be"),
    C("predict", "--dataset", "xysquares", "--loss-param", "size=3", says="accepted: scale"),
    C("predict", "--dataset", "xysquares", "--loss-param", "scale", says="KEY=VALUE"),
    C("predict", "--dataset", "xysquares", "--seed", "-1", says="--seed must be"),
    C("predict", "--dataset", "nope", says="accepted: xysquares"),
    C("predict", "--dataset", "dsprites", says="--prepare dsprites"),
    C("predict", "--dataset", "xysquares", "--set", "grid_spacing=0", says=">= 1"),
    C("predict", "--dataset", "xysquares", "--set", "spacing=2", says="relabel_seed"),
    C("predict", "--dataset", "sprites", "--set", "fixed=orientation=40", says="0..39, got 40"),
    C("predict", "--dataset", "sprites", "--set", "fixed=colour=1", says="accepted: shape, scale"),
    C("predict", "--dataset", "sprites", "--set", "fixed=orientation", says="factor=value"),
    C("predict", "--dataset", "xyobject", "--set", "fixed=x=0,y=0", says="at least one must vary"),
    C("predict", "--dataset", "xysquares", "--set", "relabel_seed=-2", says="relabel_seed must be"),
    # train
    C("train", "--dataset", "nope", "--framework", "betavae", says="accepted: xysquares"),
    C("train", "--dataset", "xyobject", "--framework", "nope", says="accepted: ae, vae, betavae"),
    C("train", *TINY, "--loss", "l1", says="accepted: mse, bce, box_blur"),
    C("train", *TINY, "--beta", "-1", says="beta must be"), C("train", *TINY, "--beta", "nan", says="beta must be"),
    C("train", *TINY, "--beta", "inf", says="beta must be"), C("train", *TINY, "--lr", "0", says="lr must be"),
    C("train", *TINY, "--lr=-1e-3", says="lr must be"), C("train", *TINY, "--lr", "inf", says="lr must be"),
    C("train", *TINY, "--lr", "nan", says="lr must be"), C("train", *TINY, "--latents", "0", says="--latents must be >= 1"),
    C("train", *TINY, "--latents", str(10 ** 11), says="latents must be an integer in 1..4096"),
    C("train", *TINY, "--steps", "0", says="--steps must be >= 1"), C("train", *TINY, "--steps", "-3", says="--steps must be >= 1"),
    C("train", *TINY, "--batch-size", "0", says="--batch-size must be >= 1"),
    C("train", *TINY, "--batch-size", "100000", says="batch size must be an integer in 1..4096"),
    C("train", *TINY, "--seed", "-1", says="--seed must be"), C("train", *TINY, "--seed", str(2 ** 70), says="--seed must be"),
    C("train", *TINY, "--precision", "fp8", says="accepted: auto, fp32, tf32, bf16"),
    C("train", *TINY, "--precision", "tf32", says="precision 'tf32' runs on a CUDA GPU only"),
    C("train", *TINY, "--device", "tpu", says="unknown device 'tpu'; accepted: cpu, cuda, cuda:N, mps"),
    C("train", *TINY, "--metric-param", "mig={oops", says="not valid JSON"),
    C("train", *TINY, "--metric-param", "mig=" + "[" * 50_000 + "]" * 50_000, says="not valid JSON (nested too deep)"),
    C("train", *TINY, "--set", "fixed=" + "{\"a\": " * 20_000 + "1" + "}" * 20_000, says="nested too deep"),
    C("train", *TINY, "--param", "gamma=2", says="has no parameter 'gamma'"),
    C("train", *TINY, "--param", "obs_shape=3", says="has no parameter 'obs_shape'"),
    C("train", *TINY, "--param", "beta", says="KEY=VALUE"),
    C("train", *TINY, "--set", "grid_spacing=0", says=">= 1"), C("train", *TINY, "--set", "spin=up", says="grid_spacing"),
    C("train", "--dataset", "xyobject", "--framework", "factorvae", "--batch-size", "1", "--steps", "1", says="at least 2"),
    C("train", "--dataset", "xyobject", "--framework", "factorvae", "--param", "gamma=-1", "--steps", "1", says="gamma must be"),
    C("train", "--dataset", "xyobject", "--framework", "betatcvae", "--param", "estimator=xyz", "--steps", "1", says="mws, mss"),
    C("train", "--dataset", "xyobject", "--framework", "wae", "--param", "encoder_type=cube", "--steps", "1", says="gaussian, uniform"),
    C("train", "--dataset", "xyobject", "--framework", "annealedvae", "--param", "iterations=0", "--steps", "1", says="iterations"),
    C("train", *TINY, "--out", "{w}/blocker", says="{w}/blocker"),
    C("train", *TINY, "--out", "{w}/blocker/run", says="{w}/blocker"),
    C("train", *TINY, "--out", "{w}/readonly_dir/run", says="readonly_dir"),
    C("train", *TINY[:4], "--latents", "3", "--steps", "2", "--batch-size", "4", "--out", "{w}/run", says="another configuration"),
    C("train", *TINY, "--steps", "1", "--out", "{w}/run", says="has done 2 steps"),
    C("train", "--dataset", "dsprites", "--framework", "betavae", says="DISENTLIT_DATA", env={"DISENTLIT_DATA": "{w}/blocker"}),
    # evaluate
    C("evaluate", "{w}/nowhere", says="not a run directory"), C("evaluate", "{w}/data", says="not a run directory"),
    C("evaluate", "{w}/run", "--metrics", "mgi", says="accepted: mig"), C("evaluate", "{w}/run", "--metrics", "", says="metric"),
    C("evaluate", "{w}/run", "--metrics", "irs,udr", says="modularity, irs, dci_es, infomec"),
    C("evaluate", "{w}/run", "--seed", "-1", says="--seed must be"), C("evaluate", "{w}/run", "--batch-size", "0", says=">= 1"),
    C("evaluate", "{w}/unfinished", says="is not finished: its checkpoint is at step 2 of 9"),
    # sweep
    C("sweep", "{w}/nowhere.yaml", "--db", "{w}/x.sqlite", says="no sweep spec"),
    C("sweep", "{w}/binary.yaml", "--db", "{w}/x.sqlite", says="binary.yaml"),
    C("sweep", "{w}/list.yaml", "--db", "{w}/x.sqlite", says="must be a mapping"),
    C("sweep", "{w}/blocker", "--db", "{w}/x.sqlite", says=".yaml, .yml or .json"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/tiny.sqlite", says="--resume"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/notes.sqlite", says="not a disentlit results database"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/readonly.sqlite", "--resume", says="read-only"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/blocker/x.sqlite", says="blocker"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/readonly_dir/x.sqlite", says="readonly_dir"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--runs", "{w}/blocker", says="runs folder {w}/blocker is a file, not a folder"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "spark", says="accepted: local, ray"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--workers", "0", says="workers must be an integer >= 1"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "ray", "--cpus", "-1", says="num_cpus must be a number > 0"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "ray", "--cpus", "0", says="num_cpus must be a number > 0"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "ray", "--gpus", "-1", says="num_gpus must be a number >= 0"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--lease", "0", says="lease must be a finite number of seconds >= 60"),
    *[C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--lease", v, says="lease must be a finite number of seconds >= 60")
      for v in ("1e-9", "59", "nan", "inf", "-5")],
    *[C("sweep", "{w}/tiny.json", "--db", "{w}/tiny.sqlite", "--resume", says=f"DISENTLIT_LEASE={v!r} is not accepted: give a "
        "number of seconds >= 60", env={"DISENTLIT_LEASE": v}) for v in ("abc", "-5", "0", "nan", "1e-9")],
    C("distances", "--dataset", "xysquares", "--pairs", "10", says="DISENTLIT_PROGRESS='sometimes' is not accepted: give auto or lines",
      env={"DISENTLIT_PROGRESS": "sometimes"}),
    C("train", *TINY, "--out", "{w}/newrun", says="DISENTLIT_MALLOC='yes' is not accepted: give 0 or 1", env={"DISENTLIT_MALLOC": "yes"}),
    C("train", *TINY, "--out", "{w}/newrun", says="DISENTLIT_DENORMALS='0' is not accepted: give flush or keep",
      env={"DISENTLIT_DENORMALS": "0"}),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", says="DISENTLIT_DENORMALS='off' is not accepted: give flush or keep",
      env={"DISENTLIT_DENORMALS": "off"}),
    C("sweep", "{w}/tiny.json", "--db", "{w}/nowhere/deeper/x.sqlite", says="make the folder first"),
    C("sweep", "{w}/tiny_changed.json", "--db", "{w}/tiny.sqlite", "--resume", says="holds sweep 'tiny' with other runs than this spec's"),
    C("sweep", "{w}/twice.yaml", "--db", "{w}/y.sqlite", says="key 'name' is given twice"),
    C("sweep", "{w}/twice.json", "--db", "{w}/y.sqlite", says="key 'steps' is given twice"),
    C("sweep", "{w}/huge.yaml", "--db", "{w}/y.sqlite", says="expands to 1,000,000,000 runs (about 4.1 TB of memory"),
    C("sweep", "{w}/bomb.yaml", "--db", "{w}/y.sqlite", says="its aliases expand it to 357,449,882,121 values (about 22.9 TB"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/foreign.sqlite", says="its runs table lacks the columns sweep, config, status"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/oddversion.sqlite", "--resume", says="(schema version 'two')"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "ray", "--workers", "2", says="--workers goes with --engine local"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--gpus", "1", says="--gpus goes with --engine ray or submitit, not --engine local"),
    # the submitit engine (no Slurm here) and the trackers
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "submitit", says="cannot submit to slurm: no srun on this machine"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "submitit", "--cluster", "pbs", says="accepted: slurm, local"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "submitit", "--time", "0", says="time must be an integer >= 1 (time: minutes)"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "submitit", "--mem", "-4", says="mem must be a number of GB > 0"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "submitit", "--gpus", "0.5", says="gpus must be an integer >= 0"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "submitit", "--array-parallelism", "0", says="array_parallelism must be an integer >= 1"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--partition", "gpu", says="--partition goes with --engine submitit, not --engine local"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--engine", "ray", "--time", "30", says="--time goes with --engine submitit, not --engine ray"),
    C("sweep", "{w}/engines_unknown.json", "--db", "{w}/y.sqlite", says="spec key 'engines' names unknown engine 'slurm'; accepted: local, ray, submitit"),
    C("sweep", "{w}/engines_bad.json", "--db", "{w}/y.sqlite", says="the submitit engine has no option 'walltime'; accepted: cluster, partition, time"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--track", "mlflow", says="unknown tracker 'mlflow'; accepted: wandb, tensorboard"),
    C("train", *TINY, "--out", "{w}/tracked", "--track", "neptune", says="unknown tracker 'neptune'; accepted: wandb, tensorboard"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--lease", "1e308", says="(at most 2.592e+06)"),
    C("sweep", "{w}/described.json", "--db", "{w}/y.sqlite", says="spec key 'description' must be text"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--device", "tpu", says="accepted: cpu, cuda"),
    # figures
    C("figures", "--db", "{w}/nowhere.sqlite", "--out", "{w}/figs", says="no results database"),
    C("figures", "--db", "{w}/tiny.sqlite", "--out", "{w}/figs", "--sweep", "", says="holds no finished run of sweep ''"),
    C("figures", "--db", "{w}/tiny.sqlite", "--out", "{w}/figs", "--runs", "{w}/nowhere", says="--runs {w}/nowhere: no such folder"),
    C("figures", "--db", "{w}/damaged.sqlite", "--out", "{w}/figs", says="every finished run is damaged (1)"),
    C("figures", "--db", "{w}/notes.sqlite", "--out", "{w}/figs", says="not a disentlit results database"),
    C("figures", "--db", "{w}/tiny.sqlite", "--out", "{w}/blocker", says="{w}/blocker"),
    C("figures", "--db", "{w}/tiny.sqlite", "--out", "{w}/blocker/figs", says="{w}/blocker"),
    C("figures", "--db", "{w}/tiny.sqlite", "--out", "{w}/readonly_dir/figs", says="readonly_dir"),
    C("figures", "--db", "{w}/tiny.sqlite", "--out", "{w}/figs", "--sweep", "other", says="holds no finished run"),
    C("figures", "--db", "{w}/foreign.sqlite", "--out", "{w}/figs", says="its runs table lacks the columns"),
    C("figures", "--db", "{w}/oddversion.sqlite", "--out", "{w}/figs", says="not a disentlit results database (schema version"),
    C("figures", "--db", "{w}/nowhere.sqlite", "--out", "{w}/figs", says="no results database"),
    C("figures", "--db", "{w}/tiny.sqlite", "--out", "{w}/figs", "--sweep", "", says="holds no finished run of sweep ''"),
    C("figures", "--db", "{w}/tiny.sqlite", "--out", "{w}/figs", "--runs", "{w}/nowhere", says="--runs {w}/nowhere: no such folder"),
    C("figures", "--db", "{w}/damaged.sqlite", "--out", "{w}/figs", says="every finished run is damaged (1)"),
    # bench
    C("bench", "data", "--batch-size", "0", says=">= 1"), C("bench", "data", "--repeats", "0", says=">= 1"),
    C("bench", "train", "--batch-size", "100000", says="batch size must be an integer in 1..4096"),
    C("bench", "train", "--framework", "nope", says="accepted: ae"), C("bench", "train", "--precision", "fp8", says="fp32, tf32, bf16"),
    C("bench", "train", "--precision", "fp32,tf32", "--device", "cpu", says="runs on a CUDA GPU only"),
    C("bench", "train", "--param", "gamma=2", says="accepted:"), C("bench", "train", "--device", "tpu", says="accepted: cpu"),
    C("bench", "train", "--framework", "factorvae", "--param", "disc_precision=half", says="accepted: auto, fp32, bf16"),
    C("bench", "loss", "--batch-size", "0", says=">= 1"), C("bench", "distances", "--pairs", "0", says=">= 1"),
    C("bench", "distances", "--pairs", str(10 ** 13), says="--pairs must be at most"),
    C("bench", "metrics", "--reference", "partial", says="accepted: scaled, full, none"),
    C("bench", "metrics", "--precision", "fp8", says="fp32, bf16"),
    C("bench", "metrics", "--precision", "tf32", says="accepted: fp32, bf16"),
    C("bench", "data", "--batch-size", "100000000", says="would take about 4.9 TB"),
    C("bench", "metrics", "--batch-size", "100000000", says="batch size must be an integer in 1..65536 for bench metrics"),
    C("bench", "data", "--pairs", "5", says="--pairs goes with bench distances, not bench data"),
    C("bench", "train", "--precision", "", says="a comma-separated list such as fp32,bf16"),
    C("bench", "train", "--precision", "fp32,,bf16", says="a comma-separated list such as fp32,bf16"),
    C("bench", "data", "--repeats", "100000000", says="repeats must be an integer in 1..1,000 for a benchmark"),
    C("bench", "distances", "--framework", "wae", says="--framework goes with bench train"),
    C("bench", "loss", "--steps", "3", says="--steps goes with bench train"),
    C("bench", "distances", "--repeats", "3", says="--repeats goes with bench data or train or loss or metrics"),
    # settings checked before any work (issue 41 item 3): bounds, memory, duplicates
    C("train", *TINY, "--steps", str(10 ** 12), says="steps must be at most 100,000,000"),
    C("train", *TINY, "--eval-every", str(10 ** 9), says="eval_every must be at most 100,000,000"),
    C("train", *TINY, "--model", "fc", "--width", str(10 ** 7), says="of memory, more than this machine's"),
    C("train", *TINY[:2], "--framework", "factorvae", "--param", "disc_width=1000000000", says="of memory"),
    C("train", *TINY[:2], "--framework", "factorvae", "--param", "disc_layers=1000000", says="disc_layers must be at most 1,000"),
    C("train", *TINY, "--metrics", "mig,mig", says="metric 'mig' is asked for twice"),
    C("evaluate", "{w}/run", "--metrics", "mig,dci,mig", says="metric 'mig' is asked for twice"),
    # issue 41's robustness hunt: settings accepted in silence, or failing with a traceback or in every run
    C("train", *TINY, "--loss", "bce", "--loss-param", "eps=2", says="eps must be a number in (0, 0.5)"),
    C("train", *TINY, "--metric-param", 'dci={"mode": "nosuch"}', says="dci: unknown mode 'nosuch'; accepted: exact, fast"),
    C("train", *TINY, "--metrics", "mig", "--metric-param", 'mig={"num_train": 1000000000000}',
      says="mig: its parameters draw 1,000,000,000,000 observations, more than the 10,000,000 a metric may"),
    C("train", *TINY, "--metric-param", "mig=5", says="mig: its parameters must be a mapping of name to value"),
    C("train", *TINY, "--metric-param", 'mig={"num_train": 50, "num_train": 60}', says="key 'num_train' is given twice"),
    C("train", *TINY, "--set", "fixed=x=0,x=1", says="fixed gives factor 'x' twice in 'x=0,x=1'"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--device", "meta", says="unknown device 'meta'; accepted: cpu"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", "--runs", "", says="runs folder '': give a folder's path"),
    C("sweep", "{w}/tiny.json", "--db", "{w}/y.sqlite", says="DISENTLIT_MALLOC='2' is not accepted: give 0 or 1",
      env={"DISENTLIT_MALLOC": "2"}),
    C("sweep", "{w}/arm_seed.json", "--db", "{w}/y.sqlite", says="spec sets 'seed' in arm 1 and the seeds by 'repeats'"),
    C("sweep", "{w}/base_seed.json", "--db", "{w}/y.sqlite", says="spec sets 'seed' in the base and the seeds by 'repeats'"),
    C("sweep", "{w}/beta_twice.json", "--db", "{w}/y.sqlite", says="'framework_params.beta' and framework_params: {beta: ...} in "
      "the base give the same setting twice"),
    C("sweep", "{w}/dci_mode.json", "--db", "{w}/y.sqlite", says="dci: unknown mode 'nosuch'"),
    C("sweep", "{w}/mig_huge.json", "--db", "{w}/y.sqlite", says="mig: its parameters draw 1,000,000,000,000 observations"),
    C("bench", "train", "--device", "meta", says="unknown device 'meta'; accepted: cpu"),
    C("bench", "train", "--precision", "fp32,fp32", says="precision 'fp32' is listed twice in 'fp32,fp32'"),
    C("demo", "--out", "", says="demo folder '': give a folder's path"),
    # demo
    C("demo", "--out", "{w}/blocker", says="{w}/blocker"), C("demo", "--out", "{w}/blocker/demo", says="{w}/blocker"),
    C("demo", "--out", "{w}/readonly_dir/demo", says="readonly_dir"), C("demo", "--steps", "0", says="--steps must be >= 1"),
]


def test_the_table_is_large(): assert len(CASES) >= 100, len(CASES)


@pytest.mark.parametrize("argv, says, env", CASES)
def test_bad_input(world, argv, says, env, monkeypatch):
    fill = lambda s: s.replace("{w}", str(world))
    argv, says = [fill(a) for a in argv], fill(says)
    monkeypatch.chdir(world)                                          # default outputs (runs/...) would land here
    before = _snapshot(world)
    out, err = io.StringIO(), io.StringIO()
    with _env({"DISENTLIT_DATA": str(world / "data"), **{k: fill(v) for k, v in env.items()}}), \
         contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try: code = main(argv)
        except SystemExit as e: code = e.code
    err = err.getvalue()
    assert code == 2, (argv, code, err[-500:])
    assert err.startswith("disentlit: error:") and err.count("\n") == 1 and "Traceback" not in err, err
    assert says in err, (says, err)
    assert out.getvalue() == "", out.getvalue()
    assert _snapshot(world) == before, "bad input changed files on disk"


@pytest.mark.parametrize("argv", [["train", "--dataset", "xyobject", "--framework", "betavae", "--seed", "-1"],
                                  ["sweep", "/nonexistent.yaml", "--db", "x.sqlite"]])
def test_bad_input_through_the_console_script(console, argv):
    code, out, err = console(*argv)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err and out == "", err


def test_database_errors_say_what_happened(world, tmp_path):
    "Read-only (simulated with a read-only connection: root writes read-only files anyway) and unopenable databases."
    from disentlit.core import DisentlitError
    from disentlit.store import ResultsDB
    from disentlit.training import RunConfig
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes((world / "tiny.sqlite").read_bytes())
    db = ResultsDB(copy)
    db.con.close()
    db.con = sqlite3.connect(f"file:{copy}?mode=ro", uri=True, isolation_level=None)
    with pytest.raises(DisentlitError, match="the database is read-only") as e: db.add_runs("tiny", [RunConfig(seed=9)])
    assert "not a disentlit results database" not in str(e.value)
    with pytest.raises(DisentlitError, match="cannot open or create the database file"): ResultsDB(world / "blocker" / "x.sqlite")


def _api_cases():
    "The issue's API examples, and others of their kind: each a DisentlitError that says what is accepted."
    import numpy as np
    from disentlit.factors import FactorSpace
    from disentlit.data import XYObject, XYSquares
    from disentlit.core import as_rng
    from disentlit.statistics import holm, mann_whitney, median_difference, rank_trend
    from disentlit.sweeps import run_sweep
    from disentlit.training import RunConfig, resolve_device
    from disentlit.metrics import dci, mig
    from disentlit.evaluation import metric_plan
    from disentlit.specs import expand_spec
    fs, nan = FactorSpace(["a", "b"], [2, 3]), float("nan")
    spec = dict(name="api", base=dict(dataset="xyobject", steps=1))
    return [
        ("negative count", lambda: fs.sample_pos(-1), "n must be a whole number >= 0"),
        ("fractional count", lambda: fs.sample_idx(2.5), "n must be a whole number >= 0"),
        ("a count that cannot fit", lambda: fs.sample_idx(10 ** 13), "of memory"),
        ("negative pairs", lambda: fs.sample_pairs(-1), "n must be a whole number >= 0"),
        ("negative seed", lambda: fs.sample_pos(3, seed=-1), "seed must be an integer in 0..2**63-1"),
        ("text seed", lambda: as_rng("x"), "seed must be an integer in 0..2**63-1"),
        ("non-integer factor size", lambda: FactorSpace(["a"], [2.7]), "factor sizes must be whole numbers"),
        ("NaN factor size", lambda: FactorSpace(["a"], [nan]), "factor sizes must be whole numbers"),
        ("unknown device", lambda: resolve_device("tpu"), "accepted: cpu, cuda, cuda:N, mps"),
        ("unknown batch device", lambda: XYObject().batch([0], device="tpu"), "accepted: cpu, cuda, cuda:N, mps"),
        ("from_dict(None)", lambda: RunConfig.from_dict(None), "a mapping of settings"),
        ("from_dict([])", lambda: RunConfig.from_dict([]), "a mapping of settings"),
        ("max_runs '2'", lambda: run_sweep(spec, "/nonexistent/x.sqlite", max_runs="2"), "max_runs must be an integer >= 1"),
        ("max_runs -1", lambda: run_sweep(spec, "/nonexistent/x.sqlite", max_runs=-1), "max_runs must be an integer >= 1"),
        ("spec None", lambda: run_sweep(None, "/nonexistent/x.sqlite"), "spec must be a mapping or the path"),
        ("n_boot 0", lambda: median_difference([0.1, 0.2], [0.3], n_boot=0), "n_boot must be an integer in 1..10,000,000"),
        ("NaN score", lambda: median_difference([0.1, nan], [0.3]), "must be a list of finite numbers"),
        ("NaN score in a test", lambda: mann_whitney([0.1], [nan]), "must be a list of finite numbers"),
        ("infinite score in a trend", lambda: rank_trend([1, 2], [0.1, np.inf]), "must be a list of finite numbers"),
        ("p-value out of range", lambda: holm([1.5]), "p-values must be a list of numbers in [0, 1]"),
        ("image too large", lambda: XYSquares(image_size=100_000), "would take about 7.7 TB of memory"),
        ("True as a size", lambda: XYSquares(square_size=True), "square_size must be an integer >= 1, got True"),
        ("bootstrap past memory", lambda: median_difference(np.zeros(5000), np.ones(5000), n_boot=10 ** 7),
         "bootstrap resamples of 5000 and 5000 scores would take about"),
        ("NaN factor values", lambda: mig(np.random.rand(50, 2), np.full((50, 2), nan)), "y must be finite"),
        ("infinite factor values", lambda: dci(np.random.rand(50, 2), np.r_[np.zeros(49), np.inf][:, None]),
         "y must be finite"),
        ("text factor values", lambda: mig(np.random.rand(4, 2), np.array([["a"], ["b"], ["a"], ["b"]])),
         "y must be numeric"),
        ("mismatched lengths", lambda: mig(np.random.rand(50, 2), np.random.randint(0, 3, (49, 1))),
         "the same number of rows"),
        ("a metric twice", lambda: metric_plan(["mig", "dci", "mig"]), "metric 'mig' is asked for twice"),
        ("arms against the grid", lambda: expand_spec(dict(name="x", arms=[{"loss": "mse"}], grid={"loss": ["bce"]})),
         "set by an arm and 'loss' by the grid"),
        ("steps past the bound", lambda: RunConfig(steps=10 ** 12).check(), "steps must be at most 100,000,000"),
        *_hunt_cases(),
    ]


def _hunt_cases():
    "Issue 41's robustness hunt: calls that ran on into a traceback, a hang, a NaN, or in silence."
    import numpy as np
    import torch
    from disentlit.config import check_setting, RunConfig
    from disentlit.data import DeviceData, to_float, XYObject
    from disentlit.distances import d_gt, order_score, spearman_rows
    from disentlit.evaluation import metric_plan
    from disentlit.family import get_framework, mlp_discriminator
    from disentlit.losses import BCELoss, get_loss
    from disentlit.metrics import dci, histogram_discretize, mig
    from disentlit.newer_metrics import infomec
    from disentlit.models import DecoderFC, EncoderFC
    from disentlit.specs import expand_spec
    from disentlit.statistics import rank_trend, stand_in_rows
    from disentlit.sweeps import check_run
    from disentlit.training import resolve_device
    from disentlit.udr import udr
    rng, nan = np.random.default_rng(0), float("nan")
    Z, Y, xyo = rng.normal(size=(300, 3)), rng.integers(0, 3, size=(300, 2)), XYObject()
    tiny = dict(dataset="xyobject", latents=2, model="fc", width=8)
    spec = dict(name="api", base=dict(tiny, steps=1, batch_size=4, metrics=["mig"]))
    return [
        ("mig: bins 10^9", lambda: mig(Z, Y, bins=10 ** 9), "bins must be at most 100,000, got 1,000,000,000"),
        ("dci: seed -1", lambda: dci(Z, Y, mode="fast", seed=-1), "dci: seed must be an integer in 0..2**32-1"),
        ("infomec: n_neighbors 10^6", lambda: infomec(Z, Y, n_neighbors=10 ** 6), "below the 300 samples"),
        ("histogram_discretize: NaN", lambda: histogram_discretize(np.r_[[[nan] * 3], Z]), "z must be finite to be binned"),
        ("udr: kl_threshold nan", lambda: udr([Z, Z], kl=[np.ones(3)] * 2, kl_threshold=nan), "kl_threshold must be a finite"),
        ("udr: alpha -1", lambda: udr([Z, Z], alpha=-1), "udr: alpha must be a finite number > 0"),
        ("rank_trend: one point", lambda: rank_trend([1], [0.1]), "x to take at least 2 values"),
        ("rank_trend: constant x", lambda: rank_trend([1, 1, 1], [0.1, 0.2, 0.3]), "x to take at least 2 values"),
        ("stand_in_rows: effect nan", lambda: stand_in_rows(nan), "effect_size must be a finite number"),
        ("stand_in_rows: n 10^9", lambda: stand_in_rows(0.5, n=10 ** 9), "n must be an integer in 1..1,000"),
        ("DeviceData: max_bytes -1", lambda: DeviceData(xyo, max_bytes=-1), "max_bytes must be a whole number >= 0"),
        ("to_float: mean NaN", lambda: to_float(xyo.obs([0, 1]), mean=[nan], std=[1.0]), "mean must be finite"),
        ("to_float: std 0", lambda: to_float(xyo.obs([0, 1]), mean=[0.5], std=[0.0]), "std finite and > 0"),
        ("BCELoss: eps -1", lambda: BCELoss(eps=-1), "eps must be a number in (0, 0.5)"),
        ("BCELoss: eps nan", lambda: BCELoss(eps=nan), "eps must be a number in (0, 0.5)"),
        ("mse loss: shapes differ", lambda: get_loss("mse")(torch.zeros(2, 1, 8, 8), torch.zeros(3, 1, 8, 8)),
         "same shape, got (2, 1, 8, 8) and (3, 1, 8, 8)"),
        ("bce loss: shapes differ", lambda: get_loss("bce")(torch.zeros(2, 1, 8, 8), torch.zeros(2, 1, 8, 4)), "same shape"),
        ("order_score: empty", lambda: order_score(np.zeros((0, 0))), "at least one value, got a 0 x 0 matrix"),
        ("spearman_rows: shapes differ", lambda: spearman_rows(np.zeros((2, 3)), np.zeros((3, 2))), "of the same shape"),
        ("d_gt: shapes differ", lambda: d_gt([[0, 1]], [[0, 1, 2]]), "d_gt needs positions of the same factors"),
        ("metric_plan: dci mode", lambda: metric_plan(["dci"], {"dci": {"mode": "nosuch"}}), "dci: unknown mode 'nosuch'"),
        ("metric_plan: num_train 10^12", lambda: metric_plan(["mig"], {"mig": {"num_train": 10 ** 12}}),
         "more than the 10,000,000 a metric may"),
        ("metric_plan: beta_vae groups", lambda: metric_plan(["beta_vae"], {"beta_vae": {"batch_size": 10 ** 4}}),
         "beta_vae: its parameters draw 300,000,000 observations"),
        ("metric_plan: bins 10^9", lambda: metric_plan(["mig"], {"mig": {"bins": 10 ** 9}}), "mig: bins must be at most"),
        ("metric_plan: n_neighbors", lambda: metric_plan(["infomec"], {"infomec": {"num_train": 50, "n_neighbors": 50}}),
         "n_neighbors must be below num_train (50)"),
        ("metric_plan: params 5", lambda: metric_plan(["mig"], {"mig": 5}), "mig: its parameters must be a mapping"),
        ("expand_spec: arm seed", lambda: expand_spec(dict(spec, arms=[{"seed": 3}], repeats=2)),
         "spec sets 'seed' in arm 1 and the seeds by 'repeats' (seeds 0, 1)"),
        ("expand_spec: grid seed", lambda: expand_spec(dict(spec, grid={"seed": [1, 2]})), "spec sets 'seed' in the grid"),
        ("RunConfig: metrics twice", lambda: RunConfig(metrics=("mig", "mig")).check(), "metric 'mig' is asked for twice"),
        ("check_run: dci mode", lambda: check_run(RunConfig(**tiny, metrics=("dci",), metric_params={"dci": {"mode": "x"}})),
         "dci: unknown mode 'x'"),
        ("check_setting: unknown", lambda: check_setting("nosuch", 1), "unknown run setting 'nosuch'; accepted: dataset"),
        ("factorvae disc_width 10^9", lambda: get_framework("factorvae", obs_shape=(64, 64, 1), latents=2, model="fc",
                                                            width=8, disc_width=10 ** 9), "parameters (float32) would take"),
        ("mlp_discriminator: width -1", lambda: mlp_discriminator(2, width=-1), "width must be an integer >= 1, got -1"),
        ("mlp_discriminator: layers 10^6", lambda: mlp_discriminator(2, width=2, layers=10 ** 6),
         "layers must be at most 1,000"),
        ("EncoderFC: hidden 10^9", lambda: EncoderFC((64, 64, 1), 2, hidden=(10 ** 9,)), "EncoderFC's 4,101,000,000,004"),
        ("DecoderFC: hidden 0", lambda: DecoderFC((64, 64, 1), 2, hidden=(0,)), "layer widths must be integers >= 1"),
        ("resolve_device: meta", lambda: resolve_device("meta"), "unknown device 'meta'; accepted: cpu, cuda, cuda:N, mps"),
    ]


def test_a_run_of_nan_metrics_is_failed_not_done(tmp_path):
    "Issue 41: a run function's result of non-finite metrics is recorded as a failed run, with the reason."
    from disentlit.store import ResultsDB
    from disentlit.sweeps import run_sweep
    spec = dict(name="nan", base=dict(dataset="xyobject", latents=2, model="fc", width=8, steps=1, metrics=["mig"]))
    counts = run_sweep(spec, tmp_path / "n.sqlite", run_fn=lambda c, o, **k: dict(status="done", metrics=dict(mig=float("nan"))),
                       progress=False)
    assert counts["done"] == 0 and counts["failed"] == 1, counts
    db = ResultsDB(tmp_path / "n.sqlite")
    try: assert db.runs(status="failed")[0]["error"].startswith("the run's metrics are not finite: mig=nan"), db.runs()
    finally: db.close()


@pytest.mark.parametrize("i", range(len(_api_cases())), ids=[name for name, _, _ in _api_cases()])
def test_bad_api_input(i):
    from disentlit.core import DisentlitError
    name, call, says = _api_cases()[i]
    with pytest.raises(DisentlitError, match=None) as e: call()
    assert says in str(e.value), (name, str(e.value))


# Ownership (issue 41): disentlit writes, replaces or deletes only what it made. Each case points a command at a
# folder or file of the user's; the command must refuse in one line and leave every byte and name as it was.
USERS_FOLDER = {"config.json": '{"model_type": "bert", "hidden_size": 768}', "result.json": '{"accuracy": 0.91}',
                "log.jsonl": '{"step": 1, "loss": 2.3}\n', ".notes.tmp": "half of my notes",
                ".checkpoint.pt.123.0a1b2c3d.tmp": "named like an old temporary file of disentlit, but mine"}
LIGHTNING = {"checkpoint.pt": "PK\x03\x04 a Lightning checkpoint"}   # a foreign checkpoint.pt beside the user's files
OWNERSHIP = [
    pytest.param(["train", *TINY, "--out", "{u}"], "run directory", {}, id="train --out a user's folder"),
    pytest.param(["train", *TINY, "--out", "{u}"], "run directory", LIGHTNING, id="train --out a Lightning folder"),
    pytest.param(["sweep", "{w}/tiny.json", "--db", "{t}/new.sqlite", "--runs", "{u}"], "runs folder", {},
                 id="sweep --runs a user's folder"),
    pytest.param(["figures", "--db", "{w}/tiny.sqlite", "--out", "{u}"], "figures folder", {},
                 id="figures --out a user's folder"),
    pytest.param(["demo", "--out", "{u}", "--steps", "2"], "demo folder", {}, id="demo --out a user's folder"),
    pytest.param(["train", *TINY, "--out", "{t}/new/run"], "", {}, id="control: train --out a new folder"),
]


def _files(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("argv, says, extra", OWNERSHIP)
def test_a_users_folder_is_refused_untouched(world, tmp_path, argv, says, extra, monkeypatch):
    user = tmp_path / "user"
    user.mkdir()
    for name, text in {**USERS_FOLDER, **extra}.items(): (user / name).write_text(text)
    before = _files(user)
    fill = lambda s: s.replace("{w}", str(world)).replace("{u}", str(user)).replace("{t}", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with _env({"DISENTLIT_DATA": str(world / "data")}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try: code = main([fill(a) for a in argv])
        except SystemExit as e: code = e.code
    err = err.getvalue()
    if not says:                                             # the control: a new folder is made and written
        assert code == 0 and (tmp_path / "new" / "run" / "checkpoint.pt").exists(), err
        return
    assert code == 2 and err.startswith("disentlit: error:") and err.count("\n") == 1, (code, err)
    assert f"{says} {user} holds files disentlit did not make" in err, err
    assert _files(user) == before and out.getvalue() == ""


def test_a_users_folder_at_a_runs_place_is_refused_before_any_run(world, tmp_path, monkeypatch):
    "A folder of the user's where a sweep's last run would write: the sweep is refused before its first run, untouched."
    from disentlit.specs import expand_spec, load_spec
    _, configs = expand_spec(load_spec(world / "tiny.json"))
    runs = tmp_path / "runs"
    user = runs / configs[-1].run_id
    user.mkdir(parents=True)
    for name, text in USERS_FOLDER.items(): (user / name).write_text(text)
    before, err = _files(runs), io.StringIO()
    monkeypatch.chdir(tmp_path)
    with _env({"DISENTLIT_DATA": str(world / "data")}), contextlib.redirect_stdout(io.StringIO()), \
         contextlib.redirect_stderr(err):
        try: code = main(["sweep", str(world / "tiny.json"), "--db", str(tmp_path / "new.sqlite"), "--runs", str(runs)])
        except SystemExit as e: code = e.code
    assert code == 2 and f"run directory {user} holds files disentlit did not make" in err.getvalue(), err.getvalue()
    assert _files(runs) == before and not (tmp_path / "new.sqlite").exists()     # no marker, no database, no run


@pytest.mark.parametrize("db, says", [(":memory:", "would not keep the results"), ("", "give the path of a file"),
                                      ("{t}/touched.sqlite", "an empty file, not a disentlit results database")])
def test_a_database_that_cannot_keep_results_is_refused(world, tmp_path, db, says, monkeypatch):
    (tmp_path / "touched.sqlite").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    with _env({"DISENTLIT_DATA": str(world / "data")}), contextlib.redirect_stdout(io.StringIO()), \
         contextlib.redirect_stderr(err):
        for argv in (["sweep", str(world / "tiny.json"), "--db", db.replace("{t}", str(tmp_path))],
                     ["figures", "--db", db.replace("{t}", str(tmp_path)), "--out", str(tmp_path / "figs")]):
            try: code = main(argv)
            except SystemExit as e: code = e.code
            assert code == 2, (argv, err.getvalue())
    assert err.getvalue().count(says) == 2 or (db == "" and err.getvalue().count("\n") == 2), err.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["touched.sqlite"]          # nothing made: no ':memory:_runs'
    assert (tmp_path / "touched.sqlite").read_bytes() == b""


# Streams (issue 41 item 4): errors go to stderr or nowhere, never into --json's stdout; closed streams and narrow
# encodings end in one line or an exit status, never a traceback. Real processes: what a closed descriptor means
# cannot be imitated in this one.
def _closed(*fds):
    return lambda: [os.close(fd) for fd in fds]


@pytest.mark.parametrize("argv, close, env, code", [
    (["datasets", "--stats", "nope", "--json"], (2,), {}, 2),           # an error, stderr closed: stdout stays clean
    (["train", "--dataset", "xyobject", "--framework", "nope", "--json"], (2,), {}, 2),
    (["datasets", "--json"], (1,), {}, 2),                               # stdout closed: said at once, status 2
    (["datasets", "--json"], (1, 2), {}, 2),                             # both closed: the status says it
    (["datasets"], (), {"PYTHONIOENCODING": "ascii"}, 0),                # fine under ascii
    (["train", "--dataset", "xyobject", "--framework", "betavae", "--out", "{t}/blocker/r\u00e9sum\u00e9\u2013\u03b2"], (),
     {"PYTHONIOENCODING": "ascii"}, 2),                                  # a non-ASCII path in an error, ascii stream
], ids=["stderr closed", "stderr closed, train", "stdout closed", "both closed", "ascii", "ascii path"])
def test_streams_closed_or_narrow(tmp_path, argv, close, env, code):
    import subprocess
    (tmp_path / "blocker").write_text("a file where a folder should be")
    argv = [a.replace("{t}", str(tmp_path)) for a in argv]
    r = subprocess.run(["disentlit", *argv], capture_output=True, preexec_fn=_closed(*close),
                       env={**os.environ, **env, "DISENTLIT_DATA": str(tmp_path / "data")}, cwd=tmp_path)
    out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    assert r.returncode == code, (r.returncode, err[-800:])
    assert "Traceback" not in out + err, err[-800:]
    if 1 not in close and code == 2: assert out == "", out             # an error never lands in stdout
    if 2 not in close and code == 2: assert err.startswith("disentlit: error:") and err.count("\n") == 1, err
    if 1 in close and 2 not in close: assert "standard output is closed" in err
