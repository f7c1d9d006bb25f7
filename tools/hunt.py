#!/usr/bin/env python
"""The robustness hunt of issue 41: bad inputs and kills thrown at a disentlit checkout, each outcome classified.

    python tools/hunt.py                                  # this checkout, with the Python running the script
    python tools/hunt.py --python /work/main/.venv/bin/python --repo /work/main --json /tmp/hunt.json
    python tools/hunt.py --only checkpoint --jobs 2       # one class
    python tools/hunt.py --list                           # the catalogue's size by class, nothing run

Every case runs in a temporary folder of its own, as a subprocess of the target's `disentlit` command (or, for the
`api` class, as a call in a worker process of the target's Python), under a memory limit and a timeout. The classes
are the issue's: ownership, checkpoint, unbounded, settings, streams, api, and kill (SIGKILL/SIGTERM/SIGINT at a
seeded random moment, then the same command again, compared with an uninterrupted run).

Outcomes: `ok`, or a failure, the first that applies of
    hang             it ran past its timeout
    traceback        a Python traceback (or a crash); for the api class, an exception that is not disentlit's
    lost-file        a file of the user's (one the case made, not disentlit) changed or deleted
    orphan           a process of the killed command outlived it
    stdout-polluted  an error's words on stdout, or --json's stdout not exactly one JSON object
    silent-accept    bad input accepted (exit 0, work started, or an api call returning)
    nan              NaN or infinity returned or printed where a number was due
    lost-work        after a kill and a rerun, finished work missing (a run not done, a result gone)
    duplicated-work  after a kill and a rerun, finished work done again (a step logged twice, a done run redone)
    diverged         after a kill and a rerun, results not identical to an uninterrupted run's
    stray-temp       temporary files left behind after the rerun
    wrong-exit       an exit status other than the contract's (2 for bad input, 0 for a valid one)
    messy-error      exit 2, but not one `disentlit: error: ...` line on stderr
    touched          refused, but disentlit's own files in the folder were changed on the way

The script needs only the standard library; what needs torch (damaged checkpoints) runs in the target's Python.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import os
import random
import re
import select
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve()
CLASSES = ("ownership", "checkpoint", "unbounded", "settings", "streams", "api", "kill")
FAILURES = ("hang", "traceback", "lost-file", "orphan", "stdout-polluted", "silent-accept", "nan", "lost-work",
            "duplicated-work", "diverged", "stray-temp", "wrong-exit", "messy-error", "touched")
OUTCOMES = ("ok", *FAILURES)

# the tiny run every case starts from: 2 steps of 4 observations of a 2-latent fully-connected betavae, width 8
TINY = ["--dataset", "xyobject", "--framework", "betavae", "--latents", "2", "--model", "fc", "--width", "8",
        "--batch-size", "4", "--quiet"]
TRAIN = ["train", *TINY, "--steps", "2"]              # the tiny run itself (its folder: `{d}/run` once copied)
RESUME = ["train", *TINY, "--steps", "4"]             # the tiny run continued: what reads its checkpoint back
TINY_BASE = dict(dataset="xyobject", framework="betavae", latents=2, model="fc", width=8, steps=2, batch_size=4,
                 metrics=["mig"], metric_params=dict(mig=dict(num_train=50)))


def spec_text(base: dict | None = None, **top) -> str:
    "A tiny sweep spec as JSON text: one run of the tiny configuration with `base` settings and top-level keys changed."
    return json.dumps(dict(dict(name="tiny", base=dict(TINY_BASE, **(base or {}))), **top))


# ---------------------------------------------------------------------------------------------------------------------
# Cases

@dataclasses.dataclass
class Case:
    "One input thrown at disentlit, and what the contract says should come of it."
    cls: str                                 # one of CLASSES
    name: str                                # unique, short
    argv: list | None = None                 # a CLI case: the arguments after `disentlit` ({d}: the case's folder)
    call: str | None = None                  # an api case: a Python expression, run in the worker (D: its folder)
    kill: dict | None = None                 # a kill case: what runs, which signal (`run_kill`)
    expect: str = "refuse"                   # refuse (exit 2, one line) | accept (exit 0) | either (one or the other)
    env: dict = dataclasses.field(default_factory=dict)
    setup: Callable | None = None            # setup(folder): what the case's folder holds before the command
    stream: str = ""                         # no-stderr | no-stdout | no-streams | full-stdout | read-stdout
    started: str | None = None               # a glob under the folder: a new match means the command accepted
    check: Callable | None = None            # accepted: check(folder, stdout) -> a failure outcome or None
    accept_if: str | None = None             # api: a predicate on the returned `r` that makes a return correct
    timeout: float | None = None             # seconds (default --timeout)
    codes: tuple = (0,)                      # the exit statuses of an accepted input (a run that failed: 1)

    @property
    def command(self) -> str:
        if self.argv is not None: return "disentlit " + " ".join(_quote(a) for a in self.argv)
        if self.call is not None: return self.call
        return json.dumps(self.kill)


def _quote(a: str) -> str:
    if len(a) > 120: a = a[:60] + f"...<{len(a):,} chars>"
    return a if re.fullmatch(r"[\w@%+=:,./{}-]+", a) else "'" + a.replace("'", "'\\''") + "'"


def C(cls, name, *argv, progress: bool = False, **kw) -> Case:
    "A CLI case; `--quiet` added unless its progress lines are part of the case."
    quiet = [] if progress or "--quiet" in argv or not argv or argv[0] == "bench" and len(argv) < 2 else ["--quiet"]
    return Case(cls, name, argv=[*argv, *quiet], **kw)
def A(name, call, **kw) -> Case: return Case("api", name, call=call, **kw)


class Folder:
    "A case's folder, and which of its files are the user's (they must never change)."
    def __init__(self, path: Path, world: "World"):
        self.path, self.world, self.users = path, world, set()

    def _write(self, rel: str, content) -> Path:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes): p.write_bytes(content)
        else: p.write_text(content)
        return p

    def user(self, rel: str, content="the user's own file\n") -> Path:
        "A file of the user's: it must come out unchanged, whatever the command does."
        p = self._write(rel, content)
        self.users.add(rel)
        return p

    def own(self, rel: str, content) -> Path: return self._write(rel, content)

    def run(self, rel: str = "run", checkpoint: str | None = None) -> Path:
        "A copy of the tiny finished run, its checkpoint replaced by a damaged variant if `checkpoint` is named."
        dst = self.path / rel
        shutil.copytree(self.world.root / "run", dst)
        if checkpoint: shutil.copyfile(self.world.root / "ckpt" / f"{checkpoint}.pt", dst / "checkpoint.pt")
        return dst

    def db(self, rel: str = "tiny.sqlite") -> Path:
        "A copy of the tiny sweep's results database and its run directories beside it."
        dst = self.path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.world.root / "tiny.sqlite", dst)
        shutil.copytree(self.world.root / "tiny_runs", dst.with_name(dst.stem + "_runs"))
        return dst

    def fifo(self, rel: str) -> Path:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.exists() or p.is_symlink(): p.unlink()
        os.mkfifo(p)
        return p

    def link(self, rel: str, target: str) -> Path:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.exists() or p.is_symlink(): p.unlink()
        p.symlink_to(target)
        return p

    def sparse(self, rel: str, size: int, head: bytes = b"") -> Path:
        "A file of `size` bytes that takes no disk (a hole after `head`)."
        p = self._write(rel, head)
        with open(p, "r+b") as f: f.truncate(size)
        return p


def nested(depth: int, open_="[", close="]", inner="0") -> str: return open_ * depth + inner + close * depth


# ---------------------------------------------------------------------------------------------------------------------
# The catalogue, by class

def _user_folder(rel: str, *names: str) -> Callable:
    "A setup: folder `rel` holding the user's files `names`."
    return lambda f: [f.user(f"{rel}/{n}", f"the user's {n}\n") for n in names]


def ownership_cases() -> list[Case]:
    o = "ownership"
    hf = ("config.json", "pytorch_model.bin", "tokenizer.json", "README.md")
    lightning = ("hparams.yaml", "checkpoints/epoch=0-step=10.ckpt", "events.out.tfevents.1700000000.host")
    cases = [
        C(o, "train --out: folder of a user's config.json", *TRAIN, "--out", "{d}/mine",
          setup=lambda f: f.user("mine/config.json", '{"learning_rate": 0.1, "model": "mine"}')),
        C(o, "train --out: folder of a user's result.json", *TRAIN, "--out", "{d}/mine",
          setup=_user_folder("mine", "result.json")),
        C(o, "train --out: folder of a user's log.jsonl", *TRAIN, "--out", "{d}/mine",
          setup=lambda f: f.user("mine/log.jsonl", '{"step": 1, "loss": 0.5}\n')),
        C(o, "train --out: a HuggingFace model folder", *TRAIN, "--out", "{d}/hf", setup=_user_folder("hf", *hf)),
        C(o, "train --out: a Lightning log folder", *TRAIN, "--out", "{d}/lightning",
          setup=_user_folder("lightning", *lightning)),
        C(o, "train --out: a folder of a user's notes only", *TRAIN, "--out", "{d}/notes",
          setup=_user_folder("notes", "README.txt")),
        C(o, "train --out: a folder of a user's hidden .notes.tmp only", *TRAIN, "--out", "{d}/notes",
          setup=_user_folder("notes", ".notes.tmp")),
        C(o, "train --out: foreign checkpoint.pt and a user's .notes.tmp", *TRAIN, "--out", "{d}/other",
          setup=lambda f: (f.user("other/checkpoint.pt", b"PK\x03\x04 not ours" * 64),
                           f.user("other/.notes.tmp", "draft"))),
        C(o, "train --out: foreign torch checkpoint (a Lightning one)", *TRAIN, "--out", "{d}/other",
          setup=lambda f: (f.user("other/checkpoint.pt", (f.world.root / "ckpt" / "foreign_torch.pt").read_bytes()),
                           f.user("other/notes.txt"))),
        C(o, "train --out: user file named like disentlit's temp files", *TRAIN, "--out", "{d}/mine",
          setup=_user_folder("mine", ".checkpoint.pt.999999.deadbeef.tmp", "keep.txt")),
        C(o, "train --out: a user's metrics.json and PNGs", *TRAIN, "--out", "{d}/mine",
          setup=_user_folder("mine", "metrics.json", "traversals.png", "loss_curve.png")),
        C(o, "train --out: a user's curve.jsonl", *TRAIN, "--out", "{d}/mine",
          setup=lambda f: f.user("mine/curve.jsonl", '{"step": 5, "metrics": {}}\n')),
        C(o, "train --out: a user's .lock file", *TRAIN, "--out", "{d}/mine", setup=_user_folder("mine", ".lock")),
        C(o, "train --out: a symlink to a user's folder", *TRAIN, "--out", "{d}/alias",
          setup=lambda f: (f.user("elsewhere/thesis.tex"), f.link("alias", "elsewhere"))),
        C(o, "train --out: a user's subfolder inside", *TRAIN, "--out", "{d}/mine",
          setup=_user_folder("mine", "data/train.csv", "data/test.csv")),
        C(o, "train resume: a user's .notes.tmp inside our own run", *RESUME, "--out", "{d}/run", expect="accept",
          setup=lambda f: (f.run(), f.user("run/.notes.tmp", "my draft"))),
        C(o, "train resume: a user's .draft.tmp.swp inside our own run", *RESUME, "--out", "{d}/run",
          expect="accept", setup=lambda f: (f.run(), f.user("run/.draft.tmp.swp", "vim swap"))),
        C(o, "train finished rerun: a user's notes inside our own run", *TRAIN, "--out", "{d}/run", expect="accept",
          setup=lambda f: (f.run(), f.user("run/notes.md"), f.user("run/.ideas.tmp"))),
        C(o, "train default --out: runs/ of a user's", "train", *TINY, "--steps", "2", expect="accept",
          setup=_user_folder("runs", "paper_runs.csv", ".keep.tmp")),
        # figures --out
        C(o, "figures --out: a user's results.csv", "figures", "--db", "{d}/tiny.sqlite", "--out", "{d}/figs",
          setup=lambda f: (f.db(), f.user("figs/results.csv", "id,score\nmine,1\n"))),
        C(o, "figures --out: a user's effects.json and udr.csv", "figures", "--db", "{d}/tiny.sqlite", "--out",
          "{d}/figs", setup=lambda f: (f.db(), _user_folder("figs", "effects.json", "udr.csv")(f))),
        C(o, "figures --out: a user file named like figures' temp files", "figures", "--db", "{d}/tiny.sqlite",
          "--out", "{d}/figs",
          setup=lambda f: (f.db(), _user_folder("figs", ".results.csv.999999.deadbeef.tmp", "notes.txt")(f))),
        C(o, "figures --out: a user's hidden .draft.tmp", "figures", "--db", "{d}/tiny.sqlite", "--out", "{d}/figs",
          setup=lambda f: (f.db(), _user_folder("figs", ".draft.tmp")(f))),
        C(o, "figures --out: a user's learning_curves.png", "figures", "--db", "{d}/tiny.sqlite", "--out",
          "{d}/figs", setup=lambda f: (f.db(), _user_folder("figs", "learning_curves.png", "loss_curves.png")(f))),
        C(o, "figures --out: a folder of a user's paper", "figures", "--db", "{d}/tiny.sqlite", "--out", "{d}/paper",
          setup=lambda f: (f.db(), _user_folder("paper", "main.tex", "refs.bib")(f))),
        C(o, "figures --db: an empty file", "figures", "--db", "{d}/empty.sqlite", "--out", "{d}/figs",
          setup=lambda f: f.user("empty.sqlite", b"")),
        C(o, "figures --db: a user's JSON file", "figures", "--db", "{d}/results.json", "--out", "{d}/figs",
          setup=lambda f: f.user("results.json", '{"runs": []}')),
        C(o, "figures --db: a user's other SQLite database", "figures", "--db", "{d}/notes.db", "--out", "{d}/figs",
          setup=lambda f: _sqlite_of_user(f, "notes.db")),
        C(o, "figures --db :memory:", "figures", "--db", ":memory:", "--out", "{d}/figs"),
        C(o, "figures --out: the results database itself", "figures", "--db", "{d}/tiny.sqlite", "--out",
          "{d}/tiny.sqlite", setup=lambda f: f.db()),
        # sweep --db and --runs
        C(o, "sweep --db :memory:", "sweep", "{d}/tiny.json", "--db", ":memory:",
          setup=lambda f: f.own("tiny.json", spec_text())),
        C(o, "sweep --db '' (empty name)", "sweep", "{d}/tiny.json", "--db", "",
          setup=lambda f: f.own("tiny.json", spec_text())),
        C(o, "sweep --db: an empty file of the user's", "sweep", "{d}/tiny.json", "--db", "{d}/mine.sqlite",
          setup=lambda f: (f.own("tiny.json", spec_text()), f.user("mine.sqlite", b""))),
        C(o, "sweep --db: a user's CSV", "sweep", "{d}/tiny.json", "--db", "{d}/results.csv",
          setup=lambda f: (f.own("tiny.json", spec_text()), f.user("results.csv", "id,score\n1,2\n"))),
        C(o, "sweep --db: a user's other SQLite database", "sweep", "{d}/tiny.json", "--db", "{d}/notes.db",
          setup=lambda f: (f.own("tiny.json", spec_text()), _sqlite_of_user(f, "notes.db"))),
        C(o, "sweep --db: a folder", "sweep", "{d}/tiny.json", "--db", "{d}/folder",
          setup=lambda f: (f.own("tiny.json", spec_text()), f.user("folder/a.txt"))),
        C(o, "sweep --runs: a user's folder with files", "sweep", "{d}/tiny.json", "--db", "{d}/s.sqlite", "--runs",
          "{d}/mine", expect="either",
          setup=lambda f: (f.own("tiny.json", spec_text()), _user_folder("mine", "a.txt", ".b.tmp", "c/d.txt")(f))),
        C(o, "sweep --runs: a user's folder named like the run", "sweep", "{d}/tiny.json", "--db", "{d}/s.sqlite",
          "--runs", "{d}/mine",
          setup=lambda f: (f.own("tiny.json", spec_text()),
                           _user_folder(f"mine/{f.world.run_id}", "config.json", "checkpoint.pt", ".n.tmp")(f))),
        C(o, "sweep default runs folder: a user's files in DB_runs", "sweep", "{d}/tiny.json", "--db",
          "{d}/s.sqlite", expect="either",
          setup=lambda f: (f.own("tiny.json", spec_text()), _user_folder("s_runs", "mine.txt", ".mine.tmp")(f))),
        C(o, "sweep: run folder of the user's at the run's id", "sweep", "{d}/tiny.json", "--db", "{d}/s.sqlite",
          setup=lambda f: (f.own("tiny.json", spec_text()),
                           _user_folder(f"s_runs/{f.world.run_id}", "notes.txt", ".notes.tmp")(f))),
        C(o, "evaluate: a HuggingFace folder", "evaluate", "{d}/hf", "--metrics", "mig",
          setup=_user_folder("hf", *hf)),
        # demo --out: refused or not, the user's files must stay; a demo that starts is stopped at its first figure
        C(o, "demo --out: a user's index.html", "demo", "--steps", "1", "--out", "{d}/site", "--quiet",
          setup=_user_folder("site", "index.html", "style.css"), started="site/*.png"),
        C(o, "demo --out: a user's demo.sqlite", "demo", "--steps", "1", "--out", "{d}/site", "--quiet",
          setup=lambda f: _sqlite_of_user(f, "site/demo.sqlite"), started="site/*.png"),
        C(o, "demo --out: a user's figures/ folder", "demo", "--steps", "1", "--out", "{d}/site", "--quiet",
          setup=_user_folder("site", "figures/results.csv", "figures/fig1.png"), started="site/*.png"),
        C(o, "demo --out: a user's hidden temp file", "demo", "--steps", "1", "--out", "{d}/site", "--quiet",
          setup=_user_folder("site", ".index.html.999999.deadbeef.tmp", ".notes.tmp"), started="site/*.png"),
        C(o, "demo --out: a user's overlap_study.png", "demo", "--steps", "1", "--out", "{d}/site", "--quiet",
          setup=_user_folder("site", "overlap_study.png", "traversals_xysquares.png"), started="site/*.png"),
    ]
    return cases


def _sqlite_of_user(f: Folder, rel: str):
    "A user's own SQLite database (a notes table), registered as the user's."
    p = f.path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(p)) as con:
        con.executescript("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); "
                          "INSERT INTO notes (text) VALUES ('mine');")
        con.commit()
    f.users.add(rel)


CHECKPOINT_VARIANTS = {    # name: Python run on `s` (the tiny run's checkpoint, a dict) by `make_checkpoints`
    "no_optimiser_state": "s['optimisers'] = []",
    "empty_optimiser_state": "s['optimisers'] = [{}]",
    "two_optimiser_states": "s['optimisers'] = s['optimisers'] * 2",
    "optimiser_state_wrong_shapes": "st = s['optimisers'][0]['state']\n"
                                    "for v in st.values(): v['exp_avg'] = torch.zeros(3)",
    "optimiser_lr_nan": "s['optimisers'][0]['param_groups'][0]['lr'] = float('nan')",
    "optimiser_state_text": "s['optimisers'] = 'adam'",
    "step_negative": "s['step'] = -1",
    "step_fraction": "s['step'] = 1.5",
    "step_text": "s['step'] = 'abc'",
    "step_none": "s['step'] = None",
    "step_bool": "s['step'] = True",
    "step_tensor": "s['step'] = torch.tensor(1)",
    "step_beyond_its_config": "s['step'] = 3; s['result'] = None",
    "format_future": "s['format'] = 99",
    "format_text": "s['format'] = 'two'",
    "format_missing": "del s['format']",
    "format_zero": "s['format'] = 0",
    "data_rng_garbage": "s['data_rng'] = 'not a generator state'",
    "data_rng_wrong_state": "s['data_rng'] = json.dumps({'bit_generator': 'MT19937', 'state': {'key': [1], 'pos': 0}})",
    "data_rng_tensor": "s['data_rng'] = torch.zeros(5)",
    "noise_rng_short": "s['noise_rng'] = torch.zeros(3, dtype=torch.uint8)",
    "noise_rng_text": "s['noise_rng'] = 'abc'",
    "noise_rng_float": "s['noise_rng'] = torch.zeros(5056)",
    "config_list": "s['config'] = [1, 2]",
    "config_nan_lr": "s['config'] = dict(s['config'], lr=float('nan'))",
    "model_list": "s['model'] = [1, 2]",
    "model_text_values": "s['model'] = {k: 'w' for k in s['model']}",
    "result_text": "s['result'] = 'done'",
    "result_list": "s['result'] = [1, 2]",
    "result_nan_logs": "s['result'] = dict(s['result'], logs={'loss': float('nan')}, step=float('nan'))",
    "top_level_list": "s = [s]",
}


def make_checkpoints_script() -> str:
    "The script (run by the target's Python, which has torch) that writes every damaged checkpoint of the catalogue."
    lines = ["import copy, json, os, pickle, sys, torch",
             "src, out = sys.argv[1], sys.argv[2]",
             "base = torch.load(src, weights_only=True)",
             "def save(name, s): torch.save(s, os.path.join(out, name + '.pt'))"]
    for name, code in CHECKPOINT_VARIANTS.items():
        lines += ["s = copy.deepcopy(base)", *code.split("\n"), f"save({name!r}, s)"]
    lines += [
        "raw = open(src, 'rb').read()",
        "open(os.path.join(out, 'truncated_half.pt'), 'wb').write(raw[:len(raw) // 2])",
        "open(os.path.join(out, 'truncated_header.pt'), 'wb').write(raw[:100])",
        "mid = bytearray(raw); mid[len(raw) // 2: len(raw) // 2 + 4096] = bytes(4096)",
        "open(os.path.join(out, 'zeroed_middle.pt'), 'wb').write(bytes(mid))",
        "class Evil:\n    def __reduce__(self): return (os.system, ('touch pwned',))",
        "open(os.path.join(out, 'pickle_exploit.pt'), 'wb').write(pickle.dumps({'step': Evil()}))",
        "torch.save({'state_dict': {'w': torch.zeros(2)}, 'epoch': 3, 'pytorch-lightning_version': '2.0'},"
        " os.path.join(out, 'foreign_torch.pt'))",
    ]
    return "\n".join(lines) + "\n"


def checkpoint_cases() -> list[Case]:
    k = "checkpoint"
    resume = lambda name, variant, **kw: C(k, f"train resume: {name}", *RESUME, "--out", "{d}/run",
                                           setup=lambda f: f.run(checkpoint=variant), **kw)
    rerun = lambda name, variant: C(k, f"train finished rerun: {name}", *TRAIN, "--out", "{d}/run",
                                    setup=lambda f: f.run(checkpoint=variant))
    score = lambda name, variant: C(k, f"evaluate: {name}", "evaluate", "{d}/run", "--metrics", "mig", "--quiet",
                                    setup=lambda f: f.run(checkpoint=variant))
    skip = {"result_text", "result_list", "result_nan_logs", "foreign_torch"}
    cases = [resume(name.replace("_", " "), name) for name in CHECKPOINT_VARIANTS if name not in skip]
    cases += [resume(name.replace("_", " "), name) for name in
              ("truncated_half", "truncated_header", "zeroed_middle", "pickle_exploit")]
    cases += [rerun(n.replace("_", " "), n) for n in ("result_text", "result_list", "result_nan_logs",
                                                         "step_fraction", "format_future")]
    cases += [score(n.replace("_", " "), n) for n in ("step_text", "step_fraction", "step_negative", "format_future",
                                                         "model_list", "zeroed_middle", "config_list",
                                                         "result_text")]
    cases += [
        C(k, "train resume: checkpoint.pt is a folder", *RESUME, "--out", "{d}/run",
          setup=lambda f: (f.run(), (f.path / "run/checkpoint.pt").unlink(), (f.path / "run/checkpoint.pt").mkdir())),
        C(k, "evaluate: config.json says format 2 as text", "evaluate", "{d}/run", "--metrics", "mig",
          setup=lambda f: (f.run(), _edit_json(f.path / "run/config.json", format="2"))),
        C(k, "evaluate: config.json holds steps 1e400 (infinity)", "evaluate", "{d}/run", "--metrics", "mig",
          setup=lambda f: (f.run(), _edit_text(f.path / "run/config.json", '"steps": 2', '"steps": 1e400'))),
        C(k, "evaluate: config.json of a newer disentlit", "evaluate", "{d}/run", "--metrics", "mig",
          setup=lambda f: (f.run(), _edit_json(f.path / "run/config.json", format=99))),
        C(k, "train resume: config.json steps beyond its checkpoint's result", "train", *TINY, "--steps", "1",
          "--out", "{d}/run", setup=lambda f: (f.run(), _edit_json(f.path / "run/config.json", steps=1))),
        C(k, "train resume: log.jsonl steps out of order (refused, or cut at the damage)", *RESUME, "--out",
          "{d}/run", expect="either",
          setup=lambda f: (f.run(), f.own("run/log.jsonl", '{"step": 2, "loss": 1.0}\n{"step": 1, "loss": 1.0}\n')),
          check=lambda f, out: None if _increasing(_log_steps(f.path / "run/log.jsonl")) else "silent-accept"),
        C(k, "train resume: log.jsonl with a step beyond the checkpoint's (cut, or refused)", *RESUME, "--out",
          "{d}/run", expect="either",
          setup=lambda f: (f.run(), f.own("run/log.jsonl", '{"step": 1, "loss": 1.0}\n{"step": 9, "loss": 1.0}\n')),
          check=lambda f, out: None if _increasing(_log_steps(f.path / "run/log.jsonl")) else "silent-accept"),
        C(k, "evaluate: metrics.json of the run is garbage (it is recomputed or refused)", "evaluate", "{d}/run",
          "--metrics", "mig", "--quiet", "--json", expect="either",
          setup=lambda f: (f.run(), f.own("run/metrics.json", "{not json"))),
    ]
    return cases


def _edit_json(path: Path, **changes):
    d = json.loads(path.read_text()); d.update(changes); path.write_text(json.dumps(d))


def _edit_text(path: Path, old: str, new: str):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def _increasing(steps: list) -> bool:
    return all(isinstance(s, int) for s in steps) and all(a < b for a, b in zip(steps, steps[1:]))


def _log_steps(path: Path) -> list:
    try: return [json.loads(l)["step"] for l in path.read_text().splitlines() if l.strip()]
    except (OSError, ValueError, KeyError, TypeError, RecursionError): return ["damaged"]


DEEP = 100_000          # nesting that is a RecursionError for any recursive reader


def unbounded_cases() -> list[Case]:
    u, t = "unbounded", 30
    spec = lambda f: f.own("tiny.json", spec_text())
    return [
        C(u, "sweep: the spec is a FIFO", "sweep", "{d}/spec.yaml", "--db", "{d}/s.sqlite",
          setup=lambda f: f.fifo("spec.yaml"), timeout=t),
        C(u, "sweep: the spec is a FIFO named .json", "sweep", "{d}/spec.json", "--db", "{d}/s.sqlite",
          setup=lambda f: f.fifo("spec.json"), timeout=t),
        C(u, "evaluate: config.json is a FIFO", "evaluate", "{d}/run", "--metrics", "mig",
          setup=lambda f: (f.run(), f.fifo("run/config.json")), timeout=t),
        C(u, "train resume: checkpoint.pt is a FIFO", *RESUME, "--out", "{d}/run",
          setup=lambda f: (f.run(), f.fifo("run/checkpoint.pt")), timeout=t),
        C(u, "evaluate: checkpoint.pt is a FIFO", "evaluate", "{d}/run", "--metrics", "mig",
          setup=lambda f: (f.run(), f.fifo("run/checkpoint.pt")), timeout=t),
        C(u, "train resume: log.jsonl is a FIFO", *RESUME, "--out", "{d}/run",
          setup=lambda f: (f.run(), f.fifo("run/log.jsonl")), timeout=t),
        C(u, "figures --db: a FIFO", "figures", "--db", "{d}/r.sqlite", "--out", "{d}/figs",
          setup=lambda f: f.fifo("r.sqlite"), timeout=t),
        C(u, "sweep /dev/zero", "sweep", "/dev/zero", "--db", "{d}/s.sqlite", timeout=t),
        C(u, "sweep: spec.yaml links to /dev/zero", "sweep", "{d}/spec.yaml", "--db", "{d}/s.sqlite",
          setup=lambda f: f.link("spec.yaml", "/dev/zero"), timeout=t),
        C(u, "sweep: spec.json links to /dev/urandom", "sweep", "{d}/spec.json", "--db", "{d}/s.sqlite",
          setup=lambda f: f.link("spec.json", "/dev/urandom"), timeout=t),
        C(u, "evaluate: config.json links to /dev/zero", "evaluate", "{d}/run", "--metrics", "mig",
          setup=lambda f: (f.run(), f.link("run/config.json", "/dev/zero")), timeout=t),
        C(u, "train resume: checkpoint.pt links to /dev/zero", *RESUME, "--out", "{d}/run",
          setup=lambda f: (f.run(), f.link("run/checkpoint.pt", "/dev/zero")), timeout=t),
        C(u, "figures --db /dev/zero", "figures", "--db", "/dev/zero", "--out", "{d}/figs", timeout=t),
        C(u, "sweep --db /dev/full", "sweep", "{d}/tiny.json", "--db", "/dev/full", setup=spec, timeout=t),
        # a line no reader can parse is damage, cut with all that follows it, as a torn line or a step out of order is
        # (the checkpoint class's "cut at the damage"): what is asked of it here is no crash, no hang, a clean log
        C(u, "train resume: log.jsonl line nested 100,000 deep (refused, or cut at the damage)", *RESUME, "--out",
          "{d}/run", expect="either",
          setup=lambda f: (f.run(), f.own("run/log.jsonl", '{"step": 1, "loss": 1.0}\n{"step": 2, "x": '
                                          + nested(DEEP) + "}\n")),
          check=lambda f, out: None if _increasing(_log_steps(f.path / "run/log.jsonl")) else "silent-accept"),
        C(u, "train resume: curve.jsonl nested 100,000 deep (refused, or cut at the damage)", *RESUME, "--out",
          "{d}/run", expect="either",
          setup=lambda f: (f.run(), f.own("run/curve.jsonl", '{"step": 1, "m": ' + nested(DEEP) + "}\n")),
          check=lambda f, out: None if _increasing(_log_steps(f.path / "run/curve.jsonl")) else "silent-accept"),
        C(u, "evaluate: config.json nested 100,000 deep", "evaluate", "{d}/run", "--metrics", "mig",
          setup=lambda f: (f.run(), f.own("run/config.json", nested(DEEP, "{\"a\": ", "}", "1")))),
        C(u, "datasets --stats: cache file nested 100,000 deep", "datasets", "--stats", "xyobject", "--json",
          setup=lambda f: _stats_cache(f, nested(DEEP)), expect="either"),
        C(u, "sweep: spec.json nested 100,000 deep in base", "sweep", "{d}/deep.json", "--db", "{d}/s.sqlite",
          setup=lambda f: f.own("deep.json", '{"name": "deep", "base": {"dataset_params": {"a": '
                                + nested(DEEP) + "}}}")),
        C(u, "sweep: spec.yaml nested 100,000 deep", "sweep", "{d}/deep.yaml", "--db", "{d}/s.sqlite",
          setup=lambda f: f.own("deep.yaml", "name: deep\nbase: " + nested(DEEP) + "\n")),
        C(u, "train --metric-param nested 100,000 deep", *TRAIN, "--out", "{d}/run",
          "--metric-param", "mig=" + nested(DEEP)),
        C(u, "train --set nested 100,000 deep", *TRAIN, "--out", "{d}/run", "--set", "fixed=" + nested(DEEP)),
        C(u, "train --model fc --width 10^7", "train", *TINY[:6], "--model", "fc", "--width", "10000000",
          "--steps", "2", "--batch-size", "4", "--quiet", "--out", "{d}/run", timeout=60),
        C(u, "train --width 10^12", *TRAIN, "--width", "1000000000000", "--out", "{d}/run", timeout=60),
        C(u, "train factorvae disc_width 10^9", "train", "--dataset", "xyobject", "--framework", "factorvae",
          "--latents", "2", "--model", "fc", "--width", "8", "--batch-size", "4", "--steps", "2", "--quiet",
          "--param", "disc_width=1000000000", "--out", "{d}/run", timeout=60),
        C(u, "train factorvae disc_layers 10^6", "train", "--dataset", "xyobject", "--framework", "factorvae",
          "--latents", "2", "--model", "fc", "--width", "8", "--batch-size", "4", "--steps", "2", "--quiet",
          "--param", "disc_layers=1000000", "--out", "{d}/run", timeout=t),
        C(u, "train --steps 10^12", "train", *TINY, "--steps", "1000000000000", "--out", "{d}/run",
          started="run/log.jsonl", timeout=t),
        C(u, "train --steps 2^62", "train", *TINY, "--steps", str(2 ** 62), "--out", "{d}/run",
          started="run/log.jsonl", timeout=t),
        C(u, "sweep: base steps 10^12", "sweep", "{d}/big.json", "--db", "{d}/s.sqlite",
          setup=lambda f: f.own("big.json", spec_text(dict(steps=10 ** 12))), started="s_runs/*/log.jsonl",
          timeout=t),
        C(u, "sweep: a spec of 100,000 runs starts promptly (or is refused)", "sweep", "{d}/max.json", "--db",
          "{d}/s.sqlite", expect="either",
          setup=lambda f: f.own("max.json", spec_text(seeds=list(range(1000, 101_000)))),
          started="s_runs/*", timeout=60),
        C(u, "sweep: a spec file of 2 MB", "sweep", "{d}/big.yaml", "--db", "{d}/s.sqlite",
          setup=lambda f: f.own("big.yaml", "name: big\n" + "# padding\n" * 200_000)),
        C(u, "train resume: log.jsonl a sparse 8 GB file", *RESUME, "--out", "{d}/run",
          setup=lambda f: (f.run(), f.sparse("run/log.jsonl", 8 << 30, b'{"step": 1}\n'))),
        C(u, "train resume: checkpoint.pt a sparse 50 GB file", *RESUME, "--out", "{d}/run",
          setup=lambda f: (f.run(), f.sparse("run/checkpoint.pt", 50 << 30, b"PK\x03\x04"))),
        C(u, "evaluate: config.json a sparse 8 GB file", "evaluate", "{d}/run", "--metrics", "mig",
          setup=lambda f: (f.run(), f.sparse("run/config.json", 8 << 30, b"{"))),
        C(u, "evaluate --batch-size 10^12", "evaluate", "{d}/run", "--metrics", "mig", "--batch-size",
          "1000000000000", "--quiet", expect="either", setup=lambda f: f.run()),
        C(u, "evaluate: mig num_train 10^12 via metric-param", *TRAIN, "--out", "{d}/run", "--eval-every", "1",
          "--metric-param", "mig={\"num_train\": 1000000000000}", "--metrics", "mig", timeout=t),
    ]


def _stats_cache(f: Folder, text: str):
    "Put `text` where every statistics cache file of the case's data folder would be (made by the world)."
    for p in (f.world.root / "data" / "stats").glob("*.json"):
        dst = f.path.parent / "data" / "stats" / p.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(text)


def settings_cases() -> list[Case]:
    s = "settings"
    tr = lambda name, *flags, **kw: C(s, f"train {name}", *TRAIN, *flags, "--out", "{d}/run", **kw)
    fvae = ["train", "--dataset", "xyobject", "--latents", "2", "--model", "fc", "--width", "8", "--batch-size", "4",
            "--steps", "2", "--quiet", "--out", "{d}/run", "--framework"]
    fw = lambda name, framework, *params: C(s, f"train {framework} {name}", *fvae, framework,
                                            *[x for p in params for x in ("--param", p)])
    sw = lambda name, *flags, **kw: C(s, f"sweep {name}", "sweep", "{d}/tiny.json", "--db", "{d}/s.sqlite", *flags,
                                      setup=lambda f: f.own("tiny.json", spec_text()), **kw)
    spec = lambda name, text, **kw: C(s, f"sweep spec: {name}", "sweep", "{d}/spec.json", "--db", "{d}/s.sqlite",
                                      setup=lambda f: f.own("spec.json", text), **kw)
    ev = lambda name, *flags: C(s, f"evaluate {name}", "evaluate", "{d}/run", *flags, "--quiet",
                                setup=lambda f: f.run())
    bench = lambda name, *flags: C(s, f"bench {name}", "bench", *flags, "--quiet", started="after:20")
    fig = lambda name, *flags, **kw: C(s, f"figures {name}", "figures", *flags, **kw)
    dist = lambda name, *flags, **kw: C(s, f"distances {name}", "distances", "--dataset", "xyobject", "--pairs",
                                        "20", "--quiet", *flags, **kw)
    ds = lambda name, *flags: C(s, f"datasets {name}", "datasets", *flags)
    pr = lambda name, *flags, **kw: C(s, f"predict {name}", "predict", "--dataset", "xyobject", "--traversals",
                                      "4", "--quiet", *flags, **kw)
    demo = lambda name, *flags: C(s, f"demo {name}", "demo", "--out", "{d}/demo", "--quiet", *flags,
                                  started="demo/*.png", timeout=60)
    mp = lambda v: ("--metric-param", v)
    return [
        # train: every flag
        tr("--width 0", "--width", "0"), tr("--width -8", "--width", "-8"),
        tr("--model cnn", "--model", "cnn"), tr("--model ''", "--model", ""),
        tr("--loss box_blur --loss-param radius=-3", "--loss", "box_blur", "--loss-param", "radius=-3"),
        tr("--loss box_blur --loss-param radius=1e9 (a mean of the image: either)", "--loss", "box_blur",
           "--loss-param", "radius=1000000000", "--json", expect="either"),
        tr("--loss-param scale=nan", "--loss-param", "scale=nan"), tr("--loss-param scale=-1", "--loss-param",
                                                                       "scale=-1"),
        tr("--loss-param scale=inf", "--loss-param", "scale=inf"),
        tr("--loss bce --loss-param eps=2", "--loss", "bce", "--loss-param", "eps=2"),
        tr("--loss-param radius=3 twice", "--loss", "box_blur", "--loss-param", "radius=3", "--loss-param",
           "radius=4"),
        tr("--checkpoint-every -1", "--checkpoint-every", "-1"), tr("--eval-every 0", "--eval-every", "0"),
        tr("--eval-every -5", "--eval-every", "-5"), tr("--log-every 0", "--log-every", "0"),
        tr("--log-every -1", "--log-every", "-1"), tr("--init-seed -1", "--init-seed", "-1"),
        tr("--init-seed 2^64", "--init-seed", str(2 ** 64)),
        tr("--metrics mig,mig", "--metrics", "mig,mig"), tr("--metrics ''", "--metrics", ""),
        tr("--metrics mig,,dci", "--metrics", "mig,,dci"), tr("--metrics nosuch", "--metrics", "nosuch"),
        tr("--metrics MIG", "--metrics", "MIG"),
        tr("--metric-param dci mode nosuch", "--metrics", "mig,dci", *mp('dci={"mode": "nosuch"}')),
        tr("--metric-param mig num_train 10^12", "--metrics", "mig", *mp('mig={"num_train": 1000000000000}')),
        tr("--metric-param mig bins 0", "--metrics", "mig", *mp('mig={"bins": 0}')),
        tr("--metric-param mig bins nan", "--metrics", "mig", *mp('mig={"bins": NaN}')),
        tr("--metric-param for a metric not asked", "--metrics", "mig", *mp('sap={"num_train": 10}')),
        tr("--metric-param mig=5", "--metrics", "mig", *mp("mig=5")),
        tr("--metric-param mig with a key twice", "--metrics", "mig", *mp('mig={"num_train": 50, "num_train": 60}')),
        tr("--metric-param mig twice", "--metrics", "mig", *mp('mig={"num_train": 50}'), *mp('mig={"bins": 10}')),
        tr("--param beta=1 --param beta=2", "--param", "beta=1", "--param", "beta=2"),
        tr("--param beta=nan", "--param", "beta=nan"), tr("--param beta=inf", "--param", "beta=inf"),
        tr("--beta 1e309", "--beta", "1e309"), tr("--beta -0.0", "--beta", "-0.0", expect="either"),
        tr("--lr 1e309", "--lr", "1e309"), tr("--lr 'nan'", "--lr", " nan"),
        tr("--device meta", "--device", "meta"), tr("--device cuda:99", "--device", "cuda:99"),
        tr("--device cuda (no GPU)", "--device", "cuda"), tr("--device mps (not a Mac)", "--device", "mps"),
        tr("--device cpu:1 (torch takes it: either)", "--device", "cpu:1", expect="either"),
        tr("--device CPU", "--device", "CPU"),
        tr("--device ''", "--device", ""), tr("--device cuda:-1", "--device", "cuda:-1"),
        tr("--device xla", "--device", "xla"),
        tr("--precision BF16", "--precision", "BF16"), tr("--precision ''", "--precision", ""),
        tr("--dataset XYObject (case)", "--dataset", "XYObject"), tr("--framework BetaVAE", "--framework", "BetaVAE"),
        tr("--loss MSE", "--loss", "MSE"), tr("--set rgb=1 on xysquares", "--dataset", "xysquares", "--set", "rgb=1"),
        tr("--set relabel_seed=1.5", "--set", "relabel_seed=1.5"),
        tr("--set fixed=x=0,x=1", "--set", "fixed=x=0,x=1"), tr("--set fixed=x=-1", "--set", "fixed=x=-1"),
        tr("--set grid_spacing=4 and ' grid_spacing'=5", "--set", "grid_spacing=4", "--set", " grid_spacing=5"),
        tr("--set grid_spacing=nan", "--set", "grid_spacing=nan"),
        tr("--steps 1.5", "--steps", "1.5"), tr("--seed 1.0", "--seed", "1.0"),
        tr("--batch-size 1 with betatcvae mss", "--framework", "betatcvae", "--param", "estimator=mss",
           "--batch-size", "1"),
        fw("disc_width 0", "factorvae", "disc_width=0"), fw("disc_layers 0", "factorvae", "disc_layers=0"),
        fw("disc_lr nan", "factorvae", "disc_lr=nan"), fw("disc_lr -1", "factorvae", "disc_lr=-1"),
        fw("gamma inf", "factorvae", "gamma=inf"), fw("lambda_od -1", "dipvae_i", "lambda_od=-1"),
        fw("lambda_d nan", "dipvae_ii", "lambda_d=nan"), fw("p 0", "wae", "p=0"), fw("lambda_mmd nan", "wae",
                                                                                        "lambda_mmd=nan"),
        fw("lambda_p -1", "wae", "lambda_p=-1"), fw("c_max inf", "annealedvae", "c_max=inf"),
        fw("iterations -1", "annealedvae", "iterations=-1"), fw("dataset_size 0", "betatcvae", "dataset_size=0"),
        fw("alpha nan", "betatcvae", "alpha=nan"), fw("beta -1", "adagvae", "beta=-1"),
        fw("estimator for factorvae", "factorvae", "estimator=mws"),
        # sweep: every flag
        sw("--workers -1", "--workers", "-1"), sw("--workers nan", "--workers", "nan"),
        sw("--lease 1e400", "--lease", "1e400"), sw("--device meta", "--device", "meta"),
        sw("--device cuda:99", "--device", "cuda:99"), sw("--device cuda (no GPU)", "--device", "cuda"),
        sw("--engine ''", "--engine", ""), sw("--engine LOCAL", "--engine", "LOCAL"),
        sw("--engine submitit", "--engine", "submitit"), sw("--cpus 0.5 with local", "--cpus", "0.5"),
        sw("--runs ''", "--runs", ""), sw("--lease -inf", "--lease", "-inf"),
        sw("DISENTLIT_LEASE=1e400", "--resume", env={"DISENTLIT_LEASE": "1e400"}),
        sw("DISENTLIT_PROGRESS=LINES", env={"DISENTLIT_PROGRESS": "LINES"}),
        sw("DISENTLIT_MALLOC=2", env={"DISENTLIT_MALLOC": "2"}),
        # sweep specs: arms against grid, seeds, repeats, settings checked before any run trains
        spec("an arm's loss against the grid's", spec_text(arms=[{"loss": "bce"}], grid={"loss": ["mse", "box_blur"]})),
        spec("an arm's seed against repeats", spec_text(arms=[{"seed": 5}], repeats=2)),
        spec("an arm's seed against seeds", spec_text(arms=[{"seed": 5}, {"seed": 6}], seeds=[1])),
        spec("base seed against repeats", spec_text(dict(seed=7), repeats=2)),
        spec("an arm's beta against the grid's", spec_text(arms=[{"framework_params.beta": 1.0}],
                                                           grid={"framework_params.beta": [2.0, 4.0]})),
        spec("dotted and nested beta in base", spec_text({"framework_params.beta": 1.0,
                                                          "framework_params": {"beta": 2.0}})),
        spec("seeds [1, 1.5]", spec_text(seeds=[1, 1.5])), spec("seeds [-1]", spec_text(seeds=[-1])),
        spec("seeds [2^64]", spec_text(seeds=[2 ** 64])), spec("repeats 1.5", spec_text(repeats=1.5)),
        spec("repeats '2'", spec_text(repeats="2")), spec("grid loss []", spec_text(grid={"loss": []})),
        spec("grid loss 'mse' (not a list)", spec_text(grid={"loss": "mse"})),
        spec("grid of an unknown setting", spec_text(grid={"nosuch": [1, 2]})),
        spec("grid steps [0]", spec_text(grid={"steps": [0]})),
        spec("metrics [mig, mig]", spec_text(dict(metrics=["mig", "mig"]))),
        spec("dci mode nosuch", spec_text(dict(metrics=["mig", "dci"], metric_params={"dci": {"mode": "nosuch"}})),
             started="s_runs/*/log.jsonl"),
        spec("mig num_train 10^12", spec_text(dict(metric_params={"mig": {"num_train": 10 ** 12}})),
             started="s_runs/*/log.jsonl"),
        spec("device meta", spec_text(dict(device="meta"))), spec("lr '0.1' as text", spec_text(dict(lr="0.1"))),
        spec("name ''", spec_text(name="")), spec("name 5", spec_text(name=5)),
        spec("name with a slash", spec_text(name="a/../../b"), expect="either"),
        spec("arms []", spec_text(arms=[])), spec("arms {}", spec_text(arms={})),
        spec("arms of an unknown setting", spec_text(arms=[{"nosuch": 1}])),
        spec("two identical arms", spec_text(arms=[{"loss": "mse"}, {"loss": "mse"}])),
        spec("width 10^7 with model fc", spec_text(dict(width=10 ** 7))),
        spec("latents 10^5", spec_text(dict(latents=10 ** 5))),
        spec("steps true", spec_text(dict(steps=True))),
        spec("dataset_params of the wrong dataset", spec_text(dict(dataset_params={"rgb": True}))),
        spec("framework_params beta -1", spec_text(dict(framework_params={"beta": -1}))),
        # evaluate
        ev("--metrics mig,mig", "--metrics", "mig,mig"), ev("--metrics MIG", "--metrics", "MIG"),
        ev("--metrics ' '", "--metrics", " "), ev("--seed 2^64", "--seed", str(2 ** 64)),
        ev("--batch-size -1", "--batch-size", "-1"), ev("--metrics mig,", "--metrics", "mig,nosuch"),
        ev("--seed nan", "--seed", "nan"), ev("--metrics udr", "--metrics", "udr"),
        # bench
        bench("train --steps 0", "train", "--steps", "0"), bench("train --steps -1", "train", "--steps", "-1"),
        bench("train --device meta", "train", "--device", "meta"),
        bench("train --device cuda:99", "train", "--device", "cuda:99"),
        bench("train --repeats 0", "train", "--repeats", "0"), bench("metrics --repeats -1", "metrics", "--repeats",
                                                                     "-1"),
        bench("loss --batch-size -1", "loss", "--batch-size", "-1"),
        bench("train --precision fp32,fp32", "train", "--precision", "fp32,fp32"),
        bench("train --param beta=nan", "train", "--param", "beta=nan"),
        bench("metrics --reference ''", "metrics", "--reference", ""),
        bench("data --steps 1", "data", "--steps", "1"), bench("data --device cpu", "data", "--device", "cpu"),
        bench("data --framework wae", "data", "--framework", "wae"),
        bench("train --param beta=1 --param beta=2", "train", "--param", "beta=1", "--param", "beta=2"),
        bench("loss --compile", "loss", "--compile"),
        # figures
        fig("--runs a file", "--db", "{d}/tiny.sqlite", "--out", "{d}/figs", "--runs", "{d}/tiny.sqlite",
            setup=lambda f: f.db()),
        fig("--out ''", "--db", "{d}/tiny.sqlite", "--out", "", setup=lambda f: f.db()),
        fig("--db ''", "--db", "", "--out", "{d}/figs"),
        fig("--sweep with a NUL-free odd name", "--db", "{d}/tiny.sqlite", "--out", "{d}/figs", "--sweep", "%",
            setup=lambda f: f.db()),
        # distances, datasets, predict
        dist("--loss BCE", "--loss", "BCE"), dist("--set image_size=0", "--set", "image_size=0"),
        dist("--seed 1.5", "--seed", "1.5"), C(s, "distances --dataset ''", "distances", "--dataset", ""),
        dist("--set fixed=x=0 twice", "--set", "fixed=x=0", "--set", "fixed=y=0"),
        dist("--set grid_spacing=1e3 (one position: refused, or no NaN)", "--set", "grid_spacing=1000", "--json",
             expect="either"),
        ds("--stats xysquares --set num_squares=nan", "--stats", "xysquares", "--set", "num_squares=nan"),
        ds("--prepare ''", "--prepare", ""), ds("--prepare dsprites --source ''", "--prepare", "dsprites",
                                                "--source", ""),
        ds("--stats xysquares --set grid_size=0", "--stats", "xysquares", "--set", "grid_size=0"),
        ds("--stats xyobject --set grid_spacing=-1", "--stats", "xyobject", "--set", "grid_spacing=-1"),
        ds("--stats xysquares --set relabel_seed=nan", "--stats", "xysquares", "--set", "relabel_seed=nan"),
        ds("--stats xyobject --set fixed=x=0,y=0", "--stats", "xyobject", "--set", "fixed=x=0,y=0"),
        pr("--loss-param radius=1e9 (either, but no NaN)", "--loss", "box_blur", "--loss-param",
           "radius=1000000000", "--json", expect="either"),
        pr("--traversals nan", "--traversals", "nan"),
        pr("--loss-param alpha=nan", "--loss", "box_blur", "--loss-param", "alpha=nan"),
        pr("--seed 2^64", "--seed", str(2 ** 64)),
        # demo
        demo("--steps -1", "--steps", "-1"), demo("--steps nan", "--steps", "nan"),
        demo("--steps 10^12", "--steps", "1000000000000"), demo("--steps 1.5", "--steps", "1.5"),
        C(s, "demo --out ''", "demo", "--out", "", "--steps", "1", "--quiet", started="*.png", timeout=60),
    ]


def stream_cases() -> list[Case]:
    s = "streams"
    bad = [("train", "train", "--dataset", "nope", "--framework", "betavae", "--json"),
           ("sweep", "sweep", "{d}/nowhere.yaml", "--db", "{d}/s.sqlite", "--json"),
           ("evaluate", "evaluate", "{d}/nowhere", "--json"),
           ("figures", "figures", "--db", "{d}/nowhere.sqlite", "--out", "{d}/figs", "--json"),
           ("datasets", "datasets", "--stats", "nope", "--json"),
           ("distances", "distances", "--dataset", "xyobject", "--pairs", "0", "--json"),
           ("bench", "bench", "data", "--batch-size", "0", "--json"),
           ("predict", "predict", "--dataset", "nope", "--json"),
           ("demo", "demo", "--steps", "0", "--json", "--out", "{d}/demo"),
           ("parser", "train", "--json", "--steps", "x")]
    cases = [C(s, f"{name} bad input --json, stderr closed", *argv, stream="no-stderr") for name, *argv in bad]
    cases += [C(s, f"{name} bad input --json, stdout to /dev/full", *argv, stream="full-stdout")
              for name, *argv in bad[:3]]
    cases += [C(s, f"{name} bad input, both streams closed", *argv, stream="no-streams") for name, *argv in bad[:2]]
    ok_json = lambda f, out: None
    cases += [
        C(s, "train --json, stderr closed, progress on", "train", *TINY[:-1], "--steps", "2", "--json", "--out",
          "{d}/run", stream="no-stderr", expect="accept", progress=True),
        C(s, "sweep --json, stderr closed, progress on", "sweep", "{d}/tiny.json", "--db", "{d}/s.sqlite", "--json",
          setup=lambda f: f.own("tiny.json", spec_text()), stream="no-stderr", expect="accept", progress=True),
        C(s, "datasets --json, stdout closed", "datasets", "--json", stream="no-stdout", expect="either"),
        C(s, "datasets, stdout closed", "datasets", stream="no-stdout", expect="either"),
        C(s, "train --json, stdout closed", *TRAIN, "--json", "--out", "{d}/run", stream="no-stdout",
          expect="either"),
        C(s, "evaluate --json, stdout closed", "evaluate", "{d}/run", "--metrics", "mig", "--json", "--quiet",
          setup=lambda f: f.run(), stream="no-stdout", expect="either"),
        C(s, "distances --json, stdout open for reading only", "distances", "--dataset", "xyobject", "--pairs", "20",
          "--json", "--quiet", stream="read-stdout", expect="either"),
        C(s, "figures --json with a damaged row: warning not on stdout", "figures", "--db", "{d}/tiny.sqlite",
          "--out", "{d}/figs", "--json", expect="accept", setup=lambda f: (f.db(), _damage_row(f, "tiny.sqlite"))),
        C(s, "train --json: a diverged run's summary has no NaN", *TRAIN, "--lr", "1e30", "--json", "--out",
          "{d}/run", expect="either", codes=(0, 1)),
    ]
    asc = dict(env={"PYTHONIOENCODING": "ascii"}, expect="either")
    cases += [
        C(s, "ascii: train --out résumé/", *TRAIN, "--out", "{d}/résumé", **asc),
        C(s, "ascii: train --out 模型 --json", *TRAIN, "--out", "{d}/模型", "--json", **asc),
        C(s, "ascii: evaluate rün/", "evaluate", "{d}/rün", "--metrics", "mig", "--quiet",
          setup=lambda f: f.run("rün"), **asc),
        C(s, "ascii: sweep spëc.json --db résultats.sqlite", "sweep", "{d}/spëc.json", "--db",
          "{d}/résultats.sqlite", "--quiet", setup=lambda f: f.own("spëc.json", spec_text()), **asc),
        C(s, "ascii: sweep named süß", "sweep", "{d}/s.json", "--db", "{d}/s.sqlite", "--quiet",
          setup=lambda f: f.own("s.json", spec_text(name="süß")), **asc),
        C(s, "ascii: figures --out 図/", "figures", "--db", "{d}/tiny.sqlite", "--out", "{d}/図",
          setup=lambda f: f.db(), **asc),
        C(s, "ascii: figures --db données.sqlite", "figures", "--db", "{d}/données.sqlite", "--out", "{d}/figs",
          setup=lambda f: f.db("données.sqlite"), **asc),
        C(s, "ascii: bad dataset name nöpe", "train", "--dataset", "nöpe", "--framework", "betavae",
          env={"PYTHONIOENCODING": "ascii"}),
        C(s, "ascii: missing spec ünknown.yaml", "sweep", "{d}/ünknown.yaml", "--db", "{d}/s.sqlite",
          env={"PYTHONIOENCODING": "ascii"}),
        C(s, "ascii: datasets --stats with a non-ASCII param", "datasets", "--stats", "xyobject", "--set", "ñ=1",
          env={"PYTHONIOENCODING": "ascii"}),
    ]
    return cases


def _damage_row(f: Folder, rel: str):
    "Garbage in the result column of the only run of a copied results database (figures should warn, not fail)."
    with contextlib.closing(sqlite3.connect(f.path / rel)) as con:
        con.execute("UPDATE runs SET result='{\"final\": \"garbage' WHERE rowid = 1"); con.commit()


# the api worker's namespace: numpy, every public module, small arrays, and helpers that make folders and sweeps
API_PRELUDE = r'''
import math, os, numpy as np, torch
from disentlit import (metrics, newer_metrics, statistics, factors, data, catalog, losses, distances, evaluation, udr,
                       specs, config, store, sweeps, family, models, training, core)
from disentlit.metrics import mig, dci, sap, histogram_discretize
from disentlit.newer_metrics import irs, infomec, modularity_explicitness, dci_es, explicitness
from disentlit.statistics import (median_difference, mann_whitney, rank_trend, effect, holm, compare,
                                  stand_in_rows, contrast)
from disentlit.factors import FactorSpace
from disentlit.data import XYSquares, XYObject, to_float, DeviceData, channel_moments
from disentlit.catalog import get_dataset, Relabelled, Fixed
from disentlit.losses import get_loss, box_blur, box_band, MSELoss, BCELoss, box_blur_loss, distance_report
from disentlit.distances import order_score, spearman_rows, d_gt, predict_score
from disentlit.evaluation import metric_plan, evaluate, encode_indices
from disentlit.udr import udr
from disentlit.specs import expand_spec, load_spec
from disentlit.config import RunConfig, check_setting, read_config
from disentlit.store import ResultsDB
from disentlit.sweeps import run_sweep
from disentlit.family import get_framework, mlp_discriminator
from disentlit.models import EncoderFC, EncoderConv64, check_obs_shape
from disentlit.training import resolve_device
nan, inf = float("nan"), float("inf")
_rng = np.random.default_rng(0)
Z = _rng.normal(size=(300, 3)); Y = _rng.integers(0, 3, size=(300, 2))
ZT = _rng.normal(size=(100, 3)); YT = _rng.integers(0, 3, size=(100, 2))
def poke(a, value=nan, i=0):
    a = np.array(a, dtype=float); a.flat[i] = value; return a
def tiny_spec(**base):
    return dict(name="api", base=dict(dict(dataset="xyobject", framework="betavae", latents=2, model="fc", width=8,
                                           steps=1, batch_size=4, metrics=["mig"]), **base))
def sweep_with(run_fn, **kw):
    return run_sweep(tiny_spec(), os.path.join(D, "api.sqlite"), run_fn=run_fn, progress=False, **kw)
def fifo(name):
    p = os.path.join(D, name); os.mkfifo(p); return p
def nan_encoder(x):
    return torch.full((len(x), 3), float("nan"))
XYO = XYObject()
'''


def api_cases() -> list[Case]:
    ok = "r['failed'] == 1 and r['running'] == 0"       # a broken run function: the run recorded as failed
    return [
        # metrics
        A("mig: NaN factor", "mig(Z, poke(Y))"), A("mig: infinite factor", "mig(Z, poke(Y, inf))"),
        A("mig: constant latents (a finite score or refused)", "mig(np.zeros((300, 3)), Y)", accept_if="finite(r)"),
        A("mig: one factor value", "mig(Z, np.zeros((300, 1)))"), A("mig: lengths differ", "mig(Z[:10], Y)"),
        A("mig: bins 10^9", "mig(Z, Y, bins=10**9)", timeout=40), A("mig: bins 1.5", "mig(Z, Y, bins=1.5)"),
        A("mig: text factors", "mig(Z, np.array([['a', 'b']] * 300))"), A("mig: empty", "mig(np.zeros((0, 3)), Y[:0])"),
        A("mig: 3-D latents", "mig(np.zeros((300, 3, 2)), Y)"),
        A("dci: NaN factor", "dci(Z, poke(Y))"), A("dci: mode nosuch", "dci(Z, Y, mode='nosuch')"),
        A("dci: test latents of another width", "dci(Z, Y, ZT[:, :2], YT, mode='fast')"),
        A("dci: test set without factors", "dci(Z, Y, ZT, None, mode='fast')"),
        A("dci: constant latents (a finite score or refused)", "dci(np.zeros((300, 3)), Y, mode='fast')",
          accept_if="finite(r)"),
        A("dci: seed -1", "dci(Z, Y, mode='fast', seed=-1)"),
        A("sap: NaN factor", "sap(Z, poke(Y))"), A("sap: continuous flags of the wrong length",
                                                   "sap(Z, Y, continuous=[True])"),
        A("sap: constant latents (a finite score or refused)", "sap(np.zeros((300, 3)), Y)", accept_if="finite(r)"),
        A("irs: diff_quantile 2", "irs(Z, Y, diff_quantile=2)"), A("irs: diff_quantile nan",
                                                                    "irs(Z, Y, diff_quantile=nan)"),
        A("irs: constant latents (a finite score or refused)", "irs(np.zeros((300, 3)), Y)", accept_if="finite(r)"),
        A("infomec: n_neighbors 0", "infomec(Z, Y, n_neighbors=0)"),
        A("infomec: n_neighbors 10^6", "infomec(Z, Y, n_neighbors=10**6)", timeout=40),
        A("infomec: NaN factor", "infomec(Z, poke(Y))"),
        A("modularity: NaN factor", "modularity_explicitness(Z, poke(Y))"),
        A("modularity: constant latents (a finite score or refused)", "modularity_explicitness(np.zeros((300, 3)), "
          "Y)", accept_if="finite(r)"),
        A("dci_es: depths ()", "dci_es(Z, Y, depths=(), mode='fast')"),
        A("dci_es: depths (0,)", "dci_es(Z, Y, depths=(0,), mode='fast')"),
        A("explicitness: test set of other factors", "explicitness(Z, Y, ZT, YT[:, :1])"),
        A("histogram_discretize: NaN latents", "histogram_discretize(poke(Z))"),
        A("udr: no models", "udr([])"), A("udr: models of other sizes", "udr([Z, Z[:10]])"),
        A("udr: NaN representation", "udr([poke(Z), Z])"), A("udr: kl_threshold nan",
                                                             "udr([Z, Z], kl=[np.ones(3)] * 2, kl_threshold=nan)"),
        A("udr: alpha -1", "udr([Z, Z], alpha=-1)"),
        # statistics
        A("median_difference: 10^7 draws of 1,000 scores", "median_difference(list(Z[:1000, 0]), "
          "list(ZT[:, 0]) * 10, n_boot=10**7)", timeout=60),
        A("median_difference: level 1.5", "median_difference([1, 2, 3], [2, 3, 4], level=1.5)"),
        A("median_difference: level nan", "median_difference([1, 2, 3], [2, 3, 4], level=nan)"),
        A("median_difference: empty", "median_difference([], [1.0])"),
        A("median_difference: text scores", "median_difference(['a', 'b'], [1.0])"),
        A("median_difference: n_boot True", "median_difference([1, 2], [3, 4], n_boot=True)"),
        A("mann_whitney: empty", "mann_whitney([], [])"), A("mann_whitney: one each", "mann_whitney([1.0], [1.0])",
                                                           accept_if="isinstance(r, dict)"),
        A("rank_trend: lengths differ", "rank_trend([1, 2, 3], [0.1, 0.2])"),
        A("rank_trend: one point", "rank_trend([1], [0.1])"),
        A("rank_trend: constant x", "rank_trend([1, 1, 1], [0.1, 0.2, 0.3])"),
        A("holm: empty", "holm([])", accept_if="len(r) == 0"),
        A("holm: NaN (documented: no test)", "holm([nan])", accept_if="np.isnan(r[0])"),
        A("holm: -0.1", "holm([-0.1, 0.5])"),
        A("effect: n_boot -1", "effect([1, 2], [3, 4], n_boot=-1)"),
        A("compare: no rows", "compare([], 'loss', 'mig')", accept_if="r == []"),
        A("stand_in_rows: effect nan", "stand_in_rows(nan)"),
        A("stand_in_rows: n 10^9", "stand_in_rows(0.5, n=10**9)", timeout=20),
        # factors, data, datasets
        A("FactorSpace: a name twice", "FactorSpace(['a', 'a'], [2, 2])"),
        A("FactorSpace: no factors", "FactorSpace([], [])"), A("FactorSpace: size 0", "FactorSpace(['a'], [0])"),
        A("FactorSpace: 2^70 positions", "FactorSpace(['a', 'b'], [2**35, 2**35]).sample_idx(3)"),
        A("FactorSpace: names and sizes differ", "FactorSpace(['a', 'b'], [2])"),
        A("FactorSpace: index out of range", "FactorSpace(['a'], [3]).idx_to_pos([3])"),
        A("FactorSpace: negative index", "FactorSpace(['a'], [3]).idx_to_pos([-1])"),
        A("FactorSpace: position out of range", "FactorSpace(['a'], [3]).pos_to_idx([[5]])"),
        A("XYObject: index 10^12", "XYO.obs([10**12])"), A("XYObject: index -1", "XYO.obs([-1])"),
        A("XYObject: index 1.5", "XYO.obs([1.5])"), 
        A("XYObject: sample seed nan", "XYO.sample_idx(5, seed=nan)"),
        A("XYSquares: grid_spacing nan", "XYSquares(grid_spacing=nan)"),
        A("XYObject: grid_spacing 0", "XYObject(grid_spacing=0)"),
        A("get_dataset: rgb 'yes'", "get_dataset('xysquares', rgb='yes')"),
        A("Relabelled: seed -1", "Relabelled(XYO, seed=-1)"), A("Fixed: unknown factor", "Fixed(XYO, {'z': 1})"),
        A("Fixed: value out of range", "Fixed(XYO, 'x=999')"),
        A("DeviceData: max_bytes -1", "DeviceData(XYO, max_bytes=-1)"),
        A("channel_moments: chunk 0", "channel_moments(XYO, chunk=0)"),
        A("to_float: mean NaN", "to_float(XYO.obs([0, 1]), mean=[nan], std=[1.0])"),
        A("to_float: std 0", "to_float(XYO.obs([0, 1]), mean=[0.5], std=[0.0])"),
        # losses and distances
        A("get_loss: mse scale nan", "get_loss('mse', scale=nan)"), A("get_loss: box_blur radius -1",
                                                                      "get_loss('box_blur', radius=-1)"),
        A("MSELoss: scale inf", "MSELoss(scale=inf)"), A("BCELoss: eps -1", "BCELoss(eps=-1)"),
        A("BCELoss: eps nan", "BCELoss(eps=nan)"), A("box_blur_loss: alpha nan", "box_blur_loss(alpha=nan)"),
        A("box_blur: radius nan", "box_blur(torch.zeros(1, 1, 8, 8), nan)"),
        A("mse loss: shapes differ", "get_loss('mse')(torch.zeros(2, 1, 8, 8), torch.zeros(3, 1, 8, 8))"),
        A("distance_report: pairs 0", "distance_report(XYO, 'mse', pairs=0)"),
        A("order_score: NaN matrix", "order_score(np.full((3, 3), nan))"),
        A("order_score: empty matrix", "order_score(np.zeros((0, 0)))"),
        A("order_score: not square", "order_score(np.zeros((2, 3)))"),
        A("spearman_rows: shapes differ", "spearman_rows(np.zeros((2, 3)), np.zeros((3, 2)))"),
        A("d_gt: shapes differ", "d_gt([[0, 1]], [[0, 1, 2]])"),
        A("predict_score: n 0", "predict_score(XYO, n=0)"),
        # evaluation, specs, config, store, sweeps, networks
        A("metric_plan: mig twice", "metric_plan(['mig', 'mig'])"),
        A("metric_plan: dci mode nosuch", "metric_plan(['dci'], {'dci': {'mode': 'nosuch'}})"),
        A("metric_plan: mig num_train 10^12", "metric_plan(['mig'], {'mig': {'num_train': 10**12}})"),
        A("metric_plan: mig num_train nan", "metric_plan(['mig'], {'mig': {'num_train': nan}})"),
        A("evaluate: an encoder returning NaN", "evaluate(nan_encoder, XYO, ['mig'], params={'mig': "
          "{'num_train': 100}}, progress=False)", timeout=60),
        A("evaluate: an encoder returning one row", "evaluate(lambda x: torch.zeros(1, 3), XYO, ['mig'], "
          "params={'mig': {'num_train': 100}}, progress=False)", timeout=60),
        A("expand_spec: an arm against the grid", "expand_spec(dict(tiny_spec(), arms=[{'loss': 'bce'}], "
          "grid={'loss': ['mse']}))"),
        A("expand_spec: an arm's seed against repeats", "expand_spec(dict(tiny_spec(), arms=[{'seed': 3}], "
          "repeats=2))"),
        A("load_spec: a FIFO", "load_spec(fifo('spec.yaml'))", timeout=30),
        A("load_spec: /dev/zero", "load_spec('/dev/zero')", timeout=40),
        A("RunConfig: steps 10^12", "RunConfig(steps=10**12).check()"),
        A("check_run: width 10^7 with model fc", "sweeps.check_run(RunConfig(dataset='xyobject', latents=2, "
          "model='fc', width=10**7))", timeout=60),
        A("RunConfig: metrics twice", "RunConfig(metrics=('mig', 'mig')).check()"),
        A("RunConfig: device meta", "RunConfig(device='meta').check()"),
        A("check_run: metric_params dci mode nosuch", "sweeps.check_run(RunConfig(dataset='xyobject', latents=2, "
          "model='fc', width=8, metrics=('dci',), metric_params={'dci': {'mode': 'x'}}))"),
        A("RunConfig.from_dict: lr 'fast'", "RunConfig.from_dict({'lr': 'fast'})"),
        A("check_setting: steps nan", "check_setting('steps', nan)"),
        A("check_setting: unknown setting", "check_setting('nosuch', 1)"),
        A("read_config: a FIFO", "read_config(os.path.dirname(fifo('config.json')))", timeout=30),
        A("ResultsDB(':memory:')", "ResultsDB(':memory:')"), A("ResultsDB('')", "ResultsDB('')"),
        A("run_sweep: a run function returning None", "sweep_with(lambda c, o, **k: None)", accept_if=ok),
        A("run_sweep: a run function returning a text", "sweep_with(lambda c, o, **k: 'done')", accept_if=ok),
        A("run_sweep: a run function returning {}", "sweep_with(lambda c, o, **k: {})", accept_if=ok),
        A("run_sweep: a run function returning NaN metrics", "sweep_with(lambda c, o, **k: "
          "dict(status='done', metrics=dict(mig=nan)))", accept_if=ok),
        A("run_sweep: max_runs 0", "sweep_with(lambda c, o, **k: dict(status='done', metrics={}), max_runs=0)"),
        A("run_sweep: unknown engine option", "sweep_with(lambda c, o, **k: dict(status='done', metrics={}), "
          "threads=4)"),
        A("get_framework: latents 0", "get_framework('betavae', latents=0)"),
        A("get_framework: factorvae disc_width 10^9", "get_framework('factorvae', obs_shape=(64, 64, 1), "
          "latents=2, model='fc', width=8, disc_width=10**9)", timeout=60),
        A("mlp_discriminator: width -1", "mlp_discriminator(2, width=-1)"),
        A("mlp_discriminator: layers 10^6", "mlp_discriminator(2, width=2, layers=10**6)", timeout=40),
        A("EncoderFC: hidden 10^7", "EncoderFC((64, 64, 1), 2, hidden=(10**7,))", timeout=60),
        A("EncoderConv64: latents 0", "EncoderConv64(1, 0)"),
        A("check_obs_shape: zeros", "check_obs_shape((0, 0, 0))"),
        A("resolve_device: meta", "resolve_device('meta')"), A("resolve_device: cuda:99", "resolve_device('cuda:99')"),
        A("resolve_device: cuda without a GPU", "resolve_device('cuda')",
          accept_if="torch.cuda.is_available()"),
    ]


KILL_TRAIN = ["train", "--dataset", "xyobject", "--framework", "betavae", "--latents", "3", "--steps", "200",
              "--batch-size", "8", "--checkpoint-every", "23", "--log-every", "1", "--quiet", "--json", "--out",
              "{d}/run"]
KILL_SPEC = dict(name="killed", base=dict(dataset="xyobject", framework="betavae", latents=2, model="fc", width=16,
                                          steps=100, batch_size=8, metrics=["mig"],
                                          metric_params=dict(mig=dict(num_train=50))), repeats=3)


def kill_cases() -> list[Case]:
    K = lambda name, **kill: Case("kill", name, kill=kill, expect="accept")
    cases = [K(f"train SIGKILL #{i}", what="train", signal="KILL") for i in range(1, 7)]
    cases += [K(f"train SIGTERM #{i}", what="train", signal="TERM") for i in (1, 2)]
    cases += [K("train SIGINT", what="train", signal="INT"), K("train SIGKILL twice", what="train", signal="KILL",
                                                                 times=2)]
    cases += [K(f"sweep SIGKILL #{i}", what="sweep", signal="KILL") for i in range(1, 5)]
    cases += [K("sweep SIGTERM", what="sweep", signal="TERM"), K("sweep SIGINT", what="sweep", signal="INT")]
    cases += [K(f"sweep --workers 2 SIGKILL #{i}", what="sweep2", signal="KILL") for i in (1, 2)]
    cases += [K("sweep --workers 2 SIGTERM", what="sweep2", signal="TERM")]
    cases += [K(f"figures SIGKILL #{i}", what="figures", signal="KILL") for i in (1, 2, 3, 4)]
    cases += [K("figures SIGTERM", what="figures", signal="TERM")]
    cases += [K("demo SIGKILL", what="demo", signal="KILL")]                  # a demo takes minutes: one
    return cases


def catalogue() -> list[Case]:
    cases = [*ownership_cases(), *checkpoint_cases(), *unbounded_cases(), *settings_cases(), *stream_cases(),
             *api_cases(), *kill_cases()]
    names = collections.Counter((c.cls, c.name) for c in cases)
    assert not [n for n, k in names.items() if k > 1], [n for n, k in names.items() if k > 1]
    return cases


# ---------------------------------------------------------------------------------------------------------------------
# The target and the world: what is tested, and the tiny run, sweep and checkpoints the cases start from

class Target:
    "The disentlit under test: a Python (its venv's `disentlit` command) and the checkout it should import."
    def __init__(self, python: str, repo: str, memory_gb: float):
        self.python, self.repo, self.memory_kb = Path(python), Path(repo).resolve(), int(memory_gb * 1024 ** 2)
        script = self.python.parent / "disentlit"
        self.cli = [str(script)] if script.exists() else \
            [str(self.python), "-c", "import sys; from disentlit.cli import main; sys.exit(main())"]

    def env(self, data: Path, extra: dict | None = None) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DISENTLIT_", "PYTHON"))}
        env.update(PYTHONPATH=str(self.repo), DISENTLIT_DATA=str(data), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PATH=str(self.python.parent) + os.pathsep + env.get("PATH", ""), PYTHONDONTWRITEBYTECODE="1",
                   MPLBACKEND="Agg")
        env.update(extra or {})
        return env

    def wrap(self, cmd: list, stream: str = "") -> list:
        "`cmd` under the memory limit, with the streams of `stream` closed or redirected (bash does it, not Python)."
        redirect = {"": "", "no-stderr": " 2>&-", "no-stdout": " >&-", "no-streams": " >&- 2>&-",
                    "full-stdout": " >/dev/full", "read-stdout": " 1</dev/null"}[stream]
        return ["bash", "-c", f'ulimit -v {self.memory_kb}; exec "$@"{redirect}', "hunt", *cmd]

    def describe(self) -> dict:
        p = subprocess.run([str(self.python), "-c", "import disentlit; print(disentlit.__file__)"],
                           cwd=tempfile.gettempdir(), env=self.env(Path(tempfile.gettempdir())), capture_output=True,
                           text=True, timeout=120)
        head = subprocess.run(["git", "-C", str(self.repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(self.repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return dict(python=str(self.python), repo=str(self.repo), commit=head + ("+changes" if dirty else ""),
                    package=p.stdout.strip() or p.stderr.strip()[-300:], cli=self.cli[0])


@dataclasses.dataclass
class Proc:
    "What a finished command left: its status, streams, and whether it ran past its time or was stopped early."
    rc: int | None
    out: str
    err: str
    timed_out: bool = False
    started: bool = False
    seconds: float = 0.0


def run_command(target: Target, argv: list, cwd: Path, env: dict, logs: Path, timeout: float, stream: str = "",
                started: Callable[[], bool] | None = None, kill_after: float | None = None,
                kill_signal: int = signal.SIGKILL) -> Proc:
    """Run `disentlit argv` in `cwd` (its own session), its streams into files under `logs`; stop its whole group at
    the timeout or once `started()` says it has begun working; with `kill_after`, send `kill_signal` to the command
    alone after that many seconds, then wait for it."""
    logs.mkdir(parents=True, exist_ok=True)
    out_path, err_path = logs / "stdout", logs / "stderr"
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = subprocess.Popen(target.wrap([*target.cli, *argv], stream), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err, start_new_session=True)
        timed_out = began = killed = False
        while p.poll() is None:
            elapsed = time.monotonic() - t0
            if kill_after is not None and not killed and elapsed >= kill_after:
                with contextlib.suppress(ProcessLookupError): os.kill(p.pid, kill_signal)
                killed = True
            if elapsed > timeout: timed_out = True; break
            if started is not None and started(): began = True; break
            time.sleep(0.2)
        if p.poll() is None: _stop_group(p)
    return Proc(p.returncode, out_path.read_text(errors="replace"), err_path.read_text(errors="replace"), timed_out,
                began, time.monotonic() - t0)


def _stop_group(p: subprocess.Popen):
    with contextlib.suppress(ProcessLookupError): os.killpg(p.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired): p.wait(timeout=30)


class Forks:
    """A pool of servers of the target's Python that have imported disentlit and torch once and fork a child per case:
    the child takes the case's folder, environment, streams (files), memory limit and a session of its own, then runs
    the `disentlit` command's `main` exactly as the console script does. A case costs a second instead of the ten
    that importing torch takes on a busy machine. Cases about streams, encodings and kills run as fresh processes."""
    def __init__(self, target: Target, folder: Path, n: int):
        self.target, self.folder, self.free, self.lock = target, folder, [], threading.Lock()
        self.all = [self._start(i) for i in range(n)]
        self.free = list(self.all)

    def _start(self, i: int) -> subprocess.Popen:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / f"server{i}.stderr", "ab")
        p = subprocess.Popen([str(self.target.python), str(HERE), "--cli-server"], cwd=self.folder,
                             env=self.target.env(self.folder / "data"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=log, start_new_session=True)
        if (_read_line(p, 600) or {}).get("ready") is not True:
            raise SystemExit(f"hunt: the CLI server did not start; see {self.folder / f'server{i}.stderr'}")
        return p

    @contextlib.contextmanager
    def server(self):
        with self.lock: p = self.free.pop()
        try:
            if p.poll() is not None: p = self._start(len(self.all)); self.all.append(p)
            yield p
        finally:
            with self.lock: self.free.append(p)

    def run(self, argv: list, cwd: Path, env: dict, logs: Path, timeout: float,
            started: Callable[[], bool] | None = None) -> Proc:
        logs.mkdir(parents=True, exist_ok=True)
        t0, timed_out, began = time.monotonic(), False, False
        with self.server() as p:
            _write_line(p, dict(argv=argv, cwd=str(cwd), env=env, stdout=str(logs / "stdout"),
                                stderr=str(logs / "stderr"), memory_kb=self.target.memory_kb))
            pid = (_read_line(p, 60) or {}).get("pid")
            reply = None
            while reply is None:
                reply = _read_line(p, 0.2)
                if reply is not None: break
                if time.monotonic() - t0 > timeout: timed_out = True
                elif started is not None and started(): began = True
                else: continue
                for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                    with contextlib.suppress(ProcessLookupError, PermissionError, TypeError): kill()
                reply = _read_line(p, 60) or {}
        read = lambda name: (logs / name).read_text(errors="replace") if (logs / name).exists() else ""
        return Proc(reply.get("rc"), read("stdout"), read("stderr"), timed_out, began, time.monotonic() - t0)

    def close(self):
        for p in self.all: _stop_group(p)


def _write_line(p: subprocess.Popen, obj: dict):
    p.stdin.write((json.dumps(obj) + "\n").encode()); p.stdin.flush()


def _read_line(p: subprocess.Popen, timeout: float) -> dict | None:
    "One JSON line from `p`'s stdout within `timeout` seconds; None if none came; {'died': status} if it ended."
    fd, end, buf = p.stdout.fileno(), time.monotonic() + timeout, b""
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not ready: return None if not buf else json.loads(buf)
        chunk = os.read(fd, 1 << 16)
        if not chunk: return {"died": True, "rc": p.wait()}
        buf += chunk
        if buf.endswith(b"\n"): return json.loads(buf)


def cli_server():
    "The server's side (run by the target's Python): import everything once, then fork a child per request."
    proto_in, proto_out = os.fdopen(os.dup(0), "r"), os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_RDWR), 0); os.dup2(2, 1)
    import importlib
    import disentlit
    for path in sorted(Path(disentlit.__file__).parent.glob("*.py")):
        if not path.stem.startswith("_"):
            with contextlib.suppress(Exception): importlib.import_module(f"disentlit.{path.stem}")
    with contextlib.suppress(Exception): importlib.import_module("matplotlib.pyplot")
    _warm_up()
    proto_out.write(json.dumps(dict(ready=True)) + "\n"); proto_out.flush()
    for line in proto_in:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            proto_in.close(); proto_out.close()
            _cli_child(req)
        proto_out.write(json.dumps(dict(pid=pid)) + "\n"); proto_out.flush()
        _, status = os.waitpid(pid, 0)
        proto_out.write(json.dumps(dict(rc=os.waitstatus_to_exitcode(status))) + "\n"); proto_out.flush()


def _warm_up():
    """Train and score a tiny run once in the server, so that what torch and scikit-learn import lazily is imported
    before the forks. Nothing that opens SQLite: its per-process state must not cross a fork."""
    from disentlit.cli import main as disentlit_main
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(sys.stderr):
        with contextlib.suppress(BaseException): disentlit_main([*TRAIN, "--out", f"{tmp}/run"])
        with contextlib.suppress(BaseException): disentlit_main(["evaluate", f"{tmp}/run", "--metrics", "mig,dci",
                                                                 "--quiet"])


def _cli_child(req: dict):
    "A forked child: become the command of `req` (folder, environment, streams, limit), run it, exit with its status."
    code = 1
    try:
        os.setsid()
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (req["memory_kb"] * 1024, req["memory_kb"] * 1024))
        for sig in (signal.SIGINT, signal.SIGTERM): signal.signal(sig, signal.default_int_handler
                                                                  if sig == signal.SIGINT else signal.SIG_DFL)
        os.chdir(req["cwd"])
        os.environ.clear(); os.environ.update(req["env"])
        out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0); os.dup2(out, 1); os.dup2(err, 2)
        os.close(out); os.close(err)
        sys.argv = ["disentlit", *req["argv"]]
        from disentlit.cli import main as disentlit_main
        code = disentlit_main(req["argv"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if isinstance(e.code, str): print(e.code, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):               # what the interpreter does as it exits
        try: stream.flush()
        except Exception as e:
            with contextlib.suppress(Exception): print(f"Exception ignored on flushing {stream.name}: {e!r}",
                                                       file=sys.stderr, flush=True)
            code = 120
    os._exit(code if isinstance(code, int) else 1)


class World:
    "What the cases start from, made once: the tiny run, the tiny sweep, damaged checkpoints, and the references."
    def __init__(self, root: Path, target: Target, timeout: float):
        self.root, self.target, self.timeout = root, target, timeout
        self.run_id, self.refs, self.ref_events = "", {}, collections.defaultdict(threading.Event)

    def cli(self, name: str, *argv, cwd: Path | None = None, timeout: float = 600) -> Proc:
        p = run_command(self.target, list(argv), cwd or self.root, self.target.env(self.root / "data"),
                        self.root / "logs" / name, timeout)
        if p.rc != 0: raise SystemExit(f"hunt: could not make the world ({name}): status {p.rc}\n{p.err[-2000:]}")
        return p

    def make(self, need_checkpoints: bool = True):
        "The tiny run and sweep (every case's starting point), the damaged checkpoints and a statistics cache."
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        (self.root / "tiny.json").write_text(spec_text(repeats=2))       # seed 0 is the run of `spec_text()`
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            jobs = [pool.submit(self.cli, "run", *TRAIN, "--out", str(self.root / "run")),
                    pool.submit(self.cli, "sweep", "sweep", str(self.root / "tiny.json"), "--db",
                                str(self.root / "tiny.sqlite"), "--quiet"),
                    pool.submit(self.cli, "stats", "datasets", "--stats", "xyobject", "--json", "--quiet")]
            for j in jobs: j.result()
        with contextlib.closing(sqlite3.connect(self.root / "tiny.sqlite")) as con:
            self.run_id = con.execute("SELECT id FROM runs WHERE json_extract(config, '$.seed') = 0").fetchone()[0]
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if need_checkpoints: self.make_checkpoints()

    def make_checkpoints(self):
        (self.root / "ckpt").mkdir(exist_ok=True)
        script = self.root / "make_checkpoints.py"
        script.write_text(make_checkpoints_script())
        p = subprocess.run(self.target.wrap([str(self.target.python), str(script), str(self.root / "run" /
                                             "checkpoint.pt"), str(self.root / "ckpt")]), cwd=self.root,
                           env=self.target.env(self.root / "data"), capture_output=True, text=True, timeout=600)
        if p.returncode != 0: raise SystemExit(f"hunt: could not make the damaged checkpoints:\n{p.stderr[-2000:]}")


# ---------------------------------------------------------------------------------------------------------------------
# Classifying: pure functions of what a command left (tests/test_hunt.py plants failures in them)

def snapshot(root: Path) -> dict:
    "Every file under `root` (links not followed): its SHA-256 (size and mtime if over 64 MB), or what it is."
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            try: st = os.lstat(p)
            except OSError: continue
            if stat.S_ISLNK(st.st_mode): out[rel] = "link:" + os.readlink(p)
            elif not stat.S_ISREG(st.st_mode): out[rel] = "special"
            elif st.st_size > 64 << 20: out[rel] = f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
            else:
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""): h.update(block)
                out[rel] = h.hexdigest()
    return out


def changed(before: dict, after: dict, paths) -> list[str]:
    "Those of `paths` (files of `before`, or folders: every file under them) that are gone or different after."
    picked = [p for p in before if any(p == q or p.startswith(q.rstrip("/") + "/") for q in paths)]
    return sorted(p for p in picked if after.get(p) != before[p])


def has_traceback(*texts: str) -> bool:
    return any("Traceback (most recent call last)" in t or "Exception ignored" in t for t in texts)


def one_error_line(err: str) -> bool:
    "stderr is one `disentlit: error: ...` line, after warnings only."
    lines = [l for l in err.splitlines() if l.strip()]
    return bool(lines) and lines[-1].startswith("disentlit: error:") and \
        all(l.startswith("disentlit: warning:") for l in lines[:-1])


def json_problem(out: str) -> str | None:
    "None if `out` is exactly one strict JSON object; else 'nan' (it holds NaN or infinity) or 'stdout-polluted'."
    seen = []
    try: value = json.loads(out, parse_constant=lambda c: seen.append(c) or None)
    except ValueError: return "stdout-polluted"
    if not isinstance(value, dict) or out.strip().count("\n"): return "stdout-polluted"
    return "nan" if seen else None


def classify(case: Case, proc: Proc, lost: list, touched: list, check_outcome: str | None = None) -> list[str]:
    "Every failure of a CLI case, most serious first ([] means ok)."
    problems = []
    stdout_seen = case.stream not in ("no-stdout", "no-streams", "full-stdout", "read-stdout")
    stderr_seen = case.stream not in ("no-stderr", "no-streams")
    as_json = "--json" in (case.argv or [])
    if proc.timed_out: problems.append("hang")
    crashed = proc.rc is not None and proc.rc < 0 and not proc.timed_out and not proc.started
    if has_traceback(proc.out, proc.err) or crashed: problems.append("traceback")
    if lost: problems.append("lost-file")
    accepted = proc.started or proc.rc in case.codes
    refused = proc.rc == 2 and not proc.started and not proc.timed_out
    if refused and stdout_seen and proc.out.strip(): problems.append("stdout-polluted")
    if proc.rc in case.codes and as_json and stdout_seen and not proc.started:
        if bad := json_problem(proc.out): problems.append(bad)
    if case.expect == "refuse" and accepted and not proc.timed_out: problems.append("silent-accept")
    if case.expect == "accept" and not accepted and not proc.timed_out and "traceback" not in problems:
        problems.append("wrong-exit")
    if case.expect == "accept" and proc.rc in case.codes and check_outcome: problems.append(check_outcome)
    if case.expect in ("refuse", "either") and not accepted and not refused and not proc.timed_out \
            and "traceback" not in problems:
        problems.append("wrong-exit")
    if case.expect == "either" and proc.rc in case.codes and check_outcome: problems.append(check_outcome)
    if refused and stderr_seen and not one_error_line(proc.err) and "traceback" not in problems:
        problems.append("messy-error")
    if refused and touched: problems.append("touched")
    return sorted(set(problems), key=FAILURES.index)


def classify_api(reply: dict) -> list[str]:
    "Every failure of an api call from the worker's `reply` ([] means ok)."
    if reply.get("hang"): return ["hang"]
    if reply.get("died"): return ["traceback"]
    if "raised" in reply: return [] if reply["project"] else ["traceback"]
    if reply.get("accept_ok"): return []
    return ["nan"] if reply.get("nonfinite") else ["silent-accept"]


# ---------------------------------------------------------------------------------------------------------------------
# Running the cases

def case_folder(base: Path, i: int) -> Path:
    d = base / "cases" / f"{i:03d}"
    (d / "work").mkdir(parents=True)
    return d


def fill(text: str, d: Path, world: World) -> str:
    return text.replace("{d}", str(d)).replace("{w}", str(world.root))


def run_cli_case(case: Case, i: int, base: Path, target: Target, world: World, timeout: float,
                 forks: Forks | None) -> dict:
    """Run one CLI case in a folder of its own (a fork of a server, or a fresh process where the case is about the
    process's own streams or encoding) and classify what came of it."""
    root = case_folder(base, i)
    d = root / "work"
    folder = Folder(d, world)
    if case.setup: case.setup(folder)
    argv = [fill(a, d, world) for a in case.argv]
    env = target.env(root / "data", {k: fill(v, d, world) for k, v in case.env.items()})
    before = snapshot(d)
    started = _started(d, case.started) if case.started else None
    if forks is None or case.stream or "PYTHONIOENCODING" in case.env:
        proc = run_command(target, argv, d, env, root, case.timeout or timeout, case.stream, started)
    else: proc = forks.run(argv, d, env, root, case.timeout or timeout, started)
    after = snapshot(d)
    lost = changed(before, after, folder.users)
    touched = [p for p in changed(before, after, before) if p not in lost] if case.expect != "accept" else []
    check = case.check(folder, proc.out) if case.check and proc.rc in case.codes else None
    problems = classify(case, proc, lost, touched, check)
    detail = [f"lost: {', '.join(lost)}"] * bool(lost) + [f"touched: {', '.join(touched[:5])}"] * bool(touched)
    if proc.rc is not None and proc.rc < 0 and not (proc.timed_out or proc.started):
        detail.append(f"killed by signal {-proc.rc} ({signal.Signals(-proc.rc).name})")
    return dict(rc=proc.rc, seconds=round(proc.seconds, 1), problems=problems, detail=detail,
                stderr=_excerpt(proc.err), stdout=_excerpt(proc.out, 300), started=proc.started)


def _started(d: Path, glob: str) -> Callable[[], bool]:
    """Whether a file matching `glob` under `d` has been made or rewritten since now: the command accepted its input
    and works on it; `after:N` instead, whether N seconds have passed (a benchmark that writes nothing)."""
    if glob.startswith("after:"):
        end = time.monotonic() + float(glob[6:])
        return lambda: time.monotonic() > end
    def mtimes() -> dict:
        out = {}
        for p in d.glob(glob):
            with contextlib.suppress(OSError): out[p] = p.stat().st_mtime_ns
        return out
    before = mtimes()
    return lambda: any(before.get(p) != t for p, t in mtimes().items())


def _excerpt(text: str, n: int = 600) -> str:
    "The end of `text` that matters: a traceback's last lines, else its tail."
    text = text.strip()
    if "Traceback (most recent call last)" in text:
        text = text[text.rindex("Traceback (most recent call last)"):]
        lines = text.splitlines()
        text = "\n".join(lines[:1] + lines[-4:]) if len(lines) > 5 else text
    return text if len(text) <= n else "..." + text[-n:]


class ApiWorker:
    "A process of the target's Python that runs api calls one at a time; restarted after a hang or a crash."
    def __init__(self, target: Target, folder: Path):
        self.target, self.folder, self.p = target, folder, None

    def start(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        self.log = open(self.folder / "worker.stderr", "ab")
        self.p = subprocess.Popen(self.target.wrap([str(self.target.python), str(HERE), "--api-worker"]),
                                  cwd=self.folder, env=self.target.env(self.folder / "data"), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.log, start_new_session=True)
        ready = _read_line(self.p, 300)
        if ready is None or not ready.get("ready"):
            raise SystemExit(f"hunt: the api worker did not start; see {self.folder / 'worker.stderr'}")

    def call(self, case: Case, folder: Path, timeout: float) -> dict:
        if self.p is None or self.p.poll() is not None: self.start()
        self.p.stdin.write((json.dumps(dict(call=case.call, accept_if=case.accept_if, dir=str(folder))) + "\n")
                           .encode())
        self.p.stdin.flush()
        reply = _read_line(self.p, case.timeout or timeout)
        if reply is None or reply.get("died"):
            rc = self.stop()
            return dict(hang=True) if reply is None else dict(died=True, rc=rc)
        return reply

    def stop(self):
        if self.p is None: return None
        _stop_group(self.p)
        rc, self.p = self.p.returncode, None
        self.log.close()
        return rc


def run_api_cases(cases: list[tuple[int, Case]], base: Path, target: Target, timeout: float, say) -> dict:
    "Every api case in one worker (restarted as needed): {index: record}."
    worker, out = ApiWorker(target, base / "api"), {}
    try:
        for i, case in cases:
            folder = base / "api" / f"{i:03d}"
            folder.mkdir(parents=True)
            t0 = time.monotonic()
            reply = worker.call(case, folder, min(timeout, 60))
            problems = classify_api(reply)
            text = reply.get("raised", "") + (": " + reply.get("message", "") if "raised" in reply else "")
            text = text or (f"returned {reply.get('returned', '')}" if "returned" in reply else
                            "no reply: ran past its timeout" if reply.get("hang") else
                            f"the worker died (status {reply.get('rc')})")
            out[i] = dict(problems=problems, seconds=round(time.monotonic() - t0, 1), stderr=_excerpt(text, 400),
                          detail=[reply.get("traceback", "")[-400:]] if problems == ["traceback"] else [])
            say(case, out[i])
    finally: worker.stop()
    return out


def api_worker():
    "The worker's side (run by the target's Python): read calls as JSON lines, answer each as one JSON line."
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)                                          # what a call prints goes to stderr, never into the answers
    sys.stdout = sys.stderr
    ns: dict = {"D": os.getcwd()}
    exec(API_PRELUDE, ns)
    ns["finite"] = lambda v: not _nonfinite(v)
    from disentlit.core import DisentlitError
    proto.write(json.dumps(dict(ready=True)) + "\n"); proto.flush()
    for line in sys.stdin:
        case = json.loads(line)
        ns["D"] = case["dir"]
        os.chdir(case["dir"])
        try: r = eval(case["call"], ns)
        except BaseException as e:
            import traceback
            kind = type(e)
            project = isinstance(e, DisentlitError) or (kind.__module__.startswith("disentlit") and
                                                        issubclass(kind, (ValueError, TypeError)))
            reply = dict(raised=f"{kind.__module__}.{kind.__name__}" if not kind.__module__ == "builtins" else
                         kind.__name__, project=project, message=str(e)[:300],
                         traceback="".join(traceback.format_exception(e))[-1500:])
        else:
            reply = dict(returned=repr(r)[:200], nonfinite=_nonfinite(r))
            if case.get("accept_if"):
                try: reply["accept_ok"] = bool(eval(case["accept_if"], dict(ns, r=r)))
                except Exception as e: reply["accept_ok"] = False; reply["returned"] += f" (check: {e!r})"
        proto.write(json.dumps(reply) + "\n"); proto.flush()


def _nonfinite(v, depth: int = 0) -> bool:
    "Whether `v` holds NaN or infinity anywhere (floats, numpy arrays and scalars, tensors, dicts, lists)."
    if depth > 50: return False
    if isinstance(v, float): return v != v or v in (float("inf"), float("-inf"))
    if isinstance(v, dict): return any(_nonfinite(x, depth + 1) for x in v.values())
    if isinstance(v, (list, tuple)): return any(_nonfinite(x, depth + 1) for x in v)
    if hasattr(v, "detach"): v = v.detach().cpu().numpy()
    if hasattr(v, "dtype") and hasattr(v, "shape"):
        import numpy as np
        return bool(np.issubdtype(v.dtype, np.floating) and not np.isfinite(v).all())
    return False


# ---------------------------------------------------------------------------------------------------------------------
# Kills: a command stopped at a seeded random moment, then run again, compared with the uninterrupted run

def kill_command(what: str, d: Path) -> list[str]:
    if what == "train": return [a.replace("{d}", str(d)) for a in KILL_TRAIN]
    if what in ("sweep", "sweep2"):
        return ["sweep", str(d / "killed.json"), "--db", str(d / "k.sqlite"), "--quiet", "--json",
                *(["--workers", "2"] if what == "sweep2" else [])]
    if what == "figures": return ["figures", "--db", str(d / "k.sqlite"), "--out", str(d / "figs"), "--json"]
    if what == "demo": return ["demo", "--steps", "2", "--out", str(d / "demo"), "--quiet", "--json"]
    raise ValueError(what)


def kill_inputs(what: str, d: Path, world: World):
    "What the killed command reads: the spec, or for figures the reference sweep's database and runs."
    if what in ("sweep", "sweep2"): (d / "killed.json").write_text(json.dumps(KILL_SPEC))
    if what == "figures":
        ref = world.refs["sweep"]["folder"]
        shutil.copyfile(ref / "k.sqlite", d / "k.sqlite")
        shutil.copytree(ref / "k_runs", d / "k_runs")


def kill_result(what: str, d: Path, proc: Proc) -> dict:
    "What a finished kill-case command produced, in a form two runs can be compared by."
    if what == "train":
        res = _read_json(d / "run" / "result.json") or {}
        log = [{k: v for k, v in r.items() if k not in ("seconds", "images_per_second")} for r in
               _jsonl(d / "run" / "log.jsonl")]
        return dict(step=res.get("step"), status=res.get("status"), logs=res.get("logs"), log=log)
    if what in ("sweep", "sweep2"):
        rows = _db_rows(d / "k.sqlite")
        return dict(rows={r["id"]: dict(status=r["status"], metrics=r["metrics"],
                                        final=(json.loads(r["result"] or "{}").get("final"))) for r in rows})
    if what == "figures":
        figs = d / "figs"
        files = sorted(p.name for p in figs.iterdir()) if figs.is_dir() else []
        texts = {n: (figs / n).read_text() for n in files if n.endswith((".csv", ".json")) and n != "results.csv"}
        return dict(files=files, texts=texts, results=_csv_without(figs / "results.csv", ("seconds",)))
    if what == "demo":
        r = _parse_json(proc.out) or {}
        return dict(counts=r.get("counts"), runs=r.get("runs"), conclusion=r.get("conclusion"),
                    index=(d / "demo" / "index.html").exists())
    raise ValueError(what)


def _read_json(p: Path):
    try: return json.loads(p.read_text())
    except (OSError, ValueError): return None


def _parse_json(text: str):
    try: return json.loads(text)
    except ValueError: return None


def _jsonl(p: Path) -> list:
    out = []
    try: lines = p.read_text().splitlines()
    except OSError: return out
    for l in lines:
        with contextlib.suppress(ValueError): out.append(json.loads(l))
    return out


def _db_rows(p: Path) -> list[dict]:
    if not p.exists(): return []
    with contextlib.closing(sqlite3.connect(p, timeout=60)) as con:
        con.row_factory = sqlite3.Row
        try: return [dict(r) for r in con.execute("SELECT * FROM runs ORDER BY id")]
        except sqlite3.Error: return []


def _csv_without(p: Path, drop: tuple) -> list:
    import csv
    try:
        with open(p, newline="") as f: rows = list(csv.DictReader(f))
    except OSError: return []
    return [{k: v for k, v in r.items() if k not in drop and k not in ("attempts", "host")} for r in rows]


def make_reference(what: str, world: World, base: Path, timeout: float) -> dict:
    "The uninterrupted run a kill case is compared with; its duration sets the range of kill moments."
    if what == "figures": world.ref_events["sweep"].wait()
    d = base / "refs" / what
    d.mkdir(parents=True)
    kill_inputs(what, d, world)
    proc = run_command(world.target, kill_command(what, d), d, world.target.env(base / "refs" / f"{what}.data"),
                       base / "refs" / f"{what}.logs", timeout * 6 if what == "demo" else timeout * 3)
    ok = proc.rc == 0
    return dict(folder=d, ok=ok, seconds=proc.seconds, result=kill_result(what, d, proc) if ok else None,
                err=_excerpt(proc.err))


def _kill_state(what: str, d: Path) -> dict:
    "What was finished when the command died: for train, whether its result was written; for sweeps, the done rows."
    if what == "train":
        run = d / "run"
        done = (_read_json(run / "result.json") or {}).get("status") == "done"
        return dict(done=done, checkpoint=(run / "checkpoint.pt").stat().st_mtime_ns if done else None)
    if what in ("sweep", "sweep2"):
        return dict(done={r["id"]: (r["finished"], r["metrics"]) for r in _db_rows(d / "k.sqlite")
                          if r["status"] == "done"})
    return {}


def compare_kill(what: str, ref: dict, got: dict, state: dict, d: Path) -> list[str]:
    "The failures of a resumed kill case against the uninterrupted reference and what was done at the kill."
    problems = []
    if what == "train":
        steps = [r.get("step") for r in got["log"]]
        if len(steps) != len(set(steps)): problems.append("duplicated-work")
        if got["status"] != "done" or got["step"] != ref["step"]: problems.append("lost-work")
        if state.get("done") and (d / "run" / "checkpoint.pt").stat().st_mtime_ns != state["checkpoint"]:
            problems.append("duplicated-work")
        if got["logs"] != ref["logs"] or got["log"] != ref["log"]: problems.append("diverged")
    elif what in ("sweep", "sweep2"):
        rows, ref_rows = got["rows"], ref["rows"]
        if set(rows) != set(ref_rows) or any(r["status"] != "done" for r in rows.values()):
            problems.append("lost-work")
        now = {r["id"]: (r["finished"], r["metrics"]) for r in _db_rows(d / "k.sqlite")}
        if any(now.get(i) != v for i, v in state.get("done", {}).items()): problems.append("duplicated-work")
        if any(rows.get(i, {}).get("metrics") != r["metrics"] or rows.get(i, {}).get("final") != r["final"]
               for i, r in ref_rows.items() if i in rows and rows[i]["status"] == "done"):
            problems.append("diverged")
    elif what == "figures":
        if set(ref["files"]) - set(got["files"]): problems.append("lost-work")
        if got["texts"] != ref["texts"] or got["results"] != ref["results"]: problems.append("diverged")
    elif what == "demo":
        if not got["index"] or (got["counts"] or {}).get("done") != (ref["counts"] or {}).get("done"):
            problems.append("lost-work")
        if got["runs"] != ref["runs"]: problems.append("diverged")
    return problems


def _temp_files(d: Path, users: set) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if (".tmp" in p.name or p.name.startswith(".probe"))
                  and str(p.relative_to(d)) not in users)


