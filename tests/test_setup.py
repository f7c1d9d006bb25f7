"""The newcomer's set-up: the torch decision of tools/install_torch.py, checked against pip's own dry-run reports on
wheels made here (no network), and `make demo` in a fresh clone with a fresh virtual environment."""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from chromium import CHROMIUM, needs_chromium          # skipped without Chromium, saying how to get it
from conftest import copy_checkout

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import install_torch  # noqa: E402

UNREACHABLE = "http://127.0.0.1:9/simple"          # the discard port: refused at once, like an index behind no network


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    "A minimal installable wheel: enough for pip to read its metadata and resolve it."
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    meta = "Metadata-Version: 2.1\nName: {}\nVersion: {}\n{}".format(name, version, "".join(f"Requires-Dist: {r}\n" for r in requires))
    files = {f"{name.replace('-', '_')}/__init__.py": "", f"{dist}.dist-info/METADATA": meta,
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{n},,\n" for n in files) + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for n, text in {**files, f"{dist}.dist-info/RECORD": record}.items(): z.writestr(n, text)
    return path


def _simple_index(root: Path, wheels: list[Path]) -> str:
    "A PEP 503 index at `root` serving `wheels`; its file:// URL."
    for w in wheels:
        project = w.name.split("-")[0].replace("_", "-").lower()
        (root / project).mkdir(parents=True, exist_ok=True)
        shutil.copy(w, root / project / w.name)
        (root / project / "index.html").write_text(f'<html><body><a href="{w.name}">{w.name}</a></body></html>')
    return root.as_uri()


@pytest.fixture
def isolated_pip(monkeypatch):
    "pip sees only what a test gives it: no configuration file, no find-links or indexes from the environment."
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for key in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"): monkeypatch.delenv(key, raising=False)


def test_torch_decision_against_pip_reports(tmp_path, isolated_pip):
    req = "torch==9.9.9"                               # a version no real index has: only our wheels can answer
    cpu = _simple_index(tmp_path / "cpu_index", [_wheel(tmp_path / "w", "torch", "9.9.9+cpu")])
    cuda_dir = tmp_path / "cuda"                       # what PyPI's Linux torch looks like: CUDA packages as dependencies
    _wheel(cuda_dir, "torch", "9.9.9", ("nvidia-cublas-fake==1.0", "triton==9.0"))
    _wheel(cuda_dir, "nvidia-cublas-fake", "1.0"); _wheel(cuda_dir, "triton", "9.0")
    cuda_config = ["--no-index", "--find-links", str(cuda_dir)]
    local_cpu = ["--no-index", "--find-links", str(tmp_path / "w")]

    # no GPU, PyTorch's CPU index reachable: the CPU build from there, and pip's report says what it would install
    action, args, why = install_torch.choose(req, gpu=False, base_args=cuda_config, cpu_index=cpu)
    assert (action, args) == ("install", ["--index-url", cpu]) and "9.9.9+cpu" in why, why
    report = install_torch.dry_run(req, args)
    assert install_torch.installs(report) == {"torch": "9.9.9+cpu"} and not install_torch.is_cuda_build(report)
    # no GPU, CPU index unreachable, a CPU build available locally (this machine's situation): that one
    action, args, why = install_torch.choose(req, gpu=False, base_args=local_cpu, cpu_index=UNREACHABLE)
    assert (action, args) == ("install", local_cpu) and "cannot be reached" in why, why
    # no GPU, CPU index unreachable, only the CUDA build on offer: refused, with the command that would fix it
    report = install_torch.dry_run(req, cuda_config)
    assert install_torch.is_cuda_build(report) and {"nvidia-cublas-fake", "triton"} <= set(install_torch.installs(report))
    action, args, why = install_torch.choose(req, gpu=False, base_args=cuda_config, cpu_index=UNREACHABLE)
    assert action == "refuse" and f"--index-url {UNREACHABLE}" in why, why
    # an NVIDIA GPU: the configured index, CUDA build and all
    assert install_torch.choose(req, gpu=True, base_args=cuda_config, cpu_index=cpu)[:2] == ("install", cuda_config)


def test_an_installed_torch_is_kept(isolated_pip):
    import torch
    req = f"torch=={torch.__version__.split('+')[0]}"
    calls = []
    def spy(requirement, index_args):
        calls.append(index_args); return install_torch.dry_run(requirement, index_args)
    for gpu in (False, True):
        assert install_torch.choose(req, gpu=gpu, cpu_index=UNREACHABLE, dry_run=spy)[0] == "keep"
    assert calls == [["--no-deps", "--no-index"]] * 2           # decided without any index


def test_gpu_detection_can_be_forced(monkeypatch):
    for value, want in (("0", False), ("1", True)):
        monkeypatch.setenv("DISENTLIT_GPU", value)
        assert install_torch.has_nvidia_gpu() is want


@pytest.fixture(scope="module")
def fresh_demo(tmp_path_factory):
    """`make demo` from a copy of the repository, once for the tests that read it: it makes the venv, installs a CPU
    torch and runs the demo (10 steps, --json). Where this machine cannot make a fresh venv offline (no make, no CPU
    torch without the network) the demo runs from this venv instead (`why_not` says why), so its report is still tested."""
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
    offline = install_torch.dry_run("torch==2.13.0", ["--ignore-installed", "--no-deps"])
    if not shutil.which("make"): why_not = "no make on this machine"
    elif not (offline and install_torch.installs(offline).get("torch", "").endswith("+cpu")):
        why_not = "this machine offers no CPU build of torch without the network"
    args = ["--steps", "10", "--json"]
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
    for name in ("headline", "traversals_xysquares", "overlap_study", "reconstructions"):
        png = demo / f"{name}.png"
        assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (demo / "index.html").read_text()
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert len(srcs) >= 8, srcs                 # headline, dataset, overlap, reconstructions, 2 traversals, figures
    for src in srcs:
        assert (demo / src).exists(), f"index.html shows a missing file: {src}"
        assert src.endswith(".png"), f"index.html shows a file that is not an image: {src}"
    assert r["conclusion"] in html.replace("&#39;", "'") and "one seed each: no interval" in r["conclusion"]
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
        browser.close()
    assert not errors, errors
    assert first == "conclusion"
    assert images and all(done and width > 0 for _, done, width, _, _ in images), images
    assert all(alt and caption and alt == caption.strip() and len(caption) > 40 for _, _, _, alt, caption in images)
    assert not wide
