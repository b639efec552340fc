"""The namespace sandbox's set-up: a root with nothing of the host's in it, entered before exec.

:func:`enter` runs in the forked child of :func:`subprocess.Popen` (its ``preexec_fn``), as root,
so no shell, ``mount`` or interpreter has to start for it. It unshares the mount, network, IPC,
UTS and PID namespaces and forks once more: the first child stays outside and only waits (its
exit status is the program's, so the caller's ``Popen`` sees the program), the second is PID 1
of the new PID namespace and builds the root, a read-only tmpfs holding:

* ``/usr`` (the interpreters, compilers and their standard libraries) bound read-only, with
  the ``/bin``, ``/lib``... links of a merged-/usr system (real directories bound instead);
* the device files a program opens (``/dev/null``, ``zero``, ``random``, ``urandom``, the
  ``/dev/std*`` and ``/dev/fd`` links), the dynamic linker's cache, and a ``/proc`` of the
  sandbox's own PID namespace;
* two size-capped tmpfs, the only writable places: ``/work`` (the program's files, owned by
  its user id) and ``/tmp``.

Nothing else of the host exists there: no ``/root``, ``/home``, ``/etc``, ``/opt``, ``/var``,
``/run``, no checkout, no data set. It then changes root, drops to the sandbox user id (no
groups, ``no_new_privs``: no set-uid binary can raise it again) and returns, so that the
program is exec'd. When PID 1 exits or is killed, the kernel kills everything else in the
namespace. A failure raises, which ``Popen`` reports as the sandbox's error: the program has not
started, so it can never fake one.

Kernel state that outlives a process and is not namespaced is closed too: :func:`seal` installs a
seccomp filter (both sandbox levels) under which the key-management calls (``add_key``,
``request_key``, ``keyctl``) and every call through a non-native ABI (i386's ``int 0x80``, x32) fail
with ``EPERM``, so no run can leave a note in a user keyring for a later one. SysV IPC and abstract
sockets live in the run's own IPC and network namespaces.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
from collections.abc import Sequence

_CLONE = {"ns": 0x00020000, "uts": 0x04000000, "ipc": 0x08000000, "pid": 0x20000000, "net": 0x40000000}
_BIND, _RDONLY, _NOSUID, _NODEV, _REMOUNT, _REC, _PRIVATE = 4096, 1, 2, 4, 32, 16384, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS = 1, 38
ROOT = "/mnt"  # the mount point of the new root: every host has it; in the sandbox's mount namespace only
_DEVICES = ("null", "zero", "random", "urandom")
_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
# Loaded here, in the parent: nothing is imported or loaded in the forked child.
_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


#: (audit arch, add_key, request_key, keyctl) by machine: the calls the filter refuses.
_KEY_CALLS = {"x86_64": (0xC000003E, 248, 249, 250), "aarch64": (0xC00000B7, 217, 218, 219)}


def _key_filter() -> _SockFprog | None:
    """A seccomp program: every call through an ABI other than the machine's native one fails with
    EPERM (the i386 ABI through ``int 0x80`` on x86-64 reaches the same kernel with other call
    numbers; a filter of native numbers alone lets it through), as does every x32 call and the
    native key-management calls; the rest is allowed."""
    calls = _KEY_CALLS.get(platform.machine())
    if calls is None:
        return None
    arch, add_key, request_key, keyctl = calls
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    prog = [
        (ld, 0, 0, 4),  # the call's audit arch
        (jeq, 1, 0, arch),  # the native ABI: on (3)
        (ret, 0, 0, deny),  # any other ABI: refused
        (ld, 0, 0, 0),  # the call number
        (jge, 4, 0, 0x40000000),  # x32: refused (9)
        (jeq, 3, 0, add_key),
        (jeq, 2, 0, request_key),
        (jeq, 1, 0, keyctl),
        (ret, 0, 0, allow),
        (ret, 0, 0, deny),
    ]
    arr = (_SockFilter * len(prog))(*(_SockFilter(*ins) for ins in prog))
    fprog = _SockFprog(len(prog), arr)
    fprog._keep = arr  # the array lives as long as the program
    return fprog


_FILTER = _key_filter()


def seal() -> None:
    """No new privileges (no set-uid binary can raise them) and the key-call filter, for this
    process and everything it execs (in the forked child, just before exec)."""
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    if _FILTER is not None:
        _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(_FILTER), 0, 0), "seccomp")


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            src.encode(), target.encode(), fstype.encode() if fstype else None, flags, data.encode() if data else None
        ),
        f"mount {target}",
    )


def _bind_read_only(src: str, target: str) -> None:
    _mount(src, target, None, _BIND | _REC)
    _mount(src, target, None, _BIND | _REMOUNT | _RDONLY | _NOSUID | _NODEV)


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (a fork clears the setting: set it in each)."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def enter(uid: int, workdir: str, file_mb: int, read_only: Sequence[str] = ()) -> None:
    """Unshare, fork, build the root and become ``uid`` inside it (see the module docstring).

    Returns only in the sandbox's PID 1; the process that called it waits for that one and exits
    with its status (or by its signal)."""
    _check(_libc.unshare(sum(_CLONE.values())), "unshare")
    pid = os.fork()
    if pid:
        _wait_and_mirror(pid)
    die_with_parent()
    _build_root(uid, workdir, file_mb, read_only)
    os.chroot(ROOT)
    os.chdir("/work")
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    seal()


def _wait_and_mirror(pid: int) -> None:
    """The first child: hold nothing open, wait for the sandbox's PID 1, end as it ended."""
    os.closerange(0, 65536)  # the pipes stay the program's alone: EOF comes when it is gone
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except OSError:
            os._exit(125)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 125)


