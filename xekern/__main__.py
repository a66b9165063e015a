"""``python -m xekern``: devices, offline compilation, GPU ISA, the kernel cache and the knobs.

Every subcommand has ``--help`` with examples::

    python -m xekern devices
    python -m xekern compile k.py:add_kernel --signature "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32" \\
        BLOCK=1024 --target pvc --emit layout
    python -m xekern isa --target pvc gemm.py:gemm -s "a_ptr=*bf16,b_ptr=*bf16,c_ptr=*fp32,M=i32,N=i32,K=i32" \\
        BM=256 BN=256 BK=32 --grf 256
    python -m xekern opt -p sg,inst kernel.ir
    python -m xekern cache info
    python -m xekern knobs

A mistake on the command line or in a kernel (a bad ``FILE:KERNEL``, an unknown type, a
``CompilationError`` with the kernel's file and line, IR text that does not parse or a pass that fails
on it, with its ``file:line:col``, a failing offline GPU tool) is one paragraph
on stderr and exit status 2; ``--debug`` shows the Python traceback as well. An unexpected failure
inside xekern exits with status 1.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import re
import sys
import traceback
from typing import Any, Dict, List, Optional, Tuple

import xekern as xk
from xekern import knobs
from xekern.errors import XekernError
from xekern.ir import ParseError
from xekern.ir import types as T
from xekern.lowering import opt
from xekern.lowering.emitters import NAMES as EMITTERS
from xekern.lowering.opt import OptError
from xekern.lowering.pipeline import PASS_NAMES

# the frontend's IR, every pass's stage (in pipeline order), then codegen's
STAGES = ("xegpu",) + PASS_NAMES + ("emitter", "llir", "llir_unoptimized", "spirv")
EMITS = STAGES + ("isa", "spv")


class UsageError(XekernError):
    """A mistake on the command line: a bad FILE:KERNEL, type spelling, value or option."""


# errors whose message says what they are (printed without their class name)
QUIET_ERRORS = (UsageError, xk.LaunchError, ParseError, OptError)


# ---- types and values ------------------------------------------------------------------------------

# Triton's spellings, next to xekern's own (``float32``, ``bfloat16``) and the IR's (``f32``, ``ui8``).
_TRITON_NAMES = {"fp16": T.float16, "bf16": T.bfloat16, "fp32": T.float32, "fp64": T.float64,
                 "fp8e5": T.float8e5, "fp8e4nv": T.float8e4nv, "fp8e4b8": T.float8e4b8, "fp8e5b16": T.float8e5b16,
                 "i1": T.int1, "i8": T.int8, "i16": T.int16, "i32": T.int32, "i64": T.int64,
                 "u8": T.uint8, "u16": T.uint16, "u32": T.uint32, "u64": T.uint64,
                 "bool": T.int1, "float": T.float32, "int": T.int32}
_TYPE_HELP = ("types are spelled like Triton's (*fp32, *bf16, *fp16, *i8, *u8, *i32, i32, i64, fp32, fp64, i1) "
              "or with xekern's names (*float32, bfloat16, int64); a leading '*' makes a pointer")


def parse_dtype(text: str) -> Optional[T.DType]:
    """``fp32``, ``float32``, ``f32``, ``xl.float32`` -> the DType, or None."""
    name = text.strip()
    for prefix in ("xl.", "xekern.language.", "tl."):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return _TRITON_NAMES.get(name) or T.BY_USER_NAME.get(name) or T.BY_NAME.get(name)


def parse_type(text: str, param: str) -> T.Type:
    """``*bf16`` -> ``xk.pointer(xl.bfloat16)``; ``i32`` -> ``xl.int32``."""
    s = text.strip()
    pointer = s.startswith("*")
    dt = parse_dtype(s[1:] if pointer else s)
    if dt is None:
        hint = (" (xekern's offline signatures have no divisibility hints such as ':16')" if ":" in s else "")
        raise UsageError(f"unknown type {text.strip()!r} for parameter '{param}'{hint}; {_TYPE_HELP}")
    return xk.pointer(dt) if pointer else dt


def parse_value(text: str, param: str) -> Any:
    """A constexpr value: an int (``256``, ``0x100``), float, bool, dtype name or quoted string."""
    s = text.strip()
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    try:
        v = ast.literal_eval(s)
    except (ValueError, SyntaxError):
        v = None
    else:
        if isinstance(v, (int, float, str, tuple)) and not isinstance(v, complex):
            return v
    dt = parse_dtype(s)
    if dt is not None:
        return dt
    raise UsageError(f"cannot read the value {s!r} of constexpr '{param}': give an int (256), a float (0.5), "
                     f"a bool (true), a dtype (bfloat16, xl.float16) or a quoted string ('relu')")


def split_assignment(text: str, where: str) -> Tuple[str, str]:
    name, eq, value = text.partition("=")
    if not eq or not name.strip() or not value.strip():
        raise UsageError(f"{where}: expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


# ---- loading a kernel ------------------------------------------------------------------------------

def _module_name(path: str) -> str:
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0]) or "kernel"
    name = stem if stem.isidentifier() and stem not in sys.modules else f"_xekern_cli_{stem}"
    n = 0
    while name in sys.modules:
        n += 1
        name = f"_xekern_cli_{stem}_{n}"
    return name


def load_module(source: str):
    """A Python file (its directory goes first on sys.path) or an importable module name."""
    path = os.path.abspath(source)
    is_file = os.path.isfile(path)
    if is_file:
        sys.path.insert(0, os.path.dirname(path))
        name = _module_name(path)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"{source} cannot be loaded as a Python module (is it a .py file?)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        run = lambda: spec.loader.exec_module(module)  # noqa: E731
    elif not source.endswith(".py") and "/" not in source and os.sep not in source:
        run = lambda: importlib.import_module(source)  # noqa: E731
    else:
        raise UsageError(f"no such file: {source}")
    try:
        out = run()
    except SyntaxError as e:
        raise UsageError(f"{e.filename}:{e.lineno}: syntax error: {e.msg}\n    {(e.text or '').strip()}") from e
    except ModuleNotFoundError as e:
        if not is_file and e.name == source:
            raise UsageError(f"no such file or module: {source}") from e
        raise UsageError(f"importing {source} failed: {_where(e)}{type(e).__name__}: {e}") from e
    except XekernError:
        raise
    except Exception as e:
        raise UsageError(f"importing {source} failed: {_where(e)}{type(e).__name__}: {e}") from e
    return out if out is not None else module


def _where(e: BaseException) -> str:
    """``file:line: `` of the innermost frame of ``e`` outside xekern and importlib."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if "importlib" not in f.filename and "xekern/__main__" not in f.filename.replace(os.sep, "/")]
    return f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""


