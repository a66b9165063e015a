"""Memory safety with device-side canaries: every output (and input) lives inside one USM
allocation of ``guard + n + guard`` elements whose guards hold a byte pattern; the kernel gets a
view at the guard's end. After the launch the whole allocation is read back: the guards must be
unchanged byte for byte, and the inside must match NumPy (float64 reference, random data,
poisoned outputs). Input guards hold a loud value, so a load that reads past an edge instead of
padding shows up in the results.

Covered, on the 16- and 8-wide CPU models: tensor-descriptor load_nd/store_nd past every edge
and corner (odd shapes, padded row pitches whose gaps must stay untouched, blocks wholly
outside), masked gathers and scatters whose masked-off lanes hold wild addresses, and atomics
of every kind at the ragged end of a grid.
"""
import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, poisoned

ml_dtypes = pytest.importorskip("ml_dtypes")
GUARD = 256  # elements on each side; larger than any block a test kernel touches past an edge


def _pattern(nbytes: int) -> np.ndarray:
    """Canary bytes: a non-repeating-looking pattern, so a shifted or partial write is caught."""
    return ((np.arange(nbytes, dtype=np.uint32) * 37 + 11) % 251).astype(np.uint8)


class Guarded:
    """``inside`` (a NumPy array) copied into the middle of one device allocation with guards.

    ``loud`` fills the guards with that value instead of the byte pattern (for inputs: a read past
    an edge then shows in the results). ``arr`` is the xekern DeviceArray to pass to a kernel.
    """

    def __init__(self, inside: np.ndarray, queue, loud=None):
        inside = np.ascontiguousarray(inside)
        self.dtype, self.shape = inside.dtype, inside.shape
        self.item = inside.dtype.itemsize
        self.gbytes = GUARD * self.item
        self.nbytes = inside.nbytes
        if loud is None:
            self.front, self.back = _pattern(self.gbytes), _pattern(self.gbytes)[::-1].copy()
        else:
            g = np.full(GUARD, loud, inside.dtype).view(np.uint8)
            self.front, self.back = g, g.copy()
        whole = np.concatenate([self.front, inside.reshape(-1).view(np.uint8), self.back])
        self.mem = xk.runtime.device.dpctl().memory.MemoryUSMDevice(whole.nbytes, queue=queue)
        self.mem.copy_from_host(whole)
        self.queue = queue
        self.arr = xk.DeviceArray(self.shape, self.dtype, queue, _mem=self.mem, _offset=self.gbytes)

    def read(self) -> np.ndarray:
        """The inside after the kernel; fails if either guard changed."""
        self.queue.wait()
        whole = np.empty(self.nbytes + 2 * self.gbytes, np.uint8)
        self.mem.copy_to_host(whole)
        front, back = whole[:self.gbytes], whole[self.gbytes + self.nbytes:]
        for name, got, want in (("before", front, self.front), ("after", back, self.back)):
            bad = np.nonzero(got != want)[0]
            assert bad.size == 0, (f"a kernel wrote {bad.size} bytes {name} its buffer (nearest at "
                                   f"{(GUARD * self.item - bad[-1]) if name == 'before' else bad[0] + 1} bytes "
                                   f"from the edge)")
        return whole[self.gbytes:self.gbytes + self.nbytes].view(self.dtype).reshape(self.shape)


