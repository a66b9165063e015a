"""The parity table of docs/coming_from_triton.md against ``xekern.language`` itself
(``xekern/tools/triton_parity.py``), and what the docs say is not there."""
import os
import re

import xekern.language as xl
from xekern.tools import triton_parity as P

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_table_in_the_docs_is_current():
    text = open(os.path.join(REPO, P.DOC)).read()
    assert P.doc_section(text) == P.table(), \
        "docs/coming_from_triton.md's parity table is out of date: run python -m xekern.tools.triton_parity --write"


def test_every_missing_name_has_a_reason_and_no_note_is_stale():
    for name, status, note in P.rows():
        if status == "missing":
            assert note, f"tl.{name} is not in xl and has no reason in triton_parity.MISSING"
    stale = [n for n in P.MISSING if hasattr(xl, n)]
    assert not stale, f"triton_parity.MISSING calls these missing, but xl has them: {stale}"
    gone = [n for n in P.DIFFERENT if not hasattr(xl, n)]
    assert not gone, f"triton_parity.DIFFERENT describes names xl does not have: {gone}"
    unknown = [n for n in list(P.MISSING) + list(P.DIFFERENT) if n not in P.TRITON_NAMES]
    assert not unknown, f"notes for names that are not Triton's: {unknown}"


def _section(page: str, heading: str) -> str:
    text = open(os.path.join(REPO, page)).read()
    start = text.index(heading)
    nxt = text.find("\n## ", start + len(heading))
    return text[start:nxt if nxt >= 0 else len(text)]


def test_the_not_there_lists_of_the_docs_hold():
    """Every ``tl.NAME`` that language.md's "What is not there" names is missing from xl, or has
    a note saying what differs (the forms it lacks); and every missing name is mentioned there or
    in the table."""
    section = _section("docs/language.md", "## What is not there")
    named = set(re.findall(r"`tl\.([A-Za-z_0-9]+)", section))
    assert named, section
    wrong = [n for n in named if hasattr(xl, n) and n not in P.DIFFERENT]
    assert not wrong, f"language.md says these are not there, but xl has them as Triton does: {wrong}"
