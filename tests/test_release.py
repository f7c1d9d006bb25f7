"""The release as a user gets it. `make dist` builds the sdist and the wheel and `twine check` passes them; the wheel
holds the package and nothing else; installed into a fresh virtual environment (CPU torch first, as the set-up does;
no dev extras) it runs `disentlit --help`, `datasets` and a tiny `train` from a folder outside the checkout, so a
missing module or an undeclared dependency fails here. And every third-party module the package imports is declared.

One fresh environment serves every check of the installed package (torch is installed once, from pip's configured
sources: the CPU build where the set-up would take it)."""
import ast
import configparser
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

from conftest import copy_checkout

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"                                            # the Makefile's TORCH


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
    assert {n for n in names if n.startswith("disentlit/")} == modules, "the wheel's modules differ from disentlit/*.py"
    assert not [n for n in names if re.search(r"\.ipynb$|results/|tests?/|/nbs/|\.sqlite|\.png$", n)]
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
            "disentlit/cli.py"} <= names, sorted(names)
    assert not [n for n in names if n.startswith(("tests", "nbs", "results", "tools")) or n.endswith(".ipynb")]


def _timed(cmd, **kw):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, timeout=900, **kw)
    return time.perf_counter() - start


def test_the_wheel_in_a_fresh_venv_from_outside_the_checkout(dist, tmp_path):
    """`pip install` of the wheel alone (runtime dependencies, no dev extras) in a fresh venv with CPU torch first:
    every module imports, every declared requirement's module imports (the lazy ones too: jinja2 for the demo, PIL
    and IPython for traversals), pip finds nothing broken, and the console script answers `--help`, lists the
    datasets and trains a few steps, from a folder that is not the checkout."""
    _, wheel = dist
    venv, away = tmp_path / "venv", tmp_path / "elsewhere"
    away.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py, bin_ = venv / "bin" / "python", venv / "bin"
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]  # as make does
    torch_s = _timed(pip + [TORCH])
    wheel_s = _timed(pip + [str(wheel)])
    print(f"fresh venv: torch {torch_s:.1f} s, then the wheel and its dependencies {wheel_s:.1f} s")
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
