"""How xekern is layered, read from the source with ``ast`` (no import needed; imports inside
functions count: they are edges too).

Between packages: every import goes down an explicit order of layers (``LAYERS``), so there is no
import circle between xekern's packages and top-level modules; no module imports a private
(``_``-prefixed) name of another package; no import hides from this test (``__import__``).
Inside the code generator: rule tables use helpers, helpers use the core, never the other way
round; no module reaches into another's private names; the emitter is a decision made once
(lowering/emitters.py), so no shared rule asks which family a target is."""
import ast
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "xekern")
CODEGEN = os.path.join(ROOT, "lowering", "codegen")


# The layers, lowest first. A module may import from its own unit (a package, or a top-level module)
# and from the units of lower layers; never from a higher layer, nor from another unit of its own
# layer. Every package and top-level module of xekern has its place here.
LAYERS = [
    ("version", "errors"),               # facts without dependencies
    ("knobs",),                          # the environment (XEKERN_*)
    ("ir",),                             # ops, types, layouts, the printer and verifier
    ("targets", "layouts", "language"),  # what a GPU is; layout drawings; the xl builtins (they forward)
    ("tools",),                          # the external toolchain: SPIR-V binaries, ocloc, iga, IGC's options
    ("lowering",),                       # the passes, PASSES (lowering/pipeline.py), LLVM, the emitters
    ("lowering.codegen",),               # lane IR -> LLVM IR, one rule table per emitter
    ("frontend",),                       # Python source -> workgroup IR (uses lowering's layout rules)
    ("compiler",),                       # the compile driver: frontend, passes, codegen, LLVM
    ("runtime",),                        # JITFunction, arguments, caches, devices, launches, autotune
    ("interpreter",),                    # workgroup IR run with NumPy; InterpretedFunction
    ("decorator", "testing"),            # @xk.jit chooses runtime or interpreter; do_bench, sweep
    ("xekern",),                         # the package itself (__init__.py): the public API
    ("__main__",),                       # the command line
]
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}

# Upward imports still in the code, each with the change that removes it. The test fails when one
# is gone too, so that its entry is deleted here and the layer order holds from then on.
PENDING: dict = {}


def unit_of(module: str) -> str:
    """``xekern.lowering.codegen.core`` -> ``lowering.codegen``; ``xekern.runtime.jit`` -> ``runtime``;
    ``xekern.knobs`` -> ``knobs``; ``xekern`` -> ``xekern``."""
    parts = module.split(".")[1:]
    if not parts:
        return "xekern"
    if parts[:2] == ["lowering", "codegen"]:
        return "lowering.codegen"
    return parts[0]


def source_modules():
    """{dotted module name: path} of every module of xekern."""
    out = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, f), os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(folder, f)
    return out


def edges(modules):
    """(importing module, imported module, [names], line) of every import of a xekern module, at any
    depth. ``from .x import y`` imports the module ``x.y`` when there is one, else names of ``x``."""
    out = []
    for mod, path in modules.items():
        package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.Import):
                out += [(mod, a.name, [], node.lineno) for a in node.names if a.name.split(".")[0] == "xekern"]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "xekern":
                    continue
                names = [a.name for a in node.names]
                subs = [n for n in names if f"{target}.{n}" in modules]
                out += [(mod, f"{target}.{n}", [], node.lineno) for n in subs]
                if len(subs) < len(names):
                    out.append((mod, target, [n for n in names if n not in subs], node.lineno))
    return out


def rel_path(modules, mod):
    return os.path.relpath(modules[mod], ROOT)


def test_every_unit_has_one_layer():
    units = {unit_of(m) for m in source_modules()}
    listed = [u for layer in LAYERS for u in layer]
    assert len(listed) == len(set(listed)), "a unit is listed twice in LAYERS"
    assert not units - set(listed), f"place these in LAYERS: {sorted(units - set(listed))}"
    assert not set(listed) - units, f"LAYERS names units that do not exist: {sorted(set(listed) - units)}"
    assert RANK["lowering"] < RANK["frontend"] < RANK["compiler"] < RANK["runtime"] < RANK["interpreter"]


def test_imports_go_down_the_layers():
    """So there is no import circle between packages: the lowering imports neither the frontend nor
    the runtime, the runtime and the interpreter not each other in both directions, and so on."""
    modules = source_modules()
    bad, pending = [], set()
    for mod, target, _, line in edges(modules):
        a, b = unit_of(mod), unit_of(target)
        if a == b or RANK[b] < RANK[a]:
            continue
        where = (rel_path(modules, mod), b)
        if where in PENDING:
            pending.add(where)
            continue
        bad.append(f"{where[0]}:{line} ({a}, layer {RANK[a]}) imports {target} ({b}, layer {RANK[b]})")
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)
    assert pending == set(PENDING), f"no longer imported upward, delete from PENDING: {set(PENDING) - pending}"


