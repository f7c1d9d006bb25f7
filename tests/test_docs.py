"""The documentation site: built from the notebooks offline, complete, self-contained, passing every rule of
tools/docs_check.py, and (where Chromium is installed) clean in a real browser. Each rule is also shown to fail: a
copy of the built site gets one defect of each class planted in it (`DEFECTS`), and the check must name it."""
import base64
import copy
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPER = "https://arxiv.org/abs/2202.13341"         # Michlo, Klein and James, IJCAI 2023: the paper disentlit follows
sys.path.insert(0, str(ROOT / "tools"))
from chromium import needs_chromium                              # noqa: E402  skipped, saying how, without Chromium
from docs_check import soup                                      # noqa: E402


@pytest.fixture(scope="module")
def site():
    import docs
    return docs.build()


@pytest.fixture
def seeded(site, tmp_path):
    "A copy of the built site (without its assets) to plant defects in."
    return Path(shutil.copytree(site, tmp_path / "site", ignore=shutil.ignore_patterns("assets")))


def plant(site: Path, page: str, damage):
    "Rewrite `page` (a page's name, or a file of the site) with `damage`; it must change."
    f = site / (page if "." in page else f"{page}.html")
    html = f.read_text(encoding="utf-8")
    assert (new := damage(html)) != html, f"the defect was not planted in {page}"
    f.write_text(new, encoding="utf-8")


def problems(site, *pages, rule=None, **kw):
    "The problems the rules on the files find (`rule`: that rule's, the only one run) on `pages` (none named: all)."
    import docs_check
    found = docs_check.static_check(site, only=set(pages) or None, rules=None if rule is None else {rule}, **kw)["problems"]
    return [p for p in found if rule is None or p.startswith(rule + ":")]


def figure_png(tmp: Path, fontsize: float, measured: bool = True) -> bytes:
    """A page-wide figure with all its text at `fontsize` points, as PNG bytes: saved by `save_figure` (its text
    measured, a warning for small text) or, not `measured`, by matplotlib alone."""
    import warnings
    import matplotlib.pyplot as plt
    from disentlit.core import save_figure
    fig, ax = plt.subplots(figsize=(6.4, 2.9))
    ax.plot([0, 1, 2, 3], [1, 3, 2, 4]); ax.set_xlabel("training step", fontsize=fontsize)
    ax.set_title("Score by loss", fontsize=fontsize); ax.tick_params(labelsize=fontsize)
    path = tmp / f"figure_{fontsize}_{measured}.png"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        save_figure(fig, path, dpi=100) if measured else fig.savefig(path, dpi=100)
    return path.read_bytes()


# ---- the real site -------------------------------------------------------------------------------------------------

def test_the_site_has_a_page_per_notebook_and_passes_every_rule_on_its_files(site):
    "The rules (docs_check's `RULES`) include every exported name's API entry on its notebook's page."
    from docs_check import site_pages
    assert set(site_pages(site)) == {nb.stem for nb in (ROOT / "nbs").glob("*.ipynb")}
    assert problems(site) == []


def test_every_cell_id_on_the_site_comes_from_the_notebooks_not_from_chance(site):
    """Each page's cells carry the ids of its notebook as the site's build wrote it (the source's own, or one made from
    a cell's place and text), so two builds of the same notebooks give the same pages: no id is drawn at random."""
    import docs
    for page in ("00_core", "06b_evaluation", "index"):
        written = {c["id"] for c in json.loads((docs.SRC / f"{page}.ipynb").read_text())["cells"]}
        shown = set(re.findall(r'id="cell-id=([^"]+)"', (site / f"{page}.html").read_text()))
        assert shown and shown <= written, (page, sorted(shown - written)[:5])
    twice = [docs.clean(json.loads((docs.PROC / "00_core.ipynb").read_text()), "disentlit.core")["cells"] for _ in "ab"]
    assert [c["id"] for c in twice[0]] == [c["id"] for c in twice[1]]


def test_the_landing_page_and_the_readings_cite_their_papers(site):
    """The landing page (and the README made from it) lists the four papers disentlit draws on and how to cite it;
    each reading page and the demo's page name and link the paper they follow."""
    for text in ((ROOT / "README.md").read_text(encoding="utf-8"), (site / "index.html").read_text(encoding="utf-8")):
        for ref in (PAPER, "https://arxiv.org/abs/1802.04942", "https://arxiv.org/abs/1802.03761", "Jakob Hartmann",
                    "CITATION.cff", "How to cite disentlit"):
            assert ref in text, ref
    for page in ("09_reproduction", "12_predict", "08e_demo"):
        html = (site / f"{page}.html").read_text(encoding="utf-8")
        assert f'href="{PAPER}"' in html and "Michlo" in html, page


