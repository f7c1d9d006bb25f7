"""The tools: the snapshot of a pinned clone's sweeps (which later sessions resume from), the GPU check, the headline."""
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_snapshot_science_copies_the_databases_and_the_long_runs_state(tmp_path):
    "Only the named sweeps' databases are copied (consistently, while open), and the carried sweep's run directories."
    pinned, here = tmp_path / "pinned", tmp_path / "here"
    (pinned / "results" / "long_runs" / "abc").mkdir(parents=True)
    (here / "tools").mkdir(parents=True)
    (here / "results").mkdir()
    shutil.copy(ROOT / "tools" / "snapshot_science.py", here / "tools")
    writer = sqlite3.connect(pinned / "results" / "one.sqlite")           # a sweep still writing: WAL mode, open
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE runs (id TEXT)"); writer.execute("INSERT INTO runs VALUES ('r1')"); writer.commit()
    sqlite3.connect(pinned / "results" / "other.sqlite").close()
    (here / "results" / "other.sqlite").write_text("this checkout's own copy: not to be overwritten")
    run = pinned / "results" / "long_runs" / "abc"
    for f in (".disentlit", "config.json", "checkpoint.pt", "curve.jsonl", "log.jsonl"): (run / f).write_text(f)
    (run.parent / ".disentlit").write_text("the runs folder's mark")            # a file beside the run folders
    (run / "loss_curve.png").write_text("not carried: drawn again from the log")
    (run / "traversals.png").write_text("what each latent draws: carried")
    out = subprocess.run([sys.executable, str(here / "tools" / "snapshot_science.py"), str(pinned), "--sweep", "one",
                          "--sweep", "missing", "--carry", "long"], capture_output=True, text=True)
    writer.close()
    assert out.returncode == 0, out.stderr
    assert "missing.sqlite: not started" in out.stdout
    copied = sqlite3.connect(here / "results" / "one.sqlite")
    assert copied.execute("SELECT id FROM runs").fetchall() == [("r1",)]
    copied.close()
    assert (here / "results" / "other.sqlite").read_text().startswith("this checkout's own")
    carried = here / "results" / "long_runs" / "abc"
    assert sorted(p.name for p in carried.iterdir()) == [".disentlit", "checkpoint.pt", "config.json", "curve.jsonl",
                                                        "log.jsonl", "traversals.png"]
    # the marks that let a resumed sweep take the folders as its own, copied as files
    assert (carried.parent / ".disentlit").read_text() == "the runs folder's mark"
    assert (carried / ".disentlit").read_text() == ".disentlit"
    (run / "result.json").write_text("{}")                                 # the run finishes: its checkpoint goes
    (run / "latents.npz").write_text("the shared sample's latent means")    # and its latents come
    out = subprocess.run([sys.executable, str(here / "tools" / "snapshot_science.py"), str(pinned), "--sweep", "one",
                          "--carry", "long"], capture_output=True, text=True)
    assert out.returncode == 0 and "abc: copied (finished: no checkpoint)" in out.stdout, out
    assert sorted(p.name for p in carried.iterdir()) == [".disentlit", "config.json", "curve.jsonl", "latents.npz",
                                                        "log.jsonl", "result.json", "traversals.png"]
    sqlite3.connect(pinned / "results" / "x_pilot.sqlite").close()           # a pilot's record goes to results/pilots
    (pinned / "results" / "x_pilot_runs" / "r").mkdir(parents=True)
    (pinned / "results" / "x_pilot_runs" / "r" / "curve.jsonl").write_text("{}")
    out = subprocess.run([sys.executable, str(here / "tools" / "snapshot_science.py"), str(pinned), "--sweep", "x_pilot",
                          "--carry", "x_pilot"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert (here / "results" / "pilots" / "x_pilot.sqlite").exists() and not (here / "results" / "x_pilot.sqlite").exists()
    assert (here / "results" / "pilots" / "x_pilot_runs" / "r" / "curve.jsonl").exists()


def test_gpu_check_fails_loudly_without_a_gpu(tmp_path):
    "Asked for CUDA where there is none, the GPU check stops at once with status 2 and says why; it never skips."
    import pytest, torch
    if torch.cuda.is_available(): pytest.skip("a GPU is here: tools/gpu_check.sh would run for real")
    out = subprocess.run(["bash", str(ROOT / "tools" / "gpu_check.sh")], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "OUT": str(tmp_path / "out")})
    assert out.returncode == 2, out
    assert "CUDA asked for, but torch" in out.stderr and "sees no GPU" in out.stderr
    assert not (tmp_path / "out").exists()                     # nothing written


STUB_PYTHON = r"""#!/usr/bin/env bash
# a stand-in for the device machine's python3: records each call, plays each part of the GPU check
echo "$*" >> "$CALLS"
arg() { echo "$*" | sed -n "s/.* $1 \([^ ]*\).*/\1/p"; }      # the value of an option of the command line
case "$*" in
  *"-m pytest"*) echo "4 passed";;
  *"bench train"*) echo '{"device": "cuda"}';;
  *" sweep "*) db=$(arg --db "$*"); runs="${db%.sqlite}_runs/r1"; mkdir -p "$runs"
               echo '{"step": 5760}' > "$runs/curve.jsonl"; echo weights > "$runs/checkpoint.pt"
               exit "${SWEEP_STATUS:-0}";;
  *" figures "*) out=$(arg --out "$*"); mkdir -p "$out"; echo png > "$out/curves.png";;
  "-"*) cat > /dev/null;;                                           # the inline programs: CUDA is here, a copy
esac
exit 0
"""


def _gpu_check(tmp_path, **env):
    "tools/gpu_check.sh run with a stand-in Python; returns (the completed process, its calls, the output folder)."
    stub = tmp_path / "python3"
    stub.write_text(STUB_PYTHON); stub.chmod(0o755)
    calls, out = tmp_path / "calls.txt", tmp_path / "out"
    calls.unlink(missing_ok=True)
    p = subprocess.run(["bash", str(ROOT / "tools" / "gpu_check.sh")], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "PYTHON": str(stub), "OUT": str(out), "CALLS": str(calls),
                            "GPU_CHECK_STATE": str(tmp_path / "state"), **env})
    return p, calls.read_text().splitlines() if calls.exists() else [], out


