"""mkdocs hooks of the documentation site (named in mkdocs.yml; tools/docs.py runs mkdocs).

mkdocs-jupyter makes a page's table of contents from its own Markdown conversion of the notebook,
which drops the code in headings ("The parser and `main`" becomes "The parser and", with an anchor
that does not exist) and reads `#` comments in code cells as headings. Here the contents, and the
page's title, are taken from the headings of the rendered page itself, so every entry is the
heading's full text and points to its id. The API entries (h3 in the outputs of `show_doc`) are
among them.

The search index is made from a copy of the page without the code of code cells (their inputs,
"In [ ]:" prompts and "Copied!" buttons): excerpts are prose, API signatures and outputs, never
test code.
"""
from __future__ import annotations

import html

from bs4 import BeautifulSoup
from mkdocs.plugins import event_priority
from mkdocs.structure.toc import get_toc

TOC_LEVELS = ("h1", "h2", "h3")
SEARCH_DROP = (".jp-CodeCell .jp-Cell-inputWrapper", ".jp-InputPrompt", ".jp-OutputPrompt", ".zeroclipboard-container",
               ".clipboard-copy-txt", "a.anchor-link")


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


def search_text(soup) -> str:
    "The page without the inputs of code cells, for the search index."
    for selector in SEARCH_DROP:
        for tag in soup.select(selector): tag.decompose()
    return str(soup)


def _in_output(tag) -> bool:
    return tag.find_parent(class_="jp-OutputArea") is not None


def unique_ids(soup) -> bool:
    """Give every heading an id of its own: where a section and an API entry share one ("## dSprites" and the class
    `DSprites` are both `dsprites`), the API entry keeps it (links to names point there) and the section's becomes
    `dsprites-1`. Returns whether anything changed."""
    seen, changed = {}, False
    for tag in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6"], id=True): seen.setdefault(tag["id"], []).append(tag)
    taken = {t.get("id") for t in soup.find_all(id=True)}
    for hid, tags in seen.items():
        if len(tags) < 2: continue
        keep = next((t for t in tags if _in_output(t)), tags[0])
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
