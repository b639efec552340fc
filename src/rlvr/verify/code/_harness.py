"""The program's side of the code verifier, run *inside* its sandbox next to it (stdlib only).

The verifier copies this file into the sandbox and runs it; it (and the tests' runner,
``_tests.py``) also imports the pure helpers (:func:`encode`, :func:`load_plain`,
:func:`strict_equal`, :func:`plain`) so that every side agrees on what a plain value is. The
harness reads its instructions as JSON on stdin (so the solution cannot read them from a
file), then closes stdin, and reports on the result pipe, every line prefixed with a nonce the
parent chose. Modes:

``calls``   call ``entry_point`` with each call's arguments and send back what it returned,
            as plain data (exact builtin types only; anything else is refused). No expected
            value ever enters this process: the verifier compares outside the sandbox, so
            whatever the solution does here it can only return values. Function-call cases
            and assert tests of the usual shape (compiled by ``asserts.py``) run this way.
``serve``   answer calls that the tests, running in a sandbox of their own (``_tests.py``),
            send over a pipe: a name or a held object, arguments as plain data; the reply
            is plain data, a handle to an object that stays here, or the exception's name
            and message. The tests, their expected values and their report never share an
            address space with the solution, so nothing the solution does here can read or
            rewrite them: whatever their shape (loops, helpers, MBPP / APPS ``check``), they
            get the guarantee the call mode has.

In both modes an audit hook, installed just before the solution runs, ends the run on frame
and object introspection (``sys._getframe`` outside a few stdlib callers, ``sys._current_frames``,
frames reached through tracebacks, generators or coroutines, ``gc`` scans, tracing hooks,
``ctypes``, ``/proc/*/mem``, starting processes): a ``tamper`` line names what was tried. The
hook only *detects* (for ``alarms/code_tamper``); the verdict's safety never rests on it.
"""

import json
import math
import os
import sys

_PLAIN_ATOMS = (int, float, complex, str, bytes, bool, type(None))
_MAX_DEPTH = 100


# --------------------------------------------------------------------------- plain data


def plain(x, depth=0):
    """True when ``x`` is built only of exact builtin types (no subclass can lie about equality)."""
    t = type(x)
    if t in _PLAIN_ATOMS:
        return True
    if depth > _MAX_DEPTH:
        return False
    if t in (list, tuple, set, frozenset):
        return all(plain(v, depth + 1) for v in x)
    if t is dict:
        return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in x.items())
    return False


def encode(x, depth=0):
    """A JSON-ready tagged form of a plain value (tuples, sets, bytes and odd floats survive).

    Raises TypeError naming the first value that is not plain.
    """
    t = type(x)
    if t is bool or x is None or t is str:
        return x
    if t is int:
        return x if -(2**53) < x < 2**53 else {"int": str(x)}
    if t is float:
        return x if math.isfinite(x) else {"float": repr(x)}
    if depth > _MAX_DEPTH:
        raise TypeError("value nested more than %d deep" % _MAX_DEPTH)
    if t is list:
        return [encode(v, depth + 1) for v in x]
    if t is tuple:
        return {"tuple": [encode(v, depth + 1) for v in x]}
    if t in (set, frozenset):
        return {t.__name__: [encode(v, depth + 1) for v in x]}
    if t is dict:
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]}
    if t is complex:
        return {"complex": [x.real, x.imag]}
    if t is bytes:
        return {"bytes": x.hex()}
    raise TypeError("a %s is not plain data" % _type_name(x))


_MAX_NODES = 1_000_000
_MAX_BUCKET = 8


def _no_constant(name):
    raise ValueError("%s is not plain JSON" % name)


def load_plain(text, max_nodes=_MAX_NODES, refs=None):
    """Parse one JSON-encoded plain value that *untrusted* code may have written (see :func:`decode`);
    no ``NaN``/``Infinity`` constants. Raises ValueError for anything else."""
    try:
        raw = json.loads(text, parse_constant=_no_constant)
    except ValueError:
        raise
    except BaseException as e:  # RecursionError on deep nesting, MemoryError...
        raise ValueError("unreadable value: " + _why(e)) from None
    return decode(raw, max_nodes, refs)


