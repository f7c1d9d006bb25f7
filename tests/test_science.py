"""The science's records: every committed protocol obeys the seed rule (pilots draw their own seeds, confirmatory
sweeps never draw one of them), and the numbers the README and the landing page state are the claims table's."""
import subprocess, sys
from pathlib import Path

import pytest

from disentlit.specs import PILOT_SEEDS, expand_spec, load_spec

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.yaml"))


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_every_committed_spec_keeps_pilot_and_confirmatory_seeds_apart(path):
    name, configs = expand_spec(load_spec(path))      # raises if the rule is broken
    pilot = {c.seed in PILOT_SEEDS for c in configs}
    assert pilot == {name.endswith("_pilot")}


def test_a_confirmatory_sweep_on_a_pilot_seed_is_refused_before_any_run(tmp_path):
    spec = tmp_path / "late.yaml"
    spec.write_text("name: late\nbase: {dataset: xysquares, steps: 2, batch_size: 4}\nseeds: [1, 901]\n")
    db = tmp_path / "r.sqlite"
    p = subprocess.run([str(Path(sys.executable).parent / "disentlit"), "sweep", str(spec), "--db", str(db)],
                       capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert "seed 901 is inside the pilots' seeds 900-999" in p.stderr and "Traceback" not in p.stderr
    assert not db.exists()


def test_the_readme_shows_the_claims_table_as_it_stands():
    "README's table is the claims table drawn by claims_markdown: a claim changed in results/claims.csv fails this."
    from disentlit.statistics import claims_markdown, read_claims
    rows = read_claims(ROOT / "results" / "claims.csv")
    assert rows, "results/claims.csv is empty"
    assert claims_markdown(rows) in (ROOT / "README.md").read_text(), \
        "README.md's claims table differs from results/claims.csv: run tools/run_notebook.py nbs/index.ipynb, then tools/readme.py"


def test_09b_shows_the_answers_of_the_claims_table_as_it_stands():
    """09b leads with its answers, read from results/claims.csv before the notebook computes the rows again; its saved
    output (what the site shows) must be the committed table's, not the one before the run that rewrote it."""
    import json
    from disentlit.statistics import read_claims
    cells = json.loads((ROOT / "nbs" / "09b_controls.ipynb").read_text())["cells"]
    top = next(c for c in cells if "".join(c["source"]).startswith("#| echo: false\n# the answers first"))
    shown = "".join("".join(o["data"]["text/markdown"]) for o in top["outputs"] if "text/markdown" in o.get("data", {}))
    ours = [r for r in read_claims(ROOT / "results" / "claims.csv") if r["source"] == "09b_controls"]
    assert ours and shown, "09b's answers or its claims are missing"
    stale = [r["id"] for r in ours if r["verdict"] not in shown]
    assert not stale, (f"09b's saved answers are older than results/claims.csv ({stale}): run "
                       "tools/run_notebook.py nbs/09b_controls.ipynb again, now that the table is written")
