"""Check the built documentation site: first as files (no browser needed), then in a real browser (headless Chromium
driven by Playwright).

    python tools/docs_check.py [--site _site] [--out _site_check] [--static | --browser-only] [--first-screen]

Every problem is one line that starts with the name of its rule; the exit status is 1 when there is any. `--static`
runs the rules on the files alone, `--browser-only` the browser's alone (tests/test_docs.py checks the same build
with both, each once).

Rules on the files (`static_check`, also what CI runs without Chromium):

- links: every link to this site (relative, or absolute on a host that claims to be this site: settings.ini's
  doc_host + doc_baseurl, nbdev.yml's site-url) leads to a page that exists and, with a #fragment, to an id on it;
- toc: every entry of a page's contents list has text and that text is the whole text of the heading it points to;
  every h2/h3 of the page (API entries included) is in the list; no two headings of a page share an id; the side
  menu and <title> name the page by its whole h1;
- api: every exported name of the page's module has an entry, and no name has two; every entry (an h3 in an output) is followed by its
  signature (`class Name` for a class, `def name(` for a function) without memory addresses (`<function mse at 0x..>`),
  and no page reads "Call self as a function.";
- outputs: every notebook cell that prints, displays or draws is saved with its output (`shows`), so no page shows
  such a cell with nothing under it;
- images: every <img> has a source that exists and decodes to a picture, and alt text (a figure's `#| fig-cap:`, or
  the sentence before its cell; never nbconvert's placeholder); no output shows an image as its size only
  (`<Figure size 640x480 with 1 Axes>`, `<IPython.core.display.Image object>`, a widget's repr, a PIL repr, the byte
  count of an image file); every live widget the site cannot show is followed by a snapshot image;
- figures: every figure was measured as it was drawn, and its text is readable at the page's width (below);
- search: the search index holds no code-cell furniture ("In [ ]:", "Copied!"), no test code (`test_eq(`, `assert`),
  no raw TeX (`$\\beta$`: a search result shows the index's text, which MathJax never typesets) and no titles ending
  in a pilcrow;
- cli: the command line's page shows, for every subcommand of the parser, its usage (`usage: disentlit NAME`) and an
  example command line.

Figure text is measured where a figure is drawn, on its text objects (`disentlit.core.small_text`: nothing under 7
pt once it is shown 6.4 inches wide, the page's column): `save_figure` and tools/run_notebook.py, which saves the
notebooks' outputs, write the verdict into the PNG (`FIGURE_TEXT_KEY`), and the figures rule reads it back. A figure
drawn any other way has no verdict, and that is a problem too.

In the browser (`browser_check`), each page reached as a reader reaches it (every sidebar entry clicked in turn, each
opening its page): it answers 200 without console errors, MathJax typesets, every image loads (the reproduction's 5
figures at least), every internal link answers 200, no contents entry is cut short, and nothing is cut off at a
1280 px window or a 390 px phone (`_OVERFLOW`: no block reaches past the column or scrolls sideways); screenshots go to
--out. Then a search for "box blur" must open a page, and the walk is repeated on the site opened as files (`_walk`).
"""
from __future__ import annotations

import base64
import functools
import http.server
import io
import json
import re
import shutil
import sys
import threading
from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import docs as site_build  # noqa: E402  the site's build (tools/docs.py): its notebooks' modules, the addresses it claims
from common import shows  # noqa: E402  whether a cell prints, displays or draws (tools/common.py)
from mkdocs_hooks import heading_text  # noqa: E402  a heading's text as the contents list shows it
from disentlit.core import FIGURE_TEXT_KEY  # noqa: E402  the PNG chunk holding a figure's measured text
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--disable-component-update", "--disable-sync", "--disable-quic"]
FAKE = "http://site.invalid/"  # the site's root when links are resolved without a server

