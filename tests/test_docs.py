"""The documentation site: built from the notebooks offline, complete, self-contained, passing every rule of
tools/docs_check.py, and (where Chromium is installed) clean in a real browser.

Each rule of docs_check is also shown to fail: a copy of the built site gets one defect of each class planted in
it (the defects issue 17 found: links to nbdev's pages that do not exist, contents entries cut at the code in a
heading, API entries reading "Call self as a function.", a GIF shown as its size in bytes, figures with 4 pt text or
no measure of it, code in the search index, a command-line page without usages; and an API entry shown
twice), and the check must name it.
"""
import base64
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from chromium import needs_chromium                              # noqa: E402  skipped, saying how, without Chromium


@pytest.fixture(scope="module")
def site():
    import docs
    return docs.build()


class SiteCopy:
    "A copy of the built site (without its assets) to plant defects in."
    def __init__(self, site: Path, tmp: Path):
        self.path = tmp / "site"
        shutil.copytree(site, self.path, ignore=shutil.ignore_patterns("assets"))

    def edit(self, page: str, fn):
        "Rewrite the HTML of `page` with `fn`; it must change."
        f = self.path / f"{page}.html"
        html = f.read_text(encoding="utf-8")
        new = fn(html)
        assert new != html, f"the defect was not planted in {page}"
        f.write_text(new, encoding="utf-8")


@pytest.fixture
def seeded(site, tmp_path):
    return SiteCopy(site, tmp_path)


def problems(site, *pages, rule=None, **kw):
    "The problems the rules on the files find (`rule`: that rule's, the only one run) on `pages` (none named: all)."
    import docs_check
    found = docs_check.static_check(site, only=set(pages) or None, rules=None if rule is None else {rule}, **kw)["problems"]
    return [p for p in found if rule is None or p.startswith(rule + ":")]


def figure_png(tmp: Path, fontsize: float, measured: bool = True) -> bytes:
    """A page-wide matplotlib figure with all its text at `fontsize` points, as PNG bytes: saved by `save_figure`
    (its text measured, a warning for small text) or, not `measured`, by matplotlib alone."""
    import warnings
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from disentlit.core import save_figure
    fig, ax = plt.subplots(figsize=(6.4, 2.9))
    ax.plot([0, 1, 2, 3], [1, 3, 2, 4], label="box_blur loss"); ax.set_xlabel("training step", fontsize=fontsize)
    ax.set_title("Score by loss, every run a point", fontsize=fontsize); ax.tick_params(labelsize=fontsize)
    path = tmp / f"figure_{fontsize}_{measured}.png"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if measured: save_figure(fig, path, dpi=100)
        else: fig.savefig(path, dpi=100); plt.close(fig)
    return path.read_bytes()


# ---- the real site -------------------------------------------------------------------------------------------------

def test_every_notebook_has_a_page_with_its_api(site):
    from docs_check import module_symbols
    symbols = module_symbols()
    for nb in (ROOT / "nbs").glob("*.ipynb"):
        page = site / f"{nb.stem}.html"
        assert page.exists(), f"no page for {nb.name}"
        html = page.read_text(encoding="utf-8")
        headings = set(re.findall(r"<h3[^>]*>\s*([A-Za-z_][\w]*)", html))
        missing = symbols.get(nb.stem, set()) - headings
        assert not missing, f"{nb.stem}: no API reference for {sorted(missing)}"


def test_every_cell_id_on_the_site_comes_from_the_notebooks_not_from_chance(site):
    """Each page's cells carry the ids of its notebook as the site's build wrote it (the source's own, or one made from
    a cell's place and text), so two builds of the same notebooks give the same pages: no id is drawn at random."""
    import docs
    for page in ("00_core", "06b_evaluation", "index"):
        written = {c["id"] for c in json.loads((docs.SRC / f"{page}.ipynb").read_text())["cells"]}
        shown = set(re.findall(r'id="cell-id=([^"]+)"', (site / f"{page}.html").read_text()))
        assert shown and shown <= written, (page, sorted(shown - written)[:5])
    nb = json.loads((docs.PROC / "00_core.ipynb").read_text())
    twice = [docs.clean(json.loads(json.dumps(nb)), "disentlit.core")["cells"] for _ in range(2)]
    assert [c["id"] for c in twice[0]] == [c["id"] for c in twice[1]]


