"""The tools: the snapshot of a pinned clone's sweeps (which later sessions resume from), the GPU check, the headline."""
import json
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
    for f in ("config.json", "checkpoint.pt", "curve.jsonl", "log.jsonl"): (run / f).write_text(f)
    (run / "traversals.png").write_text("not carried")
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
    assert sorted(p.name for p in carried.iterdir()) == ["checkpoint.pt", "config.json", "curve.jsonl", "log.jsonl"]
    (run / "result.json").write_text("{}")                                 # the run finishes: its checkpoint goes
    out = subprocess.run([sys.executable, str(here / "tools" / "snapshot_science.py"), str(pinned), "--sweep", "one",
                          "--carry", "long"], capture_output=True, text=True)
    assert out.returncode == 0 and "abc: copied (finished: no checkpoint)" in out.stdout, out
    assert sorted(p.name for p in carried.iterdir()) == ["config.json", "curve.jsonl", "log.jsonl", "result.json"]


def test_gpu_check_fails_loudly_without_a_gpu(tmp_path):
    "Asked for CUDA where there is none, the GPU check stops at once with status 2 and says why; it never skips."
    import pytest, torch
    if torch.cuda.is_available(): pytest.skip("a GPU is here: tools/gpu_check.sh would run for real")
    out = subprocess.run(["bash", str(ROOT / "tools" / "gpu_check.sh")], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "OUT": str(tmp_path / "out")})
    assert out.returncode == 2, out
    assert "CUDA asked for, but torch" in out.stderr and "sees no GPU" in out.stderr
    assert not (tmp_path / "out").exists()                     # nothing written


def test_the_landing_page_shows_the_headline_table_of_the_committed_database():
    """The index's headline table is what tools/headline.py computes from results/ now (not numbers typed once), and
    the headline figure it draws is on the page, a page wide at most."""
    sys.path.insert(0, str(ROOT / "tools"))
    import headline
    from PIL import Image
    index = "".join("".join(c["source"]) for c in json.loads((ROOT / "nbs" / "index.ipynb").read_text())["cells"])
    assert headline.table() in index, "nbs/index.ipynb's headline table differs from `python tools/headline.py --table`"
    assert "](images/headline.png)" in index
    with Image.open(ROOT / "nbs" / "images" / "headline.png") as im: assert im.width / 110 <= 6.45


def test_the_demo_quotes_the_reproductions_medians():
    "disentlit.demo.REPRODUCTION, which the demo's report prints beside its own runs, equals the committed database."
    sys.path.insert(0, str(ROOT / "tools"))
    import headline
    from disentlit.demo import REPRODUCTION
    assert REPRODUCTION == headline.medians()