SIZE_ONLY = [re.compile(p) for p in (
    r"^<Figure size \d+(\.\d+)?x\d+(\.\d+)? with \d+ Axes>$",
    r"^<IPython\.core\.display\.\w+ object>$",
    r"^<PIL\.[\w.]+ image mode=\w+ size=\d+x\d+( at 0x[0-9A-Fa-f]+)?>$",
    r"^(HBox|VBox|Box|Image|IntSlider|FloatSlider|Dropdown|Output)\((children|value|layout|description)=",
)]
NO_ALT = "No description has been provided for this image"     # nbconvert's alt text for an image without one
SEARCH_JUNK = [re.compile(p) for p in (r"In\s*\[\s*\d*\s*\]:", r"Copied!", r"\btest_(eq|close|fail|ne|is)\(",
                                         r"\bassert\s+[\w(]",
                                         r"\$[^$\n]*\\[A-Za-z]+[^$\n]*\$|\$[A-Za-z](_\w+)?\$")]   # TeX, not typeset


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name): return path
    raise SystemExit("no Chromium found: on Debian, apt-get install -y chromium")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):          # a page left before it loaded: not the site's fault
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)): super().handle_error(request, client_address)


def serve(site: Path):
    handler = functools.partial(_Quiet, directory=str(site))
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def module_symbols() -> dict:
    "Exported names per notebook page: those of its `default_exp` module, from nbdev's index of the package."
    from disentlit._modidx import d
    return {stem: {n for s in d["syms"].get(f"disentlit.{m}", {})
                   if "." not in (n := s[len(f"disentlit.{m}."):]) and not n.startswith("_")}
            for stem, m in site_build.notebook_modules().items()}


# ---- the site as files ---------------------------------------------------------------------------------------------

def soup(text: str):
    from bs4 import BeautifulSoup
    return BeautifulSoup(text, "html.parser")


def site_pages(site: Path) -> dict[str, Path]:
    "Page name ('index' for the landing page) -> its file: the site is flat (`03a_models.html`), so it works as files."
    return {p.stem: p for p in sorted(site.glob("*.html")) if p.name != "404.html"}


def page_url(name: str) -> str:
    return urljoin(FAKE, name + ".html")


def _target(site: Path, url: str) -> Path | None:
    "The file a URL on this site leads to (None when there is none)."
    path = unquote(urlparse(url).path)[len(urlparse(FAKE).path):]
    f = site / path
    if path == "" or path.endswith("/"): f = f / "index.html"
    elif f.is_dir(): f = f / "index.html"
    return f if f.is_file() else None


def check_links(site: Path, docs: dict) -> list[str]:
    bases, problems, ids = site_build.site_urls(), [], {}
    def ids_of(f: Path) -> set:
        if f not in ids: ids[f] = {t.get("id") for t in soup(f.read_text(encoding="utf-8")).find_all(id=True)}
        return ids[f]
    for name, (path, page) in docs.items():
        ids[path] = {t.get("id") for t in page.find_all(id=True)}
        for a in page.find_all("a", href=True):
            href = a["href"].strip()
            if href.startswith(("mailto:", "javascript:", "data:")): continue
            base = next((b for b in bases if href.startswith(b)), None)
            if base: url = urljoin(FAKE, href[len(base):])
            elif urlparse(href).scheme: continue                      # another site: not checked offline
            else: url = urljoin(page_url(name), href)
            target = _target(site, url)
            if target is None:
                problems.append(f"links: {name}: {href!r} leads to {urlparse(url).path!r}, which is not a page of this site")
                continue
            frag = urlparse(url).fragment
            if frag and target.suffix == ".html" and frag not in ids_of(target) and unquote(frag) not in ids_of(target):
                problems.append(f"links: {name}: {href!r} points to #{frag}, which is not on {target.relative_to(site).as_posix()}")
    return problems


def _content(page):
    return page.select_one("article") or page