def _as_jit(obj):
    """The ``@xk.jit`` function ``obj`` is or wraps (``@xk.autotune`` keeps it as ``.fn``), or None."""
    for o in (obj, getattr(obj, "fn", None)):
        if isinstance(o, xk.JITFunction) or getattr(o, "__xekern_jit__", False) is True:
            return o
    return None


def load_kernel(spec: str) -> xk.JITFunction:
    """``path/to/file.py:kernel`` (or ``package.module:kernel``) -> the ``@xk.jit`` function. The
    kernel name may be left out when the file defines exactly one."""
    source, colon, name = spec.rpartition(":")
    if not colon:
        source, name = spec, ""
    if not source:
        raise UsageError(f"expected FILE:KERNEL (like kernels.py:add_kernel), got {spec!r}")
    module = load_module(source)
    kernels = sorted(k for k, v in vars(module).items() if _as_jit(v) is not None)
    listing = ", ".join(kernels) or "none"
    if not name:
        if len(kernels) != 1:
            raise UsageError(f"{source} defines {len(kernels)} @xk.jit kernels ({listing}); name one as "
                             f"{source}:KERNEL")
        name = kernels[0]
    obj: Any = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{source} has no kernel '{name}'; its @xk.jit kernels: {listing}")
        obj = getattr(obj, part)
    kernel = _as_jit(obj)
    if kernel is None:
        what = "a function" if callable(obj) else f"a {type(obj).__name__}"
        raise UsageError(f"'{name}' in {source} is {what}, not an @xk.jit kernel; its @xk.jit kernels: {listing}")
    return kernel


# ---- signatures ------------------------------------------------------------------------------------

