import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# the console scripts of the Python running the tests (the project venv) come first, activated or not
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


@pytest.fixture(autouse=True, scope="session")
def _compile_cache(tmp_path_factory):
    """torch.compile's TorchInductor cache in this run's own temporary folder: left to itself it makes a
    `torchinductor_<user>` folder in the system's temporary folder, which nothing removes (the compiled-run test)."""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("torchinductor"))


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    "An empty DISENTLIT_DATA for the test, so nothing is read from or written to the user's cache."
    monkeypatch.setenv("DISENTLIT_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


@pytest.fixture
def cli(data_home):
    "Run the installed `disentlit` console script; returns (exit status, stdout, stderr)."
    def run(*args, timeout=600):
        p = subprocess.run(["disentlit", *args], capture_output=True, text=True, timeout=timeout, env=os.environ.copy())
        return p.returncode, p.stdout, p.stderr
    return run


def copy_checkout(src, dst):
    """Copy what a clone of `src` would hold (tracked files and untracked ones .gitignore does not cover) to `dst`.
    Never the project venv, build outputs or run folders: a copy of `.venv` alone is several GB of disk."""
    src, dst = Path(src), Path(dst)
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=src,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if not (src / name).is_file(): continue                          # deleted in the work tree but not yet in git
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / name, dst / name)
    return dst


def pytest_terminal_summary(terminalreporter):
    "Say at the end, in one line, that the browser tests did not run and how to run them (tests/chromium.py)."
    from chromium import HOW
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "browser test: no Chromium" in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} browser tests skipped (the documentation site, the demo report): no "
                                    f"Chromium on this machine; {HOW}.", yellow=True, bold=True)
