"""``xl.math``: Triton's ``tl.math`` spellings (tutorial 06 writes ``tl.math.exp2``), and the
libdevice-style functions kernels ported from Triton call.

The elementwise functions of ``xl`` itself (``exp``, ``exp2``, ``log``, ``sqrt``, ``erf``, ...) are
the same objects here. Added:

- ``div_rn(x, y)``, ``fdiv(x, y, ieee_rounding=False)``: ``x / y`` (float division);
- ``sqrt_rn(x)``: ``sqrt``;
- ``pow(x, y)``: ``x ** y`` in floating point;
- ``log1p(x)``, ``expm1(x)``: accurate near 0 (Kahan's forms, through ``log`` and ``exp``);
- ``umulhi(x, y)``: the high half of the unsigned 2N-bit product of two N-bit integers;
- ``softmax(x, dim=None, keep_dims=False, ieee_rounding=False)``: ``exp(x - max) / sum``, as Triton's.

Triton also exports ``div_rn``, ``fdiv``, ``sqrt_rn``, ``umulhi`` and ``softmax`` at top level: so
does ``xl``. ``xl.extra.libdevice`` is this module (Triton's ``tl.extra.libdevice`` spelling).
"""
from __future__ import annotations

from .builtins import (abs, cdiv, ceil, clamp, cos, erf, exp, exp2, floor, fma, log, log2,  # noqa: F401
                       maximum, minimum, rsqrt, sigmoid, sin, sqrt, tanh)
from .core import builtin


@builtin
def div_rn(x, y, _sem=None):
    """``x / y`` rounded to nearest (float division)."""
    return _sem.binary("truediv", x, y)


@builtin
def fdiv(x, y, ieee_rounding=False, _sem=None):
    """``x / y`` (float division; ``ieee_rounding`` is accepted: divisions are IEEE on every target)."""
    return _sem.binary("truediv", x, y)


@builtin
def sqrt_rn(x, _sem=None):
    """``sqrt(x)`` rounded to nearest."""
    return _sem.math("sqrt", x)


@builtin
def pow(x, y, _sem=None):  # noqa: A001
    """``x ** y`` for floating-point ``x`` (integers are converted to float32)."""
    return _sem.binary("pow", _sem.float_of(x), y)


@builtin
def log1p(x, _sem=None):
    """``log(1 + x)``, accurate for small ``x``: ``u = 1 + x``; ``x`` where ``u == 1``, else
    ``log(u) * x / (u - 1)`` (the rounding of ``1 + x`` cancels)."""
    x = _sem.float_of(x)
    u = _sem.binary("add", x, 1.0)
    d = _sem.binary("sub", u, 1.0)
    exact = _sem.binary("truediv", _sem.binary("mul", _sem.math("log", u), x), d)
    return _sem.where(_sem.compare("eq", d, 0.0), x, exact)


@builtin
def expm1(x, _sem=None):
    """``exp(x) - 1``, accurate for small ``x``: ``u = exp(x)``; ``x`` where ``u == 1``, ``-1`` where
    ``u - 1 == -1``, else ``(u - 1) * x / log(u)``."""
    x = _sem.float_of(x)
    u = _sem.math("exp", x)
    d = _sem.binary("sub", u, 1.0)
    exact = _sem.binary("truediv", _sem.binary("mul", d, x), _sem.math("log", u))
    exact = _sem.where(_sem.compare("eq", d, -1.0), -1.0, exact)
    big = _sem.compare("gt", x, 20.0)   # (log(u) overflows to inf long after u - 1 == u)
    return _sem.where(_sem.compare("eq", u, 1.0), x, _sem.where(big, d, exact))


@builtin
def umulhi(x, y, _sem=None):
    """The high N bits of the unsigned 2N-bit product of N-bit integers ``x`` and ``y``."""
    return _sem.mulhi(x, y, signed=False)


@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False, _sem=None):
    """``exp(x - max(x, dim)) / sum(..., dim)``: Triton's ``tl.softmax`` (``dim`` None is 0; the
    reductions keep their dimension only with ``keep_dims``, so a 2-D tile broadcasts back along
    axis 0 only, as in Triton)."""
    d = 0 if dim is None else dim
    z = _sem.binary("sub", x, _sem.reduce(x, d, "max", keep_dims=bool(keep_dims)))
    num = _sem.math("exp", z)
    return _sem.binary("truediv", num, _sem.reduce(num, d, "sum", keep_dims=bool(keep_dims)))
