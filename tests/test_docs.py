"""The documentation's examples run as shown: every ```python block of each page of docs/, in
order, in one namespace per page, on the CPU device (their own asserts check the results)."""
import os
import re

import pytest

DOCS = os.path.join(os.path.dirname(__file__), os.pardir, "docs")
PAGES = sorted(p for p in os.listdir(DOCS) if p.endswith(".md")) if os.path.isdir(DOCS) else []


def python_blocks(page):
    with open(os.path.join(DOCS, page)) as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), re.S | re.M)


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XEKERN_DEVICE", "opencl:cpu")
    blocks = python_blocks(page)
    namespace = {"__name__": f"docs_{page[:-3]}"}
    for i, code in enumerate(blocks):
        # kernels are compiled from their source file, so each block gets a real one
        path = tmp_path / f"{page[:-3]}_{i}.py"
        path.write_text(code)
        try:
            exec(compile(code, str(path), "exec"), namespace)
        except Exception as e:
            pytest.fail(f"docs/{page}, python block {i + 1} of {len(blocks)} failed: {type(e).__name__}: {e}\n"
                        f"{code}")
