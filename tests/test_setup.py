"""The newcomer's set-up: the torch decision of tools/install_torch.py, checked against pip's own dry-run reports on
wheels made here (no network). `make demo` in a fresh clone with a fresh virtual environment: test_release.py, whose
wheel test installs the release into that same environment."""
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


def test_uv_is_given_the_indexes_pip_is_configured_with(tmp_path, monkeypatch, isolated_pip):
    """`install_torch.py --uv-args` (the Makefile's uv install): the index, extra indexes and find-links of pip's
    configuration, a PIP_* variable winning over the file, as uv's flags; with them uv finds what only those places
    hold, and nothing from PyPI (the index is an empty one of ours)."""
    import importlib.util, shlex
    links, empty = tmp_path / "links", tmp_path / "empty"
    _wheel(links, "only-in-links", "1.0")
    empty.mkdir()
    extra = _simple_index(tmp_path / "extra", [_wheel(tmp_path / "w", "only-in-extra", "2.0")])
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {empty.as_uri()}\nfind-links = {tmp_path / 'stale'}\n"
                    f"extra-index-url = {extra}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))                          # wins over the file's find-links
    for key in [k for k in os.environ if k.startswith("UV_")]: monkeypatch.delenv(key)
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "install_torch.py"), "--uv-args"], capture_output=True,
                       text=True, check=True)
    args = shlex.split(p.stdout)
    assert args == ["--index-url", empty.as_uri(), "--extra-index-url", extra, "--find-links", str(links)], args
    assert install_torch.uv_args(":env:.no-index='1'\nglobal.no-index='0'") == ["--no-index"]
    if importlib.util.find_spec("uv") is None: pytest.skip("uv is not installed here (make install installs it)")
    r = subprocess.run([sys.executable, "-m", "uv", "pip", "install", "--dry-run", "--python", sys.executable,
                        "--index-strategy", "unsafe-best-match", "--no-cache", *args, "only-in-links", "only-in-extra"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "only-in-links==1.0" in r.stderr and "only-in-extra==2.0" in r.stderr, r.stderr


def test_gpu_detection_can_be_forced(monkeypatch):
    for value, want in (("0", False), ("1", True)):
        monkeypatch.setenv("DISENTLIT_GPU", value)
        assert install_torch.has_nvidia_gpu() is want
