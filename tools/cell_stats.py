"""The rhythm of the notebooks, counted: how long their export cells are, how many lines run past 100 characters,
and how many definitions are followed at once by the example or test that pins them down (issue 44, item 6).

    python tools/cell_stats.py                          # every notebook in nbs/, and all of them together
    python tools/cell_stats.py nbs/04_losses.ipynb ...  # the notebooks named
    python tools/cell_stats.py --rev HEAD~3 nbs/04_losses.ipynb   # as they were at a commit
    python tools/cell_stats.py --json ...               # one JSON object: notebook -> counts, and "all"

What is counted:

- an *export cell* is a code cell with an `#| export` directive; its lines are all its source lines, as a reader sees
  them (the directive and blank lines included: the count the issue's 15 / 31 lines were made with);
- *long lines* are the lines of export cells longer than 100 characters (`long` is their share);
- a *definition* is an export cell that defines at least one function or class at its top level; it is
  *followed* when the next cell, `show_doc` cells and cells of imports only skipped, is a code cell that exports
  nothing: its example or test.
  Prose between a definition and its test does not count (the test belongs right under it, as in fastcore).
"""
import ast
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 100
_DIRECTIVE = re.compile(r"^\s*#\|\s*(\S+)")
_SHOW_DOC = re.compile(r"^\s*show_doc\([\w.]+\)\s*$")


def directives(source: str) -> list[str]:
    "The names of a cell's `#| name ...` directives, in order."
    return [m.group(1) for l in source.splitlines() if (m := _DIRECTIVE.match(l))]


def is_export(cell: dict) -> bool:
    "Whether `cell` is a code cell that nbdev exports."
    return cell["cell_type"] == "code" and "export" in directives("".join(cell["source"]))


def code_lines(source: str) -> list[str]:
    "The lines of a cell that are code or comments: directives and blank lines left out."
    return [l for l in source.splitlines() if l.strip() and not _DIRECTIVE.match(l)]


def definitions(source: str) -> list[str]:
    "The functions and classes a cell defines at its top level (private ones too: a helper wants its test as well)."
    try: tree = ast.parse("\n".join(l for l in source.splitlines() if not l.lstrip().startswith(("%", "!"))))
    except SyntaxError: return []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [n.name for n in tree.body if isinstance(n, kinds)]


def _between(cell: dict) -> bool:
    """Whether `cell` may stand between a definition and its test: `show_doc` cells, and cells of imports only (nbdev
    runs every cell with an import when it makes the docs, so a test's imports get a cell of their own)."""
    if cell["cell_type"] != "code": return False
    src = code_lines("".join(cell["source"]))
    if src and all(_SHOW_DOC.match(l) for l in src): return True
    try: body = ast.parse("\n".join(src)).body
    except SyntaxError: return False
    return bool(body) and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in body)


def followed(cells: list[dict], i: int) -> bool:
    "Whether the cell after `cells[i]`, `show_doc` and import cells skipped, is a code cell that exports nothing."
    for cell in cells[i + 1:]:
        if _between(cell): continue
        return cell["cell_type"] == "code" and not is_export(cell) and bool(code_lines("".join(cell["source"])))
    return False


def _quantile(xs: list[int], q: float) -> float:
    "The q-quantile of `xs` by linear interpolation (numpy's default), 0 for no values."
    if not xs: return 0
    xs = sorted(xs); k = (len(xs) - 1) * q; lo = int(k)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (k - lo)


def stats(cells: list[dict]) -> dict:
    """Counts of one notebook's cells (or of several notebooks' cells, with `sizes`, `lines`, `long_lines`,
    `definitions` and `followed` added up): export cells, median and p90 lines, share of long lines, definitions
    followed by their example."""
    sizes, long_lines, defs, ok, unfollowed = [], 0, 0, 0, []
    for i, cell in enumerate(cells):
        if not is_export(cell): continue
        src = "".join(cell["source"])
        lines = src.splitlines()
        sizes.append(len(lines))
        long_lines += sum(len(l) > WIDTH for l in lines)
        if names := definitions(src):
            defs += 1
            if followed(cells, i): ok += 1
            else: unfollowed.append(names[0])
    return summary(sizes, long_lines, defs, ok, unfollowed)


def summary(sizes, long_lines, defs, ok, unfollowed=()) -> dict:
    "The counts `stats` reports, from the export cells' sizes and the other tallies."
    n = sum(sizes)
    return dict(export_cells=len(sizes), median=_quantile(sizes, 0.5), p90=round(_quantile(sizes, 0.9), 1),
                lines=n, long_lines=long_lines, long=round(long_lines / n, 3) if n else 0.0,
                definitions=defs, followed=ok, unfollowed=list(unfollowed), sizes=sizes)


def read(path: Path, rev: str | None = None) -> list[dict]:
    "The cells of notebook `path`, as in the work tree or at commit `rev`."
    if rev is None: return json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    rel = Path(path).resolve().relative_to(ROOT).as_posix()
    return json.loads(subprocess.check_output(["git", "show", f"{rev}:{rel}"], cwd=ROOT))["cells"]


def report(paths: list[Path], rev: str | None = None) -> dict:
    "Counts per notebook (by stem) and over all of them (`all`)."
    out = {Path(p).stem: stats(read(p, rev)) for p in paths}
    tot = [out[k] for k in out]
    out["all"] = summary([s for t in tot for s in t["sizes"]], sum(t["long_lines"] for t in tot),
                         sum(t["definitions"] for t in tot), sum(t["followed"] for t in tot))
    return out


def main(argv: list[str]) -> None:
    as_json = "--json" in argv
    argv = [a for a in argv if a != "--json"]
    rev = None
    if "--rev" in argv:
        i = argv.index("--rev"); rev = argv[i + 1]; del argv[i:i + 2]
    if argv: paths = [Path(a) for a in argv]
    elif rev is None: paths = sorted((ROOT / "nbs").glob("*.ipynb"))
    else: paths = [ROOT / p for p in subprocess.check_output(["git", "ls-tree", "--name-only", rev, "nbs/"], cwd=ROOT,
                                                           text=True).split() if p.endswith(".ipynb")]
    out = report(paths, rev)
    if as_json:
        print(json.dumps({k: {f: v for f, v in s.items() if f != "sizes"} for k, s in out.items()}, indent=1))
        return
    print(f"{'notebook':<22}{'cells':>6}{'median':>8}{'p90':>7}{'>100ch':>8}  followed")
    for name, s in out.items():
        print(f"{name:<22}{s['export_cells']:>6}{s['median']:>8g}{s['p90']:>7g}{100 * s['long']:>7.1f}%"
              f"  {s['followed']}/{s['definitions']}")


if __name__ == "__main__":
    main(sys.argv[1:])
