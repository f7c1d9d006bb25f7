"""Check the built documentation site in a real browser (headless Chromium driven by Playwright).

    python tools/docs_check.py [--site _site] [--out _site_check]

Serves the site from a local HTTP server, opens every page, and fails (exit 1) when a page logs a
console error or a page error, an internal link does not resolve, a module's page lacks its API
reference, or no figure renders with a non-zero size. Saves screenshots of the landing page and of
one notebook page, and prints a JSON summary.
"""
import functools
import http.server
import json
import shutil
import sys
import threading
from pathlib import Path
from urllib.parse import urljoin, urlparse

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--disable-component-update", "--disable-sync", "--disable-quic"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name): return path
    raise SystemExit("no Chromium found: on Debian, apt-get install -y chromium")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass


def serve(site: Path):
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def module_symbols() -> dict:
    "Exported names per notebook page: the notebook's `default_exp` module, from nbdev's index of the package."
    import re
    sys.path.insert(0, str(ROOT))
    from disentlit._modidx import d
    pages = {}
    for nb in (ROOT / "nbs").glob("*.ipynb"):
        if m := re.search(r"#\|\s*default_exp\s+([\w.]+)", nb.read_text(encoding="utf-8")):
            syms = d["syms"].get(f"disentlit.{m.group(1)}", {})
            pages[nb.stem] = {n for s in syms if "." not in (n := s[len(f"disentlit.{m.group(1)}."):]) and not n.startswith("_")}
    return pages


MATHJAX_IDLE = "!window.MathJax || (MathJax.Hub && MathJax.Hub.queue.pending === 0 && MathJax.isReady)"


def _open(page, url):
    "Load `url` and wait until MathJax (when the page uses it) has typeset every equation."
    resp = page.goto(url, wait_until="networkidle")
    page.wait_for_function(MATHJAX_IDLE, timeout=20_000)
    return resp


def check(site: Path, out: Path) -> dict:
    from playwright.sync_api import sync_playwright
    out.mkdir(parents=True, exist_ok=True)
    pages = sorted(p.parent.relative_to(site).as_posix() for p in site.rglob("index.html") if "search" not in p.parts)
    symbols = module_symbols()
    server, base = serve(site)
    problems, report = [], {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium(), args=FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
            links, figures, equations = set(), 0, 0
            for rel in pages:
                url = urljoin(base, "" if rel == "." else rel + "/")
                errors.clear()
                resp = _open(page, url)
                if not resp or resp.status != 200: problems.append(f"{url}: status {resp and resp.status}")
                if errors: problems.append(f"{url}: console errors: {errors[:3]}")
                for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
                    u = urlparse(href)
                    if u.netloc == urlparse(base).netloc: links.add(href.split("#")[0])
                sizes = page.eval_on_selector_all("img", "els => els.map(e => [e.naturalWidth, e.naturalHeight])")
                figures += sum(1 for w, h in sizes if w > 0 and h > 0)
                maths = page.evaluate("document.querySelectorAll('.MathJax_CHTML').length")
                equations += maths
                name = "index" if rel == "." else rel
                headings = set(page.eval_on_selector_all("h3, h4", "els => els.map(e => e.textContent.trim())"))
                expected = symbols.get(name, set())
                found = {s for s in expected if any(h.startswith(s) for h in headings)}
                if expected and not found: problems.append(f"{url}: no API reference for any of {sorted(expected)[:5]}...")
                report[name] = dict(images=len(sizes), equations=maths, api_expected=len(expected), api_found=len(found))
            for link in sorted(links):
                r = page.request.get(link)
                if r.status != 200: problems.append(f"broken link {link}: {r.status}")
            if figures == 0: problems.append("no figure rendered with a non-zero size")
            if equations == 0: problems.append("no equation was typeset (MathJax did not run)")
            _open(page, base); page.screenshot(path=str(out / "landing.png"))
            nb_page = next((p for p in pages if p.startswith("02_")), pages[-1])
            _open(page, urljoin(base, nb_page + "/")); page.screenshot(path=str(out / "notebook.png"), full_page=False)
            browser.close()
    finally:
        server.shutdown()
    return dict(pages=len(pages), links_checked=len(links), figures=figures, equations=equations, per_page=report, problems=problems,
                screenshots=[str(out / "landing.png"), str(out / "notebook.png")])


if __name__ == "__main__":
    args = sys.argv[1:]
    site = Path(args[args.index("--site") + 1]) if "--site" in args else ROOT / "_site"
    out = Path(args[args.index("--out") + 1]) if "--out" in args else ROOT / "_site_check"
    result = check(site, out)
    print(json.dumps(result, indent=1))
    sys.exit(1 if result["problems"] else 0)