def run_kill_case(case: Case, i: int, base: Path, world: World, timeout: float, seed: int) -> dict:
    """Start the command, send the signal at a seeded random moment of the reference's duration (twice for `times`
    2), check that no process of it outlived it, run it again to the end, and compare with the reference."""
    what, sig = case.kill["what"], getattr(signal, "SIG" + case.kill["signal"])
    world.ref_events[what].wait()
    ref = world.refs[what]
    if not ref["ok"]:
        return dict(problems=["lost-work"], detail=["the uninterrupted reference run failed"], stderr=ref["err"])
    root = case_folder(base, i)
    d = root / "work"
    folder = Folder(d, world)
    folder.user("notes.txt", "the user's notes beside the run\n"); folder.user(".mine.tmp", "the user's temp file")
    kill_inputs(what, d, world)
    rng = random.Random(f"{seed}:{case.name}")
    env, argv, problems, moments, detail = world.target.env(root / "data"), kill_command(what, d), [], [], []
    before = snapshot(d)
    for n in range(case.kill.get("times", 1)):
        at = round(rng.uniform(0.15, 0.95) * ref["seconds"], 2)
        moments.append(at)
        p = run_command(world.target, argv, d, env, root / f"kill{n}", timeout * 6, kill_after=at, kill_signal=sig)
        if p.timed_out: problems.append("hang")
        if has_traceback(p.err): problems.append("traceback")
        if _orphans(d): problems.append("orphan")
    state = _kill_state(what, d)
    proc = run_command(world.target, argv + (["--resume"] if what.startswith("sweep") else []), d, env,
                       root / "rerun", timeout * 6)
    if proc.timed_out: problems.append("hang")
    if has_traceback(proc.out, proc.err): problems.append("traceback")
    if proc.rc != 0 and not proc.timed_out: problems.append("wrong-exit"); detail.append(f"rerun status {proc.rc}")
    got = kill_result(what, d, proc)
    problems += compare_kill(what, ref["result"], got, state, d)
    if lost := changed(before, snapshot(d), folder.users): problems.append("lost-file"); detail.append(str(lost))
    if stray := _temp_files(d, folder.users): problems.append("stray-temp"); detail.append(", ".join(stray[:5]))
    return dict(rc=proc.rc, seconds=round(proc.seconds, 1), problems=sorted(set(problems), key=FAILURES.index),
                detail=detail + [f"signal at {moments} s of {ref['seconds']:.0f} s"], stderr=_excerpt(proc.err))


