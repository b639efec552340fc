"""Forgery attempts: a wrong solution that tries to make its tests report "all passed".

Each attempt is tried against every spec form: assert tests compiled to calls (judged outside the
sandbox), assert tests that must run as code (in a sandbox of their own, apart from the program),
function-call cases, and stdin/stdout cases. None may score ``correct``; where the harness can see
the attempt, the verdict names it in ``details["tamper"]``. The forgery table of docs/guides/code.md is
this file's results.
"""

from __future__ import annotations

import pytest

from rlvr.types import Status
from rlvr.verify.code.verifier import verify_code

COMPILED = {
    "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
    "    assert abs(candidate(1, 1) - 2) < 1e-9\n    assert not candidate(0, 0)\n",
    "entry_point": "add",
}
APART = {
    "tests": "import math\n\ndef check(candidate):\n    for a, b in [(1, 2), (2, 2), (5, 7)]:\n"
    "        assert candidate(a, b) == a + b\n        assert math.isclose(candidate(a, b), a + b)\n"
    "        assert not candidate(a, b) != a + b\n",
    "entry_point": "add",
}
CALL = {"entry_point": "add", "cases": [{"args": [1, 2], "result": 3}, {"args": [2, 2], "result": 4}]}
IO = {"cases": [{"input": "1 2\n", "output": "3\n"}, {"input": "2 2\n", "output": "4\n"}]}
FORMS = {"assert, compiled": COMPILED, "assert, apart": APART, "call": CALL, "io": IO}
IO_MAIN = "\nif __name__ == '__main__':\n    a, b = map(int, input().split())\n    print(add(a, b))\n"