@pytest.fixture
def queue():
    return xk.runtime.device.queue_for("opencl:cpu")


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(-100, 100, shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


LOUD = {np.dtype(np.float32): 7e30, np.dtype(np.float16): 6e4, np.dtype(np.int8): 111, np.dtype(np.int32): 7777777}


# ---- tensor descriptors past every edge ------------------------------------------------------------------

@xk.jit
def desc_edges(x_ptr, o_ptr, dump_ptr, M, N, LD, OM, ON, BM: xl.constexpr, BN: xl.constexpr):
    """Block (pm, pn) starts at (OM + pm*BM, ON + pn*BN): with negative OM/ON and a grid one block
    too large, blocks hang over the top, bottom, left, right and corners, and some lie wholly outside.
    The loaded block (zero-padded) also goes whole into ``dump``, so the padding is checked."""
    pm = xl.program_id(0)
    pn = xl.program_id(1)
    m0 = OM + pm * BM
    n0 = ON + pn * BN
    x = xl.make_tensor_descriptor(x_ptr, shape=(M, N), strides=(LD, 1), block_shape=(BM, BN))
    o = xl.make_tensor_descriptor(o_ptr, shape=(M, N), strides=(LD, 1), block_shape=(BM, BN))
    v = x.load((m0, n0))
    o.store((m0, n0), v + 1)
    rm = xl.arange(0, BM)
    rn = xl.arange(0, BN)
    blk = pm * xl.num_programs(1) + pn
    xl.store(dump_ptr + blk * (BM * BN) + rm[:, None] * BN + rn[None, :], v)


# (M, N, row pitch LD) — odd shapes, one smaller than a block, a padded pitch whose gap must survive
DESC_SHAPES = [(37, 53, 53), (1, 1, 1), (5, 3, 11), (40, 70, 77), (16, 32, 32)]
DESC_OFFSETS = [(0, 0), (-5, -3), (-16, -32), (-15, -7), (-1, -31)]  # aligned, odd, a whole block out, mixed


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32])
@pytest.mark.parametrize("block", [(16, 32), (8, 16)])
def test_descriptor_load_store_past_every_edge(rng, queue, target, dtype, block):
    BM, BN = block
    dtype = np.dtype(dtype)
    for M, N, LD in DESC_SHAPES:
        for OM, ON in DESC_OFFSETS:
            OM, ON = max(OM, -BM), max(ON, -BN)
            full = rand(rng, (M, LD), dtype)
            gm, gn = xk.cdiv(M - OM, BM) + 1, xk.cdiv(N - ON, BN) + 1
            x = Guarded(full, queue, loud=LOUD[dtype])
            out_init = poisoned((M, LD), dtype)
            o = Guarded(out_init, queue)
            dump = Guarded(poisoned((gm * gn, BM, BN), dtype), queue)
            desc_edges[(gm, gn)](x.arr, o.arr, dump.arr, M, N, LD, OM, ON, BM=BM, BN=BN, target=target)
            where = f"M={M} N={N} LD={LD} OM={OM} ON={ON}"
            got = o.read()
            want = out_init.copy()
            want[:, :N] = (full[:, :N].astype(np.float64) + 1).astype(dtype)
            # the gap columns N..LD must keep their poison: compare bytes
            assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), where
            padded = np.zeros((gm * BM + 3 * BM, gn * BN + 3 * BN), dtype)  # x with zeros around it
            padded[BM:BM + M, BN:BN + N] = full[:, :N]
            want_dump = np.stack([padded[BM + OM + pm * BM:][:BM, BN + ON + pn * BN:][:, :BN]
                                  for pm in range(gm) for pn in range(gn)])
            np.testing.assert_array_equal(dump.read(), want_dump, err_msg=where)
            x.read()  # loads never write


@xk.jit
def desc_1d(x_ptr, o_ptr, n, OFF, B: xl.constexpr):
    s = OFF + xl.program_id(0) * B
    x = xl.make_tensor_descriptor(x_ptr, shape=(n,), strides=(1,), block_shape=(B,))
    o = xl.make_tensor_descriptor(o_ptr, shape=(n,), strides=(1,), block_shape=(B,))
    o.store((s,), x.load((s,)) * 2.0)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("n", [1, 15, 16, 17, 333])
def test_1d_descriptor_past_both_ends(rng, queue, target, n):
    B = 16
    full = rand(rng, n, np.float32)
    x = Guarded(full, queue, loud=LOUD[np.dtype(np.float32)])
    o = Guarded(poisoned(n, np.float32), queue)
    desc_1d[(xk.cdiv(n + 7, B) + 1,)](x.arr, o.arr, n, -7, B=B, target=target)
    np.testing.assert_array_equal(o.read(), full * 2)


# ---- masked gathers and scatters ---------------------------------------------------------------------------

@xk.jit
def gather_scatter(x_ptr, idx_ptr, perm_ptr, g_ptr, s_ptr, n, BLOCK: xl.constexpr):
    """g[i] = x[idx[i]] and s[perm[i]] = x[i] for i < n; lanes past n read idx/perm entries that
    are wild (far outside every buffer), so only the mask keeps them off memory."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    idx = xl.load(idx_ptr + offs, mask=mask, other=-100000)
    perm = xl.load(perm_ptr + offs, mask=mask, other=100000)
    v = xl.load(x_ptr + idx, mask=mask, other=0.0)
    xl.store(g_ptr + offs, v, mask=mask)
    w = xl.load(x_ptr + offs, mask=mask)
    xl.store(s_ptr + perm, w * 3.0, mask=mask & (perm >= 0))


@xk.jit
def gather_narrow(x_ptr, idx_ptr, g_ptr, n, BLOCK: xl.constexpr):
    """g[i] = x[idx[i]] for 8- and 16-bit elements, which the CPU emitter reads out of the aligned
    dword holding each (``Emitter.dword_gathers``); lanes past n carry wild indices."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    idx = xl.load(idx_ptr + offs, mask=mask, other=-100000)
    xl.store(g_ptr + offs, xl.load(x_ptr + idx, mask=mask, other=0), mask=mask)


