"""Reading IR text: a position in it, the small steps of a recursive-descent parser, and ParseError.

The parser (``parser.py``, ``parse_attrs.py``) asks for what it expects next; on a mismatch the
error names the place (``file:line:col``), what was expected and what is there::

    kernel.ir:3:18: expected ',' or ']' in a list, got '4}'

Whitespace and ``//`` comments (to the end of the line) separate tokens anywhere.
"""
from __future__ import annotations

import re
from typing import Optional

from ..errors import XekernError

_SKIP = re.compile(r"(?:\s+|//[^\n]*)*")
_BLANKS = re.compile(r"[ \t]*")
_GOT = re.compile(r"\S{1,24}")


class ParseError(XekernError):
    """IR text that does not parse: ``file:line:col: expected X, got Y``."""

    def __init__(self, message: str, file: str, line: int, col: int):
        self.message, self.file, self.line, self.col = message, file, line, col
        super().__init__(f"{file}:{line}:{col}: {message}")


class Scanner:
    """A cursor over ``text``; every method skips whitespace and comments first."""

    def __init__(self, text: str, file: str = "<string>"):
        self.text = text
        self.file = file
        self.pos = 0
        self._line_pos = 0   # (line_col: lines counted up to here, so far)
        self._line = 1

    # ---- where we are -------------------------------------------------------------------------
    def skip(self) -> int:
        self.pos = _SKIP.match(self.text, self.pos).end()
        return self.pos

    def line_col(self, pos: int):
        """1-based line and column of ``pos`` (counted forward from the last position asked for)."""
        if pos < self._line_pos:
            self._line_pos, self._line = 0, 1
        self._line += self.text.count("\n", self._line_pos, pos)
        self._line_pos = pos
        return self._line, pos - (self.text.rfind("\n", 0, pos) + 1) + 1

    def at_end(self) -> bool:
        return self.skip() >= len(self.text)

    def got(self, pos: Optional[int] = None) -> str:
        """What is at ``pos``: ``'%5'``, or ``end of input``."""
        m = _GOT.match(self.text, self.skip() if pos is None else pos)
        return f"'{m.group()}'" if m else "end of input"

    def error(self, message: str, pos: Optional[int] = None) -> ParseError:
        line, col = self.line_col(self.skip() if pos is None else pos)
        return ParseError(message, self.file, line, col)

    def expected(self, what: str, pos: Optional[int] = None) -> ParseError:
        return self.error(f"expected {what}, got {self.got(pos)}", pos)

    # ---- steps ------------------------------------------------------------------------------------
    def peek(self, s: str) -> bool:
        return self.text.startswith(s, self.skip())

    def peek_inline(self, s: str) -> bool:
        """``s`` comes next on this line (an op without operands is followed by the next op's results)."""
        at = _BLANKS.match(self.text, self.pos).end()
        return self.text.startswith(s, at)

    def accept(self, s: str) -> bool:
        if self.text.startswith(s, self.skip()):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str = "") -> None:
        if not self.accept(s):
            raise self.expected(f"'{s}'" + (f" {what}" if what else ""))

    def match(self, pattern: re.Pattern) -> Optional[re.Match]:
        m = pattern.match(self.text, self.skip())
        if m is not None:
            self.pos = m.end()
        return m

    def expect_match(self, pattern: re.Pattern, what: str) -> re.Match:
        m = self.match(pattern)
        if m is None:
            raise self.expected(what)
        return m

    def balanced_end(self, pos: int) -> int:
        """The end of the ``<...>`` group whose ``<`` is the first one at or after ``pos`` (-1 if none):
        lets a parser memoize types and layouts by their text."""
        depth = 0
        for m in _ANGLES.finditer(self.text, pos):
            c = m.group()
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
                if depth == 0:
                    return m.end()
            else:
                return -1
        return -1


# inside a type or layout only angle brackets nest; a quote, newline or brace means malformed text
_ANGLES = re.compile(r"[<>\"\n{}]")