def test_reproduction_page_shows_its_figures_and_tables(site):
    "09's page carries the figures and tables its readings refer to (the notebook is saved with its outputs)."
    html = (site / "09_reproduction.html").read_text(encoding="utf-8")
    assert len(re.findall(r"<img[^>]+src=", html)) >= 5, "09's page shows fewer than 5 figures"
    for table in ("the primary analysis", "runs of figure11_cpu run again", "U p"):
        assert table in html, f"09's page lacks its printed output {table!r}"


PAPER = "https://arxiv.org/abs/2202.13341"         # Michlo, Klein and James, IJCAI 2023: the paper disentlit follows


def test_the_landing_page_and_the_readings_cite_their_papers(site):
    """The landing page (and the README made from it) lists the four papers disentlit draws on and how to cite it;
    each reading page and the demo's page name and link the paper they follow."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    index = (site / "index.html").read_text(encoding="utf-8")
    for text in (readme, index):
        for ref in (PAPER, "https://arxiv.org/abs/1802.04942", "https://arxiv.org/abs/1802.03761", "Jakob Hartmann",
                    "CITATION.cff", "How to cite disentlit"):
            assert ref in text, ref
    for page in ("09_reproduction", "12_predict", "08e_demo"):
        html = (site / f"{page}.html").read_text(encoding="utf-8")
        assert f'href="{PAPER}"' in html and "Michlo" in html, page


def test_code_folds_on_a_reading_page(site):
    "A cell marked `#| code-fold: true` shows its code in a closed <details> and its output as usual (12's answer)."
    html = (site / "12_predict.html").read_text(encoding="utf-8")
    folds = re.findall(r'<details class="code-fold"><summary>([^<]+)</summary>', html)
    assert len(folds) >= 3 and "the pre-registered analysis" in " ".join(folds), folds
    first, answer = html.index('class="code-fold"'), re.search(r"verdict: (supported|not supported|falsified)", html)
    assert answer and first < answer.start() < html.index("MOCK-UP")   # the machinery folded, the answer, the mock-up
    assert "def analyse(" in re.sub(r"<[^>]+>", "", html[first:answer.start()])


def test_pages_are_self_contained(site):
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        external = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', html)
        assert not external, f"{page.relative_to(site)} loads {external[:3]}"
        assert "cdnjs.cloudflare.com/ajax/libs/mathjax" not in html


def test_figures_are_embedded(site):
    html = (site / "02_distances.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<img[^>]+src="data:image/png;base64,', html)) >= 3


def test_the_site_passes_every_rule_on_its_files(site):
    assert problems(site) == []


def test_api_entries_have_parameter_tables_and_classes(site):
    html = (site / "00_core.html").read_text(encoding="utf-8")
    assert "class CorruptFile(DisentlitError)" in re.sub(r"<[^>]+>", "", html)
    assert 'class="api-params"' in html and "<th>Parameter</th><th>Type</th><th>Default</th>" in html
    exp = (site / "08b_sweeps.html").read_text(encoding="utf-8")
    assert "<th>Description</th>" in exp                         # the docments of expand_spec, run, demo, ...
    assert "<th>Description</th>" in (site / "05a_training.html").read_text(encoding="utf-8")   # RunConfig's
    cli = (site / "11_cli.html").read_text(encoding="utf-8")
    assert "Call self as a function" not in cli and "def build_parser" in re.sub(r"<[^>]+>", "", cli)


def test_the_gif_plays_and_the_widgets_have_snapshots(site):
    from PIL import Image
    html = (site / "07_traversals.html").read_text(encoding="utf-8")
    gif = re.search(r'src="data:image/gif;base64,([^"]+)"', html)
    assert gif, "no GIF on the traversals page"
    with Image.open(io.BytesIO(base64.b64decode(gif.group(1)))) as im: assert im.n_frames > 1
    assert html.count("widget-snapshot-needed") == 2


def test_links_to_names_lead_to_their_entries(site):
    for page in site.rglob("*.html"): assert "disentlit.github.io" not in page.read_text(encoding="utf-8"), page
    assert 'href="05a_training.html#fit"' in (site / "04_losses.html").read_text(encoding="utf-8")


# ---- each rule fails on a seeded defect ----------------------------------------------------------------------------

def test_links_rule_flags_pages_and_anchors_that_do_not_exist(seeded):
    seeded.edit("06b_evaluation", lambda h: h.replace("</article>", '<a href="https://disentlit.github.io/disentlit/models.html#fit">fit</a>'
                                                  '<a href="03a_models.html#no-such-entry">x</a><a href="nowhere.html">y</a></article>', 1))
    found = problems(seeded.path, "06b_evaluation", rule="links")
    assert any("disentlit.github.io/disentlit/models.html" in p and "not a page" in p for p in found), found
    assert any("#no-such-entry" in p for p in found) and any("nowhere.html" in p for p in found), found


def test_toc_rule_flags_blank_and_cut_entries_and_missing_api_entries(seeded):
    def damage(h):
        h = re.sub(r'(href="#the-parser-and-main" class="md-nav__link">\s*<span class="md-ellipsis">)\s*The parser and main', r"\1The parser and", h)
        h = re.sub(r'(<a href="#one-line-errors" class="md-nav__link">\s*<span class="md-ellipsis">)[^<]*', r"\1", h)
        h = re.sub(r'<li class="md-nav__item">\s*<a href="#cmd_predict" class="md-nav__link">.*?</li>', "", h, flags=re.S)
        return h.replace("The disentlit command\n", "The command\n")
    seeded.edit("11_cli", damage)
    found = problems(seeded.path, "11_cli", rule="toc")
    assert any("blank entry" in p for p in found), found
    assert any("'The parser and' is cut" in p for p in found), found
    assert any("'cmd_predict' is not in the contents list" in p for p in found), found
    assert any("side menu names the page 'The command'" in p for p in found), found


def test_toc_rule_flags_headings_sharing_an_id(seeded):
    seeded.edit("01c_data_files", lambda h: h.replace('id="dsprites-1"', 'id="dsprites"'))
    assert any("share the id 'dsprites'" in p for p in problems(seeded.path, "01c_data_files", rule="toc"))


def test_api_rule_flags_missing_signatures_call_self_classes_as_functions_and_addresses(seeded):
    def damage(h):
        h = re.sub(r'(<h3 id="cmd_datasets".*?</h3>).*?</pre>', r"\1<p><em>Call self as a function.</em></p>", h, count=1, flags=re.S)
        return h
    seeded.edit("11_cli", damage)
    seeded.edit("00_core", lambda h: re.sub(r'(<h3 id="corruptfile".*?<pre>).*?</pre>', r"\1def CorruptFile(*args, **kwargs)</pre>", h, count=1, flags=re.S))
    def address(h):
        from docs_check import soup
        page = soup(h)
        pre = page.find("h3", id="traversal_spearman").find_next("pre")
        pre.string = pre.get_text().replace("= mse", "= <function mse at 0x7efec104f560>")
        return str(page)
    seeded.edit("02_distances", address)
    found = problems(seeded.path, "11_cli", "00_core", "02_distances", rule="api")
    assert any("'cmd_datasets' has no signature" in p for p in found), found
    assert any("Call self as a function" in p for p in found), found
    assert any("'CorruptFile' is a class shown as 'def CorruptFile(*args, **kwargs)'" in p for p in found), found
    assert any("'traversal_spearman' shows a default as a memory address" in p for p in found), found


def test_api_rule_flags_an_entry_shown_twice(seeded):
    import copy
    from docs_check import soup
    def damage(h):
        page = soup(h)
        cell = page.find("h3", id="as_rng").find_parent(class_="jp-Cell")          # the entry's whole cell, twice
        cell.insert_after(copy.copy(cell))
        return str(page)
    assert not problems(seeded.path, "00_core", rule="api")
    seeded.edit("00_core", damage)
    assert "api: 00_core: entry 'as_rng' appears 2 times" in problems(seeded.path, "00_core", rule="api")


def test_images_rule_flags_missing_images_sizes_and_widgets_without_snapshots(seeded):
    from docs_check import soup
    def damage(h):
        page = soup(h)
        gif = page.find("img", src=re.compile("^data:image/gif"))                 # the GIF shown as its size in bytes
        cell = gif.find_parent(class_="jp-CodeCell")
        code = cell.select_one(".jp-InputArea pre")
        code.string = code.get_text().replace("Image(filename=gif)", "gif.stat().st_size")
        size = page.new_tag("pre"); size.string = "73049"
        gif.replace_with(size)
        note = page.select(".widget-snapshot-needed")[0]                          # the first explorer without its snapshot
        snap = next(i for i in note.find_all_next("img"))
        snap.decompose()
        article = page.find("article")
        article.append(soup('<div class="jp-OutputArea"><div class="jp-OutputArea-output"><pre>&lt;Figure size 640x480 with 1 Axes&gt;'
                            '</pre></div></div><img src="images/missing.png">'))
        return str(page)
    seeded.edit("07_traversals", damage)
    found = problems(seeded.path, "07_traversals", rule="images")
    assert any("size of an image file (73049)" in p for p in found), found
    assert any("<Figure size 640x480 with 1 Axes>" in p for p in found), found
    assert any("missing.png" in p and "missing" in p for p in found), found
    assert any("has no snapshot image" in p for p in found), found


def test_figures_rule_flags_small_text_and_figures_drawn_without_the_check(seeded, tmp_path):
    "Each figure carries the verdict its drawing wrote: small text is flagged, and so is a picture with no verdict."
    imgs = "".join(f'<img src="data:image/png;base64,{base64.b64encode(figure_png(tmp_path, pt, m)).decode()}">'
                   for pt, m in ((4, True), (10, True), (10, False)))
    seeded.edit("04_losses", lambda h: h.replace("</article>", imgs + "</article>", 1))
    found = problems(seeded.path, "04_losses", rule="figures")
    n = len(re.findall(r"<img", (seeded.path / "04_losses.html").read_text())) - 3    # the index of the first
    assert len(found) == 2 and "['training step', 4.0]" in found[0], found
    assert found[0].startswith(f"figures: 04_losses: figure {n} has text too small to read at the page's width"), found
    assert found[1] == (f"figures: 04_losses: figure {n + 2} was drawn without the text check: execute its notebook "
                        "with tools/run_notebook.py, or save it with disentlit.core.save_figure"), found


def test_search_rule_flags_code_in_excerpts(seeded):
    index = seeded.path / "search" / "search_index.json"
    data = json.loads(index.read_text())
    data["docs"].append(dict(location="07_traversals.html", title="Traversals", text="<p>In [ ]: Copied! test_eq(kl.shape, (4,))</p>"))
    data["docs"].append(dict(location="04_losses.html", title="Losses", text="<p>a $\\beta$-VAE at $\\beta = 10^{-4}$</p>"))
    index.write_text(json.dumps(data))
    found = problems(seeded.path, "index", rule="search")
    assert len(found) == 2 and "07_traversals.html" in found[0] and "'$\\\\beta$'" in found[1], found


def test_search_excerpts_write_tex_out():
    "The search index's prose has its TeX as plain text (a result is shown as indexed: MathJax never sees it)."
    from bs4 import BeautifulSoup
    from mkdocs_hooks import plain_math, search_text
    assert plain_math(r"a $\beta$-VAE at $\beta = 10^{-4}$, $\rho \ge 0.8$") == "a β-VAE at β = 10^-4, ρ ≥ 0.8"
    assert plain_math(r"$\frac12$, $\frac{1}{f-1}$, $\mathcal{Y}$, $d_{pcv}$") == "1/2, 1/(f-1), Y, d_pcv"
    assert plain_math("costs $ 5 or $ 6") == "costs $ 5 or $ 6"                       # not a formula
    page = BeautifulSoup(r"<p>the $\beta$-VAE</p><pre>echo $HOME $\beta$</pre>", "html.parser")
    assert search_text(page) == r"<p>the β-VAE</p><pre>echo $HOME $\beta$</pre>"      # code is left as written


def test_cli_rule_flags_subcommands_without_usage_or_example(seeded):
    from docs_check import soup
    def damage(h):
        page = soup(h)
        for pre in page.find_all("pre"):
            text = pre.get_text()
            if "usage: disentlit demo" in text or text.strip() == "disentlit demo --out demo": pre.string = "(gone)"
        return str(page)
    seeded.edit("11_cli", damage)
    found = problems(seeded.path, "11_cli", rule="cli")
    assert "cli: 11_cli: no usage of `disentlit demo` (from the parser)" in found, found
    assert "cli: 11_cli: no example of `disentlit demo`" in found, found


# ---- in a browser --------------------------------------------------------------------------------------------------

@needs_chromium
def test_landing_table_keeps_names_whole(site):
    """The landing page's table of notebooks: no notebook or module name (one word: `01c_data_files`,
    `disentlit.data_files`) is broken across lines, at a laptop's width or a phone's (an inline element broken across
    lines has one box a line)."""
    from playwright.sync_api import sync_playwright
    from docs_check import FLAGS, chromium, serve
    server, base = serve(site)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium(), args=FLAGS)
            for width in (1280, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(base + "index.html", wait_until="load")
                names = page.eval_on_selector_all(
                    "table td a, table td code",
                    "els => els.map(e => [e.textContent.trim(), e.getClientRects().length])")
                names = [(n, lines) for n, lines in names if re.fullmatch(r"\d\d\w+|disentlit\.\w+", n)]
                assert len(names) > 40, (width, names)                   # the notebooks and their modules
                broken = [n for n, lines in names if lines != 1]
                assert not broken, f"names broken across lines at {width} px: {broken}"
                page.close()
            browser.close()
    finally: server.shutdown()


@needs_chromium
def test_site_in_a_real_browser(site, tmp_path):
    """Every page in the browser (`make docs-check`'s browser half: its rules on the files are
    test_the_site_passes_every_rule_on_its_files', on the same build; the whole-page screenshots, for a reader, left
    out)."""
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
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    css = copy / "styles.css"
    style = css.read_text()
    assert "white-space: break-spaces !important" in style
    css.write_text(style.replace("white-space: break-spaces !important", "white-space: pre !important")
                   .replace(".md-nav--secondary .md-ellipsis {", ".md-nav--secondary .md-x {"))
    page = copy / "01a_factors.html"                        # a page with code and printed outputs
    from bs4 import BeautifulSoup
    html = BeautifulSoup(page.read_text().replace("</article>", '<img src="images/missing.png"></article>', 1),
                         "html.parser")
    long = "FactorSpace.a_method_name_far_too_long_for_any_contents_list"   # planted: the page's own entries may fit
    html.select_one(".md-sidebar--secondary nav.md-nav--secondary .md-ellipsis").string = long   # the right-hand list
    page.write_text(str(html))
    result = docs_check.browser_check(copy, tmp_path / "shots", only={"01a_factors"})
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
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    index = copy / "index.html"
    from bs4 import BeautifulSoup
    page = BeautifulSoup(index.read_text(), "html.parser")       # the walk's sidebar: one live entry and one dead one
    for a in page.select("nav.md-nav--primary a.md-nav__link[href]"):
        if a["href"] == "06b_evaluation.html": a["href"] = "gone.html"
        elif a["href"] != "01a_factors.html": del a["href"]       # not walked (the whole walk: the test above)
    index.write_text(str(page))
    (copy / "search" / "search_index.js").unlink()
    (copy / "assets" / "javascripts" / "iframe-worker-shim.js").unlink()
    found = docs_check.browser_check(copy, tmp_path / "shots", only={"index"})["problems"]
    assert any("browser (served): the sidebar's" in p and "gone.html" in p for p in found), found
    assert not any("the sidebar's" in p and "01a_factors" in p for p in found), found    # the live entry opens
    assert any(p.startswith("browser (files): searching for 'box blur' gave no result") for p in found), found
    assert not any(p.startswith("browser (served): searching") for p in found), found


def test_the_sidebar_lists_every_notebook_once_for_mkdocs_and_quarto():
    "nbs/sidebar.yml (Quarto's custom_sidebar) lists every notebook once; tools/docs.py's mkdocs nav is made from it."
    import yaml
    import docs
    sections = yaml.safe_load((ROOT / "nbs" / "sidebar.yml").read_text())["website"]["sidebar"]["contents"]
    stems = sorted(p.stem for p in (ROOT / "nbs").glob("*.ipynb"))
    assert sorted(Path(p).stem for s in sections for p in s["contents"]) == stems
    mk = docs.grouped([(s, {s: f"{s}.ipynb"}) for s in stems])
    assert [list(g) for g in mk] == [["The story"], ["The toolkit"], ["Operations"]]
    assert next(iter(mk[0].values()))[0] == {"index": "index.ipynb"}


def test_source_links_come_from_the_repository_setting_and_none_without_one(monkeypatch):
    import configparser
    import docs
    from disentlit.core import small_text
    cfg = configparser.ConfigParser()
    cfg.read_dict({"DEFAULT": {"git_url": "", "branch": "main"}})
    monkeypatch.setattr(docs, "settings", lambda: cfg["DEFAULT"])
    assert docs.source_link(small_text) is None                      # no repository set: no link at all
    assert "api-source" not in docs.api_markdown(small_text, "small_text", docs.source_link(small_text))
    cfg["DEFAULT"]["git_url"] = "https://example.org/me/disentlit/"
    link = docs.source_link(small_text)
    line = __import__("inspect").getsourcelines(small_text)[1]
    assert link == f"https://example.org/me/disentlit/blob/main/disentlit/core.py#L{line}"
    assert f'<a href="{link}">source</a>' in docs.api_markdown(small_text, "small_text", link)


def test_outputs_rule_flags_a_printing_cell_saved_without_its_output(tmp_path):
    import docs_check
    cells = [dict(cell_type="code", source="x = 1\nx", outputs=[], metadata={}),            # shows x: flagged
             dict(cell_type="code", source="print('hi')", outputs=[], metadata={}),        # prints: flagged
             dict(cell_type="code", source="fig = plot_thing()\nplt.close(fig)", outputs=[], metadata={}),
             dict(cell_type="code", source="y = 2\ny;", outputs=[], metadata={}),           # `;`: shows nothing
             dict(cell_type="code", source="#| export\ndef f(): print(1)", outputs=[], metadata={}),
             dict(cell_type="code", source="plot_thing()", metadata={},
                  outputs=[dict(output_type="display_data", data={"image/png": "x"}, metadata={})])]
    (tmp_path / "nb.ipynb").write_text(json.dumps(dict(cells=cells, metadata={}, nbformat=4, nbformat_minor=5)))
    found = docs_check.check_outputs(tmp_path)
    assert len(found) == 2 and "ends with an expression" in found[0] and "calls print()" in found[1], found


def test_images_rule_flags_an_image_without_alt_text(seeded):
    seeded.edit("04_losses", lambda h: re.sub(r'(<img[^>]*?) alt="[^"]*"', r'\1 alt=""', h, count=1))
    found = problems(seeded.path, "04_losses", rule="images")
    assert any("has no alt text" in p for p in found), found
