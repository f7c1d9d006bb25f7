"""Build the documentation site from the executed notebooks, without Quarto.

    python tools/docs.py            # nbdev's processing -> _proc/, clean -> _docs_src/, mkdocs build -> _site/

The site is flat (`03a_models.html`, no directory URLs) with its search index inlined and a web-worker shim
(mkdocs-material's offline plugin), so it works opened as files (file://) as well as served, without a network.

nbdev's notebook processing applies the notebook directives and adds a `show_doc` cell for every exported name
(`process_notebooks`); nothing is executed. `clean` then turns Quarto's conventions into plain notebooks, which
mkdocs-material with mkdocs-jupyter renders:

- API entries are rendered from the objects (`api_markdown`): a signature (`class` for classes), the docstring and a
  table of parameters with type, default and docments comment; one entry per name (`one_entry_each`), in source order;
- cell options become hidden inputs, `#| code-fold: true` a folded `<details>` (`folded_code`), `#| fig-cap:` a
  caption and alt text (`figures_with_alt`); Quarto attribute blocks are dropped;
- links to notebooks, and nbdev's links to names (pages only Quarto would make), lead to this site's pages (`relink`);
- GIF outputs (which nbconvert does not render) become images; live widgets, which need a kernel, are dropped for
  a note (the notebooks show snapshots of them);
- the contents list, page titles and search index are made in tools/mkdocs_hooks.py.
"""
import configparser
import dataclasses
import functools
import hashlib
import html
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from common import cell_options   # tools/common.py: what the tools share

ROOT = Path(__file__).resolve().parents[1]
PROC, SRC, SITE, VENDOR = ROOT / "_proc", ROOT / "_docs_src", ROOT / "_site", ROOT / "_docs_vendor"
MATHJAX = "mathjax@2.7.9"          # the MathJax 2 that nbconvert's page template configures
WORKER_SHIM = "iframe-worker@1.0.4"  # web workers for pages opened as files (mkdocs-material's offline plugin)
SHIM_PATH = "assets/javascripts/iframe-worker-shim.js"
CDN_MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js?config=TeX-AMS_CHTML-full,Safe"

_ATTRS = re.compile(r"\{[^{}\n]*(?:target=|style=|\.callout|#[\w-]+ )[^{}\n]*\}")
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = ('<p class="widget-snapshot-needed"><em>Here Jupyter shows a live widget (it needs a running kernel); '
               'a static page cannot, so a snapshot of it follows.</em></p>')
_NB_LINK = re.compile(r"\((?:nbs/)?([\w-]+)\.ipynb\)")
_SHOW_DOC = re.compile(r"^show_doc\(([\w.]+)\)\s*$", re.M)


def settings() -> configparser.SectionProxy:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "settings.ini")
    return cfg["DEFAULT"]


def site_urls() -> list[str]:
    "The addresses that claim to be this site: nbdev's doc_host + doc_baseurl (settings.ini) and nbdev.yml's site-url."
    s = settings()
    urls = [s["doc_host"].rstrip("/") + "/" + s["doc_baseurl"].strip("/") + "/"]
    yml = ROOT / "nbs" / "nbdev.yml"
    if yml.exists() and (m := re.search(r'site-url:\s*"?([^"\s]+)"?', yml.read_text(encoding="utf-8"))):
        urls.append(m.group(1).rstrip("/") + "/")
    return list(dict.fromkeys(urls))


def notebook_modules() -> dict[str, str]:
    "Notebook stem -> the module it exports (`#| default_exp`)."
    out = {}
    for nb in (ROOT / "nbs").glob("*.ipynb"):
        if m := re.search(r"#\|\s*default_exp\s+([\w.]+)", nb.read_text(encoding="utf-8")): out[nb.stem] = m.group(1)
    return out


@functools.cache
def nbdev_pages() -> dict[str, str]:
    "The page name nbdev (Quarto) gives each notebook (`01b_data` -> `data.html`) -> this site's page (`01b_data`)."
    return {re.sub(r"^\d+[a-zA-Z0-9]*_", "", nb.stem.lower()) + ".html": nb.stem for nb in (ROOT / "nbs").glob("*.ipynb")}


@functools.cache
def heading_id(text: str) -> str:
    "The id mkdocs-jupyter gives a heading with this text (nbconvert's, lower-cased by mkdocs-jupyter)."
    from mkdocs_jupyter.utils import slugify
    from nbconvert.filters.strings import _convert_header_id
    return _convert_header_id(slugify(text))


