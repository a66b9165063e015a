"""Reading the terms of IR text: types, layout attributes and attribute values (``printer.attr_text``).

Each reader takes a ``Scanner`` at the term and leaves it after the term::

    >>> sc = Scanner("vector<8x16xbf16, #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>>")
    >>> read_type(sc)
    VectorType(shape=(8, 16), elem=xl.bfloat16, layout=Layout(lane_layout=[1, 16], lane_data=[1, 1]))
    >>> read_attr(Scanner('{n = 16, name = "relu", tiles = [f32, i8], eps = 1e-05}'))
    {'n': 16, 'name': 'relu', 'tiles': (xl.float32, xl.int8), 'eps': 1e-05}

Types and layouts repeat on almost every line of a distributed function, so they are memoized by
their text (``Scanner.balanced_end`` finds it).
"""
from __future__ import annotations

import json
import math
import re
from typing import Dict, Optional, Tuple

from .layout import FIELDS, Layout, SliceLayout
from .scanner import Scanner
from .types import BY_NAME, MemDescType, NBarrierType, PointerType, PrivateArrayType, TensorDescType, Type, VectorType

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?\d+(?![\d.eE])")
_NUMBER = re.compile(r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_SHAPE = re.compile(r"((?:\d+x)+|x?)([a-z]+\d*(?:E\dM\d(?:FNUZ|FN|B\d+)?)?)\b")   # 8x16xf32; xf32 (rank 0)
_KEYWORDS = {"true": True, "false": False, "none": None, "inf": math.inf, "nan": math.nan}

_MEMO: Dict[str, object] = {}   # text of a type or layout -> the object (both are frozen)


def _memoized(sc: Scanner, read):
    """``read(sc)``, or the object the same text gave before."""
    start = sc.skip()
    end = sc.balanced_end(start)
    key = sc.text[start:end] if end > 0 else None
    hit = _MEMO.get(key) if key is not None else None
    if hit is not None:
        sc.pos = end
        return hit
    value = read(sc)
    if key is not None and sc.pos == end:
        if len(_MEMO) > 100_000:
            _MEMO.clear()
        _MEMO[key] = value
    return value


# ---- scalars and lists --------------------------------------------------------------------------

def read_int(sc: Scanner, what: str = "an integer") -> int:
    return int(sc.expect_match(_INT, what).group())


def read_ints(sc: Scanner, what: str) -> Tuple[int, ...]:
    """``[1, 2, 3]``."""
    sc.expect("[", f"opening {what}")
    out = []
    if not sc.accept("]"):
        while True:
            out.append(read_int(sc, f"an integer in {what}"))
            if sc.accept("]"):
                break
            sc.expect(",", f"or ']' in {what}")
    return tuple(out)


def read_string(sc: Scanner) -> str:
    m = sc.expect_match(_STRING, "a string in double quotes")
    try:
        return json.loads(m.group())
    except ValueError as e:
        raise sc.error(f"bad escape in string {m.group()}: {e}", m.start()) from None


def read_ident(sc: Scanner, what: str) -> str:
    return sc.expect_match(_IDENT, what).group()


# ---- types -----------------------------------------------------------------------------------------

def read_dtype(sc: Scanner):
    m = sc.expect_match(_IDENT, "an element type (i32, f32, bf16, ...)")
    dt = BY_NAME.get(m.group())
    if dt is None:
        raise sc.error(f"unknown element type '{m.group()}' (element types: {', '.join(BY_NAME)})", m.start())
    return dt


def _shape_and_dtype(sc: Scanner):
    """``64x32xbf16`` -> ((64, 32), bf16)."""
    m = sc.expect_match(_SHAPE, "a shape and element type (like 8x16xf32)")
    dt = BY_NAME.get(m.group(2))
    if dt is None:
        raise sc.error(f"unknown element type '{m.group(2)}' (element types: {', '.join(BY_NAME)})", m.start(2))
    return tuple(int(d) for d in m.group(1).split("x") if d), dt


def read_type(sc: Scanner) -> Type:
    """Any IR type: ``f32``, ``vector<...>``, ``!xegpu.ptr<...>``, ``!xegpu.tensor_desc<...>``,
    ``!xegpu.mem_desc<...>``, ``!xegpu.nbarrier``, ``memref<...>``."""
    sc.skip()
    if sc.peek("!xegpu.nbarrier") and not sc.peek("!xegpu.nbarrier<"):
        sc.accept("!xegpu.nbarrier")
        return NBarrierType()
    for prefix, read in _TYPE_READERS:
        if sc.peek(prefix):
            return _memoized(sc, read)
    if _IDENT.match(sc.text, sc.pos):
        return read_dtype(sc)
    raise sc.expected("a type")


def _vector(sc: Scanner) -> VectorType:
    sc.expect("vector<")
    shape, dt = _shape_and_dtype(sc)
    layout = read_layout(sc) if sc.accept(",") else None
    sc.expect(">", "closing the vector type")
    return VectorType(shape, dt, layout)


def _pointer(sc: Scanner) -> PointerType:
    sc.expect("!xegpu.ptr<")
    dt = read_dtype(sc)
    space = read_ident(sc, "an address space (slm)") if sc.accept(",") else "global"
    sc.expect(">", "closing the pointer type")
    return PointerType(dt, space)


_TDESC_FIELDS = {"chunk_size": "int", "array_length": "int", "boundary_check": "bool", "memory_space": "ident"}


def _tensor_desc(sc: Scanner) -> TensorDescType:
    sc.expect("!xegpu.tensor_desc<")
    shape, dt = _shape_and_dtype(sc)
    kw = {"scattered": False}
    layout = None
    while sc.accept(","):
        if sc.peek("#xegpu.block_tdesc_attr<") or sc.peek("#xegpu.scatter_tdesc_attr<"):
            kw["scattered"] = sc.peek("#xegpu.scatter")
            sc.expect_match(re.compile(r"#xegpu\.\w+<"), "")
            fields = _fields(sc, _TDESC_FIELDS, "the descriptor attribute")
            kw.update(fields)
            if "memory_space" in kw:
                kw["memory_scope"] = kw.pop("memory_space")
        else:
            layout = read_layout(sc)
    sc.expect(">", "closing the tensor_desc type")
    return TensorDescType(shape, dt, layout=layout, **kw)


def _mem_desc(sc: Scanner) -> MemDescType:
    sc.expect("!xegpu.mem_desc<")
    shape, dt = _shape_and_dtype(sc)
    kw = {}
    if sc.accept(","):
        sc.expect("#xegpu.mem_layout<")
        kw = _fields(sc, {"strides": "ints", "block": "ints"}, "the mem_layout attribute")
    sc.expect(">", "closing the mem_desc type")
    return MemDescType(shape, dt, **kw)


def _memref(sc: Scanner) -> PrivateArrayType:
    sc.expect("memref<")
    shape, dt = _shape_and_dtype(sc)
    sc.expect(",", "and the address space")
    sc.expect("#gpu.address_space<private>", "(private arrays are the only memrefs)")
    sc.expect(">", "closing the memref type")
    return PrivateArrayType(shape, dt)


_TYPE_READERS = (("vector<", _vector), ("!xegpu.ptr<", _pointer), ("!xegpu.tensor_desc<", _tensor_desc),
                 ("!xegpu.mem_desc<", _mem_desc), ("memref<", _memref))


def _fields(sc: Scanner, kinds: Dict[str, str], what: str) -> Dict[str, object]:
    """``name = value, ...>`` of an attribute whose ``<`` was read: each name once, of its kind."""
    out: Dict[str, object] = {}
    if sc.accept(">"):
        return out
    while True:
        at = sc.skip()
        name = read_ident(sc, f"a field of {what} ({', '.join(kinds)})")
        kind = kinds.get(name)
        if kind is None:
            raise sc.error(f"unknown field '{name}' of {what} (fields: {', '.join(kinds)})", at)
        if name in out:
            raise sc.error(f"field '{name}' of {what} is given twice", at)
        sc.expect("=", f"after '{name}'")
        if kind == "int":
            out[name] = read_int(sc)
        elif kind == "ints":
            out[name] = read_ints(sc, f"'{name}'")
        elif kind == "bool":
            out[name] = read_ident(sc, "true or false") == "true"
        else:
            out[name] = read_ident(sc, f"a name for '{name}'")
        if sc.accept(">"):
            return out
        sc.expect(",", f"or '>' in {what}")


# ---- layouts ---------------------------------------------------------------------------------------

def read_layout(sc: Scanner):
    """``#xegpu.layout<sg_layout = [4, 1], ...>`` or ``#xegpu.slice<PARENT, dims = [1]>``."""
    sc.skip()
    if sc.peek("#xegpu.layout<"):
        return _memoized(sc, _layout)
    if sc.peek("#xegpu.slice<"):
        return _memoized(sc, _slice)
    raise sc.expected("a layout (#xegpu.layout<...> or #xegpu.slice<...>)")


def _layout(sc: Scanner) -> Layout:
    sc.expect("#xegpu.layout<")
    return Layout(**_fields(sc, {f: "ints" for f in FIELDS}, "#xegpu.layout"))


def _slice(sc: Scanner) -> SliceLayout:
    sc.expect("#xegpu.slice<")
    parent = read_layout(sc)
    sc.expect(",", "after the slice's parent layout")
    sc.expect("dims", "(the sliced dimensions)")
    sc.expect("=", "after 'dims'")
    dims = read_ints(sc, "'dims'")
    sc.expect(">", "closing #xegpu.slice")
    return SliceLayout(parent, dims)


# ---- attribute values ---------------------------------------------------------------------------------

def read_attr(sc: Scanner):
    """An attribute value as ``printer.attr_text`` writes it."""
    c = sc.text[sc.skip():sc.skip() + 1]
    if c == '"':
        return read_string(sc)
    if c == "[":
        sc.accept("[")
        out = []
        if not sc.accept("]"):
            while True:
                out.append(read_attr(sc))
                if sc.accept("]"):
                    break
                sc.expect(",", "or ']' in a list")
        return tuple(out)
    if c == "{":
        return read_attr_dict(sc)
    if c == "#":
        return read_layout(sc)
    if c == "-" and sc.text.startswith("-inf", sc.pos):
        sc.pos += 4
        return -math.inf
    m = sc.match(_NUMBER)
    if m is not None:
        t = m.group()
        return float(t) if any(ch in t for ch in ".eE") else int(t)
    m = _IDENT.match(sc.text, sc.pos)
    if m is not None and m.group() in _KEYWORDS:
        sc.pos = m.end()
        return _KEYWORDS[m.group()]
    if c == "!" or (m is not None and (m.group() in BY_NAME or m.group() in ("vector", "memref"))):
        return read_type(sc)
    raise sc.expected("an attribute value (a number, string, true/false, list, dict, type or layout)")


def read_attr_dict(sc: Scanner) -> Dict[str, object]:
    """``{name = value, ...}``; a name is an identifier or a quoted string (or, rarely, another value)."""
    sc.expect("{")
    out: Dict[object, object] = {}
    if sc.accept("}"):
        return out
    while True:
        at = sc.skip()
        m = sc.match(_IDENT)
        key = m.group() if m is not None else read_attr(sc)
        if key in out:
            raise sc.error(f"attribute '{key}' given twice", at)
        sc.expect("=", f"after '{key}'")
        out[key] = read_attr(sc)
        if sc.accept("}"):
            return out
        sc.expect(",", "or '}' in an attribute dict")


def parse_type(text: str) -> Optional[Type]:
    """The type ``text`` spells (the whole of it), e.g. ``parse_type("vector<16xf32>")``."""
    sc = Scanner(text)
    t = read_type(sc)
    if not sc.at_end():
        raise sc.expected("the end of the type")
    return t
