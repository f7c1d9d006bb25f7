import os
import subprocess
import sys

import pytest

# the console scripts of the Python running the tests (the project venv) come first, activated or not
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


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