def decode(raw, max_nodes=_MAX_NODES, refs=None):
    """Inverse of :func:`encode`, bounded in time and size whoever wrote ``raw``.

    Only what :func:`encode` writes is accepted: at most ``max_nodes`` values, no set or dict
    whose members share a hash more than a few times (a set of colliding integers costs
    quadratic time to build and to compare). ``{"ref": k}`` becomes ``refs[k]`` when a table
    is given. Raises ValueError for anything else, whatever went wrong inside.
    """
    try:
        return _decode_bounded(raw, [max_nodes], refs, 0)
    except ValueError:
        raise
    except BaseException as e:  # OverflowError, RecursionError, MemoryError, TypeError...
        raise ValueError("unreadable value: " + _why(e)) from None


def _decode_bounded(x, budget, refs, depth):
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("value has more than the allowed number of parts")
    if depth > _MAX_DEPTH:
        raise ValueError("value nested more than %d deep" % _MAX_DEPTH)
    t = type(x)
    if t in (str, bool, int, float) or x is None:
        return x
    if t is list:
        return [_decode_bounded(v, budget, refs, depth + 1) for v in x]
    if t is not dict or len(x) != 1:
        raise ValueError("not an encoded value")
    ((tag, v),) = x.items()
    if tag == "int" and type(v) is str:
        return int(v)
    if tag == "float" and type(v) is str and v in ("inf", "-inf", "nan"):
        return float(v)
    if tag == "complex" and type(v) is list and len(v) == 2 and all(type(p) in (int, float) for p in v):
        return complex(v[0], v[1])
    if tag == "bytes" and type(v) is str:
        return bytes.fromhex(v)
    if tag == "ref" and refs is not None and type(v) is int and v in refs:
        return refs[v]
    if type(v) is not list:
        raise ValueError("not an encoded value")
    items = [_decode_bounded(i, budget, refs, depth + 1) for i in v]
    if tag == "tuple":
        return tuple(items)
    if tag in ("set", "frozenset"):
        _spread(items)
        return set(items) if tag == "set" else frozenset(items)
    if tag == "dict":
        if not all(type(p) is list and len(p) == 2 for p in items):
            raise ValueError("not an encoded dict")
        _spread([k for k, _ in items])
        return dict(items)
    raise ValueError("unknown tag %r" % tag)


def _spread(keys):
    """Refuse members that share one hash more than a few times (before any set or dict is built)."""
    seen = {}
    for k in keys:
        h = hash(k)  # TypeError for an unhashable member: the caller turns it into ValueError
        seen[h] = seen.get(h, 0) + 1
        if seen[h] > _MAX_BUCKET:
            raise ValueError("set or dict members collide on one hash")


_NUMBERS = (int, float)


def strict_equal(got, want, depth=0):
    """``got == want`` for plain values whose types agree: int and float compare as numbers,
    everything else (bool included) must have the expected value's exact type."""
    tg, tw = type(got), type(want)
    if depth > _MAX_DEPTH or (depth == 0 and not plain(got)):
        return False
    if tw is bool or tg is bool:
        return tg is tw and got == want
    if tw in _NUMBERS:
        return tg in _NUMBERS and got == want
    if tw in (list, tuple):
        return tg is tw and len(got) == len(want) and all(strict_equal(g, w, depth + 1) for g, w in zip(got, want))
    if tw is dict:
        return (
            tg is dict
            and len(got) == len(want)
            and all(k in got and strict_equal(got[k], v, depth + 1) for k, v in want.items())
        )
    if tw in (set, frozenset):
        return tg in (set, frozenset) and got == want
    return tg is tw and got == want


_COMPARE_DUNDERS = (
    "__eq__",
    "__ne__",
    "__hash__",
    "__bool__",
    "__len__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__contains__",
    "__index__",
    "__int__",
    "__float__",
    "__abs__",
    "__sub__",
    "__rsub__",
    "__str__",
    "__repr__",
)


def lying_dunders(x):
    """The comparison-like methods a non-builtin class of ``x`` defines itself (the oldest hack in
    code RL: an ``int`` subclass whose ``__eq__`` always says yes)."""
    try:
        mro = type.__dict__["__mro__"].__get__(type(x))
    except Exception:
        return []
    found = []
    for klass in mro:
        if klass.__module__ == "builtins":
            continue
        d = type.__dict__["__dict__"].__get__(klass)
        found.extend(n for n in _COMPARE_DUNDERS if n in d and n not in found)
    return found


