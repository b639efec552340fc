"""Test harness run *inside* the sandbox, next to the solution (stdlib only; copied, not imported).

Reads its instructions as JSON on stdin (so the solution cannot read the expected
outputs from a file), then closes stdin. Reports on the result pipe, every line
prefixed with a nonce the parent chose: a solution that exits early (``sys.exit(0)``,
``os._exit(0)``) cannot fake a finished run, because ``done`` is written only after
the last test. Modes:

``assert``  exec the solution, then the tests, with every ``assert`` statement
            rewritten to record its outcome (an exception inside it counts as a
            failure and the run goes on); one case per assert statement.
``call``    call ``entry_point`` with each case's arguments and compare the result
            with the expected value (plain types only, floats within tolerance).
"""

import ast
import json
import math
import os
import sys


def main():
    spec = json.loads(sys.stdin.read())
    sys.stdin.close()
    sys.stdin = open(os.devnull)
    fd = int(sys.argv[1])
    nonce = spec.pop("nonce")
    out = os.fdopen(fd, "w", buffering=1)
    early = bool(spec.get("early_stop"))

    class Stop(BaseException):
        pass

    def emit(*parts):
        out.write(" ".join([nonce, *map(str, parts)]) + "\n")

    with open(spec.get("source", "solution.py")) as f:
        source = f.read()
    ns = {"__name__": "__solution__", "__builtins__": __builtins__}
    if spec["mode"] == "assert":
        rewrite = _Rewrite()
        tree = ast.fix_missing_locations(rewrite.visit(ast.parse(spec["tests"], "tests.py")))
        n = rewrite.count
        total = max(n, 1)
        emit("total", total)
        failed = set()

        def record(i, ok, why=""):
            if not ok and i not in failed:
                failed.add(i)
                emit("case", i, 0, json.dumps(why[:200]))
                if early:
                    raise Stop()

        try:
            exec(compile(source, "solution.py", "exec"), ns)
        except Stop:
            raise
        except BaseException as e:
            emit("fatal", json.dumps(("solution: %s: %s" % (type(e).__name__, e))[:300]))
            return
        ns["__rlvr_record__"] = record
        entry = spec.get("entry_point")
        try:
            exec(compile(tree, "tests.py", "exec"), ns)
            if entry and "check" in ns and callable(ns["check"]):
                ns["check"](ns[entry])
        except Stop:
            emit("stopped")
            return
        except BaseException as e:
            emit("fatal", json.dumps(("tests: %s: %s" % (type(e).__name__, e))[:300]))
            return
        for i in range(total):  # an assert the tests never reached was not required
            if i not in failed:
                emit("case", i, 1, '""')
        emit("done")
    else:
        cases = spec["cases"]
        emit("total", len(cases))
        try:
            exec(compile(source, "solution.py", "exec"), ns)
            fn = _resolve(ns, spec["entry_point"])
        except BaseException as e:
            emit("fatal", json.dumps(("solution: %s: %s" % (type(e).__name__, e))[:300]))
            return
        tol = float(spec.get("float_tol") or 0.0)
        for i, case in enumerate(cases):
            try:
                got = fn(*case.get("args", []), **case.get("kwargs", {}))
                ok = _equal(got, case.get("result"), tol)
                why = "" if ok else "got %r" % (got,)
            except BaseException as e:
                ok, why = False, "%s: %s" % (type(e).__name__, e)
            emit("case", i, int(ok), json.dumps(why[:200]))
            if early and not ok:
                emit("stopped")
                return
        emit("done")


class _Rewrite(ast.NodeTransformer):
    """``assert t, m`` -> record whether ``t`` held (exceptions count as failures)."""

    def __init__(self):
        self.count = 0

    def visit_Assert(self, node):
        i = self.count
        self.count += 1
        src = ast.unparse(node.test)[:120]
        body = ast.parse(
            "try:\n    __rlvr_ok__ = bool(__T__)\n    __rlvr_why__ = '' if __rlvr_ok__ else %r\n"
            "except BaseException as __rlvr_e__:\n"
            "    if type(__rlvr_e__).__name__ == 'Stop': raise\n"
            "    __rlvr_ok__, __rlvr_why__ = False, '%%s: %%s' %% (type(__rlvr_e__).__name__, __rlvr_e__)\n"
            "__rlvr_record__(%d, __rlvr_ok__, __rlvr_why__)\n" % ("failed: " + src, i)).body
        body[0].body[0].value.args[0] = node.test
        return [ast.copy_location(s, node) for s in body]


def _resolve(ns, name):
    """``f`` or ``Solution.method`` (LeetCode style: the class is instantiated)."""
    head, _, attr = name.partition(".")
    obj = ns[head]
    if attr:
        obj = getattr(obj() if isinstance(obj, type) else obj, attr)
    return obj


def _equal(got, want, tol):
    """Plain-typed equality (an object that claims to equal everything does not pass)."""
    if isinstance(want, bool) or want is None:
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        if type(got) not in (int, float):
            return False
        if isinstance(want, float) or isinstance(got, float):
            return math.isclose(got, want, rel_tol=tol or 1e-9, abs_tol=tol or 1e-9)
        return got == want
    if isinstance(want, str):
        return type(got) is str and got == want
    if isinstance(want, (list, tuple)):
        return type(got) in (list, tuple) and len(got) == len(want) and all(
            _equal(g, w, tol) for g, w in zip(got, want))
    if isinstance(want, dict):
        return type(got) is dict and set(got) == set(want) and all(_equal(got[k], want[k], tol) for k in want)
    return type(got) is type(want) and got == want


if __name__ == "__main__":
    main()
