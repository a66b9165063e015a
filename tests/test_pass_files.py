"""Each pass on a few lines of IR text: every ``tests/passes/<pass>/*.ir`` file runs its ``// RUN:``
command (``python -m xekern opt`` on the function in the file) and compares what it prints with the
text after ``// CHECK-OUTPUT:``, or the error with ``// CHECK-ERROR:``. The format is in
tests/passes/README.md.

    pytest tests/test_pass_files.py -k sg                 # the cases of pass sg
    python tests/test_pass_files.py --update FILE.ir ...   # rewrite their expected output (then review it)
"""
import contextlib
import difflib
import io
import os
import shlex
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PASSES_DIR = os.path.join(HERE, "passes")
OUTPUT, ERROR = "// CHECK-OUTPUT:", "// CHECK-ERROR:"


def case_files():
    out = []
    for folder in sorted(os.listdir(PASSES_DIR)):
        if os.path.isdir(os.path.join(PASSES_DIR, folder)):
            out += [os.path.join(folder, f) for f in sorted(os.listdir(os.path.join(PASSES_DIR, folder)))
                    if f.endswith(".ir")]
    return out


class Case:
    """A pass file: its RUN arguments, its input, and what it expects (output text or error text)."""

    def __init__(self, rel):
        self.rel = rel
        self.path = os.path.join(PASSES_DIR, rel)
        with open(self.path) as f:
            lines = f.read().splitlines(keepends=True)
        runs = [ln for ln in lines if ln.startswith("// RUN:")]
        if len(runs) != 1:
            raise ValueError(f"{self.where}: needs one '// RUN: opt ...' line, has {len(runs)}")
        words = shlex.split(runs[0][len("// RUN:"):])
        if not words or words[0] != "opt":
            raise ValueError(f"{self.where}: the RUN line runs 'opt', got {runs[0].strip()!r}")
        self.args = words[1:]
        ends = [i for i, ln in enumerate(lines) if ln.startswith((OUTPUT, ERROR))]
        if len(ends) != 1:
            raise ValueError(f"{self.where}: needs one '{OUTPUT}' or '{ERROR} ...' line, has {len(ends)}")
        end = ends[0]
        self.input = "".join(lines[:end])
        self.expect_error = lines[end][len(ERROR):].strip() if lines[end].startswith(ERROR) else None
        self.expected = "".join(lines[end + 1:])
        if self.expect_error is not None and self.expected.strip():
            raise ValueError(f"{self.where}: nothing may follow '{ERROR} ...'")

    @property
    def where(self) -> str:
        return f"tests/passes/{self.rel}"

    def run(self):
        """(exit status, stdout, stderr) of ``python -m xekern opt ARGS -`` on the input, in this process;
        the input's place is this file's (its lines are the file's first lines)."""
        from xekern.__main__ import main
        out, err = io.StringIO(), io.StringIO()
        saved = sys.stdin
        sys.stdin = io.StringIO(self.input)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(["opt", *self.args, "-"])
        finally:
            sys.stdin = saved
        return status, out.getvalue(), err.getvalue().replace("<stdin>", self.where)


def diff(expected: str, actual: str, where: str) -> str:
    return "".join(difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                        f"{where} (expected)", "opt (actual)"))


@pytest.mark.parametrize("rel", case_files())
def test_pass_file(rel):
    case = Case(rel)
    status, out, err = case.run()
    if case.expect_error is not None:
        assert status == 2 and case.expect_error in err, (
            f"{case.where}: expected the error {case.expect_error!r}; opt exited {status} with:\n{err or out}")
        return
    if status != 0:
        pytest.fail(f"{case.where}: opt {' '.join(case.args)} failed (exit {status}):\n{err}", pytrace=False)
    if out != case.expected:
        pytest.fail(f"{case.where}: the output of opt {' '.join(case.args)} differs:\n"
                    f"{diff(case.expected, out, case.where)}\n(after a deliberate change: python "
                    f"tests/test_pass_files.py --update {case.where}, and review the diff)", pytrace=False)


def test_every_pass_has_cases_and_every_case_tests_its_folder():
    """Each pass of the pipeline has a folder of cases, and each case runs the pass it is filed under."""
    from xekern.lowering import opt
    names = opt.pass_names()
    folders = {rel.split(os.sep)[0] for rel in case_files()}
    assert set(names) <= folders, f"passes without cases in tests/passes/: {sorted(set(names) - folders)}"
    for rel in case_files():
        case = Case(rel)
        passes = case.args[case.args.index("-p") + 1].split(",") if "-p" in case.args else []
        assert rel.split(os.sep)[0] in passes, f"{case.where} is filed under a pass its RUN line does not run"


def update(paths):
    """Rewrite the expected output of each case with what opt prints now."""
    for p in paths:
        case = Case(os.path.relpath(os.path.abspath(p), PASSES_DIR))
        status, out, err = case.run()
        if case.expect_error is not None or status != 0:
            print(f"{case.where}: not updated ({'expects an error' if status == 0 else err.strip()})")
            continue
        with open(case.path, "w") as f:
            f.write(case.input + OUTPUT + "\n" + out)
        print(f"{case.where}: {'unchanged' if out == case.expected else 'updated'}")


if __name__ == "__main__":
    if sys.argv[1:2] != ["--update"] or not sys.argv[2:]:
        sys.exit("usage: python tests/test_pass_files.py --update FILE.ir [FILE.ir ...]")
    sys.path.insert(0, os.path.dirname(HERE))
    update(sys.argv[2:])