def check_toc(docs: dict) -> list[str]:
    problems = []
    for name, (_, page) in docs.items():
        content = _content(page)
        tags = content.find_all(["h1", "h2", "h3", "h4", "h5", "h6"], id=True)
        headings = {t["id"]: heading_text(t) for t in tags}
        for hid in sorted({t["id"] for t in tags if sum(u["id"] == t["id"] for u in tags) > 1}):
            problems.append(f"toc: {name}: headings {[heading_text(t) for t in tags if t['id'] == hid]} share the id {hid!r}")
        entries = []
        for nav in page.select("nav.md-nav--secondary")[-1:]:
            for a in nav.select("a.md-nav__link"):
                entries.append((a.get("href", ""), " ".join(a.get_text(" ").split())))
        for href, text in entries:
            anchor = unquote(href.lstrip("#"))
            if not text: problems.append(f"toc: {name}: a blank entry (-> {href})"); continue
            if not href.startswith("#") or anchor not in headings:
                problems.append(f"toc: {name}: entry {text!r} points to {href!r}, which is no heading of the page"); continue
            if text != headings[anchor]:
                problems.append(f"toc: {name}: entry {text!r} is cut: the heading reads {headings[anchor]!r}")
        listed = {unquote(h.lstrip("#")) for h, _ in entries}
        for t in content.find_all(["h2", "h3"], id=True):
            if t["id"] not in listed: problems.append(f"toc: {name}: heading {heading_text(t)!r} is not in the contents list")
        h1 = content.find("h1")
        if h1 is not None and name != "index":
            whole = heading_text(h1)
            for a in page.select(".md-nav--primary a.md-nav__link--active"):
                text = " ".join(a.get_text(" ").split())
                if text != whole: problems.append(f"toc: {name}: the side menu names the page {text!r}, its heading {whole!r}")
            title = page.find("title")
            if title is not None and not title.get_text().strip().startswith(whole):
                problems.append(f"toc: {name}: <title> {title.get_text().strip()!r} is not the page's heading {whole!r}")
    return problems


def _is_output(tag) -> bool:
    return tag.find_parent(class_="jp-OutputArea") is not None or tag.find_parent(class_="jp-OutputArea-output") is not None


def api_entries(page) -> list:
    "The API entries of a page: h3 headings in outputs whose text is a (dotted) Python name."
    return [h for h in _content(page).find_all("h3") if _is_output(h) and re.fullmatch(r"[A-Za-z_][\w.]*", heading_text(h))]


def _signature_of(h3) -> str | None:
    "The first code block after an entry's heading and before the next heading."
    for el in h3.find_all_next():
        if el.name in ("h1", "h2", "h3", "h4"): return None
        if el.name == "pre": return el.get_text()
    return None


def check_api(docs: dict, symbols: dict | None = None) -> list[str]:
    import importlib, inspect
    symbols = module_symbols() if symbols is None else symbols
    modules, problems = {stem: f"disentlit.{m}" for stem, m in site_build.notebook_modules().items()}, []
    for name, (_, page) in docs.items():
        entries = api_entries(page)
        for h in entries:
            entry = heading_text(h)
            sig = _signature_of(h)
            last = entry.split(".")[-1]
            if sig is None or not re.search(rf"(^|\s)(class\s+{re.escape(last)}\b|(async\s+)?def\s+{re.escape(last)}\s*\()", sig):
                problems.append(f"api: {name}: entry {entry!r} has no signature"); continue
            if re.search(r"<[\w. ]+ at 0x[0-9a-f]+>", sig):
                problems.append(f"api: {name}: entry {entry!r} shows a default as a memory address: {re.search(r'<[^>]+ at 0x[0-9a-f]+>', sig).group(0)}")
            obj = None
            if name in modules:
                try:
                    obj = importlib.import_module(modules[name])
                    for part in entry.split("."): obj = getattr(obj, part)
                except (ImportError, AttributeError): obj = None
            if obj is not None and inspect.isclass(obj) and not re.match(rf"\s*class\s+{re.escape(last)}\b", sig):
                problems.append(f"api: {name}: entry {entry!r} is a class shown as {sig.strip().splitlines()[0]!r}")
        for entry, n in Counter(heading_text(h) for h in entries).items():
            if n > 1: problems.append(f"api: {name}: entry {entry!r} appears {n} times")
        text = _content(page).get_text(" ")
        if "Call self as a function" in text:
            problems.append(f"api: {name}: an entry reads 'Call self as a function.' (a docstring that is not the object's)")
        expected = symbols.get(name, set())
        missing = expected - {heading_text(h) for h in entries}
        if missing: problems.append(f"api: {name}: no API entry for {sorted(missing)}")
    return problems


def _image_bytes(site: Path, page_name: str, src: str) -> bytes | None:
    if src.startswith("data:"):
        head, _, data = src.partition(",")
        try: return base64.b64decode(data) if head.endswith(";base64") else unquote(data).encode()
        except ValueError: return None
    if urlparse(src).scheme: return None
    f = _target(site, urljoin(page_url(page_name), src))
    return f.read_bytes() if f else None


def _output_text(out) -> str:
    return " ".join(out.get_text(" ").split())


