"""The release as a user gets it. `make dist` builds the sdist and the wheel and `twine check` passes them; the wheel
holds the package and nothing else; installed into a fresh virtual environment (CPU torch first, as the set-up does;
no dev extras) it runs `disentlit --help`, `datasets` and a tiny `train` from a folder outside the checkout, so a
missing module or an undeclared dependency fails here. And every third-party module the package imports is declared.

One fresh environment serves both the newcomer's first command and the release: `make demo` in a fresh clone makes it
(a venv, CPU torch, disentlit's runtime requirements and nothing else), and the wheel is then installed over the
clone's editable disentlit in it, so torch is installed once."""
import ast
import configparser
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from chromium import CHROMIUM, needs_chromium          # skipped without Chromium, saying how to get it
from conftest import copy_checkout

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import install_torch  # noqa: E402
from common import TORCH  # noqa: E402  the torch make install installs (tools/common.py)

UNREACHABLE = "http://127.0.0.1:9/simple"          # the discard port: refused at once, like an index behind no network


def settings() -> configparser.SectionProxy:
    cfg = configparser.ConfigParser(delimiters=["="])
    cfg.read(ROOT / "settings.ini", encoding="utf-8")
    return cfg["DEFAULT"]


def dist_name(requirement: str) -> str:
    "A requirement's distribution name, normalised as PEP 503 does (`scikit-learn>=1.3` -> `scikit-learn`)."
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip()).group(0)).lower()


