"""The command line contract, end to end: each command through `disentlit.cli.main` in this process (the `cli`
fixture), and through the installed console script (`console`) where the process itself is what is tested."""
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chromium import CHROMIUM, needs_chromium          # skipped without Chromium, saying how to get it
from disentlit.cli import parse_params

ROOT = Path(__file__).resolve().parents[1]


def test_datasets_lists_every_dataset(console):
    code, out, err = console("datasets", "--json")
    assert code == 0, err
    rows = {d["name"]: d for d in json.loads(out)["datasets"]}       # exactly one JSON object on stdout
    assert set(rows) >= {"xysquares", "xyobject", "sprites", "dsprites", "shapes3d", "cars3d", "smallnorb"}
    assert rows["xysquares"]["num_obs"] == 8 ** 6 and rows["xysquares"]["available"]
    assert rows["xysquares"]["factor_names"] == ["x_R", "y_R", "x_G", "y_G", "x_B", "y_B"]
    assert not rows["dsprites"]["available"]                          # nothing downloaded in a fresh data dir
    code, out, _ = console("datasets")
    assert code == 0 and "xysquares" in out and "--prepare dsprites" in out


def test_stats_json_matches_closed_form(cli):
    code, out, err = cli("datasets", "--stats", "xyobject", "--json")
    assert code == 0, err
    r = json.loads(out)
    q = 64 / 4096                                    # one 8x8 white square in 64x64 pixels
    np.testing.assert_allclose(r["mean"], [q], rtol=1e-12)
    np.testing.assert_allclose(r["std"], [np.sqrt(q * (1 - q) * 4096 / 4095)], rtol=1e-12)
    np.testing.assert_allclose(r["std_global"], [np.sqrt(q * (1 - q))], rtol=1e-12)


def test_bench_data_reports_a_ratio(cli):
    code, out, err = cli("bench", "data", "--json", "--repeats", "5")
    assert code == 0, err
    r = json.loads(out)
    assert r["batch_size"] == 256 and r["vectorised_ms"] > 0 and r["loop_ms"] > 0
    assert r["speedup"] == pytest.approx(r["loop_ms"] / r["vectorised_ms"], rel=0.05)
    assert 0 < r["batch_fraction_of_step"] == pytest.approx(r["vectorised_ms"] / r["conv64_step_ms"], rel=0.05)


def test_bench_train_reports_step_and_allocator_ratios(cli):
    code, out, err = cli("bench", "train", "--framework", "factorvae", "--param", "disc_width=16", "--param", "disc_layers=1",
                         "--precision", "fp32", "--steps", "2", "--repeats", "1", "--batch-size", "32", "--json")
    assert code == 0, err
    r = json.loads(out)["runs"]["fp32"]
    assert r["params"]["disc_width"] == 16 and r["params"]["disc_layers"] == 1
    assert r["step_vs_betavae"] == pytest.approx(r["step_ms"] / r["betavae_step_ms"], rel=0.01)
    if r["allocator_tuned"]:                                       # glibc: the untuned baseline ran in a fresh process
        assert r["allocator_speedup"] == pytest.approx(r["untuned_betavae_step_ms"] / r["betavae_step_ms"], rel=0.01)