def test_reading_pages_show_their_figures_tables_and_folded_code(site):
    """09's page carries the figures and tables its readings refer to; a cell marked `#| code-fold: true` shows its code
    in a closed <details> and its output as usual (12's answer, after its folded machinery, before the mock-up)."""
    html = (site / "09_reproduction.html").read_text(encoding="utf-8")
    assert len(re.findall(r"<img[^>]+src=", html)) >= 5, "09's page shows fewer than 5 figures"
    for table in ("the primary analysis", "runs of figure11_cpu run again", "U p"):
        assert table in html, f"09's page lacks its printed output {table!r}"
    html = (site / "12_predict.html").read_text(encoding="utf-8")
    folds = re.findall(r'<details class="code-fold"><summary>([^<]+)</summary>', html)
    assert len(folds) >= 3 and "the pre-registered analysis" in " ".join(folds), folds
    first, answer = html.index('class="code-fold"'), re.search(r"verdict: (supported|not supported|falsified)", html)
    assert answer and first < answer.start() < html.index("MOCK-UP")
    assert "def analyse(" in re.sub(r"<[^>]+>", "", html[first:answer.start()])


def test_pages_are_self_contained_with_their_pictures_and_link_names_within_the_site(site):
    from PIL import Image
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        external = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', html)
        assert not external, f"{page.relative_to(site)} loads {external[:3]}"
        assert "cdnjs.cloudflare.com/ajax/libs/mathjax" not in html and "disentlit.github.io" not in html, page
    assert len(re.findall(r'<img[^>]+src="data:image/png;base64,', (site / "02_distances.html").read_text())) >= 3
    assert 'href="05a_training.html#fit"' in (site / "04_losses.html").read_text(encoding="utf-8")
    html = (site / "07_traversals.html").read_text(encoding="utf-8")
    assert (gif := re.search(r'src="data:image/gif;base64,([^"]+)"', html)), "no GIF on the traversals page"
    with Image.open(io.BytesIO(base64.b64decode(gif.group(1)))) as im: assert im.n_frames > 1      # it plays
    assert html.count("widget-snapshot-needed") == 2                 # the explorers, each shown by a snapshot


def test_api_entries_have_parameter_tables_and_classes(site):
    page = lambda name: (site / f"{name}.html").read_text(encoding="utf-8")
    assert "class CorruptFile(DisentlitError)" in re.sub(r"<[^>]+>", "", page("00_core"))
    assert 'class="api-params"' in page("00_core") and "<th>Parameter</th><th>Type</th><th>Default</th>" in page("00_core")
    assert "<th>Description</th>" in page("08b_sweeps") and "<th>Description</th>" in page("05a_training")  # docments
    assert "Call self as a function" not in page("11_cli") and "def build_parser" in re.sub(r"<[^>]+>", "", page("11_cli"))


# ---- each rule fails on a seeded defect ----------------------------------------------------------------------------

def _append(snippet: str):
    return lambda h: h.replace("</article>", snippet + "</article>", 1)


def _on_soup(edit):
    "A damage made on the parsed page: `edit(page)` changes the soup in place."
    def damage(h):
        page = soup(h)
        edit(page)
        return str(page)
    return damage


def _cut_toc(h):
    h = re.sub(r'(href="#the-parser-and-main" class="md-nav__link">\s*<span class="md-ellipsis">)\s*The parser and main',
               r"\1The parser and", h)
    h = re.sub(r'(<a href="#one-line-errors" class="md-nav__link">\s*<span class="md-ellipsis">)[^<]*', r"\1", h)
    h = re.sub(r'<li class="md-nav__item">\s*<a href="#cmd_predict" class="md-nav__link">.*?</li>', "", h, flags=re.S)
    return h.replace("The disentlit command\n", "The command\n")


def _signature(entry: str, fn):
    "The signature under `entry` rewritten by `fn`."
    def edit(page):
        pre = page.find("h3", id=entry).find_next("pre")
        pre.string = fn(pre.get_text())
    return _on_soup(edit)


def _twice_and_missing(page):
    "as_rng's whole cell shown twice, small_text's cell gone."
    cell = page.find("h3", id="as_rng").find_parent(class_="jp-Cell")
    cell.insert_after(copy.copy(cell))
    page.find("h3", id="small_text").find_parent(class_="jp-Cell").decompose()