def _packed(out, name="figure11_gpu"):
    import tarfile
    with tarfile.open(out / f"{name}_runs.tar.gz") as t: return sorted(t.getnames())


QUEUE = ["figure11_gpu_seeds_1_2", "positive_control_gpu", "matched_gpu", "tcvae_gpu", "wae_gpu", "comparison_gpu"]


def _spec(tmp_path, name):
    "Where the check reads a queued spec: specs/, or its state folder for figure 11's seeds."
    return f"{tmp_path / 'state' / name}.yaml" if "seeds" in name else f"specs/{name}.yaml"


def _sweeps(calls) -> list[str]:
    "The specs the calls swept, in order."
    return [c.split(" sweep ")[1].split()[0] for c in calls if " sweep " in c]


def test_gpu_check_runs_every_part_once_and_brings_back_the_runs_curves(tmp_path):
    """Each part runs as the commands it names (the bench and the sweeps through `timeout`, which runs programs, not
    shell functions); the queue's specs (figure 11's seeds no session finished, then the paper-scale twins in
    results/gpu/README.md's order), each packed (32 runs a step by default);
    every sweep's small files come back in an archive of its own, never a checkpoint; a second call finds every part
    and every spec done and runs nothing again."""
    p, calls, out = _gpu_check(tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "every part done" in p.stdout
    assert any("-m pytest -q -m cuda tests/test_cuda.py" in c for c in calls)
    assert any("bench train --device cuda --pack 1,8,32,64 --precision fp32,tf32,bf16 --quiet" in c for c in calls)
    assert any("bench train --device cuda --compile --precision fp32" in c for c in calls)
    assert (out / "bench_train_compiled.txt").read_text().strip() == "exit status 0"
    assert _sweeps(calls) == [_spec(tmp_path, n) for n in QUEUE], calls
    assert all("--pack 32 --device cuda --resume" in c for c in calls if " sweep " in c), calls
    assert json.loads((out / "bench_train.json").read_text()) == {"device": "cuda"}
    for name in QUEUE:
        assert _packed(out, name) == [f"{name}/curves.png", f"{name}_runs/r1/curve.jsonl"]
    p, again, _ = _gpu_check(tmp_path)
    assert p.returncode == 0 and again and not [c for c in again if "-m pytest" in c or "bench train" in c
                                                or " sweep " in c or " figures " in c], again


def test_gpu_check_cut_off_in_the_sweep_says_so_and_still_brings_back_the_curves(tmp_path):
    """The sweep stopped by the time limit (timeout's 124): status 3 (call again), the curves so far packed, the
    queue's later specs not started; the next call resumes the same spec."""
    p, calls, out = _gpu_check(tmp_path, SWEEP_STATUS="124")
    assert p.returncode == 3 and "call again to resume" in p.stderr, p.stdout + p.stderr
    assert _packed(out, QUEUE[0]) == [f"{QUEUE[0]}_runs/r1/curve.jsonl"]
    assert _sweeps(calls) == [_spec(tmp_path, QUEUE[0])] and not any(" figures " in c for c in calls)
    p, again, _ = _gpu_check(tmp_path)
    assert p.returncode == 0 and _sweeps(again) == [_spec(tmp_path, n) for n in QUEUE], again


def test_gpu_check_stops_at_a_failed_sweep(tmp_path):
    "A sweep that fails (status 1) stops the check with status 1, naming it; the queue's later specs wait."
    p, calls, out = _gpu_check(tmp_path, SWEEP_STATUS="1")
    assert p.returncode == 1 and f"the {QUEUE[0]} sweep failed (status 1)" in p.stderr, p.stderr
    assert _sweeps(calls) == [_spec(tmp_path, QUEUE[0])]


def test_gpu_check_takes_a_queue_and_a_pack_and_refuses_bad_ones(tmp_path):
    """GPU_QUEUE picks the specs and their order; PACK=1 runs WORKERS plain runs at once instead of a packed step;
    a name that is no paper-scale spec, or a PACK that is no whole number, is refused before anything runs."""
    p, calls, _ = _gpu_check(tmp_path, GPU_QUEUE="matched_gpu figure11_gpu", PACK="1", WORKERS="3", FIG11_SEEDS="")
    assert p.returncode == 0, p.stdout + p.stderr
    assert _sweeps(calls) == ["specs/matched_gpu.yaml", "specs/figure11_gpu.yaml"]     # FIG11_SEEDS empty: all seeds
    assert all("--workers 3 --device cuda" in c and "--pack" not in c for c in calls if " sweep " in c), calls
    for i, env, said in [(1, dict(GPU_QUEUE="matched_gpu figure11_cpu"), "got 'figure11_cpu'"),
                         (2, dict(PACK="eight"), "PACK must be a whole number of runs, 1 or more; got 'eight'"),
                         (3, dict(PACK="0"), "got '0'")]:
        (tmp_path / f"bad{i}").mkdir()
        p, calls, _ = _gpu_check(tmp_path / f"bad{i}", **env)
        assert p.returncode == 2 and said in p.stderr and calls == [], (env, p.stderr, calls)
        assert not (tmp_path / f"bad{i}" / "state").exists()


def test_gpu_check_runs_one_seed_of_figure_11_as_a_sweep_of_its_own(tmp_path):
    """FIG11_SEEDS=1: the spec with only its name and seeds changed (both losses at seed 1, the same run settings),
    its own database and archive; a malformed value is refused before anything runs."""
    p, calls, out = _gpu_check(tmp_path, FIG11_SEEDS="1", GPU_SWEEP="figure11_gpu")
    assert p.returncode == 0, p.stdout + p.stderr
    derived = tmp_path / "state" / "figure11_gpu_seeds_1.yaml"
    assert any(f"sweep {derived} --db {tmp_path / 'state' / 'figure11_gpu_seeds_1.sqlite'}" in c for c in calls), calls
    original = (ROOT / "specs" / "figure11_gpu.yaml").read_text().splitlines()
    changed = [(a, b) for a, b in zip(original, derived.read_text().splitlines()) if a != b]
    assert changed == [("name: figure11_gpu", "name: figure11_gpu_seeds_1"), ("repeats: 3", "seeds: [1]")], changed
    from disentlit.sweeps import expand_spec, load_spec
    _, mine = expand_spec(load_spec(derived))
    _, every = expand_spec(load_spec(ROOT / "specs" / "figure11_gpu.yaml"))
    assert mine == [c for c in every if c.seed == 1] and {c.loss for c in mine} == {"mse", "box_blur"}
    assert _packed(out, "figure11_gpu_seeds_1") == ["figure11_gpu_seeds_1/curves.png",
                                                     "figure11_gpu_seeds_1_runs/r1/curve.jsonl"]
    (tmp_path / "bad").mkdir()
    p, calls, _ = _gpu_check(tmp_path / "bad", FIG11_SEEDS="one")
    assert p.returncode == 2 and "FIG11_SEEDS must be seeds such as 0 or 1,2; got 'one'" in p.stderr
    assert not any(" sweep " in c or "-m pytest" in c for c in calls)
    (tmp_path / "bad2").mkdir()
    p, calls, _ = _gpu_check(tmp_path / "bad2", FIG11_SEEDS="1", GPU_QUEUE="matched_gpu")
    assert p.returncode == 2 and "FIG11_SEEDS picks seeds of figure11_gpu, which the queue" in p.stderr and calls == []


def test_gpu_check_skips_the_parts_it_is_told_to_and_refuses_unknown_ones(tmp_path):
    """GPU_CHECK_SKIP leaves out parts an earlier session measured, so that the device time goes to the rest; a name it
    does not know is refused before anything runs."""
    p, calls, out = _gpu_check(tmp_path, GPU_CHECK_SKIP="bench_train bench_compiled")
    assert p.returncode == 0, p.stdout + p.stderr
    assert not any("bench train" in c for c in calls) and not (out / "bench_train.json").exists()
    assert any("-m pytest -q -m cuda" in c for c in calls) and any(" sweep " in c for c in calls)
    (tmp_path / "bad").mkdir()
    p, calls, _ = _gpu_check(tmp_path / "bad", GPU_CHECK_SKIP="bench_train sweep")
    assert p.returncode == 2 and "GPU_CHECK_SKIP takes cuda_tests, bench_train, bench_compiled; got 'sweep'" in p.stderr
    assert calls == [] and not (tmp_path / "bad" / "state").exists()


def test_the_landing_page_shows_the_headline_table_of_the_committed_database():
    """The index's headline table is printed by a cell from what tools/headline.py computes from results/ now (not
    numbers typed once), the saved output and the README show it as it stands, and the headline figure it draws is on
    the page, a page wide at most."""
    sys.path.insert(0, str(ROOT / "tools"))
    import headline
    from PIL import Image
    cells = json.loads((ROOT / "nbs" / "index.ipynb").read_text())["cells"]
    index = "".join("".join(c["source"]) for c in cells)
    table = [c for c in cells if c["cell_type"] == "code" and 'run_path("../tools/headline.py")' in "".join(c["source"])]
    assert len(table) == 1, "nbs/index.ipynb has no cell (or several) printing tools/headline.py's table"
    shown = "".join("".join(o["data"]["text/markdown"]) for o in table[0]["outputs"] if "text/markdown" in o.get("data", {}))
    stale = "run tools/run_notebook.py nbs/index.ipynb, then tools/readme.py"
    assert headline.table() in shown, f"nbs/index.ipynb's saved headline table differs from the database's: {stale}"
    assert headline.table() in (ROOT / "README.md").read_text(), f"README.md's headline table is not the database's: {stale}"
    assert "](images/headline.png)" in index
    with Image.open(ROOT / "nbs" / "images" / "headline.png") as im: assert im.width / 110 <= 6.45


def test_the_pair_of_traversals_pictures_the_typical_runs():
    """The landing page's and the demo's pair of traversal grids (tools/headline.py --pair) is of the runs that
    `typical_run` picks from the committed databases now (the PNG names them), from their committed grids; the page
    shows it and the package holds the same bytes."""
    sys.path.insert(0, str(ROOT / "tools"))
    import headline
    from PIL import Image
    shown = ROOT / "nbs" / "images" / headline.PAIR
    with Image.open(shown) as im: named = json.loads(im.text[headline.PAIR_KEY])
    picked = {name: r["id"] for name, r in headline.pictured().items()}
    assert named == picked, "the pair shows other runs than the rule picks: run tools/headline.py --pair"
    for name, run in picked.items():
        assert headline.grid(name, run).exists(), (name, run)
    assert (ROOT / "disentlit" / "assets" / headline.PAIR).read_bytes() == shown.read_bytes()
    index = "".join("".join(c["source"]) for c in json.loads((ROOT / "nbs" / "index.ipynb").read_text())["cells"])
    assert f"](images/{headline.PAIR})" in index


def test_the_demo_quotes_the_reproductions_medians():
    "disentlit.demo.REPRODUCTION, which the demo's report prints beside its own runs, equals the committed database."
    sys.path.insert(0, str(ROOT / "tools"))
    import headline
    from disentlit.demo import REPRODUCTION
    assert REPRODUCTION == headline.medians()


def test_the_demo_quotes_the_claims_table():
    "disentlit.demo.QUOTED, the controls' claims the demo's report quotes, equals the committed results/claims.csv."
    from disentlit.demo import QUOTED, quote
    from disentlit.statistics import read_claims
    rows = {r["id"]: r for r in read_claims(ROOT / "results" / "claims.csv")}
    assert QUOTED == {k: quote(rows[k]) for k in QUOTED}, "set disentlit.demo.QUOTED (08e) to these rows' quote"


def test_run_notebook_saves_the_figures_a_notebook_names_and_refuses_when_none(tmp_path):
    """`tools/run_notebook.py --figures DIR` writes each `#| label: fig-NAME` cell's PNG, the bytes the notebook shows,
    to DIR/NAME.png; an unlabelled figure is not saved, and a notebook with no labelled figure is an error. Every
    figure's PNG keeps what `small_text` found in it (the site's figures rule reads that)."""
    import base64
    from execnb.nbio import new_nb, mk_cell, read_nb, write_nb
    draw = "import matplotlib.pyplot as plt\nplt.plot([0, {}]); plt.show()"
    nb = new_nb([mk_cell("#| label: fig-rising\n#| fig-cap: 'up'\n" + draw.format(1)),
                 mk_cell(draw.format(2).replace("; plt.show", "; plt.xlabel('tiny', fontsize=4); plt.show")),
                 mk_cell("print('no figure')")])
    write_nb(nb, tmp_path / "a.ipynb")
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "run_notebook.py"), str(tmp_path / "a.ipynb"),
                          "--figures", "figs"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["rising.png"]
    shown = read_nb(tmp_path / "a.ipynb").cells[0].outputs
    png = [o["data"]["image/png"] for o in shown if "image/png" in o.get("data", {})]
    assert len(png) == 1 and (tmp_path / "figs" / "rising.png").read_bytes() == base64.b64decode("".join(png[0]))
    sys.path.insert(0, str(ROOT / "tools"))
    from docs_check import figure_verdict                      # each figure measured as it was drawn: the site reads it
    assert figure_verdict((tmp_path / "figs" / "rising.png").read_bytes()) == []
    small = [o["data"]["image/png"] for o in read_nb(tmp_path / "a.ipynb").cells[1].outputs
             if "image/png" in o.get("data", {})]
    assert figure_verdict(base64.b64decode("".join(small[0]))) == [["tiny", 4.0]]
    write_nb(new_nb([mk_cell(draw.format(3))]), tmp_path / "b.ipynb")
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "run_notebook.py"), str(tmp_path / "b.ipynb"),
                          "--figures", str(tmp_path / "none")], capture_output=True, text=True)
    assert out.returncode != 0 and "label: fig-NAME" in out.stderr and not (tmp_path / "none").exists()