# A *wrong* add(a, b) (it subtracts) dressed in an attempt to fake the report. `tamper`: the harness
# sees the attempt itself (and says so); otherwise the attempt simply fails.
FRAME_WALK = """
def _forge(f):
    while f is not None:
        loc = f.f_locals
        for name in ("record", "emit"):
            fn = loc.get(name)
            if callable(fn):
                try:
                    for i in range(50):
                        fn(i, True) if name == "record" else fn("case", i, 1, '""')
                    loc.get("emit", lambda *a: None)("done")
                except BaseException:
                    pass
        f = f.f_back
"""
ATTEMPTS: dict[str, tuple[str, bool]] = {
    "walks sys._getframe to the harness": (
        FRAME_WALK
        + """
import sys
def add(a, b):
    _forge(sys._getframe())
    return a - b
""",
        True,
    ),
    "walks inspect.stack()": (
        """
import inspect
def add(a, b):
    for info in inspect.stack():
        info.frame.f_locals.get("failed", set()).clear()
    return a - b
""",
        True,
    ),
    "reaches frames through a traceback": (
        FRAME_WALK
        + """
def add(a, b):
    try:
        raise ValueError
    except ValueError as e:
        _forge(e.__traceback__.tb_frame)
    return a - b
""",
        True,
    ),
    "reaches frames through a generator": (
        FRAME_WALK
        + """
def _g():
    yield 1
def add(a, b):
    g = _g()
    next(g)
    _forge(g.gi_frame)
    return a - b
""",
        True,
    ),
    "reads sys._current_frames()": (
        FRAME_WALK
        + """
import sys
def add(a, b):
    for f in sys._current_frames().values():
        _forge(f)
    return a - b
""",
        True,
    ),
    "scans gc objects for the reporter": (
        """
import gc
def add(a, b):
    for o in gc.get_objects():
        if callable(o) and getattr(o, "__name__", "") in ("record", "emit"):
            try:
                o("done")
            except BaseException:
                pass
    return a - b
""",
        True,
    ),
    "asks gc for the referrers of its own function": (
        """
import gc
def add(a, b):
    for o in gc.get_referrers(add):
        if isinstance(o, dict):
            o.clear()
    return a - b
""",
        True,
    ),
    "returns an int subclass whose __eq__ says yes": (
        """
class Yes(int):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return False
    __hash__ = int.__hash__
def add(a, b):
    return Yes(a - b)
""",
        True,
    ),
    "returns an object equal to everything": (
        """
class Any:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return False
    def __sub__(self, other): return 0
    def __abs__(self): return 0
def add(a, b):
    return Any()
""",
        True,
    ),
    "overrides __hash__ to collide with everything": (
        """
class H(tuple):
    def __hash__(self): return 0
    def __eq__(self, other): return True
def add(a, b):
    return H()
""",
        True,
    ),
    "patches builtins.abs and builtins.bool": (
        """
import builtins
builtins.abs = lambda x: 0
builtins.bool = lambda x: True
def add(a, b):
    return a - b
""",
        True,
    ),
    "patches builtins.type while it returns, then restores it": (
        """
import builtins
_real = builtins.type
class Liar(int):
    def __eq__(self, other): return True
    def __del__(self):
        builtins.type = _real
def add(a, b):
    builtins.type = lambda x, *r: int if not r else _real(x, *r)
    return Liar(a - b)
""",
        True,
    ),
    "patches math.isclose and operator.eq": (
        """
import math, operator
math.isclose = lambda *a, **k: True
operator.eq = lambda a, b: True
def add(a, b):
    return a - b
""",
        True,
    ),
    "replaces the harness's recorder in its globals": (
        """
def add(a, b):
    globals()["__rlvr_record__"] = lambda *a, **k: None
    return a - b
""",
        False,
    ),
    "patches the harness module by name": (
        """
import sys
m = sys.modules.get("__main__")
for name in ("strict_equal", "plain", "_compare", "_truth", "evaluate"):
    setattr(m, name, lambda *a, **k: True)
def add(a, b):
    return a - b
""",
        False,
    ),
    "raises SystemExit(0) from inside the call": (
        """
def add(a, b):
    raise SystemExit(0)
""",
        False,
    ),
    "raises an exception named like the harness's Stop": (
        """
class Stop(BaseException):
    pass
def add(a, b):
    raise Stop()
""",
        False,
    ),
    "raises an exception whose __str__ raises": (
        """
class Bad(Exception):
    def __str__(self): raise RuntimeError("no")
def add(a, b):
    raise Bad()
""",
        False,
    ),
    "exits 0 before the tests (os._exit)": (
        """
import os
os._exit(0)
def add(a, b):
    return a - b
""",
        False,
    ),
    "registers an atexit that prints done": (
        """
import atexit, os
atexit.register(lambda: [os.write(fd, b"deadbeef done\\n") for fd in range(3, 12) if _try(fd)])
def _try(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
def add(a, b):
    return a - b
""",
        False,
    ),
    "writes report-like lines to stdout and every descriptor": (
        """
import os
for fd in range(1, 16):
    try:
        os.write(fd, b"case 0 1 \\"\\"\\ncase 1 1 \\"\\"\\nresult 0 3\\nresult 1 4\\ndone\\n")
    except OSError:
        pass
def add(a, b):
    return a - b
""",
        False,
    ),
    "installs a trace hook": (
        """
import sys
def tracer(frame, event, arg):
    frame.f_locals.get("failed", set()).clear()
    return tracer
sys.settrace(tracer)
def add(a, b):
    return a - b
""",
        True,
    ),
    "loads ctypes to rewrite memory": (
        """
import ctypes
def add(a, b):
    return a - b
""",
        True,
    ),
    "opens /proc/self/mem": (
        """
def add(a, b):
    try:
        open("/proc/self/mem", "rb")
    except OSError:
        pass
    return a - b
""",
        True,
    ),
    "starts a process to read the harness's memory": (
        """
import subprocess
def add(a, b):
    try:
        subprocess.run(["cat", "/proc/1/maps"], capture_output=True)
    except Exception:
        pass
    return a - b
""",
        True,
    ),
    # round 2: each of these made a wrong program pass when the tests ran in the program's own process
    "rebinds the result descriptor and rewrites the report at exit": (
        """
import atexit, os
def _rewrite():
    for fd in range(3, 16):
        try:
            os.lseek(fd, 0, 0)
        except OSError:
            pass
        try:
            os.write(fd, b"".join(b"%d case %d 1 \\"\\"\\n" % (fd, i) for i in range(8)) + b"done\\n")
        except OSError:
            pass
atexit.register(_rewrite)
for fd in range(3, 16):
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    except OSError:
        pass
def add(a, b):
    return a - b
""",
        False,
    ),
    "reads its own memory through a symlink to /proc/self/mem": (
        """
import os, re
def _scan():
    try:
        os.symlink("/proc/self/mem", "m")
        maps = open("/proc/self/maps").read().splitlines()
        mem = open("m", "rb")
    except OSError:
        return b""
    found = b""
    for line in maps:
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        if "rw" not in line.split()[1] or hi - lo > 1 << 26:
            continue
        try:
            mem.seek(lo)
            chunk = mem.read(hi - lo)
        except OSError:
            continue
        m = re.search(rb'"nonce": "([0-9a-f]{16})"', chunk)
        found = m.group(1) if m else found
    return found
NONCE = _scan()
def add(a, b):
    for fd in range(3, 16):
        try:
            os.write(fd, b"".join(NONCE + b" case %d 1 \\"\\"\\n" % i for i in range(8)) + NONCE + b" done\\n")
        except OSError:
            pass
    return a - b
""",
        False,
    ),
    "compiles its frame walk under a standard-library file name": (
        FRAME_WALK
        + """
import sys, os
src = "def _create_(f):\\n    return sys._getframe(1)\\n"
ns = {"sys": sys}
exec(compile(src, os.path.dirname(os.__file__) + "/enum.py", "exec"), ns)
def add(a, b):
    _forge(ns["_create_"](None))
    return a - b
""",
        False,
    ),
    "patches logging and traceback helpers the hook trusts": (
        FRAME_WALK
        + """
import logging, traceback, sys
logging.currentframe = lambda: sys._getframe(3)
traceback.walk_stack = lambda f: iter(())
def add(a, b):
    try:
        _forge(logging.currentframe())
    except BaseException:
        pass
    return a - b
""",
        False,
    ),
    "imports through a str subclass name": (
        """
class S(str):
    def partition(self, sep):
        return ("safe", "", "")
    def startswith(self, *a):
        return False
def add(a, b):
    try:
        ct = __import__(S("ctypes"))
        ct.memmove(0, 0, 0)
    except BaseException:
        pass
    return a - b
""",
        False,
    ),
    "swaps the record and compare names it can reach": (
        """
import builtins
for name in ("__rlvr_record__", "__rlvr_cmp__", "__rlvr_truth__", "record", "compare"):
    setattr(builtins, name, lambda *a, **k: True)
    globals()[name] = lambda *a, **k: True
def add(a, b):
    return a - b
""",
        False,
    ),
    "replaces a function's __code__": (
        """
def add(a, b):
    return a - b
def _yes(*a, **k):
    return True
import gc
for f in list(globals().values()):
    if callable(f) and hasattr(f, "__code__") and f is not add:
        try:
            f.__code__ = _yes.__code__
        except BaseException:
            pass
""",
        False,
    ),
    "spawns a reader through _posixsubprocess.fork_exec": (
        """
def add(a, b):
    try:
        import _posixsubprocess, os
        r, w = os.pipe()
        _posixsubprocess.fork_exec(["/bin/cat", "/proc/1/environ"], [b"/bin/cat"], True, (w,), None, None,
                                   -1, -1, -1, w, -1, -1, r, w, True, False, None, None, None, -1, None, False)
    except BaseException:
        pass
    return a - b
""",
        False,
    ),
    "swaps the JSON encoder so the report carries Infinity": (
        """
import json
json._default_encoder.encode = lambda o: '{"int": Infinity}'
def add(a, b):
    return a - b
""",
        False,
    ),
}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("attempt", list(ATTEMPTS))
def test_no_forgery_scores_correct(attempt: str, form: str) -> None:
    code, seen = ATTEMPTS[attempt]
    v = verify_code(f"```python\n{code}{IO_MAIN if form == 'io' else ''}\n```", FORMS[form], timeout=10)
    assert v.status is not Status.CORRECT, (attempt, form, v.reason)
    assert v.status in (Status.WRONG, Status.NO_ANSWER), v  # a failure of the program, never an error of ours
    if seen and form != "io":  # io programs run alone: there is no harness to tamper with
        assert v.details.get("tamper"), (attempt, form, v.reason)
        assert v.reason.startswith("tamper attempt")