def build_signature(kernel, signature: Optional[str], assignments: List[str]) -> Dict[str, Any]:
    """The ``compile_offline`` signature from ``--signature "x_ptr=*fp32,n=i32"`` (or positional
    ``"*fp32,i32"`` for the non-constexpr parameters in order) and ``NAME=VALUE`` arguments
    (a value for a constexpr, a type for any other parameter)."""
    params = {p.name: p for p in kernel.params}
    runtime = [p for p in kernel.params if not p.is_constexpr]
    given: Dict[str, Tuple[str, str]] = {}   # name -> (text, where it came from)

    def put(name: str, text: str, where: str) -> None:
        if name not in params:
            raise UsageError(f"{where}: kernel '{kernel.__name__}' has no parameter '{name}' (parameters: "
                             f"{', '.join(params)})")
        if name in given:
            raise UsageError(f"parameter '{name}' is given twice ({given[name][1]} and {where})")
        given[name] = (text, where)

    entries = [e.strip() for e in (signature or "").split(",") if e.strip()]
    if entries and all("=" not in e for e in entries):
        if len(entries) > len(runtime):
            raise UsageError(f"--signature lists {len(entries)} types but kernel '{kernel.__name__}' has "
                             f"{len(runtime)} non-constexpr parameters ({', '.join(p.name for p in runtime)})")
        for p, e in zip(runtime, entries):
            put(p.name, e, "--signature")
    else:
        for e in entries:
            put(*split_assignment(e, "--signature"), "--signature")
    for a in assignments:
        put(*split_assignment(a, "argument"), f"argument {a!r}")

    sig: Dict[str, Any] = {}
    for name, (text, _) in given.items():
        if params[name].is_constexpr:
            sig[name] = parse_value(text, name)
        else:   # (an integer argument equal to 1 is a specialization of its own, as at launch)
            sig[name] = 1 if text.strip() == "1" else parse_type(text, name)
    missing_c = [p.name for p in kernel.params if p.is_constexpr and p.name not in sig and not p.has_default]
    missing_t = [p.name for p in runtime if p.name not in sig and not p.has_default]
    if missing_c or missing_t:
        parts = []
        if missing_c:
            parts.append(f"values for the constexprs {', '.join(missing_c)} (as arguments: "
                         f"{' '.join(n + '=...' for n in missing_c)})")
        if missing_t:
            parts.append(f"types for {', '.join(missing_t)} (as --signature \""
                         f"{','.join(n + '=' + ('*fp32' if n.endswith('ptr') else 'i32') for n in missing_t)}\", "
                         f"with the real types)")
        raise UsageError(f"kernel '{kernel.__name__}' needs " + " and ".join(parts))
    return sig


# ---- compiling -------------------------------------------------------------------------------------

def default_target() -> str:
    """What a launch would use: ``XEKERN_TARGET``, else the default device's target."""
    from xekern.runtime import device
    return device.target_for(None).name


def check_grf(target: str, grf: Optional[int]) -> None:
    t = xk.get_target(target)
    if grf is not None and grf not in t.grf_modes:
        modes = "/".join(map(str, t.grf_modes))
        raise UsageError(f"--grf {grf}: target {target} has GRF modes {modes}"
                         + (" (a CPU target has no GRF choice)" if t.is_cpu else ""))


def compile_from_args(args):
    kernel = load_kernel(args.kernel)
    target = args.target or default_target()
    check_grf(target, args.grf)
    sig = build_signature(kernel, args.signature, args.values)
    return kernel.compile_offline(sig, target=target, num_subgroups=args.num_subgroups, grf_mode=args.grf), target


def isa_report(compiled, target: str, grf: Optional[int], keep: Optional[str] = None,
               compiler: Optional[str] = None):
    from xekern.tools.isa import compile_isa
    # without --grf: the mode the runtime would ask the driver for (lowering/grf.py)
    grf = grf if grf is not None else compiled.grf_mode
    return compile_isa(compiled.spirv, compiled.name, target, grf_mode=grf, work_dir=keep, compiler=compiler)