def relink(text: str, anchors: dict | None = None) -> str:
    """Links to nbdev's pages of this site (`[`fit`](https://disentlit.github.io/disentlit/models.html#fit)`) -> links to
    this site's page and anchor (`05a_training.html#fit`). With `anchors` (page -> the API entries on it), a name
    without an entry links to its class's entry (a method) or is left as code."""
    pages = nbdev_pages()
    def target(page, anchor):
        if page not in pages: return None
        stem = pages[page]
        if not anchor: return f"{stem}.html"             # the site is flat: any page's address
        if anchors is not None and stem in anchors:
            names = {n.lower(): n for n in anchors[stem]}
            if anchor.lower() not in names:
                owner = anchor.rsplit(".", 1)[0] if "." in anchor else None
                if owner is None or owner.lower() not in names: return ""
                anchor = owner
        return f"{stem}.html#{heading_id(anchor)}"
    for base in site_urls():
        url = rf"{re.escape(base)}([\w.-]+\.html)(?:#([^)\s\"'>]*))?"
        def sub_link(m):
            t = target(m.group(2), m.group(3))
            return m.group(0) if t is None else f"[{m.group(1)}]({t})" if t else m.group(1)
        text = re.sub(rf"\[([^\]\n]*)\]\({url}\)", sub_link, text)
        text = re.sub(url, lambda m: (t if (t := target(m.group(1), m.group(2))) else f"{pages[m.group(1)]}.html")
                      if m.group(1) in pages else m.group(0), text)
    return text


def _clean_text(text: str, anchors: dict | None = None) -> str:
    "Drop Quarto attribute blocks; turn links to notebooks, and nbdev's links to names, into links to this site's pages."
    return relink(_NB_LINK.sub(lambda m: f"({m.group(1)}.html)", _ATTRS.sub("", text)), anchors)


def api_names(nb: dict) -> set[str]:
    "The names a processed notebook has API entries for (its `show_doc` cells)."
    return {m.group(1) for c in nb["cells"] if c["cell_type"] == "code" and (m := _SHOW_DOC.search("".join(c["source"])))}


# ---- the API reference ---------------------------------------------------------------------------------------------

_BUILTIN_BASES = (object, BaseException, Exception)


def _anno(a) -> str:
    if a is inspect.Parameter.empty: return ""
    if isinstance(a, str): return a
    return getattr(a, "__name__", None) if isinstance(a, type) else str(a).replace("typing.", "")


_Code = type("_Code", (str,), {"__repr__": str.__str__})        # a default shown as written: its repr is itself


def _param_text(p: inspect.Parameter) -> str:
    star = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
    text = star + p.name + (f": {_anno(p.annotation)}" if p.annotation is not p.empty else "")
    if p.default is not p.empty: text += (" = " if p.annotation is not p.empty else "=") + repr(p.default)
    return text


def _signature_line(head: str, params: list[inspect.Parameter], returns: str = "", width: int = 64) -> str:
    "`head(params) -> returns`, one parameter a line when it does not fit in `width` characters."
    texts = []
    for k, p in enumerate(params):
        if p.kind is p.KEYWORD_ONLY and not any(q.kind in (q.KEYWORD_ONLY, q.VAR_POSITIONAL) for q in params[:k]): texts.append("*")
        texts.append(_param_text(p))
        if p.kind is p.POSITIONAL_ONLY and (k + 1 == len(params) or params[k + 1].kind is not p.POSITIONAL_ONLY): texts.append("/")
    tail = f" -> {returns}" if returns else ""
    one = f"{head}({', '.join(texts)}){tail}"
    if len(one) <= width: return one
    return f"{head}(\n" + "".join(f"    {t},\n" for t in texts) + f"){tail}"


def _own_init(cls) -> bool:
    "Whether constructing `cls` takes arguments of its own (an `__init__` below the built-in bases, or a dataclass)."
    return any("__init__" in vars(k) for k in cls.__mro__ if k not in _BUILTIN_BASES)


def _docments(obj) -> dict:
    from fastcore.docments import docments
    try: return {k: v.get("docment") for k, v in docments(obj, full=True).items()}
    except Exception: return {}