def test_the_predict_figure_in_results_is_the_one_the_notebook_shows():
    """results/predict_cpu/predict_cpu.png is byte for byte the figure 12_predict shows from the committed database:
    the two are refreshed together (`tools/run_notebook.py nbs/12_predict.ipynb --figures results/predict_cpu`)."""
    import base64
    cells = json.loads((ROOT / "nbs" / "12_predict.ipynb").read_text())["cells"]
    [cell] = [c for c in cells if "#| label: fig-predict_cpu\n" in c["source"]]
    [png] = [o["data"]["image/png"] for o in cell["outputs"] if "image/png" in o.get("data", {})]
    assert (ROOT / "results" / "predict_cpu" / "predict_cpu.png").read_bytes() == base64.b64decode("".join(png))


def test_readme_copies_a_markdown_output_as_markdown_and_hides_echo_false_code(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import readme
    def code(src, data): return dict(cell_type="code", source=src, metadata={}, outputs=[
        dict(output_type="display_data", metadata={}, data=data)])
    nb = dict(cells=[code("#| echo: false\nshow_claims()", {"text/markdown": "| a | b |\n|---|---|",
                                                            "text/plain": "<Markdown>"}),
                     code("1 + 1", {"text/plain": "2"})], metadata={}, nbformat=4, nbformat_minor=5)
    (tmp_path / "index.ipynb").write_text(json.dumps(nb))
    text = readme.render(tmp_path / "index.ipynb")
    assert "| a | b |\n|---|---|" in text and "show_claims" not in text and "<Markdown>" not in text
    assert "```python\n1 + 1\n```\n\n```\n2\n```" in text
    nb["cells"][0]["outputs"][0]["data"]["text/markdown"] = "[the demo](08e_demo.ipynb), ![x](images/x.png)"
    (tmp_path / "index.ipynb").write_text(json.dumps(nb))                 # a Markdown output's links, from the root
    assert "[the demo](nbs/08e_demo.ipynb), ![x](nbs/images/x.png)" in readme.render(tmp_path / "index.ipynb")


def test_the_readme_and_the_install_page_state_the_demo_time_that_was_measured():
    """The demo's time in the README and on the install page is `stated_time` of results/demo_time.json, the
    measurement tools/time_demo.py made of the default demo on two cores (a machine like CI's), not a number typed by
    hand; the README's old hand-typed "about 5 minutes on two cores" is gone."""
    from disentlit.demo import DEMO_BATCH, DEMO_STEPS, stated_time
    record = json.loads((ROOT / "results" / "demo_time.json").read_text())
    assert (record["steps"], record["batch_size"], record["cores"]) == (DEMO_STEPS, DEMO_BATCH, 2), record
    readme = (ROOT / "README.md").read_text()
    install = json.dumps(json.loads((ROOT / "nbs" / "install.ipynb").read_text()))     # its outputs, escaped alike
    assert stated_time(record) in readme and json.dumps(stated_time(record))[1:-1] in install
    assert "about 5 minutes on two cores" not in readme and "5.2 min" not in install


def test_the_install_page_prints_its_tables_from_the_measurements():
    """The extras' sizes and the examples' times on the install page are printed by its cells from
    results/extras.json (tools/measure_extras.py) and results/example_times.json (tools/time_examples.py), every
    extra and every example of the tool there, nothing typed by hand."""
    sys.path.insert(0, str(ROOT / "tools"))
    import measure_extras, time_examples
    install = json.loads((ROOT / "nbs" / "install.ipynb").read_text())
    outputs = "".join("".join(o.get("data", {}).get("text/markdown", "")) for c in install["cells"]
                      for o in c.get("outputs", []))
    sources = "".join("".join(c["source"]) for c in install["cells"] if c["cell_type"] == "markdown"
                      and "".join(c["source"]).startswith(("## Optional parts", "Measured by", "## How long")))
    extras = json.loads((ROOT / "results" / "extras.json").read_text())["extras"]
    assert list(extras) == list(measure_extras.EXTRAS)
    for name, e in extras.items(): assert f"| `{name}` |" in outputs and f"{e['mb']:,.1f} MB" in outputs, name
    times = json.loads((ROOT / "results" / "example_times.json").read_text())["examples"]
    assert [t["command"] for t in times] == ["disentlit " + e.replace("{root}/", "") for e in time_examples.EXAMPLES]
    for t in times: assert f"| `{t['command']}` |" in outputs, t["command"]
    assert not re.search(r"\d+(\.\d+)? (MB|min)\b", sources), "a size or a time typed into the install page's prose"


def test_time_examples_times_the_commands_in_a_scratch_folder(tmp_path):
    "`--only 1` times `disentlit --help` (exit status 0) and records nothing."
    before = (ROOT / "results" / "example_times.json").read_bytes()
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "time_examples.py"), "--only", "1"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and re.search(r"s  exit 0  disentlit --help$", p.stdout.strip()), p.stdout + p.stderr
    assert (ROOT / "results" / "example_times.json").read_bytes() == before