def _write(text: str, output: Optional[str]) -> None:
    if output is None or output == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    try:
        with open(output, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")
    except OSError as e:
        raise UsageError(f"cannot write {output}: {e.strerror}") from None
    print(f"wrote {output}", file=sys.stderr)


def cmd_compile(args) -> int:
    emits = [s.strip() for s in args.emit.split(",") if s.strip()]
    every = emits == ["all"]
    if every:
        emits = list(STAGES)
    bad = [s for s in emits if s not in EMITS]
    if bad or not emits:
        raise UsageError(f"--emit {args.emit}: unknown stage {', '.join(bad) or '(none)'}; stages: "
                         f"{', '.join(EMITS)}, or all")
    if "spv" in emits and (len(emits) > 1 or args.output in (None, "-")):
        raise UsageError("--emit spv writes the binary SPIR-V module: give it alone, with -o FILE.spv")
    c, target = compile_from_args(args)
    if every:   # the stages this kernel went through (a subgroup- or lane-level kernel skips some passes)
        emits = [s for s in STAGES if s in c.asm]
    missing = [s for s in emits if s not in EMITS[len(STAGES):] and s not in c.asm]
    if missing:
        have = ", ".join(s for s in STAGES if s in c.asm)
        raise UsageError(f"--emit {args.emit}: kernel {c.name} has no stage {', '.join(missing)} (its level "
                         f"starts below it); its stages: {have}")
    if emits == ["spv"]:
        try:
            with open(args.output, "wb") as f:
                f.write(c.spirv)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror}") from None
        print(f"wrote {args.output} ({len(c.spirv)} bytes of SPIR-V, kernel {c.name})", file=sys.stderr)
        return 0
    parts = []
    for stage in emits:
        if stage == "isa":
            r = isa_report(c, target, args.grf, compiler=args.compiler)
            text = r.text.rstrip("\n") + "\n\n" + r.summary()
        else:
            text = c.asm[stage]
        parts.append(text if len(emits) == 1 else f"// ----- {c.name}: {stage} ({target}) -----\n{text}")
    _write("\n".join(p.rstrip("\n") for p in parts), args.output)
    return 0


def cmd_isa(args) -> int:
    c, target = compile_from_args(args)
    r = isa_report(c, target, args.grf, args.keep, args.compiler)
    from xekern.tools.isa import loop_counts
    text = r.summary()
    if loop_counts(r) is None:
        text += "\n  no loop in this kernel"
    if args.full:
        text = r.text.rstrip("\n") + "\n\n" + text
    _write(text, args.output)
    return 0


def cmd_opt(args) -> int:
    if args.list:
        print("\n".join(opt.pass_names()))
        return 0
    if not args.passes:
        raise UsageError("give the passes to run: -p PASS[,PASS] (python -m xekern opt --list names them)")
    names = [n.strip() for n in args.passes.split(",")]
    opt.lookup(names)
    if args.file is None:
        raise UsageError("give the IR file to read (- for stdin), as printed by: python -m xekern compile ... "
                         "--emit STAGE")
    if args.file == "-":
        text, file = sys.stdin.read(), "<stdin>"
    else:
        try:
            with open(args.file) as f:
                text, file = f.read(), args.file
        except OSError as e:
            raise UsageError(f"cannot read {args.file}: {e.strerror}") from None
    _write(opt.opt_text(text, names, file, args.target, args.num_subgroups, args.emitter), args.output)
    return 0


# ---- devices, cache, knobs -------------------------------------------------------------------------

