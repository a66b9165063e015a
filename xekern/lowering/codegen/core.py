"""Codegen: lane-level IR to LLVM IR (llvmlite ``ir``), one SPIR-V kernel per function.

A lane-level ``vector<n>`` is held as a Python list of ``n`` LLVM scalars (LLVM's SSA does the
rest), scalars as one LLVM value, descriptors as small records of LLVM values. Rules are
looked up by op class in the rule tables of the kernel's emitter (``lowering/emitters.py``:
``Emitter.tables``, later tables overriding earlier ones), which the ``rules_*`` modules fill; a
missing rule is an error naming the op and the emitter. bf16 lives in ``i16`` and is computed
in f32.

Imports flow one way: the ``rules_*`` modules (tables) use helper modules (no ``@rule``), which
use this one; nothing here or in a helper imports a table.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Dict, List, Set

from llvmlite import ir as ll

from ... import ir
from ...ir.core import Op, Value
from ...ir.types import DType, MemDescType, PointerType, TensorDescType
from ..rewrite import PassError
from .ocl import F16, F32, F64, I1, I8, I16, I32, I64, VOID, Builtins
from .fold import FoldingBuilder
from . import names
from .text import prefill
from ..spirv_asm import asm_name

GLOBAL, LOCAL = 1, 3
CONSTANT = 2   # OpenCL's __constant address space

TABLES: Dict[str, Dict[type, Callable]] = {}   # table name -> op class -> rule


def rule(*classes, table: str = "common"):
    """Register a codegen rule ``fn(cg, op) -> list of results`` for op classes in a table:
    ``common`` (every emitter), or an emitter's own (``cpu``, ``igc-builtins``, ``spirv-ext``,
    ``visa``; ``Emitter.tables`` says which tables an emitter layers)."""
    def deco(fn):
        t = TABLES.setdefault(table, {})
        for c in classes:
            t[c] = fn
        return fn
    return deco


def rules_of(emitter) -> Dict[type, Callable]:
    """The op class -> rule map of an emitter: its tables merged in order."""
    out: Dict[type, Callable] = {}
    for name in emitter.tables:
        out.update(TABLES.get(name, {}))
    return out


def ll_type(t) -> ll.Type:
    """The LLVM type of a scalar dtype in registers (bf16 is carried as i16, fp8 as i8)."""
    if isinstance(t, PointerType):
        return ll.PointerType(addrspace=LOCAL if t.space == "slm" else GLOBAL)
    if isinstance(t, DType):
        if t.is_floating:
            return {8: I8, 16: I16 if t.name == "bf16" else F16, 32: F32, 64: F64}[t.bits]
        return ll.IntType(t.bits)
    raise TypeError(f"no LLVM scalar type for {t}")


def mem_type(t: DType) -> ll.Type:
    """The LLVM type of a dtype in memory (booleans are bytes)."""
    return I8 if t.is_bool else ll_type(t)


class VecSlots(list):
    """A lane's slots that also exist as one LLVM vector ``vec`` (``per`` slots in each element,
    low bits first): a DPAS result, a 2D block read, a constant. Consumers that want the vector
    (the next DPAS, a loop phi) take ``vec`` as is instead of re-packing the slots.

    With ``extract`` (a function slot -> LLVM value, run right after ``vec`` is defined) the slots
    are made only when something asks for them: a vector consumed whole costs no extractions.

    ``message`` is ``(whole, byte_offset)`` when ``vec`` is a piece of a larger block-read result
    ``whole`` (a vISA variable, or a ``NamedRegister``): inline vISA can then name the piece in
    place, without the copy a vector extraction costs. A piece of a named register has no vector
    until something asks for one: ``make_vec = (anchor, make)`` builds it right after the
    instruction ``anchor`` (the read) on first use."""

    def __init__(self, slots, vec, per: int = 1, extract=None, builder=None, message=None, make_vec=None):
        super().__init__(slots)
        self._vec = vec
        self.per = per
        self._extract = extract
        self._builder = builder
        self.message = message
        self._make_vec = make_vec

    @property
    def vec(self):
        if self._vec is None and self._make_vec is not None:
            anchor, make = self._make_vec
            self._vec = after(self._builder, anchor, make)
        return self._vec

    def _get(self, i):
        v = list.__getitem__(self, i)
        if v is None:
            vec = self.vec
            v = after(self._builder, vec, lambda: self._extract(i))
            list.__setitem__(self, i, v)
        return v

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._get(j) for j in range(*i.indices(len(self)))]
        return self._get(i if i >= 0 else len(self) + i)

    def __iter__(self):
        return (self._get(i) for i in range(len(self)))


def after(b: ll.IRBuilder, instr: ll.Instruction, make: Callable[[], object]):
    """``make()`` built right after ``instr``; the builder then goes back to where it was."""
    block, anchor = b.block, b._anchor
    home = instr.parent
    before = len(home.instructions)
    b.position_after(instr)
    try:
        return make()
    finally:
        added = len(home.instructions) - before
        b.position_at_end(block)
        b._anchor = anchor + (added if home is block else 0)


@dataclass(frozen=True)
class NamedRegister:
    """A vISA variable declared by inline asm (``.decl``) and named in later asm statements: a
    block read wider than an LLVM vector may be (16 components) lands in one."""

    name: str
    dwords: int  # per lane


def lazy_slots(cg: "CodeGen", vec, count: int, per: int, make) -> VecSlots:
    """VecSlots over ``vec`` whose slot ``i`` is ``make(i)``, built on first use after ``vec``."""
    if not isinstance(vec, ll.Instruction) or isinstance(vec, ll.PhiInstr):
        return VecSlots([make(i) for i in range(count)], vec, per)
    return VecSlots([None] * count, vec, per, make, cg.b)


def unpacked(cg: CodeGen, vec, count: int, t: DType, words: int = 0, message=None, make_vec=None) -> VecSlots:
    """The ``count`` slots of dtype ``t`` in a block-read vector (low bits first), made on demand.
    Without ``vec``, ``make_vec`` makes it (a vector of ``words`` components, see ``VecSlots``)."""
    per = count // (vec.type.count if vec is not None else words)
    bits = t.bits

    def make(i):
        b = cg.b
        e = b.extract_element(vec if vec is not None else slots.vec, cg.i32(i // per))
        v = e if per == 1 else b.trunc(b.lshr(e, ll.Constant(e.type, (i % per) * bits)), ll.IntType(bits))
        if v.type.width != bits:
            v = b.trunc(v, ll.IntType(bits))
        return v if v.type == ll_type(t) else b.bitcast(v, ll_type(t))
    if vec is not None:
        return lazy_slots(cg, vec, count, per, make)
    slots = VecSlots([None] * count, None, per, make, cg.b, message, make_vec)
    return slots


@dataclass
class NdDesc:
    """A 2D (or 1D) block descriptor in registers: base address and the tensor's geometry."""

    base: object                 # ptr addrspace(1)
    shape: List[object]          # i32 per dimension
    strides: List[object]        # i32 per dimension (elements)
    offsets: List[object]        # i32 per dimension
    type: TensorDescType
    block_io: bool = False       # its surface takes 2D block messages (lowering/surface_rules.py)

    def parts(self) -> list:
        return [self.base, *self.shape, *self.strides, *self.offsets]

    def with_parts(self, parts) -> "NdDesc":
        r = len(self.shape)
        return NdDesc(parts[0], parts[1:1 + r], parts[1 + r:1 + 2 * r], parts[1 + 2 * r:], self.type, self.block_io)


