"""Every IR stage of every kernel the suite compiles reads back: ``print_func(parse_func(text)) == text``,
and the parsed function passes ``verify_func``.

The kernels are those the test session compiled before this module (conftest.py records them and runs
this module last; ir_corpus.py): each distinct kernel (source, callees, constants) on each target it was
compiled for, at up to four of the signatures and options recorded. Run alone, the module compiles a
corpus of its own: every ``@xk.jit`` kernel of examples/ at the signatures the examples launch it with.

    pytest tests/test_ir_roundtrip.py            # the examples' kernels
    pytest tests                                 # ... and every kernel of the suite, at the end
"""
import time

import pytest

from ir_corpus import INLINED, RECORDER, example_files, examples, ir_stages, jit_kernels, load_example

from xekern import ir
from xekern.errors import XekernError


def first_difference(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "(end of text)"
        y = lb[i] if i < len(lb) else "(end of text)"
        if x != y:
            return f"line {i + 1}:\n    printed:   {x}\n    reprinted: {y}"
    return "(no difference)"


def round_trip(text: str, where: str) -> str:
    """'' when ``text`` parses, verifies and prints back to itself; else what went wrong."""
    try:
        f = ir.parse_func(text, where)
        ir.verify_func(f)
    except (ir.ParseError, ir.IRError, ir.LayoutError) as e:
        return f"{type(e).__name__}: {e}"
    again = ir.print_func(f)
    return "" if again == text else "does not print back the same: " + first_difference(text, again)


PER_KERNEL_AND_TARGET = 4


def chosen(records):
    """Up to ``PER_KERNEL_AND_TARGET`` records of each (kernel, target): the first signatures and
    options recorded (a fuzzing test may compile one kernel at hundreds of shapes)."""
    out, count = [], {}
    for r in records:
        key = (r.identity, r.options.target.name)
        count[key] = count.get(key, 0) + 1
        if count[key] <= PER_KERNEL_AND_TARGET:
            out.append(r)
    return out


def check_all(records, recorded) -> str:
    """Round-trip every stage of each record; fail naming each kernel that does not, else return how
    much was checked and how long it took."""
    failures, stages, t0 = [], 0, time.perf_counter()
    for rec in records:
        try:
            texts = ir_stages(rec)
        except XekernError as e:  # compiled when it was recorded: it must compile now
            failures.append(f"{rec.describe()}: no longer compiles: {e}")
            continue
        for stage, text in texts.items():
            stages += 1
            problem = round_trip(text, f"{rec.kernel}:{stage}")
            if problem:
                failures.append(f"{rec.describe()}: stage '{stage}': {problem}")
                break
    took = time.perf_counter() - t0
    summary = (f"IR round trip: {len({r.identity for r in records})} kernels, {len(records)} of {recorded} "
               f"compilations, {stages} stages, {took:.1f} s")
    if failures:
        pytest.fail(f"{summary}; {len(failures)} compilations do not round-trip:\n" + "\n".join(failures[:20]),
                    pytrace=False)
    return summary


def test_every_stage_of_every_kernel_round_trips(capsys):
    records = RECORDER.records()
    if not records:  # (this module alone)
        records = [r for recs in examples().values() for r in recs]
    assert records
    summary = check_all(chosen(records), len(records))
    with capsys.disabled():   # (what the run covered, and its cost, in every run's output)
        print(f"\n{summary}")


def test_the_examples_corpus_has_every_example_kernel():
    corpus = examples()
    for path in example_files():
        mod = load_example(path)
        found = set(jit_kernels(mod)) - INLINED.get(path, set())
        listed = {r.jit.__name__ for r in corpus.get(path, [])}
        assert found <= listed, (f"examples/{path} has @xk.jit kernels that ir_corpus.examples() does not compile: "
                                 f"{sorted(found - listed)} (add them at the signature the example launches them with)")


def test_a_stage_that_does_not_read_back_fails_naming_kernel_stage_and_line(monkeypatch):
    import test_ir_roundtrip as me
    rec = examples()["triton_ports/01_vector_add.py"][0]
    good = ir_stages(rec)["xegpu"]
    line = next(i for i, ln in enumerate(good.splitlines(), 1) if ln.endswith(" : i32"))
    odd = good.replace(" : i32\n", " :   i32\n", 1)   # reads, but prints back as ' : i32'
    monkeypatch.setattr(me, "ir_stages", lambda r: {"xegpu": good, "layout": odd, "sg": "func.func @"})
    with pytest.raises(pytest.fail.Exception) as e:
        check_all([rec], 1)
    assert (f"kernel add_kernel ({rec.jit.fn.__code__.co_filename}:" in str(e.value) and
            f"stage 'layout': does not print back the same: line {line}:\n    printed: " in str(e.value)), str(e.value)
    assert "stage 'sg'" not in str(e.value)   # (the first failing stage of a kernel is enough)