def test_bench_resume_times_a_run_resumed_flushed_and_kept(cli, tmp_path):
    """`bench resume --run-dir`: a run the command trained, resumed from its checkpoint in fresh processes with
    denormals flushed and kept, each on a copy: the run itself untouched."""
    run = tmp_path / "late"
    code, _, err = cli("train", "--dataset", "xyobject", "--framework", "betavae", "--latents", "3", "--batch-size", "8",
                       "--steps", "3", "--eval-every", "3", "--metrics", "mig", "--out", run, "--quiet")
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    code, out, err = cli("bench", "resume", "--run-dir", run, "--steps", "2", "--repeats", "1", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert (r["step"], r["batch_size"], r["steps"], r["repeats"]) == (3, 8, 2, 1)
    ips = r["images_per_second"]
    assert r["speedup"][0] == pytest.approx(ips["flush"][0] / ips["keep"][0], rel=0.01)
    assert "resume 1/1, denormals keep" in err                                  # progress on stderr
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    code, _, err = cli("bench", "resume", "--steps", "2")
    assert code == 2 and "bench resume needs a run directory (--run-dir DIR)" in err


def test_distances_json_schema_and_values(cli):
    code, out, err = cli("distances", "--dataset", "xysquares", "--set", "grid_spacing=4", "--set", "grid_size=8",
                         "--pairs", "1000", "--seed", "3", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert (r["dataset"], r["loss"], r["pairs"], r["seed"], r["params"]["grid_spacing"]) == ("xysquares", "mse", 1000, 3, 4)
    assert [f["name"] for f in r["factors"]] and {f["name"] for f in r["factors"]} == {"x_R", "y_R", "x_G", "y_G", "x_B", "y_B"}
    for f in r["factors"]:
        assert 0 < f["mean"] < 2 / 96 and f["std"] > 0                    # overlap: one step costs less than two
    assert r["random"]["mean"] > max(f["mean"] for f in r["factors"])
    assert 0.5 < r["spearman"] <= 1 and r["seconds"] > 0
    code2, out2, _ = cli("distances", "--dataset", "xysquares", "--set", "grid_spacing=4", "--set", "grid_size=8",
                         "--pairs", "1000", "--seed", "3", "--json")
    assert json.loads(out2)["factors"] == r["factors"]                   # same seed, same numbers


def test_predict_json_scores_and_relabelling(cli):
    "The order score through the command: 0 where the MSE sees no order, 1 on a line, renaming changes nothing."
    def predict(*argv):
        code, out, err = cli("predict", "--traversals", "64", "--json", *argv)
        assert code == 0, err
        assert "traversals: 100%" in err                     # progress on stderr, one JSON object on stdout
        return json.loads(out)
    r8 = predict("--dataset", "xysquares")
    assert (r8["dataset"], r8["loss"], r8["traversals"], r8["unseen"]) == ("xysquares", "mse", 64, [])
    assert r8["score"] == pytest.approx(0, abs=1e-9) and len(r8["factors"]) == 6 and r8["seconds"] > 0
    assert all(f["values"] == 8 and f["mean_distance"] == pytest.approx(1 / 96) for f in r8["factors"].values())
    s1 = ["--dataset", "xysquares", "--set", "grid_size=8", "--set", "grid_spacing=1"]
    r1, renamed = predict(*s1), predict(*s1, "--set", "relabel_seed=5")
    assert r1["score"] == pytest.approx(1, abs=1e-9) and renamed["params"]["relabel_seed"] == 5
    assert renamed["score"] == pytest.approx(r1["score"], abs=0.02)
    blur = predict("--dataset", "xysquares", "--loss", "box_blur", "--loss-param", "radius=4")
    assert blur["loss_params"] == {"radius": 4, "alpha": 81.0} and 0.05 < blur["score"] < 0.9
    code, out, err = cli("predict", "--dataset", "xyobject", "--traversals", "16")
    assert code == 0 and "order score:" in out and out.count("\n") >= 4, err


def test_predict_says_what_its_score_is_and_what_its_test_found(cli):
    """`disentlit predict` is no forecast that works: its one line in `disentlit --help`, its own help and its output
    (text and --json) say what the score measures and the verdict of the pre-registered test, the verdict that
    results/claims.csv holds for the test's primary claim (a new verdict there fails here until the command says it)."""
    from disentlit.statistics import read_claims
    verdict = {r["id"]: r["verdict"] for r in read_claims(ROOT / "results" / "claims.csv")}["predict.order_score.dci"]
    flat = lambda text: " ".join(text.split())                            # argparse and the text output wrap lines
    _, top, _ = cli("--help")
    code, help_, err = cli("predict", "--help")
    assert code == 0, err
    code, text, err = cli("predict", "--dataset", "xyobject", "--traversals", "16", "--quiet")
    assert code == 0, err
    code, out, err = cli("predict", "--dataset", "xyobject", "--traversals", "16", "--quiet", "--json")
    r = json.loads(out)
    assert r["forecast_test"]["verdict"] == verdict and r["forecast_test"]["page"] == "12_predict"
    for said in (flat(help_), flat(text)):
        assert f"{verdict}." in said and "12_predict" in said and "not a forecast" in said, said
        assert "0 when every value is equally far from every other" in said, said     # what the score measures
    assert "equally far" in r["score_is"]
    line = flat(top[top.index("predict  "):top.index("sweep  ")])                   # its line in `disentlit --help`
    assert "forecast of disentanglement: not supported" in line, line
    for said in (top, help_, text): assert "predict disentanglement" not in flat(said).lower(), said


def test_sweep_resume_and_figures(cli, tmp_path):
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(dict(
        name="tiny", base=dict(dataset="xyobject", framework="betavae", latents=3, model="fc", width=32, steps=8, batch_size=16,
                               framework_params=dict(beta=0.01), metrics=["mig"], metric_params=dict(mig=dict(num_train=300))),
        grid=dict(loss=["mse", "box_blur"]), repeats=1)))
    db = tmp_path / "tiny.sqlite"
    code, out, err = cli("sweep", str(spec), "--db", str(db), "--json")
    assert code == 0, err
    assert json.loads(out) == dict(db=str(db), pending=0, running=0, done=2, failed=0)
    code, out, err = cli("sweep", str(spec), "--db", str(db))
    assert code == 2 and "--resume" in err
    code, out, err = cli("sweep", str(spec), "--db", str(db), "--resume", "--json")
    assert code == 0 and json.loads(out)["done"] == 2
    code, out, err = cli("figures", "--db", str(db), "--out", str(tmp_path / "figs"), "--json")
    assert code == 0, err
    names = {p.split("/")[-1] for p in json.loads(out)["figures"]}
    assert {"figure11_loss.png", "loss_curves.png"} <= names
    from disentlit.store import ResultsDB
    rows = list(__import__("csv").DictReader(open(ResultsDB(db).export_csv(tmp_path / "t.csv"))))
    assert {r["loss"] for r in rows} == {"mse", "box_blur"} and all(float(r["metric.mig"]) >= 0 for r in rows)


def test_box_blur_restores_the_order_of_xysquares(cli):
    "The paper's claim on the data side: MSE sees no order along XYSquares' traversals, the box-blur loss does."
    rho = {}
    for loss in ("mse", "box_blur"):
        code, out, err = cli("distances", "--dataset", "xysquares", "--loss", loss, "--pairs", "300", "--json")
        assert code == 0, err
        rho[loss] = json.loads(out)["spearman"]
    assert rho["mse"] == 0 and rho["box_blur"] > 0.9, rho


FAMILY = [("annealedvae", ["c_max=25", "iterations=10"], {"kl", "capacity"}),
          ("betatcvae", ["beta=4", "estimator=mss"], {"mi", "tc", "dwkl"}),
          ("factorvae", ["gamma=20", "disc_width=64", "disc_layers=2"], {"kl", "tc", "disc_loss"}),
          ("dipvae_i", ["lambda_od=5"], {"kl", "dip_offdiag", "dip_diag"}),
          ("dipvae_ii", [], {"kl", "dip_offdiag", "dip_diag"}),
          ("wae", ["encoder_type=uniform", "lambda_mmd=10"], {"mmd", "logvar_lp"})]


@pytest.mark.parametrize("name, params, terms", FAMILY)
def test_train_every_framework_of_the_family(cli, tmp_path, name, params, terms):
    argv = ["train", "--dataset", "xyobject", "--framework", name, "--latents", "3", "--steps", "3", "--batch-size", "8",
            "--out", str(tmp_path / name), "--json"]
    for p in params: argv += ["--param", p]
    code, out, err = cli(*argv)
    assert code == 0, err
    r = json.loads(out)
    assert r["status"] == "done" and terms <= set(r["final"]), r
    recorded = json.loads((tmp_path / name / "config.json").read_text())["framework_params"]
    for key, value in parse_params(params).items():
        assert recorded[key] == value, (key, recorded)
    code, out, err = cli("evaluate", str(tmp_path / name), "--metrics", "mig", "--json")
    assert code == 0 and 0 <= json.loads(out)["mig"]["mig"] <= 1, (out, err)


def test_bench_train_on_a_device_projects_table_a4(cli):
    "The device path of the bench (here the CPU): images per second against the plain loop there, and Table A4's hours."
    code, out, err = cli("bench", "train", "--device", "cpu", "--precision", "fp32", "--steps", "2", "--repeats", "1",
                         "--batch-size", "16", "--no-allocator", "--json")
    assert code == 0, err
    r = json.loads(out)["runs"]["fp32"]
    assert r["device"] == "cpu" and r["resident"] is False and r["ratio"] > 0
    hours = r["projected_hours_table_a4"]
    assert hours["figure11"] == pytest.approx((40 + 20) * 57_600 * 16 / r["fit_images_per_s"] / 3600, rel=0.02)
    code, out, err = cli("bench", "train", "--device", "cuda:7" if __import__("torch").cuda.is_available() else "cuda")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_a_damaged_dataset_cache_is_found_and_named(cli, data_home):
    "8 KB overwritten inside a cached dSprites: --prepare, the listing, --stats and train each say so in one line."
    from disentlit.catalog import EXAMPLE_SIZES, convert, write_example_source
    cache = convert("dsprites", write_example_source("dsprites", data_home / "src"), root=data_home, sizes=EXAMPLE_SIZES["dsprites"])
    code, out, err = cli("datasets", "--prepare", "dsprites")
    assert code == 0 and "ready" in out, err
    with open(cache, "r+b") as f:
        f.seek(cache.stat().st_size // 2); f.write(bytes(8192))
    for argv in (["datasets", "--prepare", "dsprites"], ["datasets", "--stats", "dsprites"],
                 ["train", "--dataset", "dsprites", "--framework", "betavae", "--steps", "1"]):
        code, out, err = cli(*argv)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "--prepare dsprites --force" in err, (argv, err)
    code, out, err = cli("datasets")
    assert code == 0 and "no, damaged (disentlit datasets --prepare dsprites --force)" in out, out


def test_streamed_statistics_show_progress_on_stderr_under_json(cli):
    "A dataset without closed forms is streamed; its progress goes to stderr, and stdout stays one JSON object."
    code, out, err = cli("datasets", "--stats", "xysquares", "--set", "rgb=false", "--set", "num_squares=2",
                         "--set", "grid_size=4", "--json")
    assert code == 0, err
    assert json.loads(out)["channels"] == 1 and "stats xysquares" in err and "100%" in err, err


def test_progress_lines_when_stderr_is_not_a_terminal(console, tmp_path):
    """Training, through the console script, shows whole progress lines (done, of how much, the rate) in a log (stderr
    a pipe), under --json too; --quiet silences it."""
    argv = ["train", "--dataset", "xyobject", "--framework", "betavae", "--latents", "3", "--steps", "30", "--batch-size", "8", "--json"]
    code, out, err = console(*argv, "--out", str(tmp_path / "a"))
    assert code == 0 and json.loads(out)["status"] == "done", err
    assert "\r" not in err and re.search(r"betavae a: +100%.* 30/30 \[.*(step/s|s/step)", err), err
    code, out, err = console(*argv, "--out", str(tmp_path / "b"), "--quiet")
    assert code == 0 and err == "", err


def test_readme_commands_parse_and_cover_every_subcommand():
    "Every `disentlit ...` line of the README is a valid command line, and every subcommand has one."
    from disentlit.cli import COMMANDS, build_parser
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    used = set()
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
    for line in [l.split("  #")[0].strip() for b in blocks for l in b.splitlines() if l.startswith("disentlit ")]:
        argv = shlex.split(line)[1:]
        for k, a in enumerate(argv):
            if "|" in a and not a.startswith("-"):
                for alt in a.split("|"):
                    used.add(build_parser().parse_args(argv[:k] + [alt] + argv[k + 1:]).command)
                break
        else: used.add(build_parser().parse_args(argv).command)
    assert used == set(COMMANDS), set(COMMANDS) - used


def test_train_eval_every_writes_a_resumable_learning_curve(cli, tmp_path):
    "--eval-every scores the run every N steps and at the last; a resumed run keeps its points and adds the rest."
    out = tmp_path / "curve"
    base = ["train", "--dataset", "xyobject", "--framework", "betavae", "--latents", "3", "--batch-size", "8",
            "--eval-every", "2", "--metrics", "mig", "--loss", "mse", "--loss-param", "scale=2", "--out", str(out),
            "--checkpoint-every", "2", "--json"]
    code, first, err = cli(*base, "--steps", "4")
    assert code == 0, err
    assert [p["step"] for p in json.loads(first)["curve"]] == [2, 4]
    code, text, err = cli(*base, "--steps", "5")
    assert code == 0, err
    r = json.loads(text)
    assert [p["step"] for p in r["curve"]] == [2, 4, 5]                       # resumed: earlier points kept, once
    assert r["curve"][:2] == json.loads(first)["curve"]
    assert set(r["curve"][-1]["metrics"]) == {"mig"} and 0 <= r["curve"][-1]["metrics"]["mig"] <= 1
    assert r["curve"][-1]["drawn"] in (0, 1)                                  # XYObject: one channel
    assert json.loads((out / "config.json").read_text())["loss_params"] == {"scale": 2}
    lines = (out / "curve.jsonl").read_text().splitlines()
    assert [json.loads(l)["step"] for l in lines] == [2, 4, 5]
    code, _, err = cli(*base[:-1], "--steps", "5", "--metrics", "mig,udr")          # UDR scores a sweep, not a run
    assert code == 2 and "accepted" in err and "infomec" in err and "Traceback" not in err


def test_json_output_is_strict_json_even_for_undefined_values(cli):
    "A one-position grid has no pairs to correlate: its Spearman is undefined, printed as null, never as NaN."
    code, out, err = cli("distances", "--dataset", "xyobject", "--set", "grid_size=1", "--pairs", "100", "--json")
    assert code == 0, err
    r = json.loads(out, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert r["spearman"] is None and r["factors"] == []