def _build_root(uid: int, workdir: str, file_mb: int, read_only: Sequence[str]) -> None:
    root = ROOT
    _mount("none", "/", None, _REC | _PRIVATE)  # nothing below propagates back to the host
    _mount("rlvr-root", root, "tmpfs", _NOSUID | _NODEV, "size=1m,mode=0755")
    for d in ("usr", "proc", "dev", "work", "tmp", "etc"):
        os.mkdir(f"{root}/{d}")
    for link in _LINKS:
        path = "/" + link
        if os.path.islink(path):
            os.symlink(os.readlink(path), root + path)
        elif os.path.isdir(path):
            os.mkdir(root + path)
            _bind_read_only(path, root + path)
    _bind_read_only("/usr", root + "/usr")
    for path in read_only:  # an interpreter outside /usr, named by the verifier
        os.makedirs(root + path, exist_ok=True)
        _bind_read_only(path, root + path)
    for dev in _DEVICES:
        open(f"{root}/dev/{dev}", "w").close()
        _mount("/dev/" + dev, f"{root}/dev/{dev}", None, _BIND)
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{i}", f"{root}/dev/{name}")
    os.symlink("/proc/self/fd", root + "/dev/fd")
    if os.path.isfile("/etc/ld.so.cache"):
        open(root + "/etc/ld.so.cache", "w").close()
        _bind_read_only("/etc/ld.so.cache", root + "/etc/ld.so.cache")
    size = f"size={int(file_mb)}m"
    _mount("rlvr-work", root + "/work", "tmpfs", _NOSUID | _NODEV, f"{size},uid={uid},gid={uid},mode=0700")
    _copy_tree(workdir, root + "/work", uid)
    _mount("rlvr-tmp", root + "/tmp", "tmpfs", _NOSUID | _NODEV, size + ",mode=1777")
    _mount("proc", root + "/proc", "proc", _NOSUID | _NODEV)
    _mount(root, root, None, _BIND | _REMOUNT | _RDONLY | _NOSUID | _NODEV)


def _copy_tree(src: str, dst: str, uid: int) -> None:
    for dirpath, dirs, names in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        here = dst if rel == "." else os.path.join(dst, rel)
        for d in dirs:
            os.mkdir(os.path.join(here, d), 0o700)
            os.chown(os.path.join(here, d), uid, uid)
        for n in names:
            target = os.path.join(here, n)
            with open(os.path.join(dirpath, n), "rb") as a, open(target, "wb") as b:
                b.write(a.read())
            os.chown(target, uid, uid)
