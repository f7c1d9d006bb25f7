"""mkdocs hooks of the documentation site (named in mkdocs.yml; tools/docs.py runs mkdocs).

mkdocs-jupyter makes a page's table of contents from its own Markdown conversion of the notebook,
which drops the code in headings ("The parser and `main`" becomes "The parser and", with an anchor
that does not exist) and reads `#` comments in code cells as headings. Here the contents, and the
page's title, are taken from the headings of the rendered page itself, so every entry is the
heading's full text and points to its id. The API entries (h3 in the outputs of `show_doc`) are
among them.

The search index is made from a copy of the page without the code of code cells (their inputs,
"In [ ]:" prompts and "Copied!" buttons): excerpts are prose, API signatures and outputs, never
test code. Its prose has its TeX written out (`plain_math`: "$\\beta = 10^{-4}$" -> "β = 10^-4"): MathJax typesets
equations on the page, but a search result shows the index's text as it is.
"""
from __future__ import annotations

import html
import re

from bs4 import BeautifulSoup
from mkdocs.plugins import event_priority
from mkdocs.structure.toc import get_toc

TOC_LEVELS = ("h1", "h2", "h3")
SEARCH_DROP = ("jp-InputPrompt", "jp-OutputPrompt", "zeroclipboard-container", "clipboard-copy-txt")  # by class


def heading_text(tag) -> str:
    "The text a reader sees in a heading: its content without the pilcrow link, whitespace collapsed."
    parts = [s for s in tag.find_all(string=True) if not (s.parent.name == "a" and "anchor-link" in (s.parent.get("class") or []))]
    return " ".join("".join(parts).split())


def toc_tokens(soup) -> list[dict]:
    "Nested contents tokens (mkdocs' format) of every h1-h3 with an id, in page order."
    root: list[dict] = []
    stack: list[dict] = []
    for tag in soup.find_all(TOC_LEVELS):
        if not tag.get("id"): continue
        token = dict(level=int(tag.name[1]), id=tag["id"], name=html.escape(heading_text(tag)), children=[])
        while stack and stack[-1]["level"] >= token["level"]: stack.pop()
        (stack[-1]["children"] if stack else root).append(token)
        stack.append(token)
    return root


SYMBOLS = dict(alpha="α", beta="β", gamma="γ", delta="δ", epsilon="ε", varepsilon="ε", zeta="ζ", eta="η", theta="θ",
               kappa="κ", lambda_="λ", mu="μ", nu="ν", xi="ξ", pi="π", rho="ρ", sigma="σ", tau="τ", phi="φ",
               varphi="φ", chi="χ", psi="ψ", omega="ω", Gamma="Γ", Delta="Δ", Theta="Θ", Lambda="Λ", Sigma="Σ",
               Phi="Φ", Psi="Ψ", Omega="Ω", times="×", cdot="·", ge="≥", geq="≥", le="≤", leq="≤", neq="≠", ne="≠",
               approx="≈", sim="~", to="→", rightarrow="→", leftarrow="←", infty="∞", pm="±", sum="∑", prod="∏",
               int="∫", in_="∈", circ="∘", top="ᵀ", ell="ℓ", ldots="…", dots="…", cdots="⋯", mid="|", partial="∂",
               log="log", exp="exp", min="min", max="max", quad=" ", qquad=" ")
