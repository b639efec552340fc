"""The tests' side of the code verifier: a dataset's test code, run in a sandbox of its own (stdlib only).

Test code that is not of the usual shape (a ``check()`` with loops or helpers, MBPP / APPS
style) cannot be compiled into calls judged by the verifier, so it runs here. It never shares a
process with the program under test: every name the solution defines is a :class:`Remote`
stand-in that sends the call over a pipe to the program's own sandbox (``_harness.py``, mode
``serve``) and gets back plain data (built here, by :func:`decode`, from builtin types only),
a handle to an object that stays there, or the exception. The tests, their expected values, the
nonce and this report are out of the solution's reach.

Each ``assert`` is rewritten to record its outcome (so a fraction of tests can pass) and to
compare plain values with :func:`strict_equal`, as the compiled path does: both paths judge
the same test the same way. Instructions come as JSON on stdin; the report goes to the result
pipe, every line behind the nonce: ``total N``, ``case i ok why``, ``done`` / ``stopped`` /
``fatal why``.
"""

import ast
import builtins
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's folder out

from _rlvr_harness import _no_constant, _why, decode, encode, plain, strict_equal

_MAX_REPLY = 1 << 22
# Exceptions that steer control flow rather than report an error (a ``for`` loop, ``map``, ``zip`` or
# ``next(it, default)`` takes StopIteration as "no more items"): never rebuilt from the program's
# raise, or a program could end the tests' loop before its asserts run.
_PROTOCOL = ("StopIteration", "StopAsyncIteration")
_EXCEPTIONS = {
    k: v for k, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, Exception) and k not in _PROTOCOL
}


class ProgramGone(BaseException):
    """The program under test exited, was killed or answered something that is not a reply: its
    death, not an error a test's ``except Exception`` may take for the one it expects."""


class ProgramRaised(Exception):
    """The program raised an exception the tests must not take for control flow (StopIteration)."""


class Channel:
    """The pipe pair to the program's sandbox: one request line out, one reply line back."""

    def __init__(self, calls_fd, replies_fd):
        self.out, self.reader, self.gone = calls_fd, os.fdopen(replies_fd, "rb"), ""

    def ask(self, request, args=(), kwargs=None):
        if self.gone:
            raise ProgramGone(self.gone)
        try:
            os.write(self.out, (json.dumps(request) + "\n").encode())
            line = self.reader.readline(_MAX_REPLY)
        except OSError as e:
            line, self.gone = b"", "the program under test is gone (%s)" % _why(e)
        if not line.endswith(b"\n"):
            self.gone = self.gone or ("the program under test is gone" if not line else "its reply is too long")
            raise ProgramGone(self.gone)
        try:
            reply = json.loads(line, parse_constant=_no_constant)
            if type(reply) is not dict:
                raise ValueError("not an object")
            if "after" in reply:  # what the call did to the arguments: done to the tests' own objects
                _mirror(args, kwargs or {}, reply["after"])
            if "value" in reply:
                if "same" in reply:  # it returned an argument itself: the tests' own object
                    k = reply["same"]
                    return args[k] if type(k) is int else (kwargs or {})[k]
                return decode(reply["value"])
            if "ref" in reply and type(reply["ref"]) is int:
                return Remote(self, {"ref": reply["ref"]}, str(reply.get("type", "object"))[:60])
            if "gone" in reply:
                self.gone = str(reply["gone"])[:300]
                raise ProgramGone(self.gone)
            why, kind = str(reply["raised"])[:300], str(reply.get("type", ""))
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            self.gone = "unreadable reply from the program under test (%s)" % _why(e)
            raise ProgramGone(self.gone) from None
        if kind in _PROTOCOL:
            raise ProgramRaised("the program raised %s: %s" % (kind, why))
        # the most derived builtin class the exception is (the harness walks its MRO by identity)
        raise _EXCEPTIONS.get(kind, ProgramRaised)(why)