def cmd_devices(args) -> int:
    from xekern.runtime import device
    devs = device.describe_devices()
    try:
        d = device.default_device()
        default, default_err = d.filter_string, None
    except XekernError as e:
        default, default_err = None, str(e)
    if args.json:
        import json
        print(json.dumps({"devices": devs, "default": default, "targets": list(xk.targets)}, indent=2))
    else:
        print("dpctl devices (* is the default):" if devs else "dpctl sees no device")
        for r in devs:
            star = "*" if r["filter"] == default else " "
            tgt = r["target"] or "none (set XEKERN_TARGET to the closest target)"
            print(f" {star} {r['filter']:22s} {r['name']}\n"
                  f"      {r['backend']} {r['type']}, driver {r['driver']}, sub-groups "
                  f"{','.join(map(str, r['sub_group_sizes']))}, workgroup <= {r['max_work_group_size']}, "
                  f"local memory {r['local_mem_size'] // 1024} KiB -> xekern target {tgt}")
        print("\nxekern targets (xk.targets):")
        for t in xk.targets.values():
            print("  " + t.describe())
        env = ", ".join(f"{k}={v}" for k, v in (("XEKERN_DEVICE", knobs.device()),
                                                 ("XEKERN_TARGET", knobs.target())) if v)
        if default is not None:
            tgt = next((r["target"] for r in devs if r["filter"] == default), None)
            print(f"\ndefault device: {default}" + (f" -> xekern target {tgt}" if tgt else "")
                  + (f" (from {env})" if env else ""))
    if default_err is not None:
        raise UsageError(default_err)
    return 0


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_cache(args) -> int:
    from xekern.runtime.cache import disk_cache
    cache = disk_cache()
    if args.action == "clear":
        n = cache.clear()
        print(f"removed {n} entr{'y' if n == 1 else 'ies'} from {cache.root}")
        return 0
    info = cache.info()
    print(f"dir:     {info['dir']}\nentries: {info['entries']}\nbytes:   {info['bytes']} ({_size(info['bytes'])})\n"
          f"enabled: {'yes' if info['enabled'] else 'no (XEKERN_CACHE=0)'}")
    return 0


def cmd_toolchain(args) -> int:
    from xekern.tools import toolchain
    if args.action == "install":
        toolchain.install(args.compilers or toolchain.ORDER, force=args.force, log=lambda m: print(m, flush=True))
    print("\n".join(toolchain.info()))
    return 0