@dataclass
class ScatterDesc:
    base: object                 # ptr
    offsets: List[object]        # one i64 element offset per slot
    type: TensorDescType

    def parts(self) -> list:
        return [self.base, *self.offsets]

    def with_parts(self, parts) -> "ScatterDesc":
        return ScatterDesc(parts[0], list(parts[1:]), self.type)


@dataclass
class SlmMatrix:
    ptr: object                  # ptr addrspace(3) to the start of the matrix
    type: MemDescType


class CodeGen:
    """Emits one kernel into an LLVM module."""

    def __init__(self, func: ir.FuncOp, options):
        self.func = func
        self.options = options
        self.target = options.target
        self.emitter = options.emitter
        self.module = ll.Module(name=func.name)
        self.module.triple = "spirv64-unknown-unknown"
        self.module.data_layout = ("e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512"
                                   "-v1024:1024-n8:16:32:64-G1")
        self.ocl = Builtins(self.module)
        self.values: Dict[Value, object] = {}
        self.slm_bytes = 0
        # id(narrowed value) -> (it, the f32 value it was exactly narrowed from): codegen/arith.widen
        self.exact_wide: Dict[int, tuple] = {}
        self.extensions = set()
        self.rules = rules_of(self.emitter)
        self._cache: Dict[tuple, object] = {}
        self._here: Dict[tuple, object] = {}
        self._lane_scopes: List[tuple] = []  # (block, {key: value}) of each lane_scope, innermost last
        self._asm: Dict[tuple, ll.Function] = {}
        self.loops: List = []  # recurrence.Loop of each counted loop being emitted, innermost last
        self.visa_registers = 0  # vISA registers declared by inline asm (visa_dpas.Accumulator), for names
        self.named_reads: Dict[object, "NamedRegister"] = {}  # load op -> its register, declared ahead
        self.staged: Dict["NamedRegister", int] = {}  # named register -> the last of its GRFs a prefetch staged in
        self.analyses: Dict[str, object] = {}
        self.deferred: Set[Op] = set()  # ops another op's rule emits (codegen/run_chains.py)

    # ---- module and kernel -----------------------------------------------------------------------
    def build(self) -> ll.Module:
        args = self.func.args
        arg_types = [self._arg_type(a.type) for a in args]
        fn = ll.Function(self.module, ll.FunctionType(VOID, arg_types), name=self.func.name)
        fn.calling_convention = "spir_kernel"
        names.adopt(fn)  # llvmlite's naming rules, faster
        self.fn = fn
        self.entry = fn.append_basic_block("entry")  # values cached for the whole kernel live here
        start = fn.append_basic_block("start")
        self.b = FoldingBuilder(start)
        for a, v in zip(args, fn.args):
            v.name = a.hint or "arg"
            if isinstance(a.type, DType) and a.type.is_bool:
                v = self.b.trunc(v, I1)
            self.values[a] = v
        self.block(self.func.body)
        self.b.position_at_end(self.entry)
        self.b.branch(start)
        sg = self.module.add_metadata([ll.Constant(I32, self.target.sg_size)])
        wg = self.module.add_metadata([ll.Constant(I32, self.options.workgroup_size), ll.Constant(I32, 1),
                                       ll.Constant(I32, 1)])
        fn.set_metadata("intel_reqd_sub_group_size", sg)
        fn.set_metadata("reqd_work_group_size", wg)
        return self.module

    def text(self) -> str:
        """The module as LLVM IR text. llvmlite joins function metadata with commas, which LLVM's
        parser rejects on definitions; they are space-separated there."""
        prefill(self.module)  # the common instructions' text, without llvmlite's slow formatting
        return str(self.module).replace(", !reqd_work_group_size", " !reqd_work_group_size")

    def _arg_type(self, t):
        if isinstance(t, DType) and t.is_bool:
            return I8
        return ll_type(t)

    def block(self, block: ir.Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Op, deferred: bool = False) -> None:
        """``op``'s rule, which sets its results' values; an op in ``self.deferred`` only when the op
        that emits it asks (``deferred``)."""
        if op in self.deferred and not deferred:
            return
        fn = None
        for cls in type(op).__mro__:
            fn = self.rules.get(cls)
            if fn is not None:
                break
        if fn is None:
            raise PassError(f"codegen: no rule for '{op.op_name}' on emitter {self.emitter.name} "
                            f"(target {self.target.name})", op)
        try:
            res = fn(self, op)
        except PassError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AssertionError) as e:
            raise PassError(f"codegen: '{op.op_name}' on {self.target.name} ({self.emitter.name}): "
                            f"{type(e).__name__}: {e}", op) from e
        for r, v in zip(op.results, res or []):
            self.values[r] = v

    # ---- values -----------------------------------------------------------------------------------
    def get(self, v: Value):
        return self.values[v]

    def slots(self, v: Value) -> List:
        """The per-slot LLVM values of a lane-level vector (a scalar counts as one slot)."""
        x = self.values[v]
        return x if isinstance(x, list) else [x]  # (not a copy: VecSlots keep their vector)

    def const(self, t: DType, value):
        lt = ll_type(t)
        if t.name == "bf16":
            return ll.Constant(I16, f32_to_bf16_bits(float(value)))
        if t.is_fp8:
            return ll.Constant(I8, fp8_bits(float(value), t))
        if t.is_floating:
            return ll.Constant(lt, float(value))
        if t.is_bool:
            return ll.Constant(I1, int(bool(value)))
        return ll.Constant(lt, int(value) & ((1 << t.bits) - 1))

    def i32(self, v: int):
        return ll.Constant(I32, int(v))

    def call(self, name, ret, args, convergent=False):
        return self.ocl.call(self.b, name, ret, args, convergent)

    def asm(self, ret: ll.Type, text: str, constraints: str, args: List):
        """Inline vISA ``text``: a call of a placeholder declaration that ``spirv_asm.lower_asm_calls``
        turns into ``OpAsmCallINTEL`` (LLVM's own inline asm is limited to 128-bit operands)."""
        fty = ll.FunctionType(ret, [a.type for a in args])
        key = (text, constraints, str(fty))
        fn = self._asm.get(key)
        if fn is None:
            fn = ll.Function(self.module, fty, name=asm_name(len(self._asm), text, constraints))
            fn.attributes.add("convergent")
            fn.attributes.add("nounwind")
            self._asm[key] = fn
        return self.b.call(fn, args)

    def declare(self, text: str) -> None:
        """A vISA declaration (``.decl``) as an inline-asm statement of its own in the entry block:
        once per kernel, wherever the code that names the variable ends up."""
        self.in_entry(lambda: self.asm(ll.VoidType(), text, "", []))

    # ---- ids (cached in the entry block) ------------------------------------------------------------
    def in_entry(self, make):
        """``make()`` built at the end of the entry block; the builder then goes back to where it was."""
        return self.in_block(self.entry, make)

    def in_block(self, target: ll.Block, make):
        """``make()`` built at the end of ``target`` (before its terminator, if it has one: a loop's
        preheader); the builder then goes back to where it was."""
        b = self.b
        block, anchor = b.block, b._anchor
        with b.goto_block(target):
            v = make()
        if block is not target:  # (goto_block returns to the end of the block, past a terminator)
            b.position_at_end(block)
            b._anchor = anchor
        return v

    def cached(self, key, make):
        """``make()``'s value, built once in the entry block so it dominates every use."""
        v = self._cache.get(key)
        if v is None:
            v = self._cache[key] = self.in_entry(make)
        return v

    def analysis(self, name: str, make: Callable[[], object]):
        """A whole-function analysis of ``self.func`` (``make()``), computed on first use."""
        if name not in self.analyses:
            self.analyses[name] = make()
        return self.analyses[name]

    def cached_here(self, key, make):
        """``make()``'s value, built once per basic block (at its first use there)."""
        key = (self.b.block, key)
        v = self._here.get(key)
        if v is None:
            v = self._here[key] = make()
        return v

    def lane_cached(self, key, make):
        """``cached`` for a value computed from the lane id: inside a ``lane_scope``, built once in
        the scope's block (from its own copy of the lane id)."""
        if not self._lane_scopes:
            return self.cached(key, make)
        block, values = self._lane_scopes[-1]
        v = values.get(key)
        if v is None:
            v = values[key] = self.in_block(block, make)
        return v

    @contextmanager
    def lane_scope(self, block: ll.Block):
        """Within it, the values computed from the lane id (``lane_id``, ``lane_cached``) are built
        in ``block`` (a loop's body: split-edges' ``edge`` loop), from a copy of the lane id that the
        compiler cannot see through (an inline-vISA ``mov`` where the driver takes inline vISA), so
        that neither LLVM nor IGC hoists them out of the loop. Hoisted, a loop's SLM and memory
        addresses (dg2's GEMM: 16 SLM address registers) are held in registers through the loop
        before it too, and IGC spilled around both."""
        self._lane_scopes.append((block, {}))
        try:
            yield
        finally:
            self._lane_scopes.pop()

    def lane_id(self):
        entry = self.cached("lane_id", lambda: self.call("_Z22get_sub_group_local_idv", I32, []))
        if not self._lane_scopes:
            return entry
        if not self.emitter.driver.inline_visa:   # (the CPU device: the builtin once more, in the scope)
            return self.lane_cached("lane_id", lambda: self.call("_Z22get_sub_group_local_idv", I32, []))
        return self.lane_cached("lane_id", lambda: self.asm(
            I32, f"mov (M1, {self.target.sg_size}) $0(0,0)<1> $1(0,0)<1;1,0>", "=rw,rw", [entry]))

    def sg_id(self):
        """The subgroup id: 0 in a one-subgroup workgroup. On the CPU device it goes through
        ``sub_group_broadcast(id, 0)``: the runtime's vectorizer takes ``get_sub_group_id()`` for a
        per-lane value, and every address computed from it would become a gather (x86 checked
        with ``CL_CONFIG_DUMP_ASM``); a broadcast's result it knows to be uniform."""
        if self.options.workgroup_size == self.target.sg_size:
            return ll.Constant(I32, 0)

        def make():
            sid = self.call("_Z16get_sub_group_idv", I32, [])
            if self.emitter.broadcast_ids:
                sid = self.call("_Z19sub_group_broadcastjj", I32, [sid, ll.Constant(I32, 0)], convergent=True)
            return sid
        return self.cached("sg_id", make)

    # ---- int helpers -------------------------------------------------------------------------------
    def to_i64(self, v, signed=True):
        if v.type == I64:
            return v
        return self.b.sext(v, I64) if signed else self.b.zext(v, I64)

    def to_i32(self, v, signed=True):
        if v.type == I32:
            return v
        if v.type.width > 32:
            return self.b.trunc(v, I32)
        return self.b.sext(v, I32) if signed else self.b.zext(v, I32)

    def gep(self, base, elem: ll.Type, index):
        return self.b.gep(base, [index], source_etype=elem)

    def masked_all(self, mask, then: Callable[[], List], otherwise: List) -> List:
        """``masked`` for several values behind one branch: ``then()`` returns as many values as
        ``otherwise`` holds (a phi each). A constant mask needs no branch."""
        if isinstance(mask, ll.Constant) and mask.constant in (1, True):
            return then()
        if isinstance(mask, ll.Constant) and mask.constant in (0, False):
            return list(otherwise)
        cur = self.b.block
        on = self.fn.append_basic_block("on")
        done = self.fn.append_basic_block("done")
        self.b.cbranch(mask, on, done)
        self.b.position_at_end(on)
        vals = then()
        end = self.b.block
        self.b.branch(done)
        self.b.position_at_end(done)
        out = []
        for v, o in zip(vals, otherwise):
            phi = self.b.phi(v.type)
            phi.add_incoming(v, end)
            phi.add_incoming(o, cur)
            out.append(phi)
        return out

    def masked(self, mask, then: Callable[[], object], otherwise=None):
        """``mask ? then() : otherwise`` with ``then`` run only where ``mask`` holds (a branch);
        ``otherwise`` None: ``then`` gives no value (a store)."""
        if otherwise is None:
            def effect() -> List:
                then()
                return []
            self.masked_all(mask, effect, [])
            return None
        return self.masked_all(mask, lambda: [then()], [otherwise])[0]