NARROW_LOUD = {"float16": 6e4, "bfloat16": 3e38, "int8": 111, "uint8": 222}


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("dtype", list(NARROW_LOUD))
@pytest.mark.parametrize("n", [1, 3, 37, 1001])
def test_narrow_gathers_take_only_their_element(rng, queue, target, dtype, n):
    """The first and the last element among the gathered ones, from a buffer whose guards are loud:
    the dword around an edge element holds guard bytes, which must not reach the result; nor may
    its neighbours' bytes (every position in a dword is gathered)."""
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    x = rand(rng, n, np.float32).astype(dt) if dt.kind == "V" or dt.name == "bfloat16" else rand(rng, n, dt)
    if dt.kind == "u":
        x = rng.integers(0, 255, n, endpoint=True).astype(dt)
    idx = rng.integers(0, n, n).astype(np.int32)
    idx[0], idx[-1] = n - 1, 0
    gx = Guarded(x, queue, loud=NARROW_LOUD[dtype])
    g = Guarded(poisoned(n, dt), queue)
    gather_narrow[(xk.cdiv(n, 64) + 1,)](gx.arr, idx, g.arr, n, BLOCK=64, target=target)
    bits = np.dtype(f"u{dt.itemsize}")
    np.testing.assert_array_equal(g.read().view(bits), x[idx].view(bits))


def test_narrow_gathers_read_dwords_on_the_cpu_only():
    """The CPU's gather of 16-bit elements loads i32 (one vector gather for the CPU runtime) and no
    half; a GPU emitter loads the element itself."""
    sig = dict(x_ptr=xk.pointer(xl.float16), idx_ptr=xk.pointer(xl.int32), g_ptr=xk.pointer(xl.float16),
               n=xl.int32, BLOCK=64)
    cpu = gather_narrow.compile_offline(sig, target="cpu").asm["llir_unoptimized"]
    gpu = gather_narrow.compile_offline(sig, target="pvc").asm["llir_unoptimized"]
    assert "load i32, ptr addrspace(1)" in cpu and "load half" not in cpu, cpu
    assert "load half" in gpu, gpu


@xk.jit
def gather_2d(x_ptr, o_ptr, M, N, BM: xl.constexpr, BN: xl.constexpr):
    """A transposing copy of a ragged 2-D tile with a 2-D mask (both edges at once)."""
    rm = xl.program_id(0) * BM + xl.arange(0, BM)
    rn = xl.program_id(1) * BN + xl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    v = xl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=m, other=0.0)
    xl.store(o_ptr + rn[None, :] * M + rm[:, None], v - 1.0, mask=m)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("n", [1, 37, 255, 1000])
def test_masked_gather_scatter_with_wild_masked_lanes(rng, queue, target, n):
    x = rand(rng, n, np.float32)
    idx = rng.integers(0, n, n).astype(np.int32)
    perm = rng.permutation(n).astype(np.int32)
    perm[rng.random(n) < 0.2] = -1  # some elements are not scattered at all
    gx = Guarded(x, queue, loud=LOUD[np.dtype(np.float32)])
    g = Guarded(poisoned(n, np.float32), queue)
    s = Guarded(poisoned(n, np.float32), queue)
    gather_scatter[(xk.cdiv(n, 64) + 1,)](gx.arr, idx, perm, g.arr, s.arr, n, BLOCK=64, target=target)
    np.testing.assert_array_equal(g.read(), x[idx])
    want = poisoned(n, np.float32)
    keep = perm >= 0
    want[perm[keep]] = x[keep].astype(np.float64) * 3
    np.testing.assert_array_equal(s.read(), want)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("shape", [(1, 1), (37, 53), (64, 5), (3, 130)])
