"""How the code generator is layered (read from the source, no import needed): rule tables use
helpers, helpers use the core, never the other way round; no module reaches into another's
private names; the emitter is a decision made once (lowering/emitters.py), so no shared rule asks
which family a target is."""
import ast
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "xekern")
CODEGEN = os.path.join(ROOT, "lowering", "codegen")


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
