"""The documentation's examples run as shown: every ```python block of README.md and of each page of
docs/, in order, in one namespace per page, on the CPU device (their own asserts check the results).

No example is skipped silently: a block that cannot run is marked in the page, on the line before
it, with ``<!-- not run: REASON, why -->``, and this test checks that REASON (one of ``REASONS``)
holds for the block and that the block is still valid Python; a block that looks like Python but
is labelled otherwise (```text) fails, as does a fence left open."""
import ast
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["README.md"] + sorted(f"docs/{p}" for p in os.listdir(os.path.join(REPO, "docs")) if p.endswith(".md"))
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[^`\s]*)\s*$")
NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>[^,>]*?)\s*(,(?P<why>.*?))?-->\s*$")


def _placeholders(code: str) -> bool:
    """``...`` (or a ``"..."`` string) where the reader puts their own values."""
    return any(isinstance(n, ast.Constant) and n.value in (Ellipsis, "...") for n in ast.walk(ast.parse(code)))


# why a block may be shown without running, and how the test checks that it is so
REASONS = {
    "template": _placeholders,   # a pattern to fill in: it has "..." placeholders
}


def blocks(page):
    """(line, language, code, not-run reason or None) of every fenced block of ``page``."""
    lines = open(os.path.join(REPO, page)).read().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, indent = i, m["indent"]
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            i += 1
        assert i < len(lines), f"{page}:{start + 1}: the fence opened here is never closed"
        code = "\n".join(ln[len(indent):] if ln.startswith(indent) else ln for ln in lines[start + 1:i]) + "\n"
        mark = NOT_RUN.match(lines[start - 1]) if start else None
        out.append((start + 1, m["lang"], code, mark["reason"] if mark else None))
        i += 1
    return out


def _statements(code: str):
    """The statements of ``code`` if it is Python, else None."""
    try:
        return ast.parse(code).body
    except SyntaxError:
        return None


@pytest.mark.parametrize("page", PAGES)
def test_no_example_is_skipped_silently(page):
    found = blocks(page)
    marks = [n + 1 for n, ln in enumerate(open(os.path.join(REPO, page)).read().splitlines()) if NOT_RUN.match(ln)]
    assert len(marks) == sum(r is not None for *_, r in found), \
        f"{page}: a not-run mark must be the line right before its block's fence (marks at lines {marks})"
    for line, lang, code, reason in found:
        where = f"{page}:{line}"
        if reason is not None:
            assert lang == "python", f"{where}: a block marked not run must be ```python, not {lang!r}"
            assert reason in REASONS, f"{where}: not-run reason {reason!r} is not one of {sorted(REASONS)}"
            assert _statements(code) is not None, f"{where}: the block marked not run is not valid Python"
            assert REASONS[reason](code), f"{where}: the block is marked '{reason}' but is not one"
        elif lang != "python":
            stmts = _statements(code)
            # bare expressions are shown values (``[Owner(sg=3, lane=4, slot=1)]``), not examples
            assert not stmts or all(isinstance(s, ast.Expr) for s in stmts), \
                f"{where}: this ```{lang} block is Python: label it ```python (then it runs), or mark it " \
                f"<!-- not run: REASON, why --> with one of {sorted(REASONS)}"


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XEKERN_DEVICE", "opencl:cpu")
    runnable = [(line, code) for line, lang, code, reason in blocks(page) if lang == "python" and reason is None]
    namespace = {"__name__": f"docs_{os.path.basename(page)[:-3]}"}
    for i, (line, code) in enumerate(runnable):
        # kernels are compiled from their source file, so each block gets a real one
        path = tmp_path / f"{os.path.basename(page)[:-3]}_{i}.py"
        path.write_text(code)
        try:
            exec(compile(code, str(path), "exec"), namespace)
        except Exception as e:
            pytest.fail(f"{page}:{line}, python block {i + 1} of {len(runnable)} failed: {type(e).__name__}: {e}\n"
                        f"{code}")
