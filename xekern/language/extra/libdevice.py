"""Triton's ``tl.extra.libdevice``: the functions of ``xl.math`` under libdevice's module name."""
from ..math import *  # noqa: F401,F403