def third_party_imports(folder: Path = ROOT / "disentlit") -> dict[str, set[str]]:
    "Top-level third-party modules imported anywhere in `folder`'s modules (at the top or in a function) -> by whom."
    found = {}
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import): names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level: names = [node.module]
            else: continue
            for top in {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - {"disentlit"}:
                found.setdefault(top, set()).add(path.name)
    return found


def module_distributions(modules) -> dict[str, str]:
    "The distribution that provides each importable module here (`sklearn` -> `scikit-learn`), from installed metadata."
    provides = importlib.metadata.packages_distributions()
    return {m: dist_name(provides[m][0]) for m in modules if m in provides}


def test_every_third_party_import_is_declared():
    """Each module disentlit imports comes from a requirement of settings.ini (or of an extra: `ray`, `submitit`, the
    trackers): not from whatever torch or jupyter happen to pull in today (jinja2 arrived only with torch)."""
    s = settings()
    declared = {dist_name(r) for r in s["requirements"].split()}
    extras = [k for k in s if k.endswith("_requirements") and k not in ("requirements", "dev_requirements")]
    assert {"ray_requirements", "submitit_requirements", "wandb_requirements", "tensorboard_requirements"} <= set(extras)
    optional = {dist_name(r) for k in extras for r in s[k].split()}
    imports = third_party_imports()
    assert {"torch", "numpy", "jinja2", "yaml"} <= set(imports), imports       # the scan sees lazy imports too
    dists = module_distributions(imports)
    unknown = sorted(set(imports) - set(dists))
    assert not unknown, f"imported but not installed here, so its distribution is unknown: {unknown}"
    undeclared = {m: sorted(imports[m]) for m, d in dists.items() if d not in declared | optional}
    assert not undeclared, f"imported by disentlit but not in settings.ini's requirements: {undeclared}"
    unused = declared - set(dists.values())
    assert not unused, f"requirements that no module imports: {sorted(unused)}"


def test_the_import_scan_finds_an_undeclared_import(tmp_path):
    "The scan above on a module that imports something no requirement names, inside a function as the demo does."
    (tmp_path / "m.py").write_text("import os\nfrom . import core\n"
                                   "def f():\n    import jinja2.sandbox\n    from PIL import Image\n")
    assert third_party_imports(tmp_path) == {"jinja2": {"m.py"}, "PIL": {"m.py"}}
    assert module_distributions(["jinja2", "PIL"]) == {"jinja2": "jinja2", "PIL": "pillow"}


def test_the_release_files_name_this_version():
    """LICENSE is settings.ini's Apache-2.0; CHANGELOG.md has a section for this version; CITATION.cff is this version
    and cites the paper too; the README's install command names this version's wheel."""
    import yaml
    version = settings()["version"]
    assert settings()["license"] == "apache2" and "Apache License\n                           Version 2.0" in (
        ROOT / "LICENSE").read_text()
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(version)} \(\d{{4}}-\d{{2}}-\d{{2}}\)$", changelog, re.M)
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert (cff["cff-version"], cff["title"], cff["version"]) == ("1.2.0", "disentlit", version)
    assert cff["license"] == "Apache-2.0" and f"## {version} ({cff['date-released']})" in changelog
    paper = cff["references"][0]
    assert paper["title"].startswith("Overlooked Implications") and [a["family-names"] for a in paper["authors"]] == [
        "Michlo", "Klein", "James"]
    assert f"pip install dist/disentlit-{version}-py3-none-any.whl" in (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """`make dist` in a copy of the checkout (its build files stay out of the repository), with this venv and without
    `make install` (this venv is the installed one): the sdist and the wheel."""
    if not shutil.which("make"): pytest.skip("no make on this machine")
    src = copy_checkout(ROOT, tmp_path_factory.mktemp("release") / "src")
    out = src / "dist"
    start = time.perf_counter()
    p = subprocess.run(["make", "-o", "install", f"VENV={Path(sys.executable).parent.parent}", "dist"], cwd=src,
                       capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - start
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "PASSED" in p.stdout and "twine" in p.stdout, p.stdout[-2000:]       # twine check ran, on both files
    version = settings()["version"]
    sdist, wheel = out / f"disentlit-{version}.tar.gz", out / f"disentlit-{version}-py3-none-any.whl"
    assert sdist.exists() and wheel.exists(), sorted(os.listdir(out))
    print(f"make dist: {seconds:.1f} s; wheel {wheel.stat().st_size / 1e3:.0f} kB, "
          f"sdist {sdist.stat().st_size / 1e3:.0f} kB")
    return sdist, wheel


def test_the_wheel_holds_the_package_and_nothing_else(dist):
    "No results, notebooks (nor their outputs), tests or tools: the modules, the license and the metadata."
    _, wheel = dist
    version = settings()["version"]
    names = zipfile.ZipFile(wheel).namelist()
    info = f"disentlit-{version}.dist-info/"
    assert {n.split("/")[0] + "/" for n in names} == {"disentlit/", info}, sorted(names)
    modules = {f"disentlit/{p.name}" for p in (ROOT / "disentlit").glob("*.py")}
    assets = {f"disentlit/assets/{p.name}" for p in (ROOT / "disentlit" / "assets").glob("*.png")}   # the demo's
    assert assets, "disentlit/assets/ holds no picture for the demo's report (tools/headline.py --pair)"
    assert {n for n in names if n.startswith("disentlit/")} == modules | assets, \
        "the wheel's files differ from disentlit/*.py and disentlit/assets/*.png"
    assert not [n for n in names if re.search(r"\.ipynb$|results/|tests?/|/nbs/|\.sqlite|\.png$", n)
                and n not in assets]
    assert f"{info}licenses/LICENSE" in names
    meta = zipfile.ZipFile(wheel).read(f"{info}METADATA").decode()
    requires = {dist_name(l.split(":", 1)[1]) for l in meta.splitlines() if l.startswith("Requires-Dist:")
                and "extra ==" not in l}
    assert requires == {dist_name(r) for r in settings()["requirements"].split()}
    assert f"Version: {version}" in meta and "disentlit = disentlit.cli:main" in zipfile.ZipFile(wheel).read(
        f"{info}entry_points.txt").decode()
    assert wheel.stat().st_size < 1_000_000, f"the wheel is {wheel.stat().st_size:,} bytes: what got in?"


def test_the_sdist_builds_the_wheel_from_what_it_holds(dist):
    "The sdist holds what setup.py reads (settings.ini, README.md) and the license, changelog and citation; no tests."
    sdist, _ = dist
    top = f"disentlit-{settings()['version']}/"
    names = {n.removeprefix(top) for n in tarfile.open(sdist).getnames()}
    assert {"setup.py", "settings.ini", "README.md", "LICENSE", "CHANGELOG.md", "CITATION.cff",
            "disentlit/cli.py", "disentlit/assets/traversals_sprites_xysquares.png"} <= names, sorted(names)
    assert not [n for n in names if n.startswith(("tests", "nbs", "results", "tools")) or n.endswith(".ipynb")]


def _timed(cmd, **kw):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, timeout=900, **kw)
    return time.perf_counter() - start


@pytest.fixture(scope="module")
def fresh_demo(tmp_path_factory):
    """`make demo` from a copy of the repository, once for the tests that read it: it makes the venv, installs a CPU
    torch and runs the demo (--quick --json). Where this machine cannot make a fresh venv offline (no make, no CPU
    torch without the network) the demo runs from this venv instead (`why_not` says why), so its report is still tested.
    It runs `--quick` (10 steps, small samples): what is tested here is that it installs, runs and reports; the demo
    at its default length is measured by tools/time_demo.py and tested by 08e's slow cell."""
    tmp_path = tmp_path_factory.mktemp("fresh")
    src = tmp_path / "clone"
    copy_checkout(ROOT, src)
    subprocess.run(["git", "init", "-q"], cwd=src, check=True)
    subprocess.run(["git", "add", "-A"], cwd=src, check=True)
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.org", "commit", "-qm", "clone"], cwd=src, check=True)
    # as a newcomer's shell has it: no venv, no disentlit settings, and not inside `make test` (whose MAKEFLAGS and
    # MAKELEVEL would make this make print "Entering/Leaving directory" lines around the demo's JSON)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VIRTUAL_ENV", "DISENTLIT_")) and k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env.update(DISENTLIT_GPU="0", DISENTLIT_TORCH_CPU_INDEX=UNREACHABLE, DISENTLIT_DATA=str(tmp_path / "data"),
               PATH=os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(str(Path(sys.executable).parent))))
    make, why_not = ["make", f"PYTHON={sys.executable}"], None
    offline = install_torch.dry_run(TORCH, ["--ignore-installed", "--no-deps"])
    if not shutil.which("make"): why_not = "no make on this machine"
    elif not (offline and install_torch.installs(offline).get("torch", "").endswith("+cpu")):
        why_not = "this machine offers no CPU build of torch without the network"
    args = ["--quick", "--json"]
    if why_not:
        cmd, cwd = ["disentlit", "demo", "--out", str(src / "demo"), *args], src
        p = subprocess.run(cmd, cwd=cwd, env=dict(os.environ, DISENTLIT_DATA=str(tmp_path / "data")),
                           capture_output=True, text=True, timeout=900)
    else:
        p = subprocess.run(make + ["demo", f"DEMO_ARGS={' '.join(args)}"], cwd=src, env=env, capture_output=True,
                           text=True, timeout=1500)
    p.demo, p.src, p.env, p.make, p.why_not = src / "demo", src, env, make, why_not
    return p


