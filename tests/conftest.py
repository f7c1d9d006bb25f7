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
def console(data_home):
    """Run the installed `disentlit` console script in a process of its own; returns (exit status, stdout, stderr).
    For what only a process shows: the entry point itself, its streams, signals."""
    def run(*args, timeout=600):
        p = subprocess.run(["disentlit", *args], capture_output=True, text=True, timeout=timeout, env=os.environ.copy())
        return p.returncode, p.stdout, p.stderr
    return run


@pytest.fixture
def cli(data_home):
    """Run `disentlit ARGS` in this process, through `disentlit.cli.main` as the console script calls it; returns
    (exit status, stdout, stderr). A process per command costs 3 to 8 s of imports here (torch, and torch._dynamo at
    the first optimiser step), most of test_cli's time (measured: 307 s through the console script); `console` runs
    the script itself for what only a process shows. An exception escaping `main` fails the test: the console script
    would have printed a traceback."""
    import contextlib
    import io
    from disentlit.cli import main

    def run(*args, timeout=None):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try: code = main([str(a) for a in args])
            except SystemExit as e: code = e.code if isinstance(e.code, int) else 1    # argparse: usage errors, --help
        return code, out.getvalue(), err.getvalue()
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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With DISENTLIT_TEST_CPU=FILE, append each test's CPU seconds (setup, call and teardown; this process and the
    processes it waited for) and wall seconds to FILE as JSON lines: what the suite costs, whatever else the machine is
    doing (wall times under load measure the load too). How the suite's time was budgeted (Makefile, `test`)."""
    path = os.environ.get("DISENTLIT_TEST_CPU")
    if not path:
        yield
        return
    import json
    import resource
    import time

    def cpu():
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    c, t = cpu(), time.perf_counter()
    yield
    with open(path, "a") as f:
        f.write(json.dumps(dict(test=item.nodeid, cpu=round(cpu() - c, 2), wall=round(time.perf_counter() - t, 2))) + "\n")
