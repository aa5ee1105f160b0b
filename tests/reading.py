"""Reading time of a chapter as #51 counts it: visible prose at 180 words a minute, visible output text at 250,
visible code at 15 lines a minute, 30 s a figure, 45 s a table, folds closed. The shared tool
(``../shared/tools/readtime.py``) counts the same things, but reads the text inside a closed MyST dropdown as
visible, and the progress bars a cell wrote to stderr, which the book removes (``_config.yml``: ``nb_output_stderr``);
here a dropdown (``:::{dropdown}``, or an admonition of class ``dropdown``) is folded, in a Markdown cell and in a
cell's Markdown output alike, as a hide-output tag folds an output, and stderr is not shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

HIDE_INPUT = {"hide-input", "remove-input", "hide-cell", "remove-cell"}
HIDE_OUTPUT = {"hide-output", "remove-output", "hide-cell", "remove-cell"}
RATES = {"prose": 180, "output": 250, "code": 15}  # words or lines a minute
FIGURE, TABLE = 0.5, 0.75  # minutes


def unfolded(markdown: str) -> str:
    """``markdown`` without the bodies of its dropdowns (their titles stay: a reader sees the bar)."""
    out, depth, lines = [], 0, markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        opens = re.match(r"^(:{3,})\{(dropdown|admonition)\}\s*(.*)$", line.strip())
        if depth == 0 and opens:
            fence = opens.group(1)
            body, j = [], i + 1
            while j < len(lines) and lines[j].strip() != fence:
                body.append(lines[j])
                j += 1
            is_dropdown = opens.group(2) == "dropdown" or any(
                re.match(r"^:class:.*\bdropdown\b", b.strip()) for b in body[:3])
            out.append(opens.group(3))  # the title
            if not is_dropdown:
                out.extend(b for b in body if not b.strip().startswith(":class:"))
            i = j + 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _words(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9]+", text))


def _tables(text: str) -> int:
    return len(re.findall(r"^\|[-: |]+\|\s*$", text, flags=re.MULTILINE))


def measure(notebook: Path, folds: bool = True) -> dict:
    """``{"minutes", "prose", "output", "code", "figures", "tables"}`` of one stored chapter; ``folds=False`` reads
    it as the shared tool does (the text of closed dropdowns and the stderr streams counted as visible)."""
    shown_of = unfolded if folds else (lambda text: text)
    cells = json.loads(Path(notebook).read_text())["cells"]
    n = dict.fromkeys(("prose", "output", "code", "figures", "tables"), 0)
    for c in cells:
        tags, source = set(c.get("metadata", {}).get("tags", [])), "".join(c["source"])
        if c["cell_type"] == "markdown":
            shown = shown_of(source)
            n["prose"] += _words(re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " eq ", shown, flags=re.DOTALL))
            n["tables"] += _tables(shown)
            n["figures"] += len(re.findall(r"!\[|```\{figure|<img", shown))
            continue
        if c["cell_type"] != "code":
            continue
        if not tags & HIDE_INPUT:
            n["code"] += len([line for line in source.splitlines() if line.strip()])
        if tags & HIDE_OUTPUT:
            continue
        for o in c.get("outputs", []):
            if o.get("name") == "stderr" and folds:  # _config.yml's nb_output_stderr: remove (progress bars)
                continue
            data = o.get("data", {})
            if "image/png" in data or "image/svg+xml" in data:
                n["figures"] += 1
            if "text/html" in data and "<table" in "".join(data["text/html"]):
                n["tables"] += 1
                continue
            if "text/markdown" in data:
                shown = shown_of("".join(data["text/markdown"]))
                n["tables"] += _tables(shown)
                n["output"] += _words(shown)
                continue
            text = "".join(o.get("text", "")) or ("".join(data.get("text/plain", "")) if "image/png" not in data
                                                  else "")
            n["output"] += _words(text)
    n["minutes"] = (n["prose"] / RATES["prose"] + n["output"] / RATES["output"] + n["code"] / RATES["code"]
                    + FIGURE * n["figures"] + TABLE * n["tables"])
    return n


if __name__ == "__main__":
    import sys

    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    for path in sorted(root.glob("notebooks/0*.ipynb")):
        m, strict = measure(path), measure(path, folds=False)
        print(f"{path.name:32s} {m['minutes']:5.1f} min ({strict['minutes']:4.1f} counting folded text)  prose "
              f"{m['prose']} output {m['output']} code {m['code']} figures {m['figures']} tables {m['tables']}")