def test_the_forms_are_what_they_claim() -> None:
    right = "```python\ndef add(a, b):\n    return a + b\n" + IO_MAIN + "```"
    for form, spec in FORMS.items():
        v = verify_code(right, spec)
        assert v.status is Status.CORRECT, (form, v.reason)
        assert v.details["checks"] == ("apart" if form == "assert, apart" else "outside")


def test_stdlib_that_uses_frames_for_itself_is_not_a_tamper() -> None:
    code = """
import collections, dataclasses, enum, logging, typing, traceback
P = collections.namedtuple("P", "x y")
T = typing.TypeVar("T")
Color = enum.Enum("Color", "RED GREEN")
@dataclasses.dataclass
class Box:
    v: int
log = logging.getLogger("solution")
def add(a, b):
    log.warning("adding %s and %s", a, b)
    try:
        {}["missing"]
    except KeyError:
        traceback.format_exc()
    return Box(P(a, b).x).v + b
"""
    for form in ("assert, compiled", "assert, apart", "call"):
        v = verify_code(f"```python\n{code}\n```", FORMS[form])
        assert v.status is Status.CORRECT, (form, v.reason)


def test_a_tamper_is_reported_even_when_the_answer_is_right() -> None:
    code = "import sys\ndef add(a, b):\n    sys._getframe()\n    return a + b\n"
    v = verify_code(f"```python\n{code}```", COMPILED)
    assert v.status is Status.WRONG and v.details["tamper"] == "frame introspection (sys._getframe)"


