"""FileCheck-style checks on printed IR: each pattern must appear, in order (``!pattern``: must
not appear between the previous match and the next one)."""
import re


def check(text: str, *patterns: str) -> None:
    pos = 0
    forbidden = []
    for p in patterns:
        if p.startswith("!"):
            forbidden.append(p[1:])
            continue
        m = re.compile(p).search(text, pos)
        if m is None:
            raise AssertionError(f"pattern {p!r} not found after offset {pos} in:\n{text}")
        for f in forbidden:
            if re.search(f, text[pos:m.start()]):
                raise AssertionError(f"forbidden {f!r} found before {p!r} in:\n{text}")
        forbidden = []
        pos = m.end()
    for f in forbidden:
        if re.search(f, text[pos:]):
            raise AssertionError(f"forbidden {f!r} found at the end of:\n{text}")