def _type_name(x):
    try:
        return type.__dict__["__name__"].__get__(type(x))
    except Exception:
        return "object"


def _builtin_exceptions():
    """Each builtin exception class by identity -> its name, taken before the solution runs (it may
    rebind ``builtins.ValueError``, or define a class of that name)."""
    import builtins

    return {v: k for k, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}


_BUILTIN_EXCEPTIONS = _builtin_exceptions()


def exception_kind(e):
    """The name of the most derived *builtin* class an exception is an instance of (walking its
    class's MRO by identity): a class the program defines and names ``ValueError`` is reported as
    the builtin it derives from (``Exception``), never as the builtin whose name it took."""
    try:
        mro = type.__dict__["__mro__"].__get__(type(e))
    except Exception:
        return "BaseException"
    for c in mro:
        name = _BUILTIN_EXCEPTIONS.get(c) if type(c) is type else None
        if name is not None:
            return name
    return "BaseException"


#: What ends the program rather than reports an error: its death, never an exception the tests catch.
_DEATHS = ("SystemExit", "KeyboardInterrupt", "GeneratorExit")


def _why(e):
    """``Type: message`` of an exception, even one whose ``__str__`` raises."""
    name = _type_name(e)
    try:
        return "%s: %s" % (name, str.__str__(str(e)))[:300]
    except BaseException:
        return name


# --------------------------------------------------------------------------- the audit hook

# (file under the stdlib, function) pairs that call sys._getframe or reach a traceback's frame
# for their own use and hand no frame back; the value, when set, is the function that must be
# *their* caller (logging's ``currentframe`` returns a frame unless findCaller is asking).
_FRAME_CALLERS = {
    ("enum.py", "_create_"): None,
    ("typing.py", "_caller"): None,
    ("collections/__init__.py", "namedtuple"): None,
    ("subprocess.py", "_text_encoding"): None,
    ("warnings.py", "warn"): None,
    ("asyncio/events.py", "__init__"): None,
    ("asyncio/format_helpers.py", "extract_stack"): None,
    ("asyncio/futures.py", "__init__"): None,
    ("asyncio/streams.py", "__init__"): None,
    ("logging/__init__.py", "<lambda>"): "findCaller",
    ("logging/__init__.py", "handleError"): None,
    ("traceback.py", "_walk_tb_with_full_positions"): "_extract_from_extended_frame_gen",
}
_FRAME_ATTRS = ("tb_frame", "gi_frame", "cr_frame", "ag_frame")
_ALWAYS = {
    "sys._current_frames": "sys._current_frames()",
    "gc.get_objects": "a gc.get_objects() scan",
    "gc.get_referrers": "gc.get_referrers()",
    "gc.get_referents": "gc.get_referents()",
    "sys.settrace": "a trace hook (sys.settrace)",
    "sys.setprofile": "a profile hook (sys.setprofile)",
    "sys.addaudithook": "another audit hook",
    "os.system": "os.system()",
    "subprocess.Popen": "starting a process",
    "os.posix_spawn": "starting a process",
    "os.exec": "exec of another program",
    "os.spawn": "starting a process",
    "os.fork": "os.fork()",
    "os.forkpty": "os.fork()",
    "pty.spawn": "starting a process",
    "sys._getframemodulename": "sys._getframemodulename()",
}
_BANNED_MODULES = ("ctypes", "_ctypes", "_testcapi", "_testinternalcapi", "_xxsubinterpreters")


