"""Check the built HTML book: every chapter page has its card, outputs and a Colab launch link.

Run after `make book`: python .ci/check_site.py [_build/html]
"""

import re
import sys
from pathlib import Path

import yaml

root = Path(__file__).resolve().parents[1]
site = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "_build" / "html"
config = yaml.safe_load((root / "_config.yml").read_text())
url = config["repository"]["url"].removeprefix("https://github.com/")
branch = config["repository"]["branch"]

problems = []
for notebook in sorted((root / "notebooks").glob("*.ipynb")):
    page = site / "notebooks" / f"{notebook.stem}.html"
    if not page.exists():
        problems.append(f"{page}: missing")
        continue
    html = page.read_text()
    colab = f"https://colab.research.google.com/github/{url}/blob/{branch}/notebooks/{notebook.name}"
    if colab not in html:
        problems.append(f"{page.name}: no Colab launch link {colab}")
    if "chapter-card" not in html or "to execute the notebook" not in html:
        problems.append(f"{page.name}: no chapter card with the execution time")
    if "cell_output" not in html:
        problems.append(f"{page.name}: no cell outputs")
    if "Traceback (most recent call last)" in html or 'class="output traceback' in html:
        problems.append(f"{page.name}: shows an error")
    if "```{" in html or ":::{" in html:
        problems.append(f"{page.name}: a MyST directive is shown as raw text")
    if "application/vnd.jupyter.widget-view+json" in html and "static fallback" not in html:
        problems.append(f"{page.name}: a widget without a static fallback")
    for img in re.findall(r'<img[^>]+src="([^"]+)"', html):
        if img.startswith(("data:", "http://", "https://")):
            continue
        if not (page.parent / img).resolve().exists():
            problems.append(f"{page.name}: image {img} is missing")

if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"site check: {len(list((root / 'notebooks').glob('*.ipynb')))} chapter pages OK")