def _size_not_picture(page):
    "The GIF shown as its size in bytes, the first explorer without its snapshot, a figure's repr, a missing image."
    gif = page.find("img", src=re.compile("^data:image/gif"))
    code = gif.find_parent(class_="jp-CodeCell").select_one(".jp-InputArea pre")
    code.string = code.get_text().replace("Image(filename=gif)", "gif.stat().st_size")
    gif.replace_with(soup("<pre>73049</pre>"))
    page.select(".widget-snapshot-needed")[0].find_next("img").decompose()
    page.find("article").append(soup('<div class="jp-OutputArea"><div class="jp-OutputArea-output"><pre>&lt;Figure '
                                     'size 640x480 with 1 Axes&gt;</pre></div></div><img src="images/missing.png">'))


def _search_junk(text):
    "Test code and raw TeX in the search index's excerpts."
    data = json.loads(text)
    data["docs"] += [dict(location="07_traversals.html", title="T", text="<p>In [ ]: Copied! test_eq(kl.shape, (4,))</p>"),
                     dict(location="04_losses.html", title="L", text="<p>a $\\beta$-VAE at $\\beta = 10^{-4}$</p>")]
    return json.dumps(data)


def _no_demo(page):
    for pre in page.find_all("pre"):
        if "usage: disentlit demo" in pre.get_text() or pre.get_text().strip() == "disentlit demo --out demo":
            pre.string = "(gone)"


# Each defect (the classes issue 17 found, and the ones since): the rule, the damage done to each page, and what the
# rule must say about it (each text in one of its problems).
DEFECTS = {
    "links": ("links", {"06b_evaluation": _append(
        '<a href="https://disentlit.github.io/disentlit/models.html#fit">fit</a>'
        '<a href="03a_models.html#no-such-entry">x</a><a href="nowhere.html">y</a>')},
        ["'https://disentlit.github.io/disentlit/models.html#fit' leads to '/models.html', which is not a page",
         "points to #no-such-entry", "'nowhere.html' leads to"]),
    "toc": ("toc", {"11_cli": _cut_toc},
            ["blank entry", "'The parser and' is cut", "'cmd_predict' is not in the contents list",
             "side menu names the page 'The command'"]),
    "toc-ids": ("toc", {"01c_data_files": lambda h: h.replace('id="dsprites-1"', 'id="dsprites"')},
                ["share the id 'dsprites'"]),
    "api": ("api", {"11_cli": lambda h: re.sub(r'(<h3 id="cmd_datasets".*?</h3>).*?</pre>',
                                               r"\1<p><em>Call self as a function.</em></p>", h, count=1, flags=re.S),
                    "00_core": _signature("corruptfile", lambda _: "def CorruptFile(*args, **kwargs)"),
                    "02_distances": _signature("traversal_spearman", lambda sig: sig.replace(
                        "= mse", "= <function mse at 0x7efec104f560>"))},
            ["'cmd_datasets' has no signature", "Call self as a function",
             "'CorruptFile' is a class shown as 'def CorruptFile(*args, **kwargs)'",
             "'traversal_spearman' shows a default as a memory address"]),
    "api-entries": ("api", {"00_core": _on_soup(_twice_and_missing)},
                    ["api: 00_core: entry 'as_rng' appears 2 times", "api: 00_core: no API entry for ['small_text']"]),
    "images": ("images", {"07_traversals": _on_soup(_size_not_picture)},
               ["size of an image file (73049)", "<Figure size 640x480 with 1 Axes>", "'images/missing.png') is missing",
                "has no snapshot image"]),
    "alt": ("images", {"04_losses": lambda h: re.sub(r'(<img[^>]*?) alt="[^"]*"', r'\1 alt=""', h, count=1)},
            ["has no alt text"]),
    "search": ("search", {"search/search_index.json": _search_junk},
               ["search: 07_traversals.html: the excerpt holds", "'$\\\\beta$'"]),
    "cli": ("cli", {"11_cli": _on_soup(_no_demo)},
            ["cli: 11_cli: no usage of `disentlit demo` (from the parser)", "cli: 11_cli: no example of `disentlit demo`"]),
}


@pytest.mark.parametrize("defect", DEFECTS)
def test_each_rule_names_a_defect_planted_in_a_copy_of_the_site(seeded, defect):
    rule, damages, expected = DEFECTS[defect]
    for page, damage in damages.items(): plant(seeded, page, damage)
    found = problems(seeded, *damages, rule=rule)
    assert [e for e in expected if not any(e in p for p in found)] == [], found