def install_audit_hook(report):
    """Install the tamper hook; ``report(what)`` is called once, then the process exits.

    Everything the hook uses is bound here, before the solution runs: it reads no builtin and
    no module global that the solution could have replaced by then.
    """
    stdlib = os.path.dirname(os.__file__) + os.sep
    getframe, exit_now, busy = sys._getframe, os._exit, [False]
    frame_callers, always, attrs = dict(_FRAME_CALLERS), dict(_ALWAYS), _FRAME_ATTRS
    banned, str_, bytes_, type_ = _BANNED_MODULES, str, bytes, type

    def caller(depth):
        code = getframe(depth).f_code
        name = code.co_filename
        rel = name[len(stdlib) :] if name.startswith(stdlib) and "-packages" not in name else None
        return rel, code.co_name

    def allowed_frame_use():
        # caller(0) <- allowed_frame_use(1) <- judge(2) <- hook(3) <- the code that raised the event(4) <- its caller(5)
        rel, func = caller(4)
        if rel is None or (rel, func) not in frame_callers:
            return False
        need = frame_callers[(rel, func)]
        return need is None or caller(5)[1] == need

    def judge(event, args):
        if event in always:
            return always[event]
        if event == "sys._getframe":
            return None if allowed_frame_use() else "frame introspection (sys._getframe)"
        if event == "object.__getattr__" and args[1:2] and args[1] in attrs:
            return None if allowed_frame_use() else "frame introspection (." + str_(args[1]) + ")"
        if event.startswith("ctypes."):
            return "ctypes"
        if event == "import" and args and str_(args[0]).partition(".")[0] in banned:
            return "importing " + str_(args[0])
        if event == "open" and args and type_(args[0]) in (str_, bytes_):
            path = args[0] if type_(args[0]) is str_ else args[0].decode("utf-8", "replace")
            if path == "/dev/mem" or (path.startswith("/proc/") and path.rstrip("/").endswith(("/mem", "/pagemap"))):
                return "opening " + path
        return None

    def hook(event, args):
        if busy[0]:
            return
        busy[0] = True
        try:
            what = judge(event, args)
        except BaseException:
            what = None
        busy[0] = False
        if what:
            busy[0] = True  # report once, whatever the report itself triggers
            try:
                report(what)
            finally:
                exit_now(3)

    sys.addaudithook(hook)


def watch(modules):
    """A closure naming the first attribute of ``modules`` (name -> module) that was rebound since
    this call, or None: the tests' builtins, maths and imports, and the harness itself."""
    recorded = [(name, vars(m), tuple(vars(m).items())) for name, m in modules.items()]

    def patched():
        for name, live, items in recorded:
            get = live.get
            for key, value in items:
                if get(key, value) is not value:
                    return "patched " + name + "." + key
        return None

    return patched


# --------------------------------------------------------------------------- running


def main():
    spec = json.loads(sys.stdin.read())
    sys.stdin.close()
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the solution reads an empty stdin for the whole run
    fd = int(sys.argv[1])
    nonce = spec.pop("nonce")
    write, dumps, exit_now, str_ = os.write, json.dumps, os._exit, str

    def emit(*parts):
        write(fd, (" ".join([nonce, *[str_(p) for p in parts]]) + "\n").encode("utf-8", "replace"))

    def tamper(what):
        emit("tamper", dumps(what))
        exit_now(3)

    with open(spec.get("source", "solution.py")) as f:
        code = compile(f.read(), "solution.py", "exec")
    import builtins

    patched = watch({"builtins": builtins, "math": math, "harness": sys.modules[__name__]})
    if spec["mode"] == "calls":
        _run_calls(spec, code, emit, dumps, patched, tamper)
    else:
        _serve(spec, code, emit, dumps, patched, tamper, int(sys.argv[2]), int(sys.argv[3]))


def _exec_solution(code, emit, dumps):
    """Run the solution's module code in its own namespace (None when it raised), with the tamper
    hook on and the harness out of ``sys.modules`` (the solution cannot look it up by name)."""
    import types

    ns = {"__name__": "__solution__", "__builtins__": __builtins__}
    install_audit_hook(lambda what: emit("tamper", dumps(what)))
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        exec(code, ns)
    except BaseException as e:
        emit("fatal", dumps("solution: " + _why(e)))
        return None
    return ns


def _returned(got, patched, tamper):
    """What a call's return value becomes: ``(True, encoded)`` when plain, ``(False, why)`` when
    not; a returned object that lies about equality is a tamper (and the run ends)."""
    what = patched()  # before anything below trusts a builtin
    if what:
        tamper(what)
    if plain(got):
        return True, encode(got)
    liars = lying_dunders(got)
    if liars:
        tamper("returned a %s that overrides %s" % (_type_name(got), ", ".join(liars[:4])))
    return False, "returned a %s, which is not plain data" % _type_name(got)