def test_make_demo_in_a_fresh_clone(fresh_demo):
    """`make demo` from a copy of the repository: it makes the venv, installs a CPU torch, runs the demo, leaves no
    litter outside what .gitignore covers, installs no development tools (`make runtime`); a second `make runtime`
    reuses the venv and keeps its torch."""
    if fresh_demo.why_not: pytest.skip(fresh_demo.why_not)
    p, src, env, make = fresh_demo, fresh_demo.src, fresh_demo.env, fresh_demo.make
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    venv_python = src / ".venv" / "bin" / "python"
    assert venv_python.exists() and "install_torch:" in p.stderr and "cannot be reached" in p.stderr, p.stderr[-2000:]
    version = subprocess.run([str(venv_python), "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    assert version.stdout.strip().endswith("+cpu"), version.stdout + version.stderr
    assert (src / "demo" / "index.html").exists()
    litter = subprocess.run(["git", "status", "--porcelain"], cwd=src, capture_output=True, text=True).stdout
    assert litter == "", f"untracked outputs not covered by .gitignore:\n{litter}"
    assert subprocess.run([str(venv_python), "-c", "import nbdev"], capture_output=True).returncode != 0   # runtime only
    before = venv_python.resolve().stat().st_ino, (src / ".venv" / "pyvenv.cfg").stat().st_mtime
    p = subprocess.run(make + ["runtime"], cwd=src, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0 and "already installed, kept" in p.stderr, p.stderr[-2000:]
    assert (venv_python.resolve().stat().st_ino, (src / ".venv" / "pyvenv.cfg").stat().st_mtime) == before


def test_demo_writes_its_report(fresh_demo):
    "The demo's report, from `make demo` in the fresh clone (`fresh_demo`)."
    code, out, err, demo = fresh_demo.returncode, fresh_demo.stdout, fresh_demo.stderr, fresh_demo.demo
    assert code == 0, err
    objects = [line for line in out.splitlines() if line.startswith("{")]    # make echoes its commands around it
    assert len(objects) == 1, out[-2000:]
    r = json.loads(objects[0])                                      # the demo's stdout: one JSON object
    assert set(r["runs"]) == {"mse", "box_blur"} and r["counts"]["done"] == 2 and r["distances"]["mse"]["spearman"] == 0
    assert all(0 <= run["metrics"]["mig"] <= 1 and isinstance(run["active_latents"], int) for run in r["runs"].values())
    # the positive control's picture comes with the package (disentlit/assets), shown once the control passed
    for name in ("headline", "traversals_xysquares", "overlap_study", "reconstructions", "traversals_sprites_xysquares"):
        png = demo / f"{name}.png"
        assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (demo / "index.html").read_text()
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert len(srcs) >= 9, srcs       # headline, dataset, overlap, reconstructions, 2 traversals, figures, the control's
    for src in srcs:
        assert (demo / src).exists(), f"index.html shows a missing file: {src}"
        assert src.endswith(".png"), f"index.html shows a file that is not an image: {src}"
    assert r["conclusion"] in html.replace("&#39;", "'") and "one seed each: no interval" in r["conclusion"]
    assert r["quick"] and r["steps"] == 10 and r["conclusion"].startswith("A quick check (--quick): 10 steps a run")
    assert "Spearman with ground truth  0.0000" in err and "mig" in err and "2 runs done, 0 failed" in err


@needs_chromium
def test_demo_report_in_a_browser(fresh_demo):
    """The report as a reader opens it (file://, headless Chromium): every image loads, every figure has a caption that
    is also its alt text, the conclusion comes first, and the page reads in one column without sideways scrolling."""
    from playwright.sync_api import sync_playwright
    code, err, demo = fresh_demo.returncode, fresh_demo.stderr, fresh_demo.demo
    assert code == 0, err
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                           "--no-first-run"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto((demo / "index.html").as_uri(), wait_until="load")
        images = page.eval_on_selector_all("img", "els => els.map(e => [e.getAttribute('src'), e.complete, "
                                           "e.naturalWidth, e.alt, e.closest('figure') && "
                                           "e.closest('figure').querySelector('figcaption').textContent])")
        first = page.eval_on_selector("body > p", "e => e.className")
        wide = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        page.screenshot(path=str(demo / "report.png"), full_page=True)
        page.set_viewport_size({"width": 390, "height": 900})                 # a phone: tables scroll in their box
        wide_phone = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        browser.close()
    assert not errors, errors
    assert not wide_phone, "the report scrolls sideways on a 390 px phone"
    assert first == "conclusion"
    assert images and all(done and width > 0 for _, done, width, _, _ in images), images
    assert all(alt and caption and alt == caption.strip() and len(caption) > 40 for _, _, _, alt, caption in images)
    assert not wide


def test_the_wheel_in_a_fresh_venv_from_outside_the_checkout(dist, fresh_demo, tmp_path):
    """The wheel alone in a fresh venv that holds CPU torch and disentlit's runtime requirements, nothing else: the
    fresh clone's (`fresh_demo`, after its tests), the wheel installed over its editable disentlit (or, where that
    clone could not be made, a new venv: torch, then the wheel with its dependencies). Every module imports, every
    declared requirement's module imports (the lazy ones too: jinja2 for the demo, PIL and IPython for traversals), pip
    check finds each requirement the wheel declares installed, and the console script answers `--help`, lists the
    datasets and trains a few steps, from a folder that is not the checkout."""
    _, wheel = dist
    venv, away = fresh_demo.src / ".venv", tmp_path / "elsewhere"
    away.mkdir()
    pip = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]  # as the README installs a wheel
    if fresh_demo.why_not or fresh_demo.returncode != 0:
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        torch_s = _timed([str(venv / "bin" / "python"), *pip, TORCH])
        wheel_s = _timed([str(venv / "bin" / "python"), *pip, str(wheel)])
        print(f"a new venv: torch {torch_s:.1f} s, then the wheel and its dependencies {wheel_s:.1f} s")
    else:                                     # the wheel in place of the clone's editable install, its files and all
        wheel_s = _timed([str(venv / "bin" / "python"), *pip, "--force-reinstall", "--no-deps", str(wheel)])
        print(f"the fresh clone's venv: the wheel over its editable install {wheel_s:.1f} s")
    py, bin_ = venv / "bin" / "python", venv / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "DISENTLIT_"))}
    env.update(DISENTLIT_DATA=str(tmp_path / "data"), OMP_NUM_THREADS="1",
               PATH=os.pathsep.join([str(bin_)] + [p for p in env["PATH"].split(os.pathsep)
                                                   if not p.startswith(str(Path(sys.executable).parent))]))
    took = {}
    def run(what, *args):
        start = time.perf_counter()
        p = subprocess.run([*args], capture_output=True, text=True, env=env, cwd=away, timeout=600)
        took[what] = time.perf_counter() - start
        return p

    modules = sorted(p.stem for p in (ROOT / "disentlit").glob("*.py") if not p.stem.startswith("_"))
    third = sorted(m for m, d in module_distributions(third_party_imports()).items()
                   if d in {dist_name(r) for r in settings()["requirements"].split()})
    code = ("import importlib, sys, disentlit; [importlib.import_module(m) for m in sys.argv[1:]]; "
            "print(disentlit.__file__, disentlit.__version__)")
    p = run("imports", str(py), "-c", code, *[f"disentlit.{m}" for m in modules], *third)
    assert p.returncode == 0, p.stderr[-2000:]
    where, version = p.stdout.split()
    assert Path(where).is_relative_to(venv) and version == settings()["version"], p.stdout   # the wheel's, not ours
    p = run("pip check", str(py), "-m", "pip", "check")
    assert p.returncode == 0, p.stdout + p.stderr
    p = run("package data", str(py), "-c", "import hashlib; from importlib.resources import files; print(hashlib."
            "sha256(files('disentlit').joinpath('assets', 'traversals_sprites_xysquares.png').read_bytes()).hexdigest())")
    asset = ROOT / "disentlit" / "assets" / "traversals_sprites_xysquares.png"      # the demo's report shows it
    assert p.returncode == 0 and p.stdout.strip() == hashlib.sha256(asset.read_bytes()).hexdigest(), p.stderr[-2000:]

    p = run("--help", "disentlit", "--help")
    assert p.returncode == 0 and "datasets" in p.stdout and "train" in p.stdout, p.stderr[-2000:]
    p = run("datasets", "disentlit", "datasets", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    assert {"xysquares", "dsprites"} <= {d["name"] for d in json.loads(p.stdout)["datasets"]}
    p = run("train", "disentlit", "train", "--dataset", "xysquares", "--framework", "betavae", "--steps", "3",
            "--batch-size", "8", "--latents", "4", "--out", "run", "--quiet", "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    result = json.loads(p.stdout)
    assert result["status"] == "done" and result["step"] == 3, result
    assert {"config.json", "checkpoint.pt", "result.json"} <= set(os.listdir(away / "run"))
    print("in the fresh venv:", ", ".join(f"{k} {v:.1f} s" for k, v in took.items()))