def test_masked_2d_tiles_at_both_edges(rng, queue, target, shape):
    M, N = shape
    x = rand(rng, shape, np.float32)
    gx = Guarded(x, queue, loud=LOUD[np.dtype(np.float32)])
    o = Guarded(poisoned((N, M), np.float32), queue)
    gather_2d[(xk.cdiv(M, 16) + 1, xk.cdiv(N, 32) + 1)](gx.arr, o.arr, M, N, BM=16, BN=32, target=target)
    np.testing.assert_array_equal(o.read(), (x.astype(np.float64) - 1).T.astype(np.float32))


@xk.jit
def scatter_chunks(x_ptr, o_ptr, n, R: xl.constexpr, C: xl.constexpr):
    """Chunked scattered descriptors (create_tdesc): row r of x goes to row n-1-r of o; lanes past n
    carry offsets far outside o."""
    rows = xl.program_id(0) * R + xl.arange(0, R)
    mask = rows < n
    d = xl.create_tdesc(x_ptr, xl.where(mask, rows * C, -1000000), chunk_size=C)
    v = d.load(mask=mask, other=0.0)
    e = xl.create_tdesc(o_ptr, xl.where(mask, (n - 1 - rows) * C, 1000000), chunk_size=C)
    e.store(v + 0.5, mask=mask)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("chunk", [1, 2, 4, 8])
def test_chunked_scatter_with_wild_masked_lanes(rng, queue, target, chunk):
    n = 45
    x = rand(rng, (n, chunk), np.float32)
    gx = Guarded(x, queue, loud=LOUD[np.dtype(np.float32)])
    o = Guarded(poisoned((n, chunk), np.float32), queue)
    scatter_chunks[(xk.cdiv(n, 16) + 1,)](gx.arr, o.arr, n, R=16, C=chunk, target=target)
    np.testing.assert_array_equal(o.read(), (x[::-1].astype(np.float64) + 0.5).astype(np.float32))


# ---- atomics at the edges ------------------------------------------------------------------------------------

@xk.jit
def atomic_edges(vi_ptr, vf_ptr, ai_ptr, af_ptr, n, S, BLOCK: xl.constexpr):
    """Each kind of atomic on slots ``offs % S`` with the grid overshooting n; masked-off lanes
    point far past the slot buffers."""
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    mask = offs < n
    s = xl.where(mask, offs % S, offs * 1000 + 100000)
    vi = xl.load(vi_ptr + offs, mask=mask, other=0)
    vf = xl.load(vf_ptr + offs, mask=mask, other=0.0)
    xl.atomic_add(ai_ptr + s, vi, mask=mask)
    xl.atomic_max(ai_ptr + S + s, vi, mask=mask)
    xl.atomic_min(ai_ptr + 2 * S + s, vi, mask=mask)
    xl.atomic_or(ai_ptr + 3 * S + s, vi & 0xFFFF, mask=mask)
    xl.atomic_xchg(ai_ptr + 4 * S + s, offs, mask=mask)
    xl.atomic_cas(ai_ptr + 5 * S + s, -1, offs, mask=mask)
    xl.atomic_add(af_ptr + s, vf, mask=mask)
    xl.atomic_max(af_ptr + S + s, vf, mask=mask)
    xl.atomic_min(af_ptr + 2 * S + s, vf, mask=mask)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("n,S", [(1, 1), (100, 7), (1000, 1000), (777, 13)])