def test_gpu_check_runs_the_paper_scale_sweep_it_is_given_and_refuses_an_unknown_one(tmp_path):
    """GPU_SWEEP picks part 3's spec among specs/*_gpu.yaml (a queue of one; figure11_gpu at the seeds FIG11_SEEDS
    names, by default those no session finished); anything else is refused before any part runs."""
    p, calls, out = _gpu_check(tmp_path, GPU_SWEEP="matched_gpu", GPU_CHECK_SKIP="cuda_tests bench_train bench_compiled")
    assert p.returncode == 0 and _sweeps(calls) == ["specs/matched_gpu.yaml"], p.stderr
    (tmp_path / "fig11").mkdir()
    p, calls, out = _gpu_check(tmp_path / "fig11", GPU_SWEEP="figure11_gpu")
    assert p.returncode == 0 and _sweeps(calls) == [_spec(tmp_path / "fig11", "figure11_gpu_seeds_1_2")], calls
    for i, bad in enumerate(("figure11_cpu", "../x_gpu", "nosuch_gpu")):
        (tmp_path / str(i)).mkdir()
        p, calls, _ = _gpu_check(tmp_path / str(i), GPU_SWEEP=bad)
        assert p.returncode == 2 and "GPU_QUEUE and GPU_SWEEP must name paper-scale specs, one of: " in p.stderr, p.stderr
        assert "figure11_gpu" in p.stderr.split("one of: ")[1].split(";")[0].split(), p.stderr   # the specs, listed
        assert calls == [], calls
    (tmp_path / "seeds").mkdir()
    p, calls, _ = _gpu_check(tmp_path / "seeds", GPU_SWEEP="figure11_gpu", FIG11_SEEDS="1")
    assert p.returncode == 0, p.stderr