def api_markdown(obj, name: str, source: str | None = None) -> str:
    """The API entry of `obj` (shown as `name`): a heading, its signature (`class` for classes), its own docstring and a
    table of its parameters (name, type, default, and the docments comment where there is one)."""
    is_class = inspect.isclass(obj)
    try: sig = inspect.signature(obj)
    except (TypeError, ValueError): sig = None
    params = [] if sig is None else [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
    named = lambda d: callable(d) and hasattr(d, "__qualname__") and " at 0x" in repr(d)    # a function: its name, not its address
    params = [p.replace(default=_Code(p.default.__qualname__)) if named(p.default) else p for p in params]
    if is_class and dataclasses.is_dataclass(obj):                 # dataclass fields made by a default_factory
        factories = {f.name: f.default_factory for f in dataclasses.fields(obj) if f.default_factory is not dataclasses.MISSING}
        params = [p.replace(default=_Code(repr(factories[p.name]()))) if p.name in factories else p for p in params]
    if is_class:
        bases = [b.__name__ for b in obj.__bases__ if b is not object]
        code = f"class {obj.__name__}" + (f"({', '.join(bases)})" if bases else "")
        if sig is not None and _own_init(obj): code += ":\n    " + _signature_line("def __init__", params).replace("\n", "\n    ")
        returns = ""
    else:
        returns = _anno(sig.return_annotation) if sig is not None and sig.return_annotation is not sig.empty else ""
        code = _signature_line(("async def " if inspect.iscoroutinefunction(obj) else "def ") + name.split(".")[-1], params, returns)
    doc = inspect.cleandoc(vars(obj).get("__doc__") or "") if is_class else inspect.cleandoc(getattr(obj, "__doc__", None) or "")
    dm = _docments(obj) if (params or returns) else {}
    if is_class and not _own_init(obj): params = []
    parts = [f"### {name}", f"```python\n{code}\n```"]
    if doc: parts.append(_linkify(doc))
    rows = [(("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + p.name, _anno(p.annotation),
             "" if p.default is p.empty else repr(p.default), dm.get(p.name) or "") for p in params]
    if returns or dm.get("return"): rows.append(("returns", returns, "", dm.get("return") or ""))
    if rows:
        described = any(r[3] for r in rows)
        head = ["Parameter", "Type", "Default"] + (["Description"] if described else [])
        cell = lambda v: f"<code>{html.escape(v)}</code>" if v else ""
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in
                                        [(f"<em>{r[0]}</em>" if r[0] == "returns" else cell(r[0])), cell(r[1]), cell(r[2])]
                                        + ([inline_markdown(r[3])] if described else [])) + "</tr>" for r in rows)
        parts.append('<table class="api-params"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) +
                     f"</tr></thead><tbody>{body}</tbody></table>")
    if source: parts.append(f'<p class="api-source"><a href="{source}">source</a></p>')
    return "\n\n".join(parts) + "\n"


def inline_markdown(text: str) -> str:
    "A docments comment as HTML: `code`, *emphasis* and links rendered, everything else escaped, no paragraph around it."
    import markdown
    out = markdown.markdown(html.escape(text, quote=False)).strip()
    return out[3:-4] if out.startswith("<p>") and out.endswith("</p>") and out.count("<p>") == 1 else out


def _linkify(text: str) -> str:
    "Backticked names of the package -> nbdev's links (rewritten to this site's pages by `relink`)."
    try:
        from nbdev.doclinks import NbdevLookup
        return NbdevLookup().linkify(text)
    except Exception: return text


def source_link(obj) -> str | None:
    """Where `obj` is defined in the project's repository (settings.ini's `git_url`, its `branch`): None when no
    repository is set or the source cannot be found, so that no page links to a repository that does not exist."""
    repo = settings().get("git_url", "").strip().rstrip("/")
    if not repo: return None
    try:
        path = Path(inspect.getsourcefile(inspect.unwrap(obj))).resolve().relative_to(ROOT)
        line = inspect.getsourcelines(inspect.unwrap(obj))[1]
    except (TypeError, OSError, ValueError): return None
    return f"{repo}/blob/{settings().get('branch', 'main')}/{path.as_posix()}#L{line}"


def render_api(cell: dict, module: str | None):
    "Replace the output of a `show_doc(name)` cell by `api_markdown` of the object (nbdev's output kept if it cannot be found)."
    m = _SHOW_DOC.search(cell["source"])
    if not m or module is None: return
    try:
        obj = importlib.import_module(f"{settings()['lib_name']}.{module}")
        for part in m.group(1).split("."): obj = getattr(obj, part)
    except (ImportError, AttributeError): return
    md = api_markdown(obj, m.group(1), source_link(obj))
    cell["outputs"] = [dict(output_type="display_data", metadata={}, data={"text/markdown": md, "text/plain": m.group(1)})]
    try: cell["_line"] = inspect.getsourcelines(inspect.unwrap(obj))[1]
    except (TypeError, OSError): cell["_line"] = None