class Remote:
    """A name of the solution, or an object that stays in its sandbox: calling it (or one of its
    attributes) asks the program. It equals only itself and has no truth value, so no assert can
    pass on a handle."""

    __slots__ = ("_channel", "_target", "_type")

    def __init__(self, channel, target, type_name):
        self._channel, self._target, self._type = channel, target, type_name

    def __call__(self, *args, **kwargs):
        request = {"op": "call", **self._target, "args": _send(args), "kwargs": _send(kwargs)}
        return self._channel.ask(request, args, kwargs)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._channel.ask({"op": "getattr", **self._target, "attr": attr})

    def __bool__(self):
        raise TypeError("a %s of the program under test has no truth value here" % self._type)

    def __repr__(self):
        return "<%s of the program under test>" % self._type


def _mirror(args, kwargs, after):
    """Give the tests' own argument objects the state the program left its copies in (a list
    sorted in place, a dict filled): a test of mutation is judged on what the call did."""
    for where, encoded in after:
        target = args[where] if type(where) is int else kwargs[where]
        new = decode(encoded)
        if type(new) is not type(target):
            raise ValueError("argument %s changed type" % where)
        if type(target) in (dict, set):
            target.clear()
            target.update(new)
        else:
            target[:] = new


def _send(x):
    """Arguments for the program: plain values, or handles it gave out earlier."""
    if type(x) is Remote and "ref" in x._target:
        return {"ref": x._target["ref"]}
    if type(x) in (list, tuple) and not plain(x):
        items = [_send(v) for v in x]
        return items if type(x) is list else {"tuple": items}
    if type(x) is dict and not plain(x):
        return {"dict": [[encode(k), _send(v)] for k, v in x.items()]}
    return encode(x)  # TypeError (the test fails) for anything else


def namespace(spec, channel):
    """What the tests see: the builtins, a stand-in for each name of the solution's that the tests
    read without binding it (never one that shadows a builtin; a standard module's name is the
    real module, whatever the solution bound to it), the spec's prompt helpers over them (trusted
    code, run here), and the entry point."""
    ns = {"__builtins__": builtins, "__name__": "__tests__"}
    for name in spec.get("names", []):
        if hasattr(builtins, name):
            continue
        if name in sys.stdlib_module_names:  # tests that read `math` unimported get the real one
            try:
                ns[name] = __import__(name)
                continue
            except BaseException:
                pass
        ns[name] = Remote(channel, {"name": name}, name)
    if spec.get("prompt"):
        try:
            exec(compile(spec["prompt"], "prompt.py", "exec"), ns)
        except BaseException:
            pass
    entry = spec.get("entry_point")
    if entry:
        ns[entry.partition(".")[0]] = Remote(channel, {"name": entry.partition(".")[0]}, entry)
    return ns, (Remote(channel, {"name": entry}, entry) if entry else None)


def main():
    spec = json.loads(sys.stdin.read())
    sys.stdin.close()
    fd, nonce = int(sys.argv[1]), spec.pop("nonce")

    def emit(*parts):
        os.write(fd, (" ".join([nonce, *[str(p) for p in parts]]) + "\n").encode("utf-8", "replace"))

    rewrite = _Rewrite()
    try:
        tree = ast.fix_missing_locations(rewrite.visit(ast.parse(spec["tests"], "tests.py")))
    except BaseException as e:
        emit("fatal", json.dumps("tests: " + _why(e)))
        return
    total = max(rewrite.count, 1)
    emit("total", total)
    early, failed = bool(spec.get("early_stop")), set()

    class Stop(BaseException):
        pass

    def record(i, ok, why=""):
        if not ok and i not in failed:
            failed.add(i)
            emit("case", i, 0, json.dumps(why[:200]))
            if early:
                raise Stop()

    channel = Channel(int(sys.argv[2]), int(sys.argv[3]))
    ns, candidate = namespace(spec, channel)
    ns.update(__rlvr_record__=record, __rlvr_cmp__=_compare, __rlvr_truth__=_truth, __rlvr_stop__=Stop)
    try:
        exec(compile(tree, "tests.py", "exec"), ns)
        if rewrite.defines_check and candidate is not None and callable(ns.get("check")):
            ns["check"](candidate)
    except Stop:
        emit("stopped")
        return
    except BaseException as e:
        emit("fatal", json.dumps("tests: " + _why(e)))
        return
    if channel.gone:  # the program died under the tests: not a run whose tests all passed
        emit("fatal", json.dumps("program: " + channel.gone))
        return
    for i in range(total):  # an assert the tests never reached was not required
        if i not in failed:
            emit("case", i, 1, '""')
    emit("done")