def f32_to_bf16_bits(x: float) -> int:
    import struct
    import math
    if math.isnan(x):
        return 0x7FC0
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16) & 0xFFFF


# fp8 formats: (mantissa bits, exponent bias, largest finite byte); the fnuz ones (no inf, no -0,
# NaN 0x80) are FP8_FNUZ
FP8 = {"f8E5M2": (2, 15, 0x7B), "f8E4M3FN": (3, 7, 0x7E), "f8E4M3FNUZ": (3, 8, 0x7F), "f8E5M2FNUZ": (2, 16, 0x7F)}
FP8_FNUZ = ("f8E4M3FNUZ", "f8E5M2FNUZ")


# float8e4b15 (Triton's own): conversions to it go through f16 (nearest even), clamp the magnitude at
# 1.75 (f16 bits 0x3F00: inf and NaN too) and round the f16 bits half away from zero to 7 bits
E4B15, E4B15_CLAMP = "f8E4M3B15", 0x3F00


def e4b15_bits(x: float) -> int:
    """The float8e4b15 byte of ``x``, as Triton converts (what ``arith.f32_to_fp8`` computes)."""
    import numpy as np
    with np.errstate(over="ignore"):   # (beyond f16: inf, then clamped)
        h = int(np.array(x, np.float32).astype(np.float16).view(np.uint16))
    return (h >> 8) & 0x80 | ((min(h & 0x7FFF, E4B15_CLAMP) << 1) + 0x80) >> 8