def test_atomics_at_edges_touch_only_their_slots(rng, queue, target, n, S):
    vi = rng.integers(-1000, 1000, n).astype(np.int32)
    vf = rng.standard_normal(n).astype(np.float32)
    ai0 = np.concatenate([np.zeros(S), np.full(S, -2**31), np.full(S, 2**31 - 1), np.zeros(S),
                          np.full(S, -1), np.full(S, -1)]).astype(np.int32)
    af0 = np.concatenate([np.zeros(S), np.full(S, -np.inf), np.full(S, np.inf)]).astype(np.float32)
    ai, af = Guarded(ai0, queue), Guarded(af0, queue)
    atomic_edges[(xk.cdiv(n, 128) + 1,)](vi, vf, ai.arr, af.arr, n, S, BLOCK=128, target=target)
    slot = np.arange(n) % S
    used = np.bincount(slot, minlength=S) > 0
    gi, gf = ai.read().reshape(6, S), af.read().reshape(3, S)
    groups = [slot == j for j in range(S)]
    np.testing.assert_array_equal(gi[0], [vi[m].sum() for m in groups])
    np.testing.assert_array_equal(gi[1][used], [vi[m].max() for m, u in zip(groups, used) if u])
    np.testing.assert_array_equal(gi[2][used], [vi[m].min() for m, u in zip(groups, used) if u])
    np.testing.assert_array_equal(gi[3], [np.bitwise_or.reduce(vi[m] & 0xFFFF) if m.any() else 0 for m in groups])
    for j in range(S):
        if used[j]:
            assert slot[gi[4][j]] == j and slot[gi[5][j]] == j  # one of the slot's writers won
        else:
            assert gi[4][j] == -1 and gi[5][j] == -1
    np.testing.assert_allclose(gf[0], [vf[m].astype(np.float64).sum() for m in groups], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(gf[1][used], [vf[m].max() for m, u in zip(groups, used) if u])
    np.testing.assert_array_equal(gf[2][used], [vf[m].min() for m, u in zip(groups, used) if u])


@xk.jit
def masked_copy(x_ptr, o_ptr, n, B: xl.constexpr):
    offs = xl.program_id(0) * B + xl.arange(0, B)
    xl.store(o_ptr + offs, xl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_the_canaries_catch_a_write_past_the_end(queue):
    """The harness itself: a kernel that really writes one element past its buffer is caught (a
    descriptor that claims too much is refused at launch instead: runtime/extents.py)."""
    o = Guarded(poisoned(40, np.float32), queue)
    x = np.ones(41, np.float32)
    with pytest.raises(xk.LaunchError, match="argument 'o_ptr' holds 40 float32 elements"):
        desc_1d[(3,)](x, o.arr, 41, 0, B=16, target="cpu")
    masked_copy[(3,)](x, o.arr, 41, B=16, target="cpu")  # told n=41 for a buffer of 40
    with pytest.raises(AssertionError, match="wrote 4 bytes after its buffer"):
        o.read()


# ---- dg2's GEMM: per-lane row runs and rows staged through SLM, past every edge ----------------------

DG2_GEMM = [("bf16", "nn", 528, 80, 112), ("bf16", "nn", 45, 37, 97), ("int8", "nt", 45, 37, 70),
            ("bf16", "tn", 48, 80, 96)]


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "registers"])
@pytest.mark.parametrize("dtype,layout,m,n,k", DG2_GEMM, ids=[f"{d}-{lay}-{m}x{n}x{k}" for d, lay, m, n, k in DG2_GEMM])
def test_dg2_gemm_reads_nothing_past_its_operands(rng, queue, dtype, layout, m, n, k, fused):
    """gemm.py's first dg2 config for the layout on cpu8 (its lane code is dg2's): B's rows read per
    lane and staged through SLM, the K steps inside the tensors without tests (split-edges), the
    rest per lane and run, element by element where a run is cut. The CPU device reads DPAS
    operands loaded as they lie itself (fused loads); ``registers`` turns that off (the cpu emitter
    without ``fused_dpas_loads``), so the operands are read as on dg2: A^T's rows per lane, the rest
    through SLM.
    Operands with loud guards (bf16: inf, so that a read past K shows in C even where the other
    operand is zero there), C with canaries; M, N, K cut the tiles (97, 70: no dword rows)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "gemm"))
    import gemm as G
    import dataclasses
    from xekern.lowering import emitters
    cpu8 = xk.get_target("cpu8")
    emitter = None if fused else dataclasses.replace(emitters.choose(cpu8, emitters.default_driver(cpu8)),
                                                     fused_dpas_loads=False)
    a, b, sa, sb = G.make_inputs(rng, m, n, k, dtype, layout)
    loud = np.inf if dtype == "bf16" else 111
    ga, gb = Guarded(sa, queue, loud=loud), Guarded(sb, queue, loud=loud)
    out_dt = np.dtype(G.DTYPES[dtype][2])
    c_init = poisoned((m, n), out_dt)
    gc = Guarded(c_init, queue)
    G.gemm(ga.arr, gb.arr, gc.arr, layout=layout, config=G.configs_for(dtype, "dg2", layout)[0], target="cpu8",
           emitter=emitter).wait()
    ref = G.reference(a, b)
    np.testing.assert_allclose(gc.read().astype(np.float64), ref, rtol=0,
                               atol=G.tolerance(dtype, k) * max(1.0, np.abs(ref).max()))
    ga.read(), gb.read()   # loads never write
