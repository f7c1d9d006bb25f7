"""tools/hunt.py's classifier and catalogue, on planted outcomes (the hunt itself never runs here: it takes minutes)."""
import importlib.util
import json
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("hunt", ROOT / "tools" / "hunt.py")
hunt = sys.modules["hunt"] = importlib.util.module_from_spec(spec)     # (dataclasses look their module up)
spec.loader.exec_module(hunt)


def case(expect="refuse", argv=("train", "--json"), **kw):
    return hunt.Case("settings", "planted", argv=list(argv), expect=expect, **kw)


def proc(rc=2, out="", err="disentlit: error: bad value; accepted: 1..9\n", **kw):
    return hunt.Proc(rc, out, err, **kw)


def test_a_clean_refusal_is_ok():
    assert hunt.classify(case(), proc(), [], []) == []
    assert hunt.classify(case(), proc(err="disentlit: warning: w\ndisentlit: error: e\n"), [], []) == []


def test_a_planted_traceback_is_flagged():
    err = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: boom\n'
    assert hunt.classify(case(), proc(rc=1, err=err), [], [])[0] == "traceback"
    assert hunt.classify(case(expect="accept"), proc(rc=0, out="{}", err="Exception ignored in: x\n"), [], []) \
        == ["traceback"]


def test_a_changed_user_file_is_flagged(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    (tmp_path / "run.log").write_text("disentlit's")
    before = hunt.snapshot(tmp_path)
    (tmp_path / "mine" / "notes.txt").write_text("overwritten")
    (tmp_path / "run.log").unlink()
    after = hunt.snapshot(tmp_path)
    lost = hunt.changed(before, after, {"mine"})
    assert lost == ["mine/notes.txt"]
    touched = [p for p in hunt.changed(before, after, before) if p not in lost]
    assert touched == ["run.log"]
    assert hunt.classify(case(expect="accept"), proc(rc=0, out="{}", err=""), lost, []) == ["lost-file"]
    assert hunt.classify(case(), proc(), [], touched) == ["touched"]


def test_the_other_failures():
    assert hunt.classify(case(), proc(rc=0, out="{}", err=""), [], []) == ["silent-accept"]
    assert hunt.classify(case(), proc(rc=1), [], []) == ["wrong-exit"]
    assert hunt.classify(case(), proc(err="usage: ...\ndisentlit: error: e\n"), [], []) == ["messy-error"]
    assert hunt.classify(case(), proc(out="disentlit: error: e\n"), [], []) == ["stdout-polluted"]
    assert hunt.classify(case(), proc(rc=-9, timed_out=True), [], []) == ["hang"]
    assert hunt.classify(case(), proc(rc=-11, err=""), [], []) == ["traceback"]          # a crash
    assert hunt.classify(case(expect="accept"), proc(rc=0, out='{"x": NaN}', err=""), [], []) == ["nan"]
    assert hunt.classify(case(expect="accept"), proc(rc=0, out='{}\n{}', err=""), [], []) == ["stdout-polluted"]
    assert hunt.classify(case(expect="either"), proc(rc=0, out="{}", err=""), [], []) == []
    assert hunt.classify(case(stream="no-stderr"), proc(err=""), [], []) == []
    assert hunt.classify(case(started="x"), proc(rc=-9, out="", err="", started=True), [], []) == ["silent-accept"]


def test_api_replies():
    assert hunt.classify_api(dict(raised="DisentlitError", project=True)) == []
    assert hunt.classify_api(dict(raised="TypeError", project=False)) == ["traceback"]
    assert hunt.classify_api(dict(returned="0.5", nonfinite=False)) == ["silent-accept"]
    assert hunt.classify_api(dict(returned="nan", nonfinite=True)) == ["nan"]
    assert hunt.classify_api(dict(returned="{}", nonfinite=False, accept_ok=True)) == []
    assert hunt.classify_api(dict(hang=True)) == ["hang"]


def test_the_catalogue_is_large_and_new():
    cases = hunt.catalogue()
    kills = [c for c in cases if c.cls == "kill"]
    assert len(cases) - len(kills) >= 220 and len(kills) >= 24
    assert {c.cls for c in cases} == set(hunt.CLASSES)
    assert all(c.expect in ("refuse", "accept", "either") for c in cases)


def test_the_table_counts_by_class_and_outcome():
    records = [{"class": "api", "outcome": "ok"}, {"class": "api", "outcome": "nan"},
               {"class": "kill", "outcome": "ok"}]
    text = hunt.table(records)
    assert text.splitlines()[0].split() == ["class", "cases", "ok", "nan"]
    assert text.splitlines()[-1].split() == ["total", "3", "2", "1"]
    assert json.loads(json.dumps(records)) == records
