"""Does the OpenCL CPU runtime give back a program's memory when dpctl's objects are released?

    python benchmarks/driver_program_memory.py                 # 200 programs per mode
    python benchmarks/driver_program_memory.py --count 50 --json

xekern is left out of the loop: one small kernel is compiled to SPIR-V once, then copies of it
whose entry-point name is patched in place (``probe_0000``, ``probe_0001``, ...: distinct binaries
the driver cannot recognise as seen before) are built with dpctl directly, as xekern's
``runtime/device.build_kernel`` does; the program, the kernel (and in some modes the queue and
context) are then dropped and ``gc.collect()`` runs. Resident memory (VmRSS) is read before and
after each mode. Modes:

* ``same``: the same binary every time, one queue;
* ``distinct``: a distinct binary every time, one queue;
* ``distinct_launched``: as ``distinct``, each kernel also launched once and waited for;
* ``distinct_new_context``: a distinct binary in a fresh context and queue each time, both dropped;
* ``distinct_handed_back``: as ``distinct``, with the references dpctl leaks handed back as
  xekern's ``build_kernel`` does (``xekern/runtime/driver_refs.py``).

With ``--maps`` the growth is attributed to the process's memory mappings (``/proc/self/smaps``):
anonymous heap (``[heap]`` and anonymous mappings) versus executable mappings (JIT code).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from typing import Dict


def malloc_info() -> Dict[str, int]:
    """glibc's view: KiB handed out by malloc and still in use (``mallinfo2().uordblks``), KiB mmapped."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                    "fsmblks", "uordblks", "fordblks", "keepcost")]
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    m = libc.mallinfo2()
    return {"in_use_kib": (m.uordblks + m.hblkhd) // 1024, "arena_kib": m.arena // 1024, "free_kib": m.fordblks // 1024}


def malloc_trim() -> None:
    import ctypes
    ctypes.CDLL("libc.so.6").malloc_trim(0)


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def smaps_kib() -> Dict[str, int]:
    """Resident KiB by kind of mapping: exec (r-x anonymous or not), heap/anon (rw), file."""
    out = {"exec_anon": 0, "exec_file": 0, "rw_anon": 0, "rw_file": 0, "other": 0}
    kind = "other"
    with open("/proc/self/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and ":" in parts[3]:  # a mapping header
                perms, path = parts[1], parts[5] if len(parts) > 5 else ""
                anon = path == "" or path.startswith("[")
                if "x" in perms:
                    kind = "exec_anon" if anon else "exec_file"
                elif "w" in perms:
                    kind = "rw_anon" if anon else "rw_file"
                else:
                    kind = "other"
            elif parts[0] == "Rss:":
                out[kind] += int(parts[1])
    return out


def probe_spirv() -> bytes:
    """The SPIR-V of a small elementwise kernel named ``probe_0000``."""
    import xekern as xk
    import xekern.language as xl

    def probe_0000(x_ptr, out_ptr, n, BLOCK: xl.constexpr):
        offs = xl.program_id(0) * BLOCK + xl.arange(0, BLOCK)
        mask = offs < n
        xl.store(out_ptr + offs, xl.load(x_ptr + offs, mask=mask) * 3.0 + 1.0, mask=mask)
    k = xk.jit(probe_0000)
    return k.compile_offline({"x_ptr": xk.pointer(xl.float32), "out_ptr": xk.pointer(xl.float32),
                              "n": xl.int32, "BLOCK": 256}, target="cpu").spirv


def variant(spirv: bytes, i: int) -> bytes:
    tag = b"probe_%04d" % (i % 10000)
    assert spirv.count(b"probe_0000") >= 1
    return spirv.replace(b"probe_0000", tag)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--modes", default="same,distinct,distinct_launched,distinct_new_context,distinct_handed_back")
    ap.add_argument("--maps", action="store_true", help="attribute growth to mapping kinds")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    say = (lambda *a: None) if args.json else print
    base = probe_spirv()
    out = {"count": args.count, "spirv_bytes": len(base), "modes": {}}
    if args.modes == "opencl":  # no dpctl or SYCL in this process
        out["modes"] = raw_opencl(base, args.count, say)
        if args.json:
            print(json.dumps(out))
        return out

    import numpy as np
    from xekern.runtime import device as dev
    from xekern.runtime import driver_refs
    dp = dev.dpctl()
    dev_cpu = dp.SyclDevice("opencl:cpu")
    queue = dp.SyclQueue(dev_cpu)
    make = dp.program.create_program_from_spirv
    n = 256
    x = dp.memory.MemoryUSMDevice(4 * n, queue=queue)
    o = dp.memory.MemoryUSMDevice(4 * n, queue=queue)
    x.copy_from_host(np.arange(n, dtype=np.float32).view(np.uint8))

    # warm-up: the runtime's first build loads its compiler
    for i in range(3):
        make(queue, variant(base, 9990 + i)).get_sycl_kernel("probe_%04d" % (9990 + i))
    gc.collect()

    offset = 0
    for mode in args.modes.split(","):
        gc.collect()
        r0, m0, a0 = rss_kib(), smaps_kib() if args.maps else None, malloc_info()
        for i in range(args.count):
            j = 0 if mode == "same" else offset + i + 1
            spv = variant(base, j)
            q = dp.SyclQueue(dp.SyclContext(dev_cpu), dev_cpu) if mode == "distinct_new_context" else queue
            prog = make(q, spv)
            k = prog.get_sycl_kernel("probe_%04d" % j)
            if mode == "distinct_handed_back":
                assert driver_refs.release_leaked(k, q), driver_refs.stats
            if mode == "distinct_launched":
                q.submit(k, [x, o, ctypes_int(n)], [n], [64]).wait()  # 4 subgroups of 16
            del k, prog, q
            gc.collect()
        offset += args.count
        r1 = rss_kib()
        row = {"rss_before_kib": r0, "rss_after_kib": r1, "growth_kib": r1 - r0,
               "per_program_kib": round((r1 - r0) / args.count, 1)}
        row["malloc_in_use_growth_kib"] = malloc_info()["in_use_kib"] - a0["in_use_kib"]
        if args.maps:
            m1 = smaps_kib()
            row["by_mapping_kib"] = {k: m1[k] - m0[k] for k in m0}
        out["modes"][mode] = row
        say(f"{mode:>22}: {args.count} programs, RSS {r0} -> {r1} KiB ({r1 - r0:+d} KiB, "
            f"{row['per_program_kib']} KiB each; malloc in use {row['malloc_in_use_growth_kib']:+d} KiB after "
            f"malloc_trim)" + (f"  by mapping {row['by_mapping_kib']}" if args.maps else ""))
    if args.json:
        print(json.dumps(out))
    return out


def raw_opencl(base: bytes, count: int, say) -> dict:
    """The ``distinct`` loop on the OpenCL C API itself (ctypes, no SYCL or dpctl): clCreateProgramWithIL,
    clBuildProgram, clCreateKernel, then clReleaseKernel and clReleaseProgram; with ``reuse_context``
    false also a context per program, released after it."""
    import ctypes as C
    from xekern.runtime import device as dev
    import tempfile
    lib = dev._ocl_cpu_library()
    if lib:  # the system's ocl-icd reads OCL_ICD_VENDORS (a directory of .icd files), not OCL_ICD_FILENAMES
        d = tempfile.mkdtemp(prefix="xekern-icd-")
        with open(os.path.join(d, "intelocl.icd"), "w") as f:
            f.write(lib + "\n")
        os.environ["OCL_ICD_VENDORS"] = d
    dev.ensure_icd()
    cl = None
    for lib in ("/lib/x86_64-linux-gnu/libOpenCL.so.1", "libOpenCL.so.1"):  # the ICD loader
        try:
            cl = C.CDLL(lib)
            break
        except OSError:
            continue
    assert cl is not None, "no OpenCL ICD loader (libOpenCL.so.1)"
    vp, err = C.c_void_p, C.c_int32()
    cl.clCreateContext.restype = vp
    cl.clCreateProgramWithIL.restype = vp
    cl.clCreateKernel.restype = vp
    cl.clCreateContext.argtypes = [vp, C.c_uint32, C.POINTER(vp), vp, vp, C.POINTER(C.c_int32)]
    cl.clCreateProgramWithIL.argtypes = [vp, C.c_char_p, C.c_size_t, C.POINTER(C.c_int32)]
    cl.clBuildProgram.argtypes = [vp, C.c_uint32, C.POINTER(vp), C.c_char_p, vp, vp]
    cl.clCreateKernel.argtypes = [vp, C.c_char_p, C.POINTER(C.c_int32)]
    cl.clGetPlatformIDs.argtypes = [C.c_uint32, C.POINTER(vp), C.POINTER(C.c_uint32)]
    cl.clGetDeviceIDs.argtypes = [vp, C.c_uint64, C.c_uint32, C.POINTER(vp), C.POINTER(C.c_uint32)]
    for f in ("clReleaseKernel", "clReleaseProgram", "clReleaseContext"):
        getattr(cl, f).argtypes = [vp]
    plats = (vp * 8)()
    nplat = C.c_uint32()
    assert cl.clGetPlatformIDs(8, plats, C.byref(nplat)) == 0
    device = vp()
    for i in range(nplat.value):
        if cl.clGetDeviceIDs(plats[i], 2, 1, C.byref(device), None) == 0:  # CL_DEVICE_TYPE_CPU
            break
    assert device.value, "no OpenCL CPU device"

    def one(ctx, j, release=True):
        spv = variant(base, j)
        prog = cl.clCreateProgramWithIL(ctx, spv, len(spv), C.byref(err))
        assert err.value == 0, err.value
        assert cl.clBuildProgram(prog, 1, C.byref(device), b"", None, None) == 0
        k = cl.clCreateKernel(prog, b"probe_%04d" % j, C.byref(err))
        assert err.value == 0, err.value
        if release:
            cl.clReleaseKernel(k)
            cl.clReleaseProgram(prog)

    out = {}
    ctx = cl.clCreateContext(None, 1, C.byref(device), None, None, C.byref(err))
    for i in range(3):
        one(ctx, 9990 + i)
    for mode, start in (("opencl_distinct", 1000), ("opencl_distinct_new_context", 2000),
                        ("opencl_distinct_unreleased", 3000)):
        gc.collect()
        r0, m0 = rss_kib(), malloc_info()
        for i in range(count):
            if mode != "opencl_distinct_new_context":
                one(ctx, start + i, release=mode == "opencl_distinct")
            else:
                c2 = cl.clCreateContext(None, 1, C.byref(device), None, None, C.byref(err))
                one(c2, start + i)
                cl.clReleaseContext(c2)
        malloc_trim()
        r1, m1 = rss_kib(), malloc_info()
        row = out[mode] = {"rss_before_kib": r0, "rss_after_kib": r1, "growth_kib": r1 - r0,
                           "per_program_kib": round((r1 - r0) / count, 1),
                           "malloc_in_use_growth_kib": m1["in_use_kib"] - m0["in_use_kib"]}
        say(f"{mode:>28}: {count} programs, RSS {r0} -> {r1} KiB ({r1 - r0:+d} KiB, {row['per_program_kib']} KiB "
            f"each; malloc in use {row['malloc_in_use_growth_kib']:+d} KiB after malloc_trim)")
    cl.clReleaseContext(ctx)
    return out


def ctypes_int(v):
    import ctypes
    return ctypes.c_int32(v)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    main()