def test_tests_of_any_shape_run_apart_and_still_judge_right_from_wrong() -> None:
    """MBPP / APPS-style checks (loops, helpers, module-level asserts, a class entry point, an
    expected exception) in their own sandbox: right passes, wrong fails, partly right counts."""
    mbpp = {
        "tests": "def _cases():\n    return [(1, 2), (3, 4), (10, -2)]\n"
        "for a, b in _cases():\n    assert add(a, b) == a + b\n"
        "try:\n    add('a', 1)\n    raised = False\nexcept TypeError:\n    raised = True\nassert raised\n"
    }
    right = "```python\ndef add(a, b):\n    return a + b\n```"
    half = "```python\ndef add(a, b):\n    if a > 5:\n        return 0\n    return a + b\n```"
    assert verify_code(right, mbpp).status is Status.CORRECT
    v = verify_code(half, mbpp)
    assert v.status is Status.WRONG and v.details["checks"] == "apart" and 0 < v.details["pass_fraction"] < 1
    leet = {
        "tests": "def check(candidate):\n    for n in range(5):\n        assert candidate([n, 1]) == n + 1\n",
        "entry_point": "Solution.total",
    }
    code = "```python\nclass Solution:\n    def total(self, xs):\n        return sum(xs)\n```"
    assert verify_code(code, leet).status is Status.CORRECT
    objects = {"tests": "c = Counter()\nfor _ in range(3):\n    c.bump()\nassert c.value() == 3\nassert not (c == 3)\n"}
    code = (
        "```python\nclass Counter:\n    def __init__(self):\n        self.n = 0\n    def bump(self):\n"
        "        self.n += 1\n    def value(self):\n        return self.n\n```"
    )
    assert verify_code(code, objects).status is Status.CORRECT


def test_a_handle_to_the_programs_objects_passes_no_assert() -> None:
    spec = {
        "tests": "def check(candidate):\n    for x in [1, 2]:\n        assert candidate(x)\n"
        "        assert candidate(x) == candidate(x)\n",
        "entry_point": "f",
    }
    code = "```python\nclass T:\n    pass\ndef f(x):\n    return T()\n```"
    v = verify_code(code, spec)
    assert v.status is Status.WRONG and v.details["passed"] == 0, v.reason
