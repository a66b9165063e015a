"""A kernel and a signature to workgroup IR (``compile_to_ir``), and the signature's vocabulary:
``ConstArg`` (a constexpr's value), ``TupleArg`` (a tuple argument's nesting) and ``MULTIPLES``
(what the launch's specialization knows of integer and pointer arguments).

    sig = {"x_ptr": xk.pointer(xl.float32), "n": xl.int32, "BLOCK": ConstArg(1024), MULTIPLES: {"n": 16}}
    func = compile_to_ir(add_kernel, sig, options)
"""
from __future__ import annotations

from typing import Any, Dict, List

from .. import ir
from ..ir.core import Loc
from ..language import type_objects as lto
from ..language.core import tensor
from .generator import CodeGenerator
from .kernel_checks import check_lane_level, drop_unused_shape_casts, is_const
from .sem import Semantic
from .source import KernelSource


def compile_to_ir(jit, signature: Dict[str, Any], options) -> ir.FuncOp:
    """Build the workgroup-level IR of kernel ``jit`` for ``signature`` (name -> IR type, or the
    Python value of a constexpr parameter; ``signature[MULTIPLES]``: integer parameters known to be
    multiples of a number, which become the function's ``multiple_of`` attribute)."""
    src: KernelSource = jit.source
    tree = src.tree
    arg_names = [a.arg for a in tree.args.args]
    runtime = []   # the function's arguments: runtime parameters, a tuple's runtime leaves in its place
    for n in arg_names:
        v = signature.get(n)
        if isinstance(v, _TupleArg):
            runtime.extend(v.names())
        elif not isinstance(v, _ConstArg):
            runtime.append(n)
    level = getattr(options, "level", "wg")
    # what the IR was built for, so that a pass run on its printed text (python -m xekern opt) decides
    # as the compilation did: the target, the emitter, the level the kernel is written at
    attrs = {"num_subgroups": options.num_subgroups, "sg_size": options.target.sg_size,
             "target": options.target.name, "level": level, "kernel_level": level}
    if getattr(options, "emitter", None) is not None:
        attrs["emitter"] = options.emitter.name
    multiples = {n: m for n, m in (signature.get(MULTIPLES) or {}).items() if n in runtime and m > 1}
    if multiples:  # what the specialization knows of integer arguments (ir.terms.known_multiple)
        attrs["multiple_of"] = dict(sorted(multiples.items()))
    func = ir.FuncOp(src.name, [signature[n] for n in runtime], runtime, attrs=attrs,
                     loc=Loc(src.file, src.start_line, 0, src.name))
    builder = ir.Builder(func.body)
    sem = Semantic(builder, options)
    scope = {}
    for n in arg_names:
        v = signature[n]
        scope[n] = v.value if isinstance(v, _ConstArg) else None
    for n, a in zip(runtime, func.args):
        scope[n] = tensor(a)
    for n in arg_names:   # a tuple argument: its leaves (tensors, constants) in its nesting
        v = signature[n]
        if isinstance(v, _TupleArg):
            scope[n] = v.rebuild(lambda leaf: leaf.value if isinstance(leaf, _ConstArg) else scope.pop(leaf))
    sem.read_only = {a: n for n, a in zip(runtime, func.args) if is_const(tree, n)}
    gen = CodeGenerator(src, sem, scope)
    ret = gen.visit_function(tree)
    if ret is not None:
        raise src.error(gen.ret_node or tree, "a kernel cannot return a value; store results with xl.store")
    builder.create(ir.ReturnOp)
    drop_unused_shape_casts(func)
    if level == "lane":
        check_lane_level(func)
    return func


class _ConstArg:
    """A constexpr argument's value in a signature."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"constexpr({self.value!r})"


ConstArg = _ConstArg


class _TupleArg:
    """A tuple argument's nesting in a signature: each leaf the name of the function argument it
    became (``runtime/tuple_args.py``) or a ``ConstArg``."""

    def __init__(self, structure):
        self.structure = structure

    def names(self) -> List[str]:
        out: List[str] = []

        def walk(x):
            for y in x:
                if isinstance(y, tuple):
                    walk(y)
                elif isinstance(y, str):
                    out.append(y)
        walk(self.structure)
        return out

    def rebuild(self, leaf):
        """The nesting with ``leaf(x)`` for each leaf (a name or a ``ConstArg``), as ``xl.tuple``s."""
        def walk(x):
            return lto.tuple([walk(y) if isinstance(y, tuple) else leaf(y) for y in x])
        return walk(self.structure)

    def __repr__(self):
        return f"tuple({self.structure!r})"

    def __eq__(self, other):
        return isinstance(other, _TupleArg) and repr(other) == repr(self)

    def __hash__(self):
        return hash(repr(self))


TupleArg = _TupleArg
# the signature's entry naming what the launch's specialization knows: integer parameter -> a number it
# is a multiple of (16, as Triton specializes; part of the kernel's cache key)
MULTIPLES = "__multiple_of__"