def knob_table() -> List[Tuple[str, str, str]]:
    """(variable, default, effect) rows of the table in ``xekern.knobs``' docstring."""
    rows = []
    for line in (knobs.__doc__ or "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and len(cells) == 3 and cells[0].startswith("``"):
            rows.append(tuple(c.replace("``", "") for c in cells))
    return rows


def cmd_knobs(args) -> int:
    rows = knob_table()
    width = max((len(r[0]) for r in rows), default=0)
    for name, default, effect in rows:
        cur = os.environ.get(name)
        unset = "unset" + (f" (default: {default})" if default != "unset" else "")
        now = f"= {cur}" if cur not in (None, "") else unset
        print(f"{name:{width}s} {now}\n{'':{width}s}   {effect}")
    return 0


# ---- the command line ------------------------------------------------------------------------------

SIG_HELP = ('argument types, like Triton: "x_ptr=*fp32,y_ptr=*bf16,n=i32" (or "*fp32,*bf16,i32" in parameter '
            'order); spellings: *fp32 *fp16 *bf16 *i8 *u8 *i32 i32 i64 fp32 fp64 i1, or *float32, bfloat16, ...')
VALUES_HELP = ("constexpr values (BM=256, DTYPE=bfloat16, EVEN=true); NAME=TYPE also works for other "
               "parameters (n=i32), and NAME=1 compiles an integer argument's specialization for 1 "
               "(stride=1), as a launch with 1 does")

COMPILE_EXAMPLES = """examples:
  python -m xekern compile k.py:add_kernel --signature "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32" BLOCK=1024
  python -m xekern compile k.py:add_kernel -s "*fp32,*fp32,*fp32,i32" BLOCK=1024 --target pvc --emit layout
  python -m xekern compile gemm.py:gemm -s "a_ptr=*bf16,b_ptr=*bf16,c_ptr=*fp32,M=i32,N=i32,K=i32" \\
      BM=256 BN=256 BK=32 --target pvc --num-subgroups 32 --emit isa --grf 256 -o gemm.isa
  python -m xekern compile k.py:add_kernel ... --emit all     # every stage, with headers
"""
ISA_EXAMPLES = """examples:
  python -m xekern isa --target pvc gemm.py:gemm -s "a_ptr=*bf16,b_ptr=*bf16,c_ptr=*fp32,M=i32,N=i32,K=i32" \\
      BM=256 BN=256 BK=32 --num-subgroups 32 --grf 256
  python -m xekern isa --target dg2 k.py:add_kernel -s "*fp32,*fp32,*fp32,i32" BLOCK=1024 --full

The summary gives the GRF mode, spills and scratch size, instruction counts by kind for the whole
kernel and its innermost loop (the K loop of a GEMM), and the dpas share of that loop. Needs the
offline GPU toolchain: python -m xekern toolchain install (IGC 2.x by default; --compiler 12504 for
Debian 12's).
"""
OPT_EXAMPLES = """examples:
  python -m xekern compile k.py:add_kernel -s "*fp32,*fp32,*fp32,i32" BLOCK=64 --target pvc --emit layout > k.ir
  python -m xekern opt -p sg k.ir                    # k.ir after wg-to-sg
  python -m xekern opt -p sg,inst,lane k.ir -o lane.ir
  python -m xekern compile ... --emit xegpu | python -m xekern opt -p layout,sg --num-subgroups 8 -
  python -m xekern opt --list                        # the pass names, in pipeline order

The options a pass needs come from the function's attributes (target = "pvc", num_subgroups = 4),
which --target and --num-subgroups override; --emitter names the emitter whose policy the passes
follow (default: the target's, as compile uses).
"""


def _kernel_args(p: argparse.ArgumentParser, target_default_help: str) -> None:
    p.add_argument("kernel", metavar="FILE:KERNEL", help="a Python file and the name of an @xk.jit function in it "
                   "(the name may be left out when the file has one kernel; a module name works instead of a file)")
    p.add_argument("values", nargs="*", metavar="NAME=VALUE", help=VALUES_HELP)
    p.add_argument("-s", "--signature", help=SIG_HELP)
    p.add_argument("--target", choices=list(xk.targets), help=target_default_help)
    p.add_argument("--num-subgroups", type=int, metavar="N", help="subgroups per workgroup (a power of 2; "
                   "default: the kernel's @xk.jit(num_subgroups=...), 4 unless set)")
    p.add_argument("--grf", type=int, choices=(128, 256), help="registers per thread for GPU ISA "
                   "(ocloc's GRF mode); default: IGC chooses")
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    p.add_argument("--compiler", choices=("current", "12504"), help="the offline GPU compiler for ISA "
                   "(python -m xekern toolchain install): current (IGC 2.x, the default) or 12504 (Debian 12's)")


def make_parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show Python tracebacks for errors")
    parser = argparse.ArgumentParser(
        prog="python -m xekern", formatter_class=raw,
        description="xekern's command line: devices, offline compilation of kernels to every stage and to "
                    "Intel GPU ISA, the kernel cache, and the environment variables xekern reads.",
        epilog="run `python -m xekern COMMAND --help` for each command's options and examples")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for errors")
    parser.add_argument("--version", action="version", version=f"xekern {xk.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("devices", parents=[common], formatter_class=raw, help="what dpctl sees, and xekern's targets",
                       description="List the devices dpctl sees, the xekern target each maps to, the target "
                                   "records, and the default device (XEKERN_DEVICE / XEKERN_TARGET change it).",
                       epilog="examples:\n  python -m xekern devices\n  XEKERN_DEVICE=opencl:cpu python -m xekern "
                              "devices --json")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_devices, parser=p)

    p = sub.add_parser("compile", parents=[common], formatter_class=raw, epilog=COMPILE_EXAMPLES,
                       help="compile a kernel offline and print a stage",
                       description="Compile an @xk.jit kernel for a target without a device and print one "
                                   "stage: xegpu (workgroup IR), layout, sg, inst, lane, llir, spirv (text), "
                                   "isa (Intel GPU ISA and its summary, with ocloc/iga64), or spv (the binary "
                                   "SPIR-V module, with -o).")
    _kernel_args(p, "target record (default: XEKERN_TARGET, else the default device's target)")
    p.add_argument("--emit", default="xegpu", metavar="STAGE",
                   help=f"the stage to print: {', '.join(EMITS)}; a comma list, or all (default: xegpu)")
    p.set_defaults(func=cmd_compile, parser=p)

    p = sub.add_parser("isa", parents=[common], formatter_class=raw, epilog=ISA_EXAMPLES,
                       help="compile a kernel to Intel GPU ISA and summarize it",
                       description="Compile an @xk.jit kernel to Intel GPU ISA offline (the toolchain's ocloc + iga64) and "
                                   "print a summary; --full prints the ISA too.")
    _kernel_args(p, "GPU target (default: XEKERN_TARGET if it names a GPU, else pvc)")
    p.add_argument("--full", action="store_true", help="print the ISA text before the summary")
    p.add_argument("--keep", metavar="DIR", help="keep ocloc's intermediate files in DIR")
    p.set_defaults(func=cmd_isa, target=None, parser=p)

    p = sub.add_parser("opt", parents=[common], formatter_class=raw, epilog=OPT_EXAMPLES,
                       help="run passes of the pipeline on IR text",
                       description="Read a function's IR (as compile --emit prints it), run the named passes "
                                   "of the pipeline in the given order, verifying the IR after each, and print "
                                   "the result.")
    p.add_argument("file", nargs="?", metavar="FILE.ir", help="the IR text; - for stdin")
    p.add_argument("-p", "--passes", metavar="PASS[,PASS]", help="the passes to run, by stage name (--list)")
    p.add_argument("--list", action="store_true", help="print the pass names and exit")
    p.add_argument("--target", choices=list(xk.targets), help="the target (default: the function's target "
                   "attribute)")
    p.add_argument("--num-subgroups", type=int, metavar="N", help="subgroups per workgroup (default: the "
                   "function's num_subgroups attribute)")
    p.add_argument("--emitter", choices=EMITTERS, help="the emitter whose policy the passes follow (default: "
                   "the target's)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    p.set_defaults(func=cmd_opt, parser=p)

    p = sub.add_parser("cache", parents=[common], formatter_class=raw, help="the on-disk kernel cache",
                       description="Show (info) or empty (clear) the on-disk kernel cache in XEKERN_CACHE_DIR "
                                   "(default ~/.cache/xekern).",
                       epilog="examples:\n  python -m xekern cache info\n  XEKERN_CACHE_DIR=/tmp/kc python -m "
                              "xekern cache clear")
    p.add_argument("action", choices=("info", "clear"))
    p.set_defaults(func=cmd_cache, parser=p)

    p = sub.add_parser("toolchain", parents=[common], formatter_class=raw,
                       help="Intel's offline GPU compilers (ocloc, IGC) for the ISA checks",
                       description="Fetch Intel's offline GPU compiler into xekern's cache folder (install), or "
                                   "show what is there (info). Two compilers, each in a private root: 'current' "
                                   "(compute-runtime 26.x / IGC 2.x from Debian unstable, what users' drivers "
                                   "run; the default for ISA checks) and '12504' (Debian 12's IGC, 2022, for "
                                   "comparison). Uses the machine's Debian mirror and apt; installs nothing "
                                   "system-wide.",
                       epilog="examples:\n  python -m xekern toolchain install\n  python -m xekern toolchain "
                              "install current --force\n  python -m xekern toolchain info")
    p.add_argument("action", choices=("install", "info"))
    p.add_argument("compilers", nargs="*", metavar="COMPILER", help="current, 12504 (default: both)")
    p.add_argument("--force", action="store_true", help="fetch again even if installed")
    p.set_defaults(func=cmd_toolchain, parser=p)

    p = sub.add_parser("knobs", parents=[common], formatter_class=raw, help="environment variables xekern reads",
                       description="Every environment variable xekern reads, its current value and what it does "
                                   "(from xekern/knobs.py).",
                       epilog="example:\n  python -m xekern knobs")
    p.set_defaults(func=cmd_knobs, parser=p)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = make_parser()
    # NAME=VALUE arguments may come after options too (argparse alone stops a '*' positional at the first option)
    args, extra = parser.parse_known_args(argv)
    late = [a for a in extra if hasattr(args, "values") and re.match(r"^\w+=", a)]
    if len(late) != len(extra):
        getattr(args, "parser", parser).error(f"unrecognized arguments: {' '.join(a for a in extra if a not in late)}")
    if late:
        args.values = list(args.values) + late
    if args.command == "isa" and args.target is None:
        env = xk.targets.get(knobs.target() or "")
        args.target = env.name if env is not None and not env.is_cpu else "pvc"
    try:
        return args.func(args)
    except XekernError as e:
        if args.debug:
            traceback.print_exc()
        text = str(e).rstrip() or type(e).__name__
        kind = "" if isinstance(e, QUIET_ERRORS) else f"{type(e).__name__}: "
        print(f"xekern {args.command}: error: {kind}{text}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if args.debug:
            traceback.print_exc()
        print(f"xekern {args.command}: internal error: {type(e).__name__}: {e}\n(this is a bug in xekern; "
              f"rerun with --debug for the traceback and report it)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