def _orphans(d: Path, grace: float = 30) -> bool:
    """Whether a process working in `d` (a worker of the killed command) still runs `grace` seconds after the command
    ended; any such process is then killed, so that the rerun starts alone."""
    def left() -> list[int]:
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/cwd").startswith(str(d)) and \
                        Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z":
                    pids.append(int(pid))
        return pids
    end = time.monotonic() + grace
    while (pids := left()) and time.monotonic() < end: time.sleep(0.5)
    for pid in pids:
        with contextlib.suppress(OSError): os.kill(pid, signal.SIGKILL)
    return bool(pids)


# ---------------------------------------------------------------------------------------------------------------------
# The report

def table(records: list[dict]) -> str:
    "Counts by class (rows) and outcome (columns), only the outcomes that occur, with totals."
    counts = collections.Counter((r["class"], r["outcome"]) for r in records)
    cols = [o for o in OUTCOMES if any(k[1] == o for k in counts)]
    rows = [["class", "cases", *cols]]
    for cls in CLASSES:
        n = sum(v for (c, _), v in counts.items() if c == cls)
        if n: rows.append([cls, str(n), *[str(counts.get((cls, o), 0)) for o in cols]])
    rows.append(["total", str(len(records)), *[str(sum(v for (_, o), v in counts.items() if o == c)) for c in cols]])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in rows)