def _source_order(cells: list[dict]) -> list[dict]:
    """nbdev inserts the `show_doc` cells of an exported cell in reverse; put each run of API entries back in the order of
    the source (by line number)."""
    out, run = [], []
    def flush():
        if all(c["_line"] is not None for c in run): run.sort(key=lambda c: c["_line"])
        out.extend(run); run.clear()
    for cell in cells:
        if "_line" in cell: run.append(cell); continue
        flush(); out.append(cell)
    flush()
    for cell in out: cell.pop("_line", None)
    return out


def _shown(cell: dict) -> str | None:
    "The name a `show_doc(name)` code cell documents (None for any other cell)."
    if cell["cell_type"] != "code": return None
    m = _SHOW_DOC.search("".join(cell["source"]))
    return m.group(1) if m else None


def one_entry_each(cells: list[dict], own_ids: set | None = None) -> list[dict]:
    """One API entry per name: nbdev adds a `show_doc` cell after an exported cell for every name it defines unless the
    notebook documents it already, but it does not see that `show_doc(Class.method)` documents a method defined with
    `@patch`, and adds its own. Where a name has several `show_doc` cells, the notebook's own (its id is one of
    `own_ids`, the ids of the source notebook's cells) is kept, else the first."""
    own_ids = own_ids or set()
    keep = {}
    for k, cell in enumerate(cells):
        if (name := _shown(cell)) is None: continue
        if name not in keep or (cell.get("id") in own_ids and cells[keep[name]].get("id") not in own_ids): keep[name] = k
    return [c for k, c in enumerate(cells) if _shown(c) is None or keep[_shown(c)] == k]


def _gif_as_html(out: dict):
    "nbconvert has no renderer for image/gif: show it as an <img> (it plays in the browser)."
    data = out.get("data", {})
    if "image/gif" in data and "text/html" not in data:
        gif = "".join(data["image/gif"]).replace("\n", "")
        data["text/html"] = f'<img src="data:image/gif;base64,{gif}" alt="animated GIF">'


def _sentence(markdown_text: str, limit: int = 200) -> str:
    "The first sentence of a Markdown cell as plain text (headings, emphasis, code marks and links dropped)."
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown_text)
    text = " ".join(l.lstrip("> ").strip() for l in text.splitlines() if l.strip() and not l.startswith(("|", "#")))
    text = re.sub(r"\*\*|[*`$]|(?<!\w)_|_(?!\w)", "", text)
    m = re.match(r"(.+?[.:!?])(\s|$)", text)
    return (m.group(1) if m else text)[:limit].strip()


def figures_with_alt(cell: dict, caption: str | None, context: str):
    """Image outputs as HTML figures: the cell's `#| fig-cap:` is the caption under the image and its alt text; without
    one, the alt text is `context` (the first sentence of the Markdown before the cell)."""
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        kind = next((k for k in ("image/png", "image/jpeg") if k in data), None)
        if kind is None or "text/html" in data: continue
        src = f"data:{kind};base64," + "".join(data.pop(kind)).replace("\n", "")
        alt = html.escape(caption or context or "a figure", quote=True)
        size = out.get("metadata", {}).get(kind, {})        # a retina figure's size in CSS pixels (half its own)
        dims = "".join(f' {k}="{int(size[k])}"' for k in ("width", "height") if isinstance(size.get(k), (int, float)))
        img = f'<img src="{src}" alt="{alt}"{dims}>'
        data["text/html"] = (f'<figure class="nb-figure">{img}<figcaption>{html.escape(caption)}</figcaption></figure>'
                             if caption else img)


