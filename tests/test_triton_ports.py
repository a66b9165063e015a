"""Triton's tutorials ported to xekern (examples/triton_ports): every port's kernel and host code
run on the CPU device at odd sizes against float64 NumPy, on fresh random data, with outputs
poisoned first (NaN) so unwritten elements are caught.

A port changes only imports, the array library and hardware tuning options. Where it needs
more, the test is ``xfail(strict=True)`` with the precise gap, and the "gaps" section at the
end has one minimal test per gap: when xekern closes a gap, its test passes, strict xfail turns
that into a failure, and the mark is removed.
"""
import importlib.util
import os

import numpy as np
import pytest

import xekern as xk
import xekern.language as xl
from conftest import CPU_TARGETS, poisoned

PORTS = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "triton_ports")

# ---- the gaps, each spelled once -----------------------------------------------------------------


def xfail(*gaps):
    return pytest.mark.xfail(strict=True, reason="; ".join(gaps))


# ---- loading the ports ------------------------------------------------------------------------------

def load_port(name):
    """Import ``examples/triton_ports/<name>.py`` (the names start with digits) as a fresh module."""
    path = os.path.join(PORTS, name + ".py")
    spec = importlib.util.spec_from_file_location(f"triton_port_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(autouse=True)
def cpu_device(monkeypatch):
    """Every port runs on the OpenCL CPU device (its host code uses the default device)."""
    monkeypatch.setenv("XEKERN_DEVICE", "opencl:cpu")


class _PoisoningNumpy:
    """NumPy, except that ``empty`` and ``empty_like`` return poisoned arrays: installed as a port's
    ``np`` so that the outputs its host code allocates start as NaN."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(shape, dtype=float, **_):
        return poisoned(shape, dtype)

    @staticmethod
    def empty_like(a, dtype=None, **_):
        return poisoned(a.shape, dtype or a.dtype)


def with_poisoned_outputs(mod, monkeypatch):
    monkeypatch.setattr(mod, "np", _PoisoningNumpy())
    return mod


def next_pow2(n):
    return 1 << (n - 1).bit_length()


def stride(a, dim):
    return a.strides[dim] // a.itemsize


# ---- 01 vector add ----------------------------------------------------------------------------------

@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("n", [1, 1000, 98_431])
def test_01_add_kernel(rng, target, n):
    port = load_port("01_vector_add")
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    port.add_kernel[(xk.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024, target=target)
    # one float32 rounding of the exact sum
    np.testing.assert_array_equal(out, (x.astype(np.float64) + y.astype(np.float64)).astype(np.float32))


def test_01_add_host_code_with_device_arrays(rng, monkeypatch):
    port = load_port("01_vector_add")
    real_empty = xk.empty
    monkeypatch.setattr(port.xk, "empty", lambda *a, **k: real_empty(*a, **k).fill_bytes(0xFF))  # NaN
    n = 12_345
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = port.add(xk.to_device(x), xk.to_device(y))
    assert isinstance(out, xk.DeviceArray)
    np.testing.assert_array_equal(out.numpy(), (x.astype(np.float64) + y.astype(np.float64)).astype(np.float32))


def test_01_main(capsys):
    load_port("01_vector_add").main()
    assert "maximum difference between numpy and xekern is 0.0" in capsys.readouterr().out


# ---- 02 fused softmax ------------------------------------------------------------------------------

def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("n_rows,n_cols,programs", [(37, 781, 5), (1, 3, 1), (130, 1025, 7), (9, 64, 16)])
def test_02_softmax_kernel_persistent_rows(rng, target, n_rows, n_cols, programs):
    port = load_port("02_fused_softmax")
    x = (4 * rng.standard_normal((n_rows, n_cols))).astype(np.float32)
    y = poisoned((n_rows, n_cols), np.float32)
    # fewer programs than rows (the persistent loop strides by num_programs), or more
    port.softmax_kernel[(programs, 1, 1)](y, x, stride(x, 0), stride(y, 0), n_rows, n_cols,
                                          BLOCK_SIZE=next_pow2(n_cols), num_stages=2, num_subgroups=8,
                                          target=target)
    np.testing.assert_allclose(y, softmax_ref(x), rtol=1e-5, atol=1e-7)


def test_02_softmax_on_a_strided_row_view(rng):
    """Row strides differ from the row length: every other row of a wider array."""
    port = load_port("02_fused_softmax")
    big = rng.standard_normal((2 * 21, 300)).astype(np.float32)
    x = np.ascontiguousarray(big)  # rows 0, 2, 4, ... read through input_row_stride = 2 * 300
    y = poisoned((21, 257), np.float32)
    port.softmax_kernel[(4,)](y, x, 2 * 300, 257, 21, 257, BLOCK_SIZE=512, num_stages=2, num_subgroups=8)
    np.testing.assert_allclose(y, softmax_ref(big[::2, :257]), rtol=1e-5, atol=1e-7)


def test_02_softmax_host_code(rng, monkeypatch):
    port = with_poisoned_outputs(load_port("02_fused_softmax"), monkeypatch)
    x = rng.standard_normal((123, 517)).astype(np.float32)
    np.testing.assert_allclose(port.softmax(x), softmax_ref(x), rtol=1e-5, atol=1e-7)


def test_02_main():
    load_port("02_fused_softmax").main()


# ---- 03 matrix multiplication (pointer form) ---------------------------------------------------------

def matmul_ref(a, b, activation=""):
    c = a.astype(np.float64) @ b.astype(np.float64)
    return np.where(c >= 0, c, 0.01 * c) if activation == "leaky_relu" else c


def assert_fp16_matmul(c, ref):
    assert c.dtype == np.float16
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("M,N,K,BM,BN,BK,G,ns,activation", [
    (67, 45, 77, 32, 32, 32, 4, 4, ""),
    (131, 97, 200, 64, 64, 32, 8, 4, "leaky_relu"),
    (257, 129, 100, 64, 128, 32, 8, 8, ""),
])
def test_03_matmul_kernel(rng, M, N, K, BM, BN, BK, G, ns, activation):
    port = load_port("03_matrix_multiplication")
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = poisoned((M, N), np.float16)
    grid = (xk.cdiv(M, BM) * xk.cdiv(N, BN),)
    port.matmul_kernel.fn[grid](a, b, c, M, N, K, stride(a, 0), stride(a, 1), stride(b, 0), stride(b, 1),
                                stride(c, 0), stride(c, 1), BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK,
                                GROUP_SIZE_M=G, ACTIVATION=activation, num_subgroups=ns)
    assert_fp16_matmul(c, matmul_ref(a, b, activation))


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_03_matmul_host_code_autotuned(rng, monkeypatch, activation):
    port = with_poisoned_outputs(load_port("03_matrix_multiplication"), monkeypatch)
    # the port's configs are sized for GPUs; the two smallest keep the CPU run short
    monkeypatch.setattr(port.matmul_kernel, "configs", port.get_autotune_config()[-2:])
    a = rng.standard_normal((93, 71)).astype(np.float16)
    b = rng.standard_normal((71, 133)).astype(np.float16)
    assert_fp16_matmul(port.matmul(a, b, activation), matmul_ref(a, b, activation))


# ---- 03a matrix multiplication (tensor descriptors) ----------------------------------------------------

@pytest.mark.parametrize("subtile,M,N,K,BM,BN,BK,ns,num_sms", [
    (False, 67, 45, 77, 32, 32, 32, 4, 3),
    (False, 131, 97, 200, 64, 64, 32, 8, 5),
    (True, 67, 45, 77, 32, 32, 32, 4, 3),  # EPILOGUE_SUBTILE (reshape through SLM): one case, ~50 s on the CPU
])
def test_03a_descriptor_matmul_kernel(rng, subtile, M, N, K, BM, BN, BK, ns, num_sms):
    port = load_port("03a_matrix_multiplication_descriptor")
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)  # B is given transposed: N x K
    c = poisoned((M, N), np.float16)
    grid = (min(num_sms, xk.cdiv(M, BM) * xk.cdiv(N, BN)),)
    port.matmul_kernel_descriptor_persistent.fn[grid](
        a, b, c, M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=8,
        EPILOGUE_SUBTILE=subtile, NUM_SMS=num_sms, WARP_SPECIALIZE=False, num_subgroups=ns)
    assert_fp16_matmul(c, matmul_ref(a, b.T))


def test_03a_descriptor_matmul_host_code_autotuned(rng, monkeypatch):
    port = with_poisoned_outputs(load_port("03a_matrix_multiplication_descriptor"), monkeypatch)
    small = [xk.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                        "EPILOGUE_SUBTILE": False}, num_subgroups=4)]
    monkeypatch.setattr(port.matmul_kernel_descriptor_persistent, "configs", small)
    a = rng.standard_normal((93, 71)).astype(np.float16)
    b = rng.standard_normal((133, 71)).astype(np.float16)
    assert_fp16_matmul(port.matmul_descriptor_persistent(a, b), matmul_ref(a, b.T))


# ---- 05 layer norm ------------------------------------------------------------------------------------

def layer_norm_case(rng, M, N, dtype):
    x = (-2.3 + 0.5 * rng.standard_normal((M, N))).astype(dtype)
    w = rng.random(N).astype(dtype)
    b = rng.random(N).astype(dtype)
    return x, w, b


def assert_layer_norm(port, x, w, b, eps, y, mean, rstd):
    y_ref, mean_ref, rstd_ref = port.reference_layer_norm(x, w, b, eps)
    tol = 1e-2 if x.dtype == np.float16 else 1e-5
    np.testing.assert_allclose(y.astype(np.float64), y_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=1e-5)


@pytest.mark.parametrize("target", CPU_TARGETS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("M,N,BLOCK_SIZE", [(37, 1000, 256), (3, 1531, 2048), (11, 17, 32)])
def test_05_layer_norm_kernel(rng, target, dtype, M, N, BLOCK_SIZE):
    port = load_port("05_layer_norm")
    x, w, b = layer_norm_case(rng, M, N, dtype)
    y, mean, rstd = poisoned((M, N), dtype), poisoned(M, np.float32), poisoned(M, np.float32)
    num_subgroups = min(max(BLOCK_SIZE // 256, 1), 8)  # the port's heuristic
    port._layer_norm_fwd_fused[(M,)](x, y, w, b, mean, rstd, stride(x, 0), N, 1e-5, BLOCK_SIZE=BLOCK_SIZE,
                                     num_subgroups=num_subgroups, target=target)
    assert_layer_norm(port, x, w, b, 1e-5, y, mean, rstd)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_05_layer_norm_host_code(rng, monkeypatch, dtype):
    port = with_poisoned_outputs(load_port("05_layer_norm"), monkeypatch)
    x, w, b = layer_norm_case(rng, 2 * 7 * 5, 777, dtype)
    x = x.reshape(2, 35, 777)  # the host code flattens leading dimensions
    y, mean, rstd = port.layer_norm(x, (777,), w, b, 1e-5)
    assert y.shape == x.shape
    assert_layer_norm(port, x.reshape(-1, 777), w, b, 1e-5, y.reshape(-1, 777), mean, rstd)


def test_05_main():
    load_port("05_layer_norm").main()


# ---- 06: fused attention (block pointers, an inlined helper with constexpr-annotated tensors) ----------

@pytest.mark.parametrize("causal", [False, True])
def test_06_fused_attention_forward(rng, causal):
    """The tutorial's block-pointer forward (K through a transposed view, order (0, 1)); N_CTX a
    multiple of BLOCK_M, as the tutorial requires; outputs poisoned."""
    m = load_port("06_fused_attention")
    Z, H, N_CTX, D = 2, 1, 64, 64
    q, k, v = ((rng.standard_normal((Z, H, N_CTX, D)) * 0.5).astype(np.float16) for _ in range(3))
    sm_scale = 0.125
    o, M = m.attention(q, k, v, causal, sm_scale)
    ref = m.reference(q, k, v, causal, sm_scale)
    np.testing.assert_allclose(o.astype(np.float64), ref, atol=2e-3)
    s = np.einsum("zhmd,zhnd->zhmn", q.astype(np.float64), k.astype(np.float64)) * sm_scale
    if causal:
        s = np.where(np.tril(np.ones((N_CTX, N_CTX), bool)), s, -np.inf)
    lse2 = np.log2(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1) / np.log(2)
    np.testing.assert_allclose(M, lse2, atol=2e-3)


# ---- gaps: one minimal repro each ---------------------------------------------------------------------

@xk.jit
def min_of_runtime_value(out_ptr, n, LIMIT: xl.constexpr):
    xl.store(out_ptr, min(n, LIMIT))
    xl.store(out_ptr + 1, max(n, LIMIT))


def test_gap_python_min_max_on_runtime_values():
    out = poisoned(2, np.int32)
    min_of_runtime_value[(1,)](out, 3, LIMIT=8)
    np.testing.assert_array_equal(out, [3, 8])


@xk.jit
def assume_kernel(out_ptr, n):
    xl.assume(n > 0)
    xl.store(out_ptr, n)


def test_gap_assume():
    out = poisoned(1, np.int32)
    assume_kernel[(1,)](out, 5)
    assert out[0] == 5


def test_gap_next_power_of_2():
    assert [xk.next_power_of_2(n) for n in (1, 2, 3, 781, 1024, 1025)] == [1, 2, 4, 1024, 1024, 2048]


@xk.jit
def fill_kernel(out_ptr, n, value, BLOCK: xl.constexpr):
    offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
    xl.store(out_ptr + offs, xl.full((BLOCK,), value, xl.float32), mask=offs < n)


def test_gap_warmup_result_is_launchable():
    out = poisoned(100, np.float32)
    kernel = fill_kernel.warmup(out, 100, 2.5, BLOCK=64, grid=(1,))
    kernel[(2, 1, 1)](out, 100, 2.5, 64)  # Triton: constexprs positionally, after warmup
    np.testing.assert_array_equal(out, 2.5)


def test_warmup_kernel_refuses_arguments_of_another_specialization():
    out = poisoned(100, np.float32)
    kernel = fill_kernel.warmup(out, 100, 2.5, BLOCK=64, grid=(1,))
    with pytest.raises(xk.LaunchError, match="BLOCK: compiled for 64, got 32"):
        kernel[(1,)](out, 100, 2.5, 32)


@xk.jit
def dot_b_transposed(a_ptr, b_ptr, c_ptr, S: xl.constexpr):
    a_desc = xl.make_tensor_descriptor(a_ptr, shape=[S, S], strides=[S, 1], block_shape=[S, S])
    b_desc = xl.make_tensor_descriptor(b_ptr, shape=[S, S], strides=[S, 1], block_shape=[S, S])
    c_desc = xl.make_tensor_descriptor(c_ptr, shape=[S, S], strides=[S, 1], block_shape=[S, S])
    c_desc.store([0, 0], xl.dot(a_desc.load([0, 0]), b_desc.load([0, 0]).T))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_dot_of_a_transposed_descriptor_load(rng, dtype):
    """03a's ``xl.dot(a, b.T)``: the transpose is free at lane level, so the CPU's DPAS must not
    read B from memory at its own coordinates (it once did, and read B untransposed)."""
    a, b = rng.standard_normal((2, 16, 16)).astype(dtype)
    c = poisoned((16, 16), np.float32)
    dot_b_transposed[(1,)](a, b, c, S=16, num_subgroups=1)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.T.astype(np.float64), rtol=1e-5, atol=1e-5)


@xk.jit
def element_ty_kernel(x_ptr, out_ptr):
    xl.store(out_ptr, xl.load(x_ptr).to(out_ptr.dtype.element_ty))


def test_gap_pointer_element_ty():
    out = poisoned(1, np.float16)
    element_ty_kernel[(1,)](np.array([1.5], np.float32), out)
    assert out[0] == 1.5


@xk.jit
def split_halves(x_ptr, o_ptr, R: xl.constexpr, C: xl.constexpr):
    r = xl.arange(0, R)[:, None]
    c = xl.arange(0, C)[None, :]
    x = xl.load(x_ptr + r * C + c)
    acc = xl.permute(xl.reshape(x, (R, 2, C // 2)), (0, 2, 1))
    a0, a1 = xl.split(acc)
    h = xl.arange(0, C // 2)[None, :]
    xl.store(o_ptr + r * (C // 2) + h, a0 - a1)


def test_gap_reshape_and_split(backend, rng):
    x = rng.standard_normal((16, 32)).astype(np.float32)
    out = poisoned((16, 16), np.float32)
    backend.launch(split_halves, (1,), x, out, R=16, C=32)
    np.testing.assert_array_equal(out, x[:, :16] - x[:, 16:])


def test_gap_set_allocator():
    from xekern.runtime.allocator import get_allocator
    alloc = lambda size, alignment, stream: xk.empty(size, dtype=np.int8)  # noqa: E731
    try:
        xk.set_allocator(alloc)
        assert get_allocator() is alloc  # stored; xekern kernels need no scratch memory, so unused
    finally:
        xk.set_allocator(None)


@xk.jit
def split_join(x_ptr, y_ptr, o_ptr, pairs_ptr, R: xl.constexpr, C: xl.constexpr):
    r = xl.arange(0, R)[:, None]
    c = xl.arange(0, C)[None, :]
    pairs = xl.join(xl.load(x_ptr + r * C + c), xl.load(y_ptr + r * C + c))  # R x C x 2
    p = xl.arange(0, 2)[None, None, :]
    xl.store(pairs_ptr + (r * C + c)[:, :, None] * 2 + p, pairs)
    a, b = xl.split(pairs)
    xl.store(o_ptr + r * C + c, a)
    xl.store(o_ptr + R * C + r * C + c, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_split_and_join(backend, rng, dtype):
    """Exact on every value, -0.0 and NaN included, on the device and in the interpreter."""
    x, y = (rng.standard_normal((2, 8, 32)) * 20).astype(dtype)
    if dtype != np.int8:
        x[0, :3] = [-0.0, np.nan, -np.inf]
        y[1, :2] = [-0.0, np.nan]
    out, pairs = poisoned((2, 8, 32), dtype), poisoned((8, 32, 2), dtype)
    backend.launch(split_join, (1,), x, y, out, pairs, R=8, C=32)
    np.testing.assert_array_equal(pairs, np.stack([x, y], axis=-1))
    np.testing.assert_array_equal(out, np.stack([x, y]))
    assert np.array_equal(np.signbit(out), np.signbit(np.stack([x, y])))


@xk.jit
def interleave_kernel(a_ptr, b_ptr, o_ptr, R: xl.constexpr, C: xl.constexpr):
    r = xl.arange(0, R)[:, None]
    c = xl.arange(0, C)[None, :]
    c2 = xl.arange(0, 2 * C)[None, :]
    xl.store(o_ptr + r * (2 * C) + c2, xl.interleave(xl.load(a_ptr + r * C + c), xl.load(b_ptr + r * C + c)))


def test_gap_interleave(backend, rng):
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    a[0, 0], b[1, 1] = -0.0, np.nan  # exact: signed zeros and NaNs pass through
    out = poisoned((8, 32), np.float32)
    backend.launch(interleave_kernel, (1,), a, b, out, R=8, C=16)
    want = np.stack([a, b], axis=-1).reshape(8, 32)
    np.testing.assert_array_equal(out, want)
    assert np.signbit(out[0, 0])


def test_gap_device_properties():
    import dpctl
    d = dpctl.SyclDevice("opencl:cpu")
    props = xk.device_properties("opencl:cpu")
    assert props["multiprocessor_count"] == d.max_compute_units > 0
    assert props["max_shared_mem"] == d.local_mem_size and props["target"] == "cpu"
    assert props["sub_group_size"] == xk.get_target("cpu").sg_size and 16 in props["sub_group_sizes"]
    assert props["max_work_group_size"] == d.max_work_group_size and props["global_mem_size"] > 0
    assert props == xk.device_properties(d) == xk.device_properties()  # XEKERN_DEVICE=opencl:cpu here
    with pytest.raises(xk.LaunchError, match="names no device"):
        xk.device_properties("level_zero:gpu:7")