_MATH = re.compile(r"\$\$(.+?)\$\$|\$(?=\S)([^$\n]+?)(?<=\S)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)


def tex_text(tex: str) -> str:
    "A TeX formula as plain text: `\\beta = 10^{-4}` -> `β = 10^-4`, `\\frac{a}{b}` -> `a/b`, `\\mathcal{Y}` -> `Y`."
    t = re.sub(r"\\(?:left|right|big|Big|bigl|bigr|displaystyle)\b", "", tex)
    t = re.sub(r"\\[,;:! ]", " ", t)
    part = lambda g: g.strip("{}") if re.fullmatch(r"\{?[\w.]*\}?", g) else f"({g.strip('{}')})"
    for _ in range(3):                                               # nested fractions and groups, innermost first
        t = re.sub(r"\\[dt]?frac\s*(\{[^{}]*\}|\w)\s*(\{[^{}]*\}|\w)", lambda m: f"{part(m[1])}/{part(m[2])}", t)
        t = re.sub(r"\\(?:mathcal|mathbf|mathrm|mathbb|mathit|boldsymbol|text|textrm|operatorname|hat|bar|tilde)\s*"
                   r"(?:\{([^{}]*)\})?", r"\1", t)
    t = re.sub(r"\\([A-Za-z]+)", lambda m: SYMBOLS.get(m.group(1), SYMBOLS.get(m.group(1) + "_", m.group(1))), t)
    t = re.sub(r"([_^])\{([^{}]*)\}", r"\1\2", t).replace("^ᵀ", "ᵀ")
    return re.sub(r"\s+", " ", t.replace("{", "").replace("}", "")).strip()


def plain_math(text: str) -> str:
    "Every `$...$`, `$$...$$`, `\\(...\\)` and `\\[...\\]` of a text written out as plain text (`tex_text`)."
    return _MATH.sub(lambda m: tex_text(next(g for g in m.groups() if g is not None)), text)


def _dropped(tag) -> bool:
    """Whether the search index leaves `tag` out: a class of `SEARCH_DROP`, a heading's pilcrow link (`a.anchor-link`),
    folded code (`details.code-fold`) or a code cell's input (`.jp-CodeCell .jp-Cell-inputWrapper`). One pass over the
    page's tags: CSS selectors, one pass each, took a quarter of the site's build."""
    classes = tag.get("class") or ()
    if not classes: return False
    if tag.name == "a" and "anchor-link" in classes or tag.name == "details" and "code-fold" in classes: return True
    if any(c in classes for c in SEARCH_DROP): return True
    return "jp-Cell-inputWrapper" in classes and tag.find_parent(class_="jp-CodeCell") is not None


def search_text(soup) -> str:
    "The page without the inputs of code cells, and with its prose's TeX as plain text, for the search index."
    for tag in [t for t in soup.find_all(True) if _dropped(t)]:
        if not tag.decomposed: tag.decompose()                    # (a tag inside one dropped before is gone with it)
    for node in soup.find_all(string=True):
        if "$" in node or "\\" in node:
            if node.find_parent(["pre", "code", "script", "style"]) is None and (new := plain_math(str(node))) != node:
                node.replace_with(new)
    return str(soup)


def unique_ids(soup) -> bool:
    """Give every heading an id of its own: where a section and an API entry share one ("## dSprites" and the class
    `DSprites` are both `dsprites`), the API entry keeps it (links to names point there) and the section's becomes
    `dsprites-1`. Returns whether anything changed."""
    seen, changed = {}, False
    for tag in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6"], id=True): seen.setdefault(tag["id"], []).append(tag)
    taken = {t.get("id") for t in soup.find_all(id=True)}
    for hid, tags in seen.items():
        if len(tags) < 2: continue
        keep = next((t for t in tags if t.find_parent(class_="jp-OutputArea")), tags[0])
        for n, tag in enumerate((t for t in tags if t is not keep), 1):
            new = f"{hid}-{n}"
            while new in taken: new += "-1"
            taken.add(new)
            tag["id"] = new
            for a in tag.select("a.anchor-link"): a["href"] = f"#{new}"
            changed = True
    return changed


def on_page_content(html_text: str, page, config, files):
    soup = BeautifulSoup(html_text, "html.parser")
    if unique_ids(soup): html_text = str(soup)
    page.toc = get_toc(toc_tokens(soup))
    h1 = soup.find("h1")
    if page.is_homepage: page.title = "Home"
    elif h1 is not None: page.title = heading_text(h1)
    page._full_content = html_text
    return search_text(soup)                      # what the search plugin indexes; the page is put back below


@event_priority(-100)                              # after the search plugin (priority 0) has indexed the page
def on_page_context(context, page, config, nav):
    if hasattr(page, "_full_content"): page.content = page._full_content
    return context