_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_OPS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


def _compare(op, a, b):
    """A comparison in an assert: identity as is; plain values with :func:`strict_equal` (the
    compiled path's rule); a handle to the program's objects equals only itself and orders with
    nothing; the tests' own other values compare as Python compares them."""
    if op == "is":
        return a is b
    if op == "is not":
        return a is not b
    if type(a) is Remote or type(b) is Remote:
        if op in ("==", "!="):
            return (a is b) == (op == "==")
        raise AssertionError("a %r cannot be compared" % (a if type(a) is Remote else b))
    if plain(a) and plain(b):
        if op == "==":
            return strict_equal(a, b) or strict_equal(b, a)
        if op == "!=":
            return not (strict_equal(a, b) or strict_equal(b, a))
        if op in ("in", "not in"):
            return _OPS[op](a, b)
        return _OPS[op](a, b) if _orderable(a, b) else False
    return {"==": lambda: a == b, "!=": lambda: a != b}.get(op, lambda: _OPS[op](a, b))()


def _orderable(a, b):
    ta, tb = type(a), type(b)
    return (ta in (int, float) and tb in (int, float)) or ta is tb


def _truth(v):
    """The truth of a value (a handle to the program's objects has none: the assert fails)."""
    return bool(v)


class _Rewrite(ast.NodeTransformer):
    """``assert t, m`` -> record whether ``t`` held (exceptions count as failures); comparisons and
    truth tests inside ``t`` go through :func:`_compare` and :func:`_truth`."""

    def __init__(self):
        self.count = 0
        self.defines_check = False

    def visit_Module(self, node):
        self.defines_check = any(isinstance(n, ast.FunctionDef) and n.name == "check" for n in node.body)
        return self.generic_visit(node)

    def visit_Assert(self, node):
        i = self.count
        self.count += 1
        src = ast.unparse(node.test)[:120]
        body = ast.parse(
            "try:\n    __rlvr_ok__ = __rlvr_truth__(__T__)\n    __rlvr_why__ = '' if __rlvr_ok__ else %r\n"
            "except __rlvr_stop__:\n    raise\n"
            "except BaseException as __rlvr_e__:\n"
            "    __rlvr_ok__, __rlvr_why__ = False, 'raised ' + type(__rlvr_e__).__name__\n"
            "__rlvr_record__(%d, __rlvr_ok__, __rlvr_why__)\n" % ("failed: " + src, i)
        ).body
        body[0].body[0].value.args[0] = _Strict().visit(node.test)
        return [ast.copy_location(s, node) for s in body]


class _Strict(ast.NodeTransformer):
    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) != 1:  # a < b < c: each link on its own
            left, links = node.left, []
            for op, right in zip(node.ops, node.comparators):
                links.append(_cmp_call(op, left, right))
                left = right
            return ast.BoolOp(ast.And(), links)
        return _cmp_call(node.ops[0], node.left, node.comparators[0])

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            node.operand = ast.Call(ast.Name("__rlvr_truth__", ast.Load()), [node.operand], [])
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        node.values = [ast.Call(ast.Name("__rlvr_truth__", ast.Load()), [v], []) for v in node.values]
        return node


def _cmp_call(op, left, right):
    return ast.Call(ast.Name("__rlvr_cmp__", ast.Load()), [ast.Constant(_CMP[type(op)]), left, right], [])


if __name__ == "__main__":
    main()