def check_images(site: Path, docs: dict) -> list[str]:
    from PIL import Image
    problems = []
    for name, (_, page) in docs.items():
        content = _content(page)
        for k, img in enumerate(content.find_all("img")):
            src = (img.get("src") or "").strip()
            if urlparse(src).scheme in ("http", "https") and not any(src.startswith(b) for b in site_build.site_urls()): continue
            data = _image_bytes(site, name, src) if src else None
            if data is None: problems.append(f"images: {name}: image {k} ({src[:60]!r}) is missing"); continue
            try:
                with Image.open(io.BytesIO(data)) as im: w, h = im.size
                if w < 1 or h < 1: raise ValueError("empty")
            except Exception: problems.append(f"images: {name}: image {k} ({src[:60]!r}) is not a picture")
            alt = (img.get("alt") or "").strip()
            if not alt or alt == NO_ALT:
                problems.append(f"images: {name}: image {k} ({src[:40]!r}) has no alt text (a `#| fig-cap:` or the "
                                "sentence before its cell gives one)")
        for out in content.select(".jp-OutputArea-output"):
            if out.find("img"): continue
            text = _output_text(out)
            if any(p.search(text) for p in SIZE_ONLY):
                problems.append(f"images: {name}: an output shows {text[:70]!r} instead of the picture")
        for cell in (c for c in content.select(".jp-CodeCell") if c.find_parent(class_="jp-Cell") is None):
            code = cell.select_one(".jp-InputArea pre")
            outs = cell.select(".jp-OutputArea-output")
            if code is None or not outs or cell.find("img"): continue
            last = [re.sub(r"\s+#.*$", "", l) for l in code.get_text().splitlines() if l.strip()][-1:] or [""]
            if re.search(r"(\.st_size|getsize\(.*\)|len\(.*read_bytes\(\)\))\s*$", last[0]) and \
                    re.fullmatch(r"\d[\d,_]*", _output_text(outs[-1])):
                problems.append(f"images: {name}: an output shows the size of an image file ({_output_text(outs[-1])}) instead of the picture")
        cells = [c for c in content.select(".jp-Cell") if c.find_parent(class_="jp-Cell") is None]      # mkdocs-jupyter nests them
        for i, cell in enumerate(cells):
            if not cell.select_one(".widget-snapshot-needed"): continue
            after = []
            for c in cells[i + 1:]:
                if c.find(["h1", "h2", "h3"]) and not c.select_one(".jp-OutputArea"): break
                after.append(c)
            if not any(c.find("img") for c in after[:3]):
                problems.append(f"images: {name}: a live widget (not shown on a static page) has no snapshot image after it")
    return problems


# ---- text size in figures ------------------------------------------------------------------------------------------

def figure_verdict(png: bytes) -> list | None:
    """What `small_text` found in a figure as it was drawn (the PNG's `FIGURE_TEXT_KEY` chunk: `save_figure` and
    tools/run_notebook.py write it), None for a picture drawn without the check; [] for one that is not a PNG."""
    from PIL import Image
    if not png.startswith(b"\x89PNG"): return []                 # a GIF (the traversal animation), an SVG
    with Image.open(io.BytesIO(png)) as im: found = getattr(im, "text", {}).get(FIGURE_TEXT_KEY)
    return None if found is None else json.loads(found)


def figure_problem(name: str, k: int, png: bytes) -> str | None:
    if (found := figure_verdict(png)) is None:
        return (f"figures: {name}: figure {k} was drawn without the text check: execute its notebook with "
                f"tools/run_notebook.py, or save it with disentlit.core.save_figure")
    if found: return f"figures: {name}: figure {k} has text too small to read at the page's width: {found[:4]}"
    return None


def check_figures(site: Path, docs: dict) -> list[str]:
    return [p for name, (_, page) in docs.items() for k, img in enumerate(_content(page).find_all("img"))
            if (data := _image_bytes(site, name, (img.get("src") or "").strip()))
            and (p := figure_problem(name, k, data))]


