"""Write README.md from nbs/index.ipynb (our own step: nbdev_readme needs Quarto).

Markdown cells are copied, code cells become ```python blocks followed by their text output, and
cells marked `#| hide` are left out. A cell marked `#| echo: false` shows its output only, and an output given as
Markdown (IPython's `Markdown`: a table drawn from the results) is copied as Markdown. `python tools/readme.py --check` exits 1 when README.md differs.
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _text_output(cell) -> tuple[str, bool]:
    "The cell's first output as text, and whether it is Markdown."
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "text/markdown" in data: return "".join(data["text/markdown"]), True
        if "text/plain" in data: return "".join(data["text/plain"]), False
        if out.get("output_type") == "stream": return "".join(out.get("text", "")), False
    return "", False


def _from_root(markdown: str) -> str:
    "Links in the notebook's Markdown (its cells' and its outputs'), as paths from the root: images and notebooks."
    return re.sub(r"\]\(([\w-]+\.ipynb)\)", r"](nbs/\1)", markdown.replace("](images/", "](nbs/images/"))


def render(nb_path: Path = ROOT / "nbs" / "index.ipynb") -> str:
    parts = []
    for cell in json.loads(nb_path.read_text(encoding="utf-8"))["cells"]:
        src = "".join(cell["source"]).strip()
        if cell["cell_type"] == "markdown": parts.append(_from_root(src))
        elif cell["cell_type"] == "code":
            lines = [l for l in src.splitlines() if not l.startswith("#|")]
            options = {l.replace(" ", "") for l in src.splitlines() if l.startswith("#|")}
            if "#|hide" in options or not lines: continue
            if "#|echo:false" not in options: parts.append("```python\n" + "\n".join(lines) + "\n```")
            out, markdown = _text_output(cell)
            if out.strip(): parts.append(_from_root(out.strip()) if markdown else "```\n" + out.strip() + "\n```")
    body = "\n\n".join(parts)
    note = "<!-- generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file -->"
    return f"{note}\n\n{body}\n"


if __name__ == "__main__":
    text, readme = render(), ROOT / "README.md"
    if "--check" in sys.argv:
        same = readme.exists() and readme.read_text(encoding="utf-8") == text
        print("README.md is in sync with nbs/index.ipynb" if same else "README.md differs from nbs/index.ipynb: run python tools/readme.py")
        sys.exit(0 if same else 1)
    readme.write_text(text, encoding="utf-8")
    print(f"wrote {readme}")
