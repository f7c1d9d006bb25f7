"""Build the documentation site from the executed notebooks, without Quarto.

    python tools/docs.py            # nbdev_proc_nbs -> _proc/, clean -> _docs_src/, mkdocs build -> _site/

nbdev's own `nbdev_proc_nbs` applies the notebook directives and adds the API reference (`show_doc`
of every exported name, executed); Quarto would render that. Here a small cleaning step turns
Quarto's conventions into plain notebooks (cell options become hidden inputs, Quarto attribute
blocks are dropped, links to notebooks become links to pages) and mkdocs-material with
mkdocs-jupyter renders them, with its search box.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROC, SRC, SITE, VENDOR = ROOT / "_proc", ROOT / "_docs_src", ROOT / "_site", ROOT / "_docs_vendor"
MATHJAX = "mathjax@2.7.9"          # the MathJax 2 that nbconvert's page template configures
CDN_MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js?config=TeX-AMS_CHTML-full,Safe"

_ATTRS = re.compile(r"\{[^{}\n]*(?:target=|style=|\.callout|#[\w-]+ )[^{}\n]*\}")
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_NB_LINK = re.compile(r"\((?:nbs/)?([\w-]+)\.ipynb\)")


def _options(source: str) -> dict:
    "The `#| key: value` cell options at the top of a cell."
    opts = {}
    for line in source.splitlines():
        if not line.startswith("#|"): break
        key, _, value = line[2:].partition(":")
        opts[key.strip()] = value.strip() or True
    return opts


def _clean_text(text: str, up: str = "") -> str:
    "Drop Quarto attribute blocks; turn links to notebooks into links to their pages."
    return _NB_LINK.sub(lambda m: f"({up}{m.group(1)}/)", _ATTRS.sub("", text))


def _front_matter(src: str) -> dict | None:
    "The YAML front matter nbdev makes of a notebook's title and summary, if `src` is one."
    import yaml
    if not src.startswith("---"): return None
    try: meta = yaml.safe_load(src.strip().strip("-"))
    except yaml.YAMLError: return None
    return meta if isinstance(meta, dict) and "title" in meta else None


def clean(nb: dict, up: str = "../") -> dict:
    "A notebook processed by nbdev, with Quarto's conventions turned into plain Jupyter ones (`up`: from its page to the root)."
    cells = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "raw" and (meta := _front_matter(src)):
            nb.setdefault("metadata", {})["title"] = meta["title"]
            text = f"# {meta['title']}" + (f"\n\n> {meta['description']}" if meta.get("description") else "")
            cells.append(dict(cell_type="markdown", metadata={}, source=text))
            continue
        opts = _options(src) if cell["cell_type"] == "code" else {}
        if opts.get("hide") or opts.get("include") == "false": continue
        if cell["cell_type"] == "code":
            cell["source"] = "\n".join(l for l in src.splitlines() if not l.startswith("#|"))
            if opts.get("echo") == "false" or not cell["source"].strip():
                cell.setdefault("metadata", {}).setdefault("tags", []).append("hide_code")
            # live widgets need a widget manager (and the network) to render; the notebooks show snapshots instead
            cell["outputs"] = [o for o in cell.get("outputs", []) if _WIDGET_VIEW not in o.get("data", {})]
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "text/markdown" in data:
                    data["text/markdown"] = _clean_text("".join(data["text/markdown"]), up)
        else:
            cell["source"] = _clean_text(src, up)
        cells.append(cell)
    nb["cells"] = cells
    return nb


def vendor_mathjax() -> Path | None:
    "A local copy of MathJax 2 from the npm registry (fetched once), so the site renders equations offline."
    target = VENDOR / "mathjax"
    if (target / "MathJax.js").exists(): return target
    if not shutil.which("npm"):
        print("npm not found: equations will load MathJax from its CDN", file=sys.stderr)
        return None
    VENDOR.mkdir(exist_ok=True)
    name = subprocess.run(["npm", "pack", MATHJAX, "--silent", "--pack-destination", str(VENDOR)], check=True,
                          capture_output=True, text=True).stdout.split()[-1]
    with tarfile.open(VENDOR / name) as tar:
        keep = ("package/MathJax.js", "package/config/", "package/jax/input/TeX/", "package/jax/output/CommonHTML/",
                "package/jax/element/", "package/extensions/", "package/fonts/HTML-CSS/TeX/woff/")
        tar.extractall(VENDOR, members=[m for m in tar.getmembers() if m.name.startswith(keep)], filter="data")
    (VENDOR / "package").rename(target)
    (VENDOR / name).unlink()
    return target


_WIDGETS = "function addWidgetsRenderer() {"
_ONLY_WITH_WIDGETS = _WIDGETS + " if (!document.querySelector('script[type=\"application/vnd.jupyter.widget-view+json\"]')) return;"


def localise(site: Path, mathjax: Path | None):
    "Make pages self-contained: MathJax from the site itself, and the widget loader only where a page has widgets."
    if mathjax is not None: shutil.copytree(mathjax, site / "assets" / "mathjax", dirs_exist_ok=True)
    for page in site.rglob("*.html"):
        text = original = page.read_text(encoding="utf-8")
        up = "../" * (len(page.relative_to(site).parts) - 1)
        if mathjax is not None: text = text.replace(CDN_MATHJAX, f"{up}assets/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe")
        text = text.replace(_WIDGETS, _ONLY_WITH_WIDGETS)
        if text != original: page.write_text(text, encoding="utf-8")


def process_notebooks():
    """nbdev's notebook processing into _proc/ (directives applied, `show_doc` executed), without `nbdev_proc_nbs`'s
    set-up steps, which try to install Quarto and re-install the package."""
    from nbdev.serve import proc_nbs
    cwd = os.getcwd()
    os.chdir(ROOT)
    try: proc_nbs(ROOT / "nbs", n_workers=2, force=True)
    finally: os.chdir(cwd)


def build(proc: bool = True) -> Path:
    if proc: process_notebooks()
    shutil.rmtree(SRC, ignore_errors=True)
    SRC.mkdir()
    nav = []
    for path in sorted(PROC.glob("*.ipynb"), key=lambda p: (p.stem != "index", p.stem)):
        nb = clean(json.loads(path.read_text(encoding="utf-8")), "" if path.stem == "index" else "../")
        (SRC / path.name).write_text(json.dumps(nb), encoding="utf-8")
        title = "Home" if path.stem == "index" else nb.get("metadata", {}).get("title", path.stem)
        nav.append({title: path.name})
    config = ROOT / "_mkdocs_nav.yml"                      # mkdocs.yml plus the pages in notebook order
    config.write_text(json.dumps({"INHERIT": "mkdocs.yml", "nav": nav}), encoding="utf-8")
    for extra in ("styles.css",):
        if (ROOT / "nbs" / extra).exists(): shutil.copy(ROOT / "nbs" / extra, SRC / extra)
    if (ROOT / "nbs" / "images").exists(): shutil.copytree(ROOT / "nbs" / "images", SRC / "images")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--clean", "--quiet", "-f", str(config)], cwd=ROOT, check=True, env=env)
    localise(SITE, vendor_mathjax())
    return SITE


if __name__ == "__main__":
    print(f"site written to {build(proc='--no-proc' not in sys.argv)}")