def test_figures_rule_flags_small_text_and_figures_drawn_without_the_check(seeded, tmp_path):
    "Each figure carries the verdict its drawing wrote: small text is flagged, and so is a picture with no verdict."
    imgs = "".join(f'<img src="data:image/png;base64,{base64.b64encode(figure_png(tmp_path, pt, m)).decode()}">'
                   for pt, m in ((4, True), (10, True), (10, False)))
    plant(seeded, "04_losses", _append(imgs))
    found = problems(seeded, "04_losses", rule="figures")
    n = len(re.findall(r"<img", (seeded / "04_losses.html").read_text())) - 3    # the index of the first
    assert len(found) == 2 and "['training step', 4.0]" in found[0], found
    assert found[0].startswith(f"figures: 04_losses: figure {n} has text too small to read at the page's width"), found
    assert found[1] == (f"figures: 04_losses: figure {n + 2} was drawn without the text check: execute its notebook "
                        "with tools/run_notebook.py, or save it with disentlit.core.save_figure"), found


def test_search_excerpts_write_tex_out():
    "The search index's prose has its TeX as plain text (a result is shown as indexed: MathJax never sees it)."
    from bs4 import BeautifulSoup
    from mkdocs_hooks import plain_math, search_text
    assert plain_math(r"a $\beta$-VAE at $\beta = 10^{-4}$, $\rho \ge 0.8$") == "a β-VAE at β = 10^-4, ρ ≥ 0.8"
    assert plain_math(r"$\frac12$, $\frac{1}{f-1}$, $\mathcal{Y}$, $d_{pcv}$") == "1/2, 1/(f-1), Y, d_pcv"
    assert plain_math("costs $ 5 or $ 6") == "costs $ 5 or $ 6"                       # not a formula
    page = BeautifulSoup(r"<p>the $\beta$-VAE</p><pre>echo $HOME $\beta$</pre>", "html.parser")
    assert search_text(page) == r"<p>the β-VAE</p><pre>echo $HOME $\beta$</pre>"      # code is left as written


# ---- in a browser --------------------------------------------------------------------------------------------------

@needs_chromium
def test_landing_table_keeps_names_whole(site):
    """The landing page's table of notebooks: no notebook or module name (one word: `01c_data_files`,
    `disentlit.data_files`) is broken across lines, at a laptop's width or a phone's (an inline element broken across
    lines has one box a line)."""
    from playwright.sync_api import sync_playwright
    from docs_check import FLAGS, chromium
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=FLAGS)
        for width in (1280, 390):
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto((site / "index.html").as_uri(), wait_until="load")
            names = page.eval_on_selector_all("table td a, table td code",
                                              "els => els.map(e => [e.textContent.trim(), e.getClientRects().length])")
            names = [(n, lines) for n, lines in names if re.fullmatch(r"\d\d\w+|disentlit\.\w+", n)]
            assert len(names) > 40, (width, names)                   # the notebooks and their modules
            assert not [n for n, lines in names if lines != 1], f"names broken across lines at {width} px: {names}"
        browser.close()


@needs_chromium
def test_site_in_a_real_browser(site, tmp_path):
    "Every page in the browser: `make docs-check`'s browser half (without whole-page screenshots, made for a reader)."
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_check.py"), "--site", str(site), "--out", str(tmp_path),
                        "--first-screen", "--browser-only"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    from docs_check import site_pages
    for name in site_pages(site):
        assert (tmp_path / f"{name}.png").stat().st_size > 20_000, f"no screenshot of {name}"
        assert (tmp_path / f"{name}-390px.png").stat().st_size > 10_000, f"no phone screenshot of {name}"
        assert not (tmp_path / f"{name}-full.jpg").exists()


@needs_chromium
def test_browser_rules_flag_cut_entries_overflow_and_images_that_do_not_load(site, tmp_path):
    """On a copy whose code and printed outputs no longer wrap (the site's style undone), whose contents list has an
    entry too long for it and an image that is missing, the browser check names each: blocks that scroll sideways or
    reach past the column at 1280 px and at 390 px, the cut entry, the image."""
    import docs_check
    site = Path(shutil.copytree(site, tmp_path / "site"))
    plant(site, "styles.css", lambda css: css.replace("white-space: break-spaces !important", "white-space: pre !important")
          .replace(".md-nav--secondary .md-ellipsis {", ".md-nav--secondary .md-x {"))
    long = "FactorSpace.a_method_name_far_too_long_for_any_contents_list"   # planted: the page's own entries may fit
    def damage(page):                                       # a page with code and printed outputs
        page.select_one(".md-sidebar--secondary nav.md-nav--secondary .md-ellipsis").string = long   # the right list
        page.find("article").append(soup('<img src="images/missing.png">'))
    plant(site, "01a_factors", _on_soup(damage))
    result = docs_check.browser_check(site, tmp_path / "shots", only={"01a_factors"})
    found = result["problems"]
    assert any(p.startswith("toc: 01a_factors: entries cut short") and long in p for p in found), found
    assert any(p.startswith("overflow: 01a_factors at 1280 px: code ") for p in found), found
    assert any(p.startswith("overflow: 01a_factors at 390 px: printed output ") for p in found), found
    assert result["overflow"]["1280 px"]["cut"] > 0 and result["overflow"]["390 px"]["cut"] > 0
    assert any("did not load" in p and "missing.png" in p for p in found), found
    shots = tmp_path / "shots"                                # the page's top at each width, and the whole page
    assert {f.name for f in shots.iterdir()} == {"01a_factors.png", "01a_factors-390px.png", "01a_factors-full.jpg"}


