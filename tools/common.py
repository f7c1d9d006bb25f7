"""What several tools share, in one module. A tool imports it from its own folder, which Python puts on sys.path when
the tool runs as a script (tests put tools/ there); no tool imports another tool's helpers.

- `cell_options`: a notebook cell's `#| key: value` options, as the site reads them (docs, run_notebook);
- `shows`: whether a code cell prints, displays or draws, read from its code (docs_check's outputs rule, run_notebook);
- `provenance`: the machine, the versions and the commit a measurement was taken with (time_demo, record_bench);
- `TORCH`: the torch the project is tested with, installed by `make install` (install_torch), the pinned science
  clones (pin_science.sh, through install_torch) and measure_extras.
"""
from __future__ import annotations

import ast
import datetime
import os
import platform
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"


def cell_options(source: str) -> dict:
    "The `#| key: value` cell options at the top of a cell."
    opts = {}
    for line in source.splitlines():
        if not line.startswith("#|"): break
        key, _, value = line[2:].partition(":")
        opts[key.strip()] = value.strip() or True
    return opts


SHOWS = ("print", "display")


def _name(call):
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def shows(src: str) -> str | None:
    """What a code cell shows when it runs, read from its code: a call to print or display, a plot_* function whose
    figure it does not close (Jupyter shows open figures), or a last line that is a bare expression (not a call,
    not ended by `;`). None where it shows nothing, or where that cannot be told without running it."""
    lines = src.splitlines()
    opts = [l for l in lines if l.startswith("#|")]
    if any(re.match(r"#\|\s*(hide|export|exporti|exports|eval:\s*false|include:\s*false)\b", o) for o in opts):
        return None
    try: tree = ast.parse("\n".join(l for l in lines if not l.startswith("#|")))
    except SyntaxError: return None
    if not tree.body: return None
    closes = any(isinstance(n, ast.Call) and _name(n) == "close" for n in ast.walk(tree))
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): continue
        for n in ast.walk(stmt):
            if isinstance(n, (ast.FunctionDef, ast.Lambda)): break
            if isinstance(n, ast.Call):
                if _name(n) in SHOWS: return f"calls {_name(n)}()"
                if _name(n).startswith("plot_") and not closes: return f"draws with {_name(n)}()"
    last = tree.body[-1]
    code_lines = [l for l in lines if l.strip() and not l.startswith("#|")]
    if isinstance(last, ast.Expr) and not isinstance(last.value, (ast.Call, ast.Constant, ast.Await)) \
            and not code_lines[-1].split("#")[0].rstrip().endswith(";"):
        return "ends with an expression"
    return None


def cpu_model() -> str:
    "The CPU's model name, as /proc/cpuinfo gives it (the platform's processor string elsewhere)."
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"): return line.split(":", 1)[1].strip()
    except OSError: pass
    return platform.processor() or "unknown"


def provenance() -> dict:
    """The machine (CPU, cores, native bf16: where `precision='auto'` trains in bf16), the versions of torch and
    disentlit, the commit and the date of a measurement."""
    import torch
    import disentlit
    from disentlit.models import native_bf16
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    return dict(cpu=cpu_model(), cores=os.cpu_count(), native_bf16=native_bf16("cpu"), torch=torch.__version__,
                disentlit=disentlit.__version__, commit=commit.strip(), date=datetime.date.today().isoformat())
