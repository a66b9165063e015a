"""First call of the Triton tutorial kernels on the CPU device, in a new process, driver build included.

    python benchmarks/first_call.py              # every case, cold then warm, median of 1 process each
    python benchmarks/first_call.py --reps 3 --only 03

Each case is one kernel of examples/triton_ports (and the flagship attention's forward, from
examples/attention) launched once with one configuration (an
autotuned port is called through its ``jit`` function with the configuration named below, so a
figure is one compile and one driver build, not a tuning sweep). A measurement is a fresh Python
process: ``import xekern`` and the CPU device are set up first (not counted), then the clock runs
from the call to the end of the kernel. Two start states:

* ``cold``: an empty ``XEKERN_CACHE_DIR`` (xekern compiles; the OpenCL driver builds);
* ``warm``: the same cache a second time (xekern finds the kernel on disk, and the driver's binary
  an earlier process kept: ``runtime/program_binaries.py``).

``own`` is xekern's compile (frontend to SPIR-V), ``driver`` the OpenCL driver's build of the
SPIR-V (warm: of the kept binary), ``run`` what is left (argument copies, the launch, the kernel). The load average is
printed: figures taken while other work runs are noise.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import textwrap

import fresh_process

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name -> (port module, python lines that define `call` (a function of no argument) from `port`, `np`, `rng`)
CASES = {
    "01 vector add, 98,431": ("01_vector_add", """
        x = xk.to_device(rng.random(98_431, dtype=np.float32)); y = xk.to_device(rng.random(98_431, dtype=np.float32))
        call = lambda: port.add(x, y)"""),
    "02 fused softmax, 1,823 x 781": ("02_fused_softmax", """
        x = rng.standard_normal((1823, 781), dtype=np.float32)
        call = lambda: port.softmax(x)"""),
    "03 matmul f16, 64x64x32, 4 subgroups": ("03_matrix_multiplication", """
        a = rng.standard_normal((256, 192)).astype(np.float16); b = rng.standard_normal((192, 320)).astype(np.float16)
        c = np.empty((256, 320), np.float16)
        def call():
            port.matmul_kernel.fn[(4 * 5,)](a, b, c, 256, 320, 192, 192, 1, 320, 1, 320, 1, BLOCK_SIZE_M=64,
                                            BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="",
                                            num_subgroups=4)"""),
    "03a descriptor matmul f16, 128x128x32, 8 subgroups": ("03a_matrix_multiplication_descriptor", """
        a = rng.standard_normal((256, 192)).astype(np.float16); b = rng.standard_normal((320, 192)).astype(np.float16)
        c = np.empty((256, 320), np.float16)
        xk.set_allocator(lambda size, alignment, stream: xk.empty(size, dtype=np.int8))
        def call():
            port.matmul_kernel_descriptor_persistent.fn[(6,)](
                a, b, c, 256, 320, 192, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8,
                EPILOGUE_SUBTILE=False, NUM_SMS=6, WARP_SPECIALIZE=False, num_subgroups=8)"""),
    "04 seeded dropout, 98,431": ("04_low_memory_dropout", """
        x = rng.standard_normal(98_431).astype(np.float32)
        call = lambda: port.seeded_dropout(x, 0.5, 123)"""),
    "05 layer norm fwd, 1,151 x 8,192": ("05_layer_norm", """
        x = rng.standard_normal((1151, 8192)).astype(np.float32)
        w = rng.random(8192, dtype=np.float32); bias = rng.random(8192, dtype=np.float32)
        call = lambda: port.layer_norm(x, (8192,), w, bias, 1e-5)"""),
    "06 attention fwd f16, 1x2x224x64": ("06_fused_attention", """
        q, k, v = (rng.standard_normal((1, 2, 224, 64)).astype(np.float16) for _ in range(3))
        call = lambda: port.attention(q, k, v, False, 0.125)"""),
    "attention (examples/attention) fwd f16, 1x2x77x64": ("../attention/attention", """
        q, k, v = (rng.standard_normal((1, 2, 77, 64)).astype(np.float16) for _ in range(3))
        o, lse2 = np.empty_like(q), np.empty((1, 2, 77), np.float32)
        config = xk.Config(dict(BM=32, BN=32), num_subgroups=2)
        call = lambda: port.forward(q, k, v, o, lse2, 0.125, config=config)"""),
}

SCRIPT = textwrap.dedent("""
    import importlib.util, json, sys, time
    import numpy as np
    import xekern as xk
    from xekern.runtime.cache import stats
    spec = importlib.util.spec_from_file_location("port", {path!r})
    port = importlib.util.module_from_spec(spec); spec.loader.exec_module(port)
    xk.runtime.device.default_queue()
    rng = np.random.default_rng(0)
    SETUP
    t = time.perf_counter()
    r = call()
    getattr(r, "wait", lambda: None)()
    total = time.perf_counter() - t
    print(json.dumps(dict(total=total, own=stats["compile_s"], driver=stats["driver_build_s"],
                          compiles=stats["compiles"], disk_hits=stats["disk_hits"])))
""")


def run(name: str, cache: str) -> dict:
    module, setup = CASES[name]
    path = os.path.join(ROOT, "examples", "triton_ports", module + ".py")
    script = SCRIPT.format(path=path).replace("SETUP", textwrap.dedent(setup).strip())
    return fresh_process.run(script, cache, timeout=900, what=name, XEKERN_DEVICE="opencl:cpu", PYTHONPATH=ROOT)


def measure(name: str, reps: int) -> dict:
    cold, warm = [], []
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(run(name, cache))
            warm.append(run(name, cache))
    med = {}
    for state, runs in (("cold", cold), ("warm", warm)):
        for k in ("total", "own", "driver"):
            med[f"{state} {k}"] = statistics.median(r[k] for r in runs)
        med[f"{state} compiles"] = runs[0]["compiles"]
    return med


def main(argv=None):
    args = fresh_process.arguments(__doc__, 1, "case names", argv)
    print(fresh_process.machine())
    print(f"seconds, median of {args.reps} fresh process(es) per state; total = call to end of kernel")
    print(f"{'case':52} {'cold':>6} {'own':>6} {'driver':>6}   {'warm':>6} {'own':>6} {'driver':>6}  compiles")
    out = {}
    for name in CASES:
        if args.only and args.only not in name:
            continue
        m = out[name] = measure(name, args.reps)
        print(f"{name:52} {m['cold total']:6.2f} {m['cold own']:6.2f} {m['cold driver']:6.2f}   "
              f"{m['warm total']:6.2f} {m['warm own']:6.2f} {m['warm driver']:6.2f}  "
              f"{m['cold compiles']}/{m['warm compiles']}", flush=True)
    fresh_process.finish(out, args.json)


if __name__ == "__main__":
    main()