@needs_chromium
def test_the_readers_walk_flags_a_dead_sidebar_entry_and_a_search_that_fails_as_files(site, tmp_path):
    """The walk of `browser_check` (the sidebar clicked through, a search and its first result, served and as files)
    passes on the site (test_site_in_a_real_browser) and fails on a copy whose sidebar has a dead entry and whose
    search cannot work from disk (no inlined index, no worker shim)."""
    import docs_check
    site = Path(shutil.copytree(site, tmp_path / "site"))
    def damage(page):                                        # the walk's sidebar: one live entry and one dead one
        for a in page.select("nav.md-nav--primary a.md-nav__link[href]"):
            if a["href"] == "06b_evaluation.html": a["href"] = "gone.html"
            elif a["href"] != "01a_factors.html": del a["href"]   # not walked (the whole walk: the test above)
    plant(site, "index", _on_soup(damage))
    (site / "search" / "search_index.js").unlink()
    (site / "assets" / "javascripts" / "iframe-worker-shim.js").unlink()
    found = docs_check.browser_check(site, tmp_path / "shots", only={"index"})["problems"]
    assert any("browser (served): the sidebar's" in p and "gone.html" in p for p in found), found
    assert not any("the sidebar's" in p and "01a_factors" in p for p in found), found    # the live entry opens
    assert any(p.startswith("browser (files): searching for 'box blur' gave no result") for p in found), found
    assert not any(p.startswith("browser (served): searching") for p in found), found


def test_the_sidebar_lists_every_notebook_once_for_mkdocs_and_quarto():
    "nbs/sidebar.yml (Quarto's custom_sidebar) lists every notebook once; tools/docs.py's mkdocs nav is made from it."
    import docs
    stems = sorted(p.stem for p in (ROOT / "nbs").glob("*.ipynb"))
    nav = docs.grouped([(s, s) for s in stems])
    assert [list(g) for g in nav] == [["The story"], ["The toolkit"], ["Operations"]] and nav[0]["The story"][0] == "index"
    assert sorted(s for g in nav for entries in g.values() for s in entries) == stems


def test_source_links_come_from_the_repository_setting_and_none_without_one(monkeypatch):
    import configparser, inspect
    import docs
    from disentlit.core import small_text
    cfg = configparser.ConfigParser()
    cfg.read_dict({"DEFAULT": {"git_url": "", "branch": "main"}})
    monkeypatch.setattr(docs, "settings", lambda: cfg["DEFAULT"])
    assert docs.source_link(small_text) is None                      # no repository set: no link at all
    assert "api-source" not in docs.api_markdown(small_text, "small_text", None)
    cfg["DEFAULT"]["git_url"] = "https://example.org/me/disentlit/"
    link, line = docs.source_link(small_text), inspect.getsourcelines(small_text)[1]
    assert link == f"https://example.org/me/disentlit/blob/main/disentlit/core.py#L{line}"
    assert f'<a href="{link}">source</a>' in docs.api_markdown(small_text, "small_text", link)


def test_outputs_rule_flags_a_printing_cell_saved_without_its_output(tmp_path):
    import docs_check
    shown = [dict(output_type="display_data", data={"image/png": "x"}, metadata={})]
    cells = [dict(cell_type="code", source=src, outputs=out, metadata={}) for src, out in (
        ("x = 1\nx", []), ("print('hi')", []),                          # shows x, prints: flagged
        ("fig = plot_thing()\nplt.close(fig)", []), ("y = 2\ny;", []),   # a closed figure; `;`: shows nothing
        ("#| export\ndef f(): print(1)", []), ("plot_thing()", shown))]
    (tmp_path / "nb.ipynb").write_text(json.dumps(dict(cells=cells, metadata={}, nbformat=4, nbformat_minor=5)))
    found = docs_check.check_outputs(tmp_path)
    assert len(found) == 2 and "ends with an expression" in found[0] and "calls print()" in found[1], found
