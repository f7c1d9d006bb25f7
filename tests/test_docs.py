"""The documentation site: built from the notebooks offline, complete, self-contained, and (where Chromium
is installed) clean in a real browser."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))


@pytest.fixture(scope="module")
def site():
    import docs
    return docs.build()


def test_every_notebook_has_a_page_with_its_api(site):
    from docs_check import module_symbols
    symbols = module_symbols()
    for nb in (ROOT / "nbs").glob("*.ipynb"):
        page = site / ("index.html" if nb.stem == "index" else f"{nb.stem}/index.html")
        assert page.exists(), f"no page for {nb.name}"
        html = page.read_text(encoding="utf-8")
        headings = set(re.findall(r"<h3[^>]*>\s*([A-Za-z_][\w]*)", html))
        missing = symbols.get(nb.stem, set()) - headings
        assert not missing, f"{nb.stem}: no API reference for {sorted(missing)}"


def test_pages_are_self_contained(site):
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        external = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', html)
        assert not external, f"{page.relative_to(site)} loads {external[:3]}"
        assert "cdnjs.cloudflare.com/ajax/libs/mathjax" not in html


def test_figures_are_embedded(site):
    html = (site / "02_distances" / "index.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<img[^>]+src="data:image/png;base64,', html)) >= 3


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")),
                    reason="no Chromium on this machine: `apt-get install -y chromium` (or run `make docs-check`)")
def test_site_in_a_real_browser(site, tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_check.py"), "--site", str(site), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    for shot in ("landing.png", "notebook.png"):
        assert (tmp_path / shot).stat().st_size > 20_000
