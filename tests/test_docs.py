"""The docs a clone ships: short pages, no paths outside the repository, links that resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted([*DOCS.iterdir(), ROOT / "README.md", ROOT / "CHANGELOG.md"])
MARKDOWN = [page for page in PAGES if page.suffix == ".md"]
MAX_PAGE_BYTES = 30 * 1024
OUTSIDE = re.compile(r"(?<![\w.-])build/|\.devout|\.\./shared")
"""Paths a clone does not have: ignored build output, the GPU machine's carry folder, the
session's shared folder."""
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#+\s+(.*)$", re.MULTILINE)


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(h) for h in HEADING.findall(page.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_is_short(page: Path) -> None:
    assert page.stat().st_size <= MAX_PAGE_BYTES, f"{page.name}: split it or cut it"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_cites_nothing_outside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group()}" for m in OUTSIDE.finditer(text)
    ]
    assert not found, f"{page.name}: {found}"


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (
            fragment and linked.suffix == ".md" and fragment not in anchors(linked)
        ):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_anchor_follows_github() -> None:
    assert anchor("7. Scan targets") == "7-scan-targets"
    assert anchor("5. Admission, auth and origins") == "5-admission-auth-and-origins"
    assert anchor("`run.py serve` flags") == "runpy-serve-flags"