def check_search(site: Path) -> list[str]:
    f = site / "search" / "search_index.json"
    if not f.exists(): return ["search: no search index"]
    problems = []
    for doc in json.loads(f.read_text(encoding="utf-8"))["docs"]:
        text = re.sub(r"<[^>]+>", " ", doc.get("text", ""))
        for p in SEARCH_JUNK:
            if m := p.search(text):
                problems.append(f"search: {doc['location'] or 'index'}: the excerpt holds {m.group(0)!r}: "
                                f"...{text[max(0, m.start() - 40):m.end() + 40]!r}...")
                break
        if doc.get("title", "").endswith("\u00b6"): problems.append(f"search: {doc['location']}: title {doc['title']!r} ends in a pilcrow")
    return problems


def cli_subcommands() -> dict:
    "Subcommand -> its parser, from the package's parser."
    import argparse
    sys.path.insert(0, str(ROOT))
    from disentlit.cli import build_parser
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def check_cli(docs: dict, page: str = "11_cli", commands: dict | None = None, prog: str = "disentlit") -> list[str]:
    if page not in docs: return [f"cli: no page {page}"]
    content = _content(docs[page][1])
    text = content.get_text("\n")
    blocks = [b.get_text() for b in content.find_all("pre")]
    problems = []
    for name in (cli_subcommands() if commands is None else commands):
        if not re.search(rf"usage:\s+{prog}\s+{re.escape(name)}\b", text):
            problems.append(f"cli: {page}: no usage of `{prog} {name}` (from the parser)")
        if not any(re.search(rf"^\s*(\$\s*)?{prog}\s+{re.escape(name)}\b", b, re.M) and "usage:" not in b for b in blocks):
            problems.append(f"cli: {page}: no example of `{prog} {name}`")
    return problems


# ---- outputs of the notebooks ------------------------------------------------------------------------------------

