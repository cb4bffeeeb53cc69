"""Flush a cell's buffered stdout before anything that writes around it.

The lines kernel sends a cell's output in one response, when the cell ends:
no one watches it live. So its worker's stdout is block-buffered, because a
line-buffered stream costs about 2 µs a line in CPython's io stack (the
flush, not the write) and a buffered one well under 1 µs. Buffering must
not reorder output, though: bytes that bypass sys.stdout (os.write, a shell,
a subprocess, a forked child) and the ways a process ends or becomes another
program each push out what is buffered first.

What it cannot keep is the last few KiB printed by a worker killed by a
signal it never sees (a segfault, the OOM killer, an escalated interrupt).
The kernel says so in that error, and PYTHONUNBUFFERED=1 (or `python -u`)
keeps every line written at once.

The rpc kernel's worker uses the same hooks for its own kind of flush: its
stdout is shared memory that the session must have read first (see
`liveprint`), and there calls through ctypes wait for it too.
"""

from __future__ import annotations

import os

from pyrelune.wire.forks import before_cell_fork
from pyrelune.worker.importhooks import after_import

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

#: The os functions that write around sys.stdout: they flush first when they
#: write to fd 1 or 2 (any other descriptor costs them one comparison).
OS_WRITES = ("write", "writev", "pwrite", "sendfile")
#: Those that start another program, or end or signal the process: always.
#: (`fork` runs the at-fork hook instead; the `exec*l*`, `exec*p*` and
#: `spawn*` helpers go through these.)
OS_FUNCTIONS = ("system", "execv", "execve", "posix_spawn", "posix_spawnp",
                "_exit", "abort", "kill", "killpg")


def flush_first(flush: Callable[[], None]) -> None:
    """From now on, every way around the buffered streams calls `flush` first."""
    import _posixsubprocess  # builtin: how subprocess and multiprocessing's spawn start children

    for module, names, wrap in ((os, OS_WRITES, _flushing_std_writes),
                                (os, OS_FUNCTIONS, _flushing),
                                (_posixsubprocess, ("fork_exec",), _flushing)):
        for name in names:
            original = getattr(module, name, None)
            if original is not None:
                setattr(module, name, wrap(original, flush))
    before_cell_fork(flush)
    after_import("subprocess", lambda module: _flush_before_spawn(module, flush))


def _flush_before_spawn(subprocess: ModuleType, flush: Callable[[], None]) -> None:
    """Popen starts children through `_execute_child`, whichever system call it uses
    and whenever it bound it."""
    popen = subprocess.Popen
    popen._execute_child = _flushing(popen._execute_child, flush)


def _flushing(function: Callable[..., Any], flush: Callable[[], None]) -> Callable[..., Any]:
    def flushed(*args: Any, **kwargs: Any) -> Any:
        flush()
        return function(*args, **kwargs)

    return named_as(flushed, function)


def _flushing_std_writes(function: Callable[..., Any],
                         flush: Callable[[], None]) -> Callable[..., Any]:
    def flushed(fd: Any, /, *args: Any, **kwargs: Any) -> Any:
        if fd == 1 or fd == 2:
            flush()
        return function(fd, *args, **kwargs)

    return named_as(flushed, function)


def named_as(wrapper: Callable[..., Any], function: Callable[..., Any]) -> Callable[..., Any]:
    """`wrapper` under `function`'s name, as `functools.wraps` would make it.

    Not functools itself: an rpc worker's first answer would wait for its import.
    """
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, name, getattr(function, name))
        except AttributeError:
            pass
    wrapper.__wrapped__ = function  # type: ignore[attr-defined]
    return wrapper


def flush_before_c_calls(flush: Callable[[], None]) -> None:
    """Calls through ctypes' libraries (`ctypes.CDLL(None).printf`, `cdll.LoadLibrary`) flush first.

    C code writes to fd 1 and 2 itself. Only calls through ctypes can be seen
    from Python; a C extension's own `printf` cannot (see the README).
    """
    after_import("ctypes", lambda module: _flush_before_foreign_calls(module, flush))


def _flush_before_foreign_calls(ctypes: ModuleType, flush: Callable[[], None]) -> None:
    """Every library loaded from now on gets functions that call `flush` first."""
    init = ctypes.CDLL.__init__

    def load(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        plain = self._FuncPtr

        class _FuncPtr(plain):  # type: ignore[misc, valid-type]
            _flags_ = plain._flags_  # ctypes reads these from the class itself
            _restype_ = plain._restype_

            def __call__(self, *args: Any, **kwargs: Any) -> Any:
                flush()
                return plain.__call__(self, *args, **kwargs)

        self._FuncPtr = _FuncPtr

    ctypes.CDLL.__init__ = named_as(load, init)
