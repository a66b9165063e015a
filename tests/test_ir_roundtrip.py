"""Every IR stage of every kernel reads back: ``print_func(parse_func(text)) == text``, and the parsed
function passes ``verify_func``.

The kernels the test session compiles are checked as it goes: after each test, conftest.py round-trips
the compilations that test added (ir_corpus.py; up to four per kernel and target), in every pytest
process, and fails that test's teardown naming kernel, stage and line. This module checks a corpus of
its own: every ``@xk.jit`` kernel of examples/ at the signatures the examples launch it with, and that a
stage which does not read back fails as it should.

    pytest tests/test_ir_roundtrip.py            # the examples' kernels
    pytest tests                                 # ... and every kernel of the suite, test by test
"""
import ir_corpus
from ir_corpus import INLINED, RECORDER, check, example_files, examples, ir_stages, jit_kernels, load_example


def test_every_stage_of_every_example_kernel_round_trips(capsys):
    records = [r for recs in examples().values() for r in recs]
    assert records
    failures, stages, took = check(records)
    assert not failures, f"{len(failures)} compilations do not round-trip:\n" + "\n".join(failures[:20])
    with capsys.disabled():   # (what the run covered, and its cost, in every run's output)
        print(f"\nIR round trip: the examples, {len({r.identity for r in records})} kernels, {len(records)} "
              f"compilations, {stages} stages, {took:.1f} s; {RECORDER.summary()} so far")


def test_the_examples_corpus_has_every_example_kernel():
    corpus = examples()
    for path in example_files():
        mod = load_example(path)
        found = set(jit_kernels(mod)) - INLINED.get(path, set())
        listed = {r.jit.__name__ for r in corpus.get(path, [])}
        assert found <= listed, (f"examples/{path} has @xk.jit kernels that ir_corpus.examples() does not compile: "
                                 f"{sorted(found - listed)} (add them at the signature the example launches them with)")


def test_a_stage_that_does_not_read_back_fails_naming_kernel_stage_and_line():
    rec = examples()["triton_ports/01_vector_add.py"][0]
    good = ir_stages(rec)["xegpu"]
    line = next(i for i, ln in enumerate(good.splitlines(), 1) if ln.endswith(" : i32"))
    odd = good.replace(" : i32\n", " :   i32\n", 1)   # reads, but prints back as ' : i32'
    failures, _, _ = check([rec], lambda r: {"xegpu": good, "layout": odd, "sg": "func.func @"})
    assert len(failures) == 1, failures
    assert (f"kernel add_kernel ({rec.jit.fn.__code__.co_filename}:" in failures[0] and
            f"stage 'layout': does not print back the same: line {line}:\n    printed: " in failures[0]), failures
    assert "stage 'sg'" not in failures[0]   # (the first failing stage of a kernel is enough)


def test_the_session_check_reports_a_kernel_that_does_not_read_back(monkeypatch):
    """What conftest.py runs after each test: a pending compilation whose stage does not read back
    is reported (and the pending list is emptied)."""
    rec = examples()["triton_ports/01_vector_add.py"][0]
    monkeypatch.setattr(ir_corpus, "ir_stages", lambda r: {"xegpu": "func.func @broken("})
    monkeypatch.setattr(RECORDER, "pending", [rec])
    failures = RECORDER.check_pending()
    assert len(failures) == 1 and "stage 'xegpu'" in failures[0] and "add_kernel" in failures[0], failures
    assert RECORDER.pending == []