def _run_calls(spec, code, emit, dumps, patched, tamper):
    calls = [(decode(c["args"]), decode(c.get("kwargs") or {})) for c in spec["calls"]]
    emit("total", len(calls))
    ns = _exec_solution(code, emit, dumps)
    if ns is None:
        return
    try:
        fn = _resolve(ns, spec["entry_point"])
    except BaseException as e:
        emit("fatal", dumps("solution: " + _why(e)))
        return
    for i, (args, kwargs) in enumerate(calls):
        try:
            got = fn(*args, **kwargs)
        except BaseException as e:
            what = patched()  # before anything below trusts a builtin
            if what:
                tamper(what)
            emit("raised", i, dumps(_why(e)))
            continue
        ok, value = _returned(got, patched, tamper)
        emit("result" if ok else "raised", i, dumps(value))
    emit("done")


def _serve(spec, code, emit, dumps, patched, tamper, calls_fd, replies_fd):
    """Answer the tests' requests, one JSON line each, until they close the pipe.

    A request is ``{"op": "call" | "getattr", "name": str | "ref": k, "attr", "args", "kwargs"}``;
    the reply ``{"value": encoded}``, ``{"ref": k, "type": name}`` (an object kept here, such as
    a ``Solution()`` instance or a bound method) or ``{"raised": why, "type": exception name}``.
    """
    reader = os.fdopen(calls_fd, "rb")
    write, loads, exc_name, deaths, exit_now = os.write, json.loads, exception_kind, _DEATHS, os._exit
    ns = _exec_solution(code, emit, dumps)
    if ns is None:
        return
    held = {}

    def reply(obj):
        write(replies_fd, (dumps(obj) + "\n").encode("utf-8", "replace"))

    for line in reader:
        args, kwargs, before = (), {}, {}
        try:
            req = loads(line)
            target = held[req["ref"]] if "ref" in req else _resolve(ns, req["name"])
            if req["op"] == "getattr":
                got = getattr(target, req["attr"])
            else:
                args, kwargs = decode(req["args"], refs=held), decode(req["kwargs"], refs=held)
                before = _mutable_state(args, kwargs)
                got = target(*args, **kwargs)
        except BaseException as e:
            what = patched()
            if what:
                tamper(what)
            kind = exc_name(e)
            if kind in deaths:  # the program ended itself: the tests learn it died, and it does
                reply({"gone": "the program exited (%s)" % _why(e)})
                emit("done")
                exit_now(0)
            reply({"raised": _why(e), "type": kind})
            continue
        ok, value = _returned(got, patched, tamper)  # (checks the builtins before what follows)
        effects = _call_effects(got, args, kwargs, before)
        if "raised" in effects:
            reply(effects)
            continue
        if ok:
            reply({"value": value, **effects})
            continue
        held[len(held)] = got
        reply({"ref": len(held) - 1, "type": _type_name(got)})
    emit("done")


_MUTABLE = (list, dict, set, bytearray)


def _mutable_state(args, kwargs):
    """``{position or keyword: encoded}`` of the call's mutable plain arguments, before the call."""
    where = [(i, a) for i, a in enumerate(args)] + list(kwargs.items())
    return {k: encode(a) for k, a in where if type(a) in _MUTABLE and plain(a)}


def _call_effects(got, args, kwargs, before):
    """What the call did to its mutable arguments, for the tests to see on their own objects:
    ``{"after": [[where, encoded], ...]}`` for each one it changed, ``"same": where`` when it
    returned one of them (identity); ``{"raised": ...}`` when it made one not plain data."""
    after, same = [], None
    for k, enc in before.items():
        a = args[k] if type(k) is int else kwargs[k]
        if not plain(a):
            return {"raised": "the program put what is not plain data into argument %s" % k, "type": "BaseException"}
        now = encode(a)
        if now != enc:
            after.append([k, now])
        if got is a:
            same = k
    out = {"after": after} if after else {}
    if same is not None:
        out["same"] = same
    return out


def _resolve(ns, name):
    """``f`` or ``Solution.method`` (LeetCode style: the class is instantiated)."""
    head, _, attr = name.partition(".")
    obj = ns[head]
    if attr:
        obj = getattr(obj() if isinstance(obj, type) else obj, attr)
    return obj


if __name__ == "__main__":
    main()
