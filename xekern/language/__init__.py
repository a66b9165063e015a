"""``import xekern.language as xl``: the kernel language.

Types and values (``xl.constexpr``, ``xl.tensor``, dtypes, ``xl.Layout``) and the builtins
that kernels call (``xl.program_id``, ``xl.arange``, ``xl.load``, ``xl.dot``, ...). See
docs/language.md for every function with an example.
"""
from ..ir.layout import Layout, SliceLayout
from . import extra, math, target_info  # noqa: F401  (xl.math.exp2, xl.extra.libdevice.exp, ...)
from .builtins import *  # noqa: F401,F403
from .math import div_rn, fdiv, softmax, sqrt_rn, umulhi  # noqa: F401  (Triton exports them at top level too)
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x,  # noqa: F401
                     randn, randn4x, uint_to_uniform_float)
from .builtins import __dict__ as _b
from .scaled_dot import dot_scaled  # noqa: F401
from .type_objects import block_type, constexpr_type, slice, tuple, void  # noqa: F401,A004
from .core import (ALL_DTYPES, MAX_LANE_NUMEL, MAX_TILE_NUMEL, PropagateNan, async_task, bfloat16, builtin, condition, const, constexpr, dtype, float8e4b15, float8e4b8, float8e4nv, float8e5, float8e5b16, float16, float32, float64, int1, int8,
                   int16, int32, int64, block_pointer, mem_desc, nbarrier, pi32_t, pointer_tile, pointer_type, private_array, scatter_descriptor, tensor,
                   tensor_descriptor, uint8,
                   uint16, uint32, uint64)

# Triton spellings
bool_ = int1
float = float32  # noqa: A001
double = float64
half = float16
TRITON_MAX_TENSOR_NUMEL = MAX_TILE_NUMEL

__all__ = [n for n in list(globals()) if not n.startswith("_")]