def test_cell_stats_counts_export_cells_long_lines_and_definitions_followed_by_their_test(tmp_path):
    """`tools/cell_stats.py`: the lines of each export cell (directive and blank lines included), the share of them
    past 100 characters, and the export cells defining a function or class whose next cell, `show_doc` and import
    cells skipped, is a test (prose or another export in between does not count)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import cell_stats
    from execnb.nbio import new_nb, mk_cell, write_nb
    long = "x = " + "1 + " * 30 + "1"                                   # 125 characters
    nb = new_nb([mk_cell("#| export\nimport math"),                     # 2 lines, no definition
                 mk_cell("#| export\ndef f(x):\n\n    return x"),       # 4 lines, followed (show_doc, import skipped)
                 mk_cell("show_doc(f)"), mk_cell("import os"), mk_cell("assert f(2) == 2"),
                 mk_cell("#| export\nclass _A: pass\n" + long),          # 3 lines, one long, then prose
                 mk_cell("Prose between.", cell_type="markdown"), mk_cell("assert _A"),
                 mk_cell("#| export\ndef g(): return 1"),                # 2 lines, then another export
                 mk_cell("#|export\nh = g()\n" + long),                  # 3 lines, one long, no definition
                 mk_cell("def k(): pass")])                              # not exported: not counted
    write_nb(nb, tmp_path / "a.ipynb")
    s = cell_stats.report([tmp_path / "a.ipynb"])
    assert s["a"]["sizes"] == [2, 4, 3, 2, 3] and s["a"]["median"] == 3 and s["a"]["p90"] == 3.6
    assert (s["a"]["long_lines"], s["a"]["lines"], s["a"]["long"]) == (2, 14, round(2 / 14, 3))
    assert (s["a"]["definitions"], s["a"]["followed"], s["a"]["unfollowed"]) == (3, 1, ["_A", "g"])
    assert s["all"]["sizes"] == s["a"]["sizes"] and s["all"]["followed"] == 1
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "cell_stats.py"), "--json", str(tmp_path / "a.ipynb")],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["a"]["followed"] == 1


def test_predict_page_leads_with_the_answer_and_types_no_result():
    """12_predict opens with its question, the answer printed from the results and the real figure, all before the
    made-up mock-up; and outside the pre-registration (its question and protocol, committed before the runs), no
    Markdown cell holds a number with decimals but the protocol's thresholds: the answer and the reading are rendered by
    cells from the results, with the verdict of the claims table."""
    import json, re
    from disentlit.statistics import read_claims
    verdict = {r["id"]: r["verdict"] for r in read_claims(ROOT / "results" / "claims.csv")}["predict.order_score.dci"]
    cells = json.loads((ROOT / "nbs" / "12_predict.ipynb").read_text())["cells"]
    srcs = ["".join(c["source"]) for c in cells]
    at = lambda text: next(i for i, s in enumerate(srcs) if text in s)
    shown = lambda i: "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in cells[i].get("outputs", []))
    answer, figure, mock, reading = at("**The answer: "), at("#| label: fig-predict_cpu"), at("MOCK-UP"), at("**The verdict: ")
    assert answer < figure < mock < reading
    assert f"**The answer: {verdict}.**" in shown(answer) and f"**The verdict: {verdict}.**" in shown(reading)
    assert any("image/png" in o.get("data", {}) for o in cells[figure]["outputs"])
    assert srcs[answer].startswith("#| echo: false") and srcs[reading].startswith("#| echo: false")
    frozen = {at("## The question, in full"), at("## The protocol")}
    for i, (c, s) in enumerate(zip(cells, srcs)):
        if c["cell_type"] != "markdown" or i in frozen: continue
        typed = set(re.findall(r"(?<![\w:/.-])\d+\.\d+", s)) - {"0.8", "0.5", "0.05"}
        assert not typed, f"cell {i} types {typed}: {s[:100]!r}"