def check_outputs(nbs: Path = ROOT / "nbs", only: set | None = None) -> list[str]:
    """A cell that prints, displays or draws must be saved with its output (the site shows the saved notebook: a
    cell that prints with nothing under it reads as broken); `python tools/run_notebook.py --shown NB` saves them."""
    problems = []
    for f in sorted(nbs.glob("*.ipynb")):
        if only is not None and f.stem not in only: continue
        for cell in json.loads(f.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code" or cell.get("outputs"): continue
            if what := shows("".join(cell["source"])):
                last = "".join(cell["source"]).strip().splitlines()[-1][:60]
                problems.append(f"outputs: {f.stem}: a cell that {what} has no output saved (its last line: {last!r})")
    return problems


RULES = ("links", "toc", "api", "images", "figures", "search", "cli", "outputs")    # the rules on the files


def static_check(site: Path, symbols: dict | None = None, cli_page: str = "11_cli", commands: dict | None = None,
                 only: set | None = None, rules: set | None = None) -> dict:
    """Every rule that needs no browser, or those of `RULES` named in `rules` (on the pages named in `only`, or all);
    returns the problems and what was looked at. A page is parsed only where a rule reads pages."""
    if unknown := set(rules or ()) - set(RULES): raise ValueError(f"unknown rules {sorted(unknown)}; accepted: {RULES}")
    on = lambda rule: rules is None or rule in rules
    pages = on("links") or on("toc") or on("api") or on("images") or on("figures") or on("cli")
    docs = {n: (p, soup(p.read_text(encoding="utf-8"))) for n, p in site_pages(site).items()
            if pages and (only is None or n in only)}
    problems = ((check_links(site, docs) if on("links") else []) + (check_toc(docs) if on("toc") else []) +
                (check_api(docs, symbols) if on("api") else []) + (check_images(site, docs) if on("images") else []) +
                (check_figures(site, docs) if on("figures") else []) + (check_search(site) if on("search") else []) +
                (check_cli(docs, cli_page, commands) if on("cli") and cli_page in docs else []) +
                (check_outputs(only=only) if on("outputs") else []))
    return dict(pages=len(docs), problems=list(dict.fromkeys(problems)))


# ---- in a browser --------------------------------------------------------------------------------------------------

MATHJAX_IDLE = "!window.MathJax || (MathJax.Hub && MathJax.Hub.queue.pending === 0 && MathJax.isReady)"


def _open(page, url):
    "Load `url` and wait until MathJax (when the page uses it) has typeset every equation."
    resp = page.goto(url, wait_until="load")                    # the pages are self-contained: "load" has everything
    page.wait_for_function(MATHJAX_IDLE, timeout=90_000)        # generous: a busy two-core machine is slow to typeset
    return resp


_IMAGES = """els => els.map(e => [e.currentSrc || e.src, e.complete, e.naturalWidth, e.naturalHeight])"""
_CUT_TOC = """() => [...document.querySelectorAll('nav.md-nav--secondary .md-ellipsis')]
    .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.trim())"""
WIDTHS = (1280, 390)         # a laptop's window and a phone's: nothing on a page may be cut off at either
# What is cut off on a page, measured in the browser: each block of the page's content (code, printed output, a
# Markdown code block, an API entry's table of parameters, a table, a display equation, an image) that reaches past the
# content column, or hides part of itself behind a sideways scroll bar (or clips it). Tables of prose and display
# equations may scroll inside the column (mkdocs-material's scroll wrapper) where they cannot fit a phone: counted, not
# failed. An element inside a box that clips or scrolls is judged by that box; MathJax's glyph boxes clip by design.
_OVERFLOW = r"""() => {
  const art = document.querySelector('article'), cs = getComputedStyle(art), ab = art.getBoundingClientRect();
  const left = ab.left + parseFloat(cs.paddingLeft) - 1, right = ab.right - parseFloat(cs.paddingRight) + 1;
  const kinds = [['code', '.jp-CodeCell .jp-InputArea pre'], ['printed output', '.jp-OutputArea-output pre'],
                 ['Markdown code', '.jp-MarkdownCell pre'], ['API table', 'table.api-params'],
                 ['table', 'table:not(.api-params)'], ['equation', '.MJXc-display'], ['image', 'img']];
  const mayScroll = new Set(['table', 'equation']);
  const shown = e => e.offsetParent !== null;
  const hides = e => getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1;
  const out = {page: document.documentElement.scrollWidth > innerWidth + 1, blocks: {}, cut: [], scrolling: []};
  for (const [kind, sel] of kinds) {
    const blocks = [...art.querySelectorAll(sel)].filter(shown);
    out.blocks[kind] = blocks.length;
    for (let b of blocks) {
      if (kind === 'table') b = b.closest('.md-typeset__scrollwrap') || b;
      let why = null;
      for (const e of [b, ...b.querySelectorAll('*')]) {
        if (e.closest('.mjx-chtml') && kind !== 'equation') continue;
        let inBox = false;
        for (let a = e.parentElement; a && a !== b.parentElement; a = a.parentElement)
          if (getComputedStyle(a).overflowX !== 'visible') { inBox = true; break; }
        const r = e.getBoundingClientRect();
        if (!inBox && r.width > 0 && (r.right > right || r.left < left)) { why = 'reaches past the column'; break; }
        if (!e.closest('.mjx-chtml') && hides(e)) { why = 'scrolls sideways'; break; }
      }
      if (!why) continue;
      const text = (b.innerText || b.getAttribute('alt') || '').trim().split('\n')[0].slice(0, 60);
      (why === 'scrolls sideways' && mayScroll.has(kind) ? out.scrolling : out.cut).push([kind, why, text]);
    }
  }
  return out;
}"""


def overflow_problems(name: str, width: int, found: dict) -> list[str]:
    "The lines `browser_check` reports for one page's `_OVERFLOW` measurement at one window width."
    out = [f"overflow: {name} at {width} px: the page scrolls sideways"] if found["page"] else []
    return out + [f"overflow: {name} at {width} px: {kind} {why}: {text!r}" for kind, why, text in found["cut"]]


FIGURE_PAGES = {"09_reproduction": 5}   # pages whose figures are their point: at least this many must load


def _sidebar(page) -> list[tuple[str, str]]:
    "The entries of the sidebar the current page shows: (text, href), anchors left out."
    entries = page.eval_on_selector_all("nav.md-nav--primary a.md-nav__link[href]",
                                        "els => els.map(e => [e.textContent.trim(), e.getAttribute('href')])")
    return [(text, href) for text, href in entries if href and not href.startswith("#")]


def _click(page, base: str, text: str, href: str, problems: list, mode: str, wait: bool = False):
    """Click the sidebar entry `href` on the current page (from the landing page where this one does not show it); it
    must open its page. With `wait`, wait as `_open` does (the page measured next) and return the response."""
    want = urljoin(base + "index.html", href).split("#")[0]
    resp = None
    try:
        link = page.locator(f'nav.md-nav--primary a.md-nav__link[href="{href}"]').first
        if not link.is_visible():          # not in this page's sidebar as the landing page shows it: from there, then
            page.goto(base + "index.html", wait_until="domcontentloaded")
        with page.expect_navigation(wait_until="load" if wait else "domcontentloaded", timeout=60_000) as nav:
            link.click(timeout=10_000)
        resp = nav.value
        if wait: page.wait_for_function(MATHJAX_IDLE, timeout=90_000)
        ok = page.url.split("#")[0].split("?")[0] == want and page.locator("article h1").count() > 0
    except Exception: ok = False
    if not ok: problems.append(f"browser ({mode}): the sidebar's {text!r} led to {page.url}, not to a page ({want})")
    return resp if ok else None


def _search(page, base: str, problems: list, mode: str):
    "Type in the landing page's search box and click the first result: it must open a page of the site."
    _open(page, base + "index.html")
    try:
        page.locator("label.md-search__icon, .md-search__input").first.click(timeout=10_000)
        page.keyboard.type("box blur")
        page.wait_for_selector(".md-search-result__item a", timeout=10_000)
        page.locator(".md-search-result__item a").first.click(timeout=10_000)
        page.wait_for_load_state()
        if not page.url.startswith(base) or page.locator("article h1").count() == 0:
            problems.append(f"browser ({mode}): the first search result led to {page.url}, not to a page of the site")
    except Exception as e:                                   # no result in time: the search box does not work
        problems.append(f"browser ({mode}): searching for 'box blur' gave no result ({type(e).__name__})")


def _walk(page, base: str, problems: list, mode: str):
    """The reader's walk on the site opened as files: from the landing page, the first, a middle and the last sidebar
    entry clicked in turn (its links are the same relative ones `browser_check`'s served pass clicked, every one, and
    the static links rule found every file), then a search (`_search`)."""
    _open(page, base + "index.html")
    entries = _sidebar(page)
    if len(entries) > 3: entries = [entries[0], entries[len(entries) // 2], entries[-1]]
    for text, href in entries: _click(page, base, text, href, problems, mode)
    if not entries: problems.append(f"browser ({mode}): the sidebar has no links")
    _search(page, base, problems, mode)
    return len(entries)


def browser_check(site: Path, out: Path, only: set | None = None, full: bool = True) -> dict:
    """Every page served over HTTP (console, images, links, figures, equations, screenshots: the first screen at each
    width, and with `full` the whole page), reached as a reader reaches it: each sidebar entry clicked in turn from the
    page the last one opened (each must open its page); then a search (`_search`), and the walk again on the site
    opened as files (file://, as `make docs` says one may; `_walk`). Each page is loaded once and measured at both
    widths (the window resized: the layout follows the width, as in a browser window made narrower)."""
    from playwright.sync_api import sync_playwright
    out.mkdir(parents=True, exist_ok=True)
    names = [n for n in site_pages(site) if only is None or n in only]
    server, base = serve(site)
    problems, report, shots, overflow = [], {}, [], {w: {} for w in WIDTHS}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium(), args=FLAGS)
            page = browser.new_page(viewport={"width": WIDTHS[0], "height": 900})
            errors = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
            links, figures, equations = set(), 0, 0

            def visit(name, resp):                  # measure the page open now: at 1280 px, then at 390 px
                nonlocal figures, equations
                url = urljoin(base, name + ".html")
                if not resp or resp.status != 200: problems.append(f"browser: {url}: status {resp and resp.status}")
                if errors: problems.append(f"browser: {url}: console errors: {errors[:3]}")
                for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
                    if urlparse(href).netloc == urlparse(base).netloc: links.add(href.split("#")[0])
                images = page.eval_on_selector_all("article img", _IMAGES)
                loaded = 0
                for k, (src, complete, w, h) in enumerate(images):
                    if not complete or w == 0 or h == 0:
                        problems.append(f"images: {name}: image {k} did not load ({src[:60]!r})"); continue
                    loaded += 1
                figures += loaded
                if loaded < FIGURE_PAGES.get(name, 0):
                    problems.append(f"images: {name}: {loaded} figures loaded, the page should show at least "
                                    f"{FIGURE_PAGES[name]}")
                if cut := page.evaluate(_CUT_TOC): problems.append(f"toc: {name}: entries cut short on screen: {cut[:5]}")
                maths = page.evaluate("document.querySelectorAll('.MathJax_CHTML').length")
                equations += maths
                report[name] = dict(images=len(images), equations=maths)
                for width in WIDTHS:                   # the page as loaded, then the same page on a phone
                    if width != WIDTHS[0]:
                        page.set_viewport_size({"width": width, "height": 844})
                        page.wait_for_function(f"window.innerWidth === {width}")
                    overflow[width][name] = found = page.evaluate(_OVERFLOW)
                    problems.extend(overflow_problems(name, width, found))
                    shots.append(str(out / (f"{name}.png" if width == WIDTHS[0] else f"{name}-{width}px.png")))
                    page.screenshot(path=shots[-1])
                    if full and width == WIDTHS[0]:
                        shots.append(str(out / f"{name}-full.jpg"))
                        page.screenshot(path=shots[-1], full_page=True, type="jpeg", quality=60)
                page.set_viewport_size({"width": WIDTHS[0], "height": 900})

            # The served pass is the reader's walk: from the landing page, each sidebar entry is clicked in turn, from
            # the page the last one opened, and the page it opens is measured there; pages the sidebar does not list
            # (or, with `only`, the pages asked for without the landing page) are opened by their address.
            walk, measured, clicked = only is None or "index" in only, set(), 0
            if walk:
                errors.clear()
                resp = _open(page, urljoin(base, "index.html"))
                entries = _sidebar(page)
                if "index" in names: visit("index", resp); measured.add("index")
                for text, href in entries:
                    name = href.split("#")[0].removesuffix(".html")
                    measure = name in names and name not in measured
                    errors.clear()
                    resp = _click(page, base, text, href, problems, "served", wait=measure)
                    clicked += 1
                    if resp is not None and measure: visit(name, resp); measured.add(name)
                if not entries: problems.append("browser (served): the sidebar has no links")
            for name in names:
                if name in measured: continue
                errors.clear()
                visit(name, _open(page, urljoin(base, name + ".html")))
            for link in sorted(links):
                r = page.request.get(link)
                if r.status != 200: problems.append(f"links: broken link {link}: {r.status}")
            if figures == 0 and only is None: problems.append("images: no figure rendered with a non-zero size")
            if equations == 0 and only is None: problems.append("browser: no equation was typeset (MathJax did not run)")
            walked = {}
            if walk:
                walked["served"] = clicked
                _search(page, base, problems, "served")
                errors.clear()
                walked["files"] = _walk(page, site.resolve().as_uri() + "/", problems, "files")
                # a request cut short by the walk's next click is not an error of the site (each page's loads are
                # checked served, above), nor is the favicon, which browsers do not load from file://
                real = [e for e in errors if not e.startswith("request failed: ")]
                if real: problems.append(f"browser (files): console errors: {real[:3]}")
            browser.close()
    finally:
        server.shutdown()
    summary = {f"{w} px": dict(blocks=sum(sum(f["blocks"].values()) for f in pages.values()),
                               cut=sum(len(f["cut"]) for f in pages.values()),
                               pages_scrolling_sideways=sum(f["page"] for f in pages.values()),
                               tables_scrolling_in_the_column=sum(len(f["scrolling"]) for f in pages.values()))
               for w, pages in overflow.items()}
    return dict(pages=len(names), links_checked=len(links), figures=figures, equations=equations, per_page=report,
                sidebar_clicks=walked, overflow=summary, problems=problems, screenshots=shots)


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--static" in args and "--browser-only" in args: sys.exit("docs_check: --static and --browser-only exclude each other")
    site = Path(args[args.index("--site") + 1]) if "--site" in args else ROOT / "_site"
    out = Path(args[args.index("--out") + 1]) if "--out" in args else ROOT / "_site_check"
    result = dict(problems=[]) if "--browser-only" in args else static_check(site)    # the rules on the files, then
    if "--static" not in args:                                                         # the browser's
        b = browser_check(site, out, full="--first-screen" not in args)
        result = dict(b, problems=list(dict.fromkeys(result["problems"] + b["problems"])))
    print(json.dumps(result, indent=1))
    sys.exit(1 if result["problems"] else 0)