def sizes(cases: list[Case]) -> str:
    counts = collections.Counter(c.cls for c in cases)
    return ", ".join(f"{cls} {counts[cls]}" for cls in CLASSES if counts[cls]) + f"; {len(cases)} in all"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Throw bad inputs and kills at a disentlit checkout; count what breaks.")
    ap.add_argument("--python", default=sys.executable, help="the Python (of a venv) whose disentlit is tested")
    ap.add_argument("--repo", default=str(HERE.parent.parent), help="the checkout that Python should import")
    ap.add_argument("--only", action="append", choices=CLASSES, help="only this class (repeatable)")
    ap.add_argument("--match", help="only cases whose name contains this text")
    ap.add_argument("--jobs", type=int, default=2, help="cases at a time (default 2)")
    ap.add_argument("--timeout", type=float, default=90, help="seconds a case may run (default 90)")
    ap.add_argument("--memory-gb", type=float, default=4, help="address-space limit of each command (default 4)")
    ap.add_argument("--seed", type=int, default=41, help="seed of the kill moments (default 41)")
    ap.add_argument("--json", metavar="PATH", help="write every case and its outcome here")
    ap.add_argument("--work", metavar="DIR", help="where the cases' folders go (default: a new temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the cases' folders")
    ap.add_argument("--list", action="store_true", help="print the catalogue's size by class and its cases; run none")
    ap.add_argument("--fresh", action="store_true",
                    help="every CLI case in a fresh process (slow: torch is imported each time) instead of a fork")
    ap.add_argument("--api-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cli-server", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.api_worker: api_worker(); return 0
    if args.cli_server: cli_server(); return 0
    cases = [c for c in catalogue() if (not args.only or c.cls in args.only) and (not args.match or args.match in
                                                                                   c.name)]
    if args.list:
        with contextlib.suppress(BrokenPipeError):
            print(sizes(cases))
            for c in cases: print(f"{c.cls:10} {c.expect:6} {c.name}")
        return 0
    t0 = time.monotonic()
    target = Target(args.python, args.repo, args.memory_gb)
    base = Path(args.work or tempfile.mkdtemp(prefix="hunt-"))
    base.mkdir(parents=True, exist_ok=True)
    info = target.describe()
    if not info["package"].startswith(str(target.repo)):
        print(f"hunt: warning: {target.python} imports {info['package']}, not the checkout {target.repo}",
              file=sys.stderr)
    print(f"hunt: {sizes(cases)}; target {info['package']} ({info['commit']}); folders in {base}", file=sys.stderr)
    world = World(base / "world", target, args.timeout)
    world.root.mkdir(parents=True)
    with concurrent.futures.ThreadPoolExecutor(1) as boot:          # the servers start while the world is made
        servers = None if args.fresh or not any(c.argv for c in cases) else \
            boot.submit(Forks, target, base / "servers", max(1, args.jobs))
        if any(c.cls != "api" for c in cases):
            world.make(need_checkpoints=any(c.cls in ("checkpoint", "ownership") for c in cases))
        forks = servers.result() if servers else None
    print(f"hunt: world ready in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    records, lock = [None] * len(cases), threading.Lock()

    def say(case, rec):
        outcome = rec["problems"][0] if rec["problems"] else "ok"
        with lock:
            done = sum(r is not None for r in records)
            print(f"hunt: [{done}/{len(cases)} {time.monotonic() - t0:5.0f} s] {case.cls:10} {outcome:15} "
                  f"{case.name}", file=sys.stderr, flush=True)

    def record(i, case, rec):
        records[i] = dict({"class": case.cls, "name": case.name, "expect": case.expect,
                           "command" if case.call is None else "call": case.command,
                           "outcome": rec["problems"][0] if rec["problems"] else "ok"}, **rec)
        say(case, rec)

    def cli_task(i, case):
        try: rec = run_cli_case(case, i, base, target, world, args.timeout, forks)
        except Exception as e: rec = dict(problems=["traceback"], detail=[f"the hunt itself failed: {e!r}"], stderr="")
        record(i, case, rec)

    def kill_task(i, case):
        try: rec = run_kill_case(case, i, base, world, args.timeout, args.seed)
        except Exception as e: rec = dict(problems=["traceback"], detail=[f"the hunt itself failed: {e!r}"], stderr="")
        record(i, case, rec)

    def ref_task(what):
        try: world.refs[what] = make_reference(what, world, base, args.timeout)
        except Exception as e: world.refs[what] = dict(ok=False, err=repr(e), seconds=0)
        finally: world.ref_events[what].set()
        print(f"hunt: reference {what}: {'ok' if world.refs[what]['ok'] else 'FAILED'} "
              f"({world.refs[what]['seconds']:.0f} s)", file=sys.stderr, flush=True)

    def api_task(indexed):
        recs = run_api_cases(indexed, base, target, args.timeout, lambda case, rec: None)
        for i, case in indexed: record(i, case, recs[i])

    indexed = list(enumerate(cases))
    kills = [(i, c) for i, c in indexed if c.cls == "kill"]
    apis = [(i, c) for i, c in indexed if c.cls == "api"]
    others = [(i, c) for i, c in indexed if c.cls not in ("kill", "api")]
    needed = sorted({c.kill["what"] for _, c in kills} | ({"sweep"} if any(c.kill["what"] == "figures"
                                                                             for _, c in kills) else set()),
                    key=["demo", "sweep", "sweep2", "train", "figures"].index)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(ref_task, w) for w in needed]
        if apis: futures.append(pool.submit(api_task, apis))
        futures += [pool.submit(cli_task, i, c) for i, c in others]
        futures += [pool.submit(kill_task, i, c) for i, c in kills]
        for f in futures: f.result()
    if forks: forks.close()
    seconds = time.monotonic() - t0
    print(table(records))
    failed = sum(r["outcome"] != "ok" for r in records)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{len(records)} cases ({sizes(cases)}), {failed} failures; {seconds / 60:.1f} min with --jobs "
          f"{args.jobs} (load average now {load}); target {info['repo']} at {info['commit']}")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(meta=dict(info, seconds=round(seconds), jobs=args.jobs, load=load,
                                                             seed=args.seed, cases=len(records),
                                                             table=table(records)),
                                                   cases=records), indent=1, default=str))
    if not args.keep and not args.work: shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
