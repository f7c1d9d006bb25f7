"""Write README.md from nbs/index.ipynb (our own step: nbdev_readme needs Quarto).

Markdown cells are copied, code cells become ```python blocks followed by their text output, and
cells marked `#| hide` are left out. `python tools/readme.py --check` exits 1 when README.md differs.
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _text_output(cell) -> str:
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "text/plain" in data: return "".join(data["text/plain"])
        if out.get("output_type") == "stream": return "".join(out.get("text", ""))
    return ""


def render(nb_path: Path = ROOT / "nbs" / "index.ipynb") -> str:
    parts = []
    for cell in json.loads(nb_path.read_text(encoding="utf-8"))["cells"]:
        src = "".join(cell["source"]).strip()
        if cell["cell_type"] == "markdown":                          # paths from the root: images and notebooks
            parts.append(re.sub(r"\]\(([\w-]+\.ipynb)\)", r"](nbs/\1)", src.replace("](images/", "](nbs/images/")))
        elif cell["cell_type"] == "code":
            lines = [l for l in src.splitlines() if not l.startswith("#|")]
            if any(l.replace(" ", "").startswith("#|hide") for l in src.splitlines()) or not lines: continue
            parts.append("```python\n" + "\n".join(lines) + "\n```")
            out = _text_output(cell).strip()
            if out: parts.append("```\n" + out + "\n```")
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
