"""Install the torch that suits this machine into the Python that runs this script (the project's venv).

    python tools/install_torch.py                    # tools/common.py's TORCH: what `make install` runs
    python tools/install_torch.py "torch>=2.4"       # another requirement (`make install TORCH=...`)

The decision, in order (pip's own dry run, `pip install --dry-run --report`, says what each choice would install):

1. A torch that already satisfies the requirement is kept: pip reports nothing to install.
2. With an NVIDIA GPU (`nvidia-smi -L` lists one, or the NVIDIA kernel driver is loaded), or DISENTLIT_GPU=1:
   the configured package index, whose Linux torch is the CUDA build.
3. Without one (or DISENTLIT_GPU=0): PyTorch's own CPU wheel index. Where that cannot be reached, the
   configured indexes (and `--find-links`) are used if pip's report shows a CPU build there: no `nvidia-*`
   or `triton` package, no `+cu` version. Otherwise the script stops with a message: it never installs
   several GB of CUDA wheels on a machine that cannot use them.

Only the standard library is used: this runs before anything else is installed.

    python tools/install_torch.py --uv-args          # pip's configured indexes, as uv's flags (the Makefile's)

The rest of an install is uv's (the Makefile): uv does not read pip's configuration, so `uv_args` passes it on:
the index, the extra indexes and the find-links that pip would use, from `pip config list`.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import TORCH    # tools/common.py (this script's own folder is on sys.path)

CPU_INDEX = os.environ.get("DISENTLIT_TORCH_CPU_INDEX", "https://download.pytorch.org/whl/cpu")   # or a mirror
CUDA_PACKAGES = ("nvidia-", "triton")          # what a CUDA build of torch pulls in on Linux
PROBE = ["--timeout", "10", "--retries", "0"]  # an unreachable index fails in seconds, not minutes


def has_nvidia_gpu() -> bool:
    "Whether this machine has an NVIDIA GPU with its driver (DISENTLIT_GPU=0/1 overrides the detection)."
    if (forced := os.environ.get("DISENTLIT_GPU")) in ("0", "1"): return forced == "1"
    if Path("/proc/driver/nvidia/version").exists(): return True
    if smi := shutil.which("nvidia-smi"):
        try: return subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).stdout.strip().startswith("GPU")
        except (OSError, subprocess.SubprocessError): return False
    return False


def dry_run(requirement: str, index_args: list[str], python: str = sys.executable) -> dict | None:
    "pip's report of what installing `requirement` with `index_args` would install, or None if pip cannot resolve it."
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        p = subprocess.run([python, "-m", "pip", "install", "--dry-run", "--quiet", "--disable-pip-version-check",
                            "--report", str(report), *PROBE, *index_args, requirement], capture_output=True, text=True)
        if p.returncode or not report.exists(): return None
        return json.loads(report.read_text())


def installs(report: dict) -> dict[str, str]:
    "{package name: version} that a pip report would install."
    return {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in report.get("install", [])}


def torch_source(report: dict) -> str:
    "Which torch a pip report would install, and from where."
    for i in report.get("install", []):
        if i["metadata"]["name"].lower() == "torch":
            return f"torch {i['metadata']['version']} from {i.get('download_info', {}).get('url', '?')}"
    return "no torch"


def from_index(report: dict, index: str) -> bool:
    "Whether the torch of a pip report comes from `index` (pip also looks at its configured extra indexes and --find-links)."
    host = lambda url: url.split("://", 1)[-1].split("/", 1)[0]
    for i in report.get("install", []):
        url = i.get("download_info", {}).get("url", "")
        if i["metadata"]["name"].lower() == "torch":
            return url.startswith(index.rstrip("/")) or (url.startswith("http") and host(url) == host(index))
    return False


def is_cuda_build(report: dict) -> bool:
    "Whether a pip report would install a CUDA build of torch (CUDA packages, or a +cu version)."
    names = installs(report)
    return any(n.startswith(CUDA_PACKAGES) for n in names) or "+cu" in names.get("torch", "")


def choose(requirement: str, gpu: bool, base_args: list[str] | None = None, cpu_index: str = CPU_INDEX,
           dry_run=dry_run) -> tuple[str, list[str] | None, str]:
    """What to do: ("keep", None, why), ("install", pip index arguments, why), or ("refuse", None, why).
    `base_args`: the configured indexes' arguments (none: pip's own configuration)."""
    base_args = list(base_args or [])
    now = dry_run(requirement, ["--no-deps", "--no-index"])     # satisfied already? (no index needed to say so)
    if now is not None and "torch" not in installs(now):
        return "keep", None, f"{requirement}: already installed, kept"
    if gpu:
        return "install", base_args, f"{requirement}: NVIDIA GPU found; the configured index (its Linux build is CUDA's)"
    cpu_args = ["--index-url", cpu_index]
    if (r := dry_run(requirement, cpu_args)) is not None and not is_cuda_build(r) and from_index(r, cpu_index):
        return "install", cpu_args, f"{requirement}: no NVIDIA GPU; {torch_source(r)}"
    if (r := dry_run(requirement, base_args)) is not None and not is_cuda_build(r):
        return "install", base_args, (f"{requirement}: no NVIDIA GPU and {cpu_index} cannot be reached; a CPU build is "
                                      f"available here: {torch_source(r)}")
    return "refuse", None, (f"{requirement}: no NVIDIA GPU, {cpu_index} cannot be reached, and the configured index offers "
                            f"only a CUDA build (several GB). Install a CPU build first, e.g.\n  {sys.executable} -m pip "
                            f"install '{requirement}' --index-url {cpu_index}\nor a wheel file you have; then run make again. "
                            "To take the CUDA build anyway: DISENTLIT_GPU=1 make ...")


SOURCES = ("index-url", "extra-index-url", "find-links", "no-index")   # what says where pip finds packages


def uv_args(listing: str) -> list[str]:
    """uv's flags for the sources in `listing` (`pip config list`: `scope.name='value'` lines). As pip reads them, a
    PIP_* variable (scope `:env:`) wins over the files, and among the files the last listed wins; a value holding
    several (extra indexes, find-links) is split on whitespace. pip picks the best version across all its indexes:
    so does uv with `--index-strategy unsafe-best-match` (the Makefile passes it)."""
    found, env = {}, {}
    for line in listing.splitlines():
        key, eq, value = line.partition("=")
        scope, _, name = key.strip().rpartition(".")
        if not eq or name not in SOURCES: continue
        (env if scope == ":env:" else found)[name] = value.strip().strip("'\"")
    found.update(env)
    flags = []
    for name in SOURCES:
        if name not in found: continue
        if name == "no-index":
            if found[name].lower() in ("1", "true", "yes", "on"): flags.append("--no-index")
            continue
        for value in found[name].split(): flags += [f"--{name}", value]
    return flags


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--uv-args"]:
        p = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
        print(" ".join(shlex.quote(a) for a in uv_args(p.stdout)))
        return 0
    requirement = argv[0] if argv and argv[0] else TORCH
    action, args, why = choose(requirement, has_nvidia_gpu())
    print(f"install_torch: {why}", file=sys.stderr)
    if action == "refuse": return 2
    if action == "install":
        return subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                               "--no-compile", *args, requirement]).returncode   # bytecode when first imported
    return 0


if __name__ == "__main__":
    sys.exit(main())
