"""The docs' and the README's Python examples run, as written (a fence after ``<!-- not run: why -->``
is shown only)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
_FENCE = re.compile(r"(<!-- not run: [^>]*-->\n)?```python\n(.*?)\n```\n", re.DOTALL)


def _examples() -> list[tuple[str, int, str]]:
    out = []
    for page in [DOCS.parent / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = page.read_text()
        for m in _FENCE.finditer(text):
            if m.group(1) is None:
                out.append((str(page.relative_to(DOCS.parent)), text.count("\n", 0, m.start()) + 1, m.group(2)))
    return out


EXAMPLES = _examples()


def test_the_docs_have_runnable_examples() -> None:
    assert {p for p, _, _ in EXAMPLES} >= {
        "README.md",
        "docs/index.md",
        "docs/guides/extending.md",
        "docs/guides/code.md",
        "docs/guides/rewards.md",
    }


@pytest.mark.parametrize(("page", "line", "code"), EXAMPLES, ids=[f"{p}:{n}" for p, n, _ in EXAMPLES])
def test_a_docs_example_runs(page: str, line: int, code: str) -> None:
    exec(compile(code, f"{page}:{line}", "exec"), {"__name__": f"docs_{page}"})


def test_docstring_examples_are_a_section_the_site_renders_as_code() -> None:
    # griffe reads "Examples:" as code; "Example:" became an admonition of Markdown, where ">>>" lines
    # were quotes and their contents links (mkdocs --strict caught a broken one, x.png)
    src = DOCS.parent / "src" / "rlvr"
    singular = [
        f"{p.relative_to(src)}:{n}"
        for p in src.rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.fullmatch(r"\s*Example:\s*", line)
    ]
    assert not singular, singular