def test_no_module_imports_a_private_name_of_another_package():
    modules = source_modules()
    bad = []
    for mod, target, names, line in edges(modules):
        if unit_of(mod) == unit_of(target):
            continue
        private = [n for n in names + target.split(".")[1:] if n.startswith("_") and not n.endswith("__")]
        if private:
            bad.append(f"{rel_path(modules, mod)}:{line} imports {private} of {target}")
    assert not bad, "\n".join(bad)


def test_no_import_hides_from_this_test():
    """``__import__(...)`` or ``importlib.import_module("xekern...")`` would be edges the layer test
    cannot see; the command line's import of the user's module (a variable) is fine."""
    hidden = []
    for path in source_modules().values():
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                literal = bool(node.args) and isinstance(node.args[0], ast.Constant)
                if name == "__import__" or (name == "import_module" and literal):
                    hidden.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
    assert not hidden, hidden


def modules(folder):
    return {f[:-3]: os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".py")}


def imports(path):
    """(module imported relative to its package, [names]) of every ``from .x import ...`` in the file,
    at any depth (imports inside functions count: they are edges too)."""
    out = []
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.append((node.module.split(".")[0], [a.name for a in node.names]))
            else:  # from . import x, y
                out.extend((a.name, []) for a in node.names)
    return out


def test_codegen_imports_flow_one_way():
    mods = modules(CODEGEN)
    tables = {m for m, p in mods.items() if "@rule(" in open(p).read()}
    assert {"rules_arith", "rules_memory", "rules_block", "rules_cpu", "rules_igc", "rules_spirv_ext",
            "rules_visa"} <= tables
    graph = {m: {t for t, _ in imports(p) if t in mods} for m, p in mods.items()}
    for m in set(mods) - tables:
        assert not graph[m] & tables, f"helper {m} imports the rule table(s) {graph[m] & tables}"
    for m in tables:
        assert not graph[m] & tables, f"table {m} imports the table(s) {graph[m] & tables}"
    # no circle: a topological order exists
    done, order = set(), []

    def visit(m, path):
        assert m not in path, f"import circle: {' -> '.join(path[path.index(m):] + [m])}"
        if m in done:
            return
        for n in sorted(graph[m]):
            visit(n, path + [m])
        done.add(m)
        order.append(m)
    for m in sorted(mods):
        visit(m, [])
    assert order.index("core") < min(order.index(t) for t in tables)


def test_no_module_of_codegen_imports_a_private_name_of_another():
    for m, p in modules(CODEGEN).items():
        for node in ast.walk(ast.parse(open(p).read())):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"codegen/{m}.py imports {private} from {'.' * node.level}{node.module or ''}"


def test_no_family_branches_in_the_lowering():
    hits = []
    for folder, _, files in os.walk(os.path.join(ROOT, "lowering")):
        for f in files:
            if f.endswith(".py"):
                text = open(os.path.join(folder, f)).read()
                hits += [f"{f}: {ln.strip()}" for ln in text.splitlines() if re.search(r"family\s*==|\.family\b", ln)]
    assert not hits, hits


@pytest.mark.parametrize("name", ["cpu", "igc-builtins", "spirv-ext", "visa"])
def test_every_emitter_has_a_rule_for_every_op_the_common_table_lacks(name):
    """Pallas-style: an emitter's tables together cover the ops every kernel can reach codegen with;
    an op without a rule is an error naming the op and the emitter (``CodeGen.op``)."""
    import xekern as xk
    from xekern import ir
    from xekern import compiler  # noqa: F401  (the compile driver imports the rule tables, filling them)
    from xekern.lowering import emitters
    from xekern.lowering.codegen.core import rules_of
    cpu = name == "cpu"
    e = emitters.get(name, xk.targets["cpu" if cpu else "pvc"], emitters.DRIVERS["cpu" if cpu else "igc2"])
    rules = rules_of(e)
    for op in (ir.LoadNdOp, ir.StoreNdOp, ir.PrefetchNdOp, ir.DpasOp, ir.ForOp, ir.BarrierOp, ir.LoadMatrixOp,
               ir.CompileHintOp, ir.InitNBarrierOp):
        assert op in rules, f"no rule for {op.__name__} on emitter {name}"
