"""The docs cite nothing a reader cannot open.

The project's behavioural specification (its sections, ``§9.3``, and its pinned policies,
``(P12)``) and "the seed page" live with the project's planning documents, not with the
package: a user who reads README.md or docs/*.md cannot follow such a citation, so each rule is
said in words where it matters and every pinned policy is listed, in words, on
docs/differences-from-production.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: A section sign, a policy code such as ``(P12)``, or the planning documents by name.
UNREADABLE = re.compile(r"§|\(P\d+\)|\bthe seed page\b|\bthe spec\b", re.IGNORECASE)


def citations(text: str) -> list[str]:
    """``"line N: text"`` for each line of ``text`` that cites what a user cannot open."""
    return [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if UNREADABLE.search(line)
    ]


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_no_doc_cites_a_document_users_cannot_open(doc: Path) -> None:
    assert citations(doc.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "line",
    [
        "at least once (spec §9.3)",
        "applies every field (P12).",
        "The seed page *Deduplicate job requests* names",
        "as the spec says",
    ],
)
def test_the_check_catches_each_kind_of_citation(line: str) -> None:
    assert citations(f"fine\n{line}\n") == [f"line 2: {line}"]


def test_the_check_leaves_plain_words_alone() -> None:
    text = "RFC 9110, section 7.6.1; retries (P for policy) and P12-style names; a spectrum"
    assert citations(text) == []