def folded_code(source: str, summary: str) -> dict:
    """A Markdown cell that shows `source` folded: a `<details>` element titled `summary` holding the code highlighted as
    the site's code is (Pygments' classes, which mkdocs-material colours). One HTML block: no line of it is blank (an
    empty line of code holds an empty span), so that the Markdown converter keeps it whole."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    code = highlight(source, PythonLexer(), HtmlFormatter(cssclass="highlight")).strip()
    code = "\n".join(line if line.strip() else "<span></span>" for line in code.splitlines())
    return dict(cell_type="markdown", metadata={},
                source=f'<details class="code-fold"><summary>{html.escape(summary)}</summary>\n{code}\n</details>')


def _front_matter(src: str) -> dict | None:
    "The YAML front matter nbdev makes of a notebook's title and summary, if `src` is one."
    import yaml
    if not src.startswith("---"): return None
    try: meta = yaml.safe_load(src.strip().strip("-"))
    except yaml.YAMLError: return None
    return meta if isinstance(meta, dict) and "title" in meta else None


def clean(nb: dict, module: str | None = None, anchors: dict | None = None,
          own_ids: set | None = None) -> dict:
    """A notebook processed by nbdev, with Quarto's conventions turned into plain Jupyter ones (`module`: the module it exports, whose API entries are rendered here; `anchors`: page -> its API entries;
    `own_ids`: the ids of the source notebook's cells, whose `show_doc` cells win over nbdev's copies)."""
    cells, context = [], ""
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown": context = _sentence(src)
        if cell["cell_type"] == "raw" and (meta := _front_matter(src)):
            nb.setdefault("metadata", {})["title"] = meta["title"]
            text = f"# {meta['title']}" + (f"\n\n> {meta['description']}" if meta.get("description") else "")
            cells.append(dict(cell_type="markdown", metadata={}, source=text))
            continue
        opts = cell_options(src) if cell["cell_type"] == "code" else {}
        if opts.get("hide") or opts.get("include") == "false": continue
        if cell["cell_type"] == "code":
            cell["source"] = "\n".join(l for l in src.splitlines() if not l.startswith("#|"))
            if str(opts.get("code-fold", "")).lower() in ("true", "show"):          # the code in a <details>
                cells.append(folded_code(cell["source"], str(opts.get("code-summary", "Code")).strip('"')))
                cell["source"] = ""
            render_api(cell, module)
            if opts.get("echo") == "false" or not cell["source"].strip():
                if not cell.get("outputs"): continue                      # nothing to show: no empty box on the page
                cell.setdefault("metadata", {}).setdefault("tags", []).append("hide_code")
            # live widgets need a widget manager (and the network) to render; the notebooks show snapshots instead
            kept = [o for o in cell.get("outputs", []) if _WIDGET_VIEW not in o.get("data", {})]
            if len(kept) < len(cell.get("outputs", [])):          # a note where the widget was (docs_check wants a snapshot after it)
                kept.append(dict(output_type="display_data", metadata={}, data={"text/html": WIDGET_NOTE}))
            cell["outputs"] = kept
            cap = opts.get("fig-cap")
            figures_with_alt(cell, cap.strip().strip('"') if isinstance(cap, str) else None, context)
            for out in cell.get("outputs", []):
                _gif_as_html(out)
                data = out.get("data", {})
                if "text/markdown" in data:
                    data["text/markdown"] = _clean_text("".join(data["text/markdown"]), anchors)
        else:
            cell["source"] = _clean_text(src, anchors)
        cells.append(cell)
    nb["cells"] = _source_order(one_entry_each(cells, own_ids))
    for k, cell in enumerate(nb["cells"]):     # cells made here or by nbdev get an id from their place and text:
        if cell.get("id") not in (own_ids or set()):   # nbformat would draw a random one, and every build would differ
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["id"] = hashlib.sha1(f"{k}\n{text}".encode()).hexdigest()[:8]
    return nb


def vendor(spec: str, folder: str, keep: tuple[str, ...], without: str) -> Path | None:
    """A local copy of the npm package `spec` (only the paths under `keep`) in _docs_vendor/`folder`, fetched once from
    the npm registry, so that the site works offline; None, with a line saying `without`, where npm is missing."""
    target = VENDOR / folder
    if target.exists(): return target
    if not shutil.which("npm"):
        print(f"npm not found: {without}", file=sys.stderr)
        return None
    VENDOR.mkdir(exist_ok=True)
    name = subprocess.run(["npm", "pack", spec, "--silent", "--pack-destination", str(VENDOR)], check=True,
                          capture_output=True, text=True).stdout.split()[-1]
    with tarfile.open(VENDOR / name) as tar:
        tar.extractall(VENDOR, members=[m for m in tar.getmembers() if m.name.startswith(keep)], filter="data")
    (VENDOR / "package").rename(target)
    (VENDOR / name).unlink()
    return target


def vendor_mathjax() -> Path | None:
    "MathJax 2, so that the site renders equations offline."
    return vendor(MATHJAX, "mathjax", ("package/MathJax.js", "package/config/", "package/jax/input/TeX/",
                                       "package/jax/output/CommonHTML/", "package/jax/element/", "package/extensions/",
                                       "package/fonts/HTML-CSS/TeX/woff/"),
                  "equations will load MathJax from its CDN")


def vendor_worker_shim() -> Path | None:
    """The shim that lets the search box work on a site opened as files (browsers refuse web workers on file://):
    mkdocs-material's offline plugin names it, from a CDN unless the site carries its own copy."""
    folder = vendor(WORKER_SHIM, "iframe-worker", ("package/shim/",), "search on a site opened as files needs a network")
    return None if folder is None else folder / "shim" / "index.js"


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
    """nbdev's notebook processing into _proc/ (directives applied, `show_doc` cells added for the exported names),
    without `nbdev_proc_nbs`'s set-up steps, which try to install Quarto and re-install the package, and without
    executing anything: nbdev's `exec_show_docs` runs every notebook's exported cells and imports to fill the `show_doc`
    outputs, which `render_api` replaces here by entries rendered from the objects themselves (measured: 33 to 46 s of
    CPU for the 37 notebooks, in processes that import torch; the rest of the processing about 5 s, in this one)."""
    from execnb.nbio import read_nb, write_nb
    from nbdev.doclinks import nbglob
    from nbdev.processors import FilterDefaults

    class Processors(FilterDefaults):
        def base_procs(self): return [p for p in super().base_procs() if p.__name__ != "exec_show_docs"]

    shutil.rmtree(PROC, ignore_errors=True)
    PROC.mkdir()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for path in nbglob(ROOT / "nbs", func=Path):
            nb = read_nb(path)
            Processors()(nb)
            write_nb(nb, PROC / path.relative_to(ROOT / "nbs"))
    finally: os.chdir(cwd)


def grouped(pages: list[tuple[str, dict]]) -> list[dict]:
    """The sidebar: nbs/sidebar.yml's sections (Quarto's, the one list of them) with mkdocs' entries, `pages` being
    (notebook stem, {title: file}). A notebook it does not list is left out of mkdocs' nav, which fails the strict
    build (mkdocs.yml: `omitted_files`)."""
    import yaml
    by_stem = dict(pages)
    sections = yaml.safe_load((ROOT / "nbs" / "sidebar.yml").read_text())["website"]["sidebar"]["contents"]
    return [{s["section"]: [by_stem[Path(p).stem] for p in s["contents"] if Path(p).stem in by_stem]}
            for s in sections]


def build(proc: bool = True) -> Path:
    if proc: process_notebooks()
    shutil.rmtree(SRC, ignore_errors=True)
    SRC.mkdir()
    nav, modules = [], notebook_modules()
    nbs = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(PROC.glob("*.ipynb"), key=lambda p: (p.stem != "index", p.stem))}
    anchors = {stem: api_names(nb) for stem, nb in nbs.items()}
    for stem, nb in nbs.items():
        path = PROC / f"{stem}.ipynb"
        source = ROOT / "nbs" / f"{stem}.ipynb"
        own = {c.get("id") for c in json.loads(source.read_text(encoding="utf-8"))["cells"]} if source.exists() else set()
        nb = clean(nb, modules.get(stem), anchors, own)
        (SRC / path.name).write_text(json.dumps(nb), encoding="utf-8")
        title = "Home" if stem == "index" else nb.get("metadata", {}).get("title", stem).replace("`", "")  # no code marks
        nav.append((stem, {title: path.name}))
    config = ROOT / "_mkdocs_nav.yml"                      # mkdocs.yml plus the pages in notebook order
    extra = {}
    if (shim := vendor_worker_shim()) is not None:          # the offline plugin takes a polyfill that names iframe-worker
        (SRC / SHIM_PATH).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shim, SRC / SHIM_PATH)
        extra = {"extra": {"polyfills": [SHIM_PATH]}}
    config.write_text(json.dumps({"INHERIT": "mkdocs.yml", "nav": grouped(nav), **extra}), encoding="utf-8")
    shutil.copy(ROOT / "nbs" / "styles.css", SRC / "styles.css")
    if (ROOT / "nbs" / "images").exists(): shutil.copytree(ROOT / "nbs" / "images", SRC / "images")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--clean", "--quiet", "-f", str(config)], cwd=ROOT, check=True, env=env)
    localise(SITE, vendor_mathjax())
    return SITE


if __name__ == "__main__":
    site = build(proc="--no-proc" not in sys.argv)
    print(f"site written to {site}/\n  open it as files: {(site / 'index.html').as_uri()} (search works offline too)\n"
          f"  or serve it:      python -m http.server --directory {site} 8000, then http://localhost:8000/")