def fp8_bits(x: float, t: DType) -> int:
    """The fp8 byte of ``x``: nearest even, saturated to the largest finite value, NaN 0x7f (with
    the sign); what ``arith.f32_to_fp8`` computes on the device."""
    import math
    import struct
    if t.name == E4B15:
        return e4b15_bits(x)
    mbits, bias, top = FP8[t.name]
    fnuz = t.name in FP8_FNUZ
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    sign = (bits >> 24) & 0x80
    if math.isnan(x):
        return 0x80 if fnuz else sign | 0x7F
    a = bits & 0x7FFFFFFF
    if a < (127 - bias + 1) << 23:   # below the smallest normal: a multiple of the subnormal step
        q = round(abs(struct.unpack("<f", struct.pack("<I", a))[0]) * 2.0 ** (bias - 1 + mbits))  # (to even)
    else:
        sh = 23 - mbits
        r = a + (1 << (sh - 1)) - 1 + ((a >> sh) & 1)
        q = min((r >> sh) - ((127 - bias) << mbits), top)
    return 0 if fnuz and q == 0 else sign | q


def generate(func: ir.FuncOp, options) -> "CodeGen":
    """Build the LLVM module of lane-level ``func`` for ``options.target`` with ``options.emitter``."""
    cg = CodeGen(func, options)
    cg.build()
    return cg
