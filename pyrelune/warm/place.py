"""Where the warm process's socket lives, and whether it is safe to use.

Only the user may enter the folder (0700, owned by them): another user can
neither connect to the socket nor replace it. The client refuses a folder or
socket that is not so, rather than repair it: someone else made it. Imported
by the client on every warm cell, so it imports nothing.
"""

from __future__ import annotations

import os
import sys

#: What PYRELUNE_WARM=1 (or a bare `--warm`) preloads: as much of these as is installed.
DEFAULT_PRELOAD = "numpy,pandas,matplotlib"


class Unsafe(Exception):
    """The folder or the socket is not the user's alone: warm start is not used."""


def folder() -> str:
    """$XDG_RUNTIME_DIR/pyrelune, else /tmp/pyrelune-<uid> (both created 0700 when missing)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        return os.path.join(runtime, "pyrelune")
    return f"/tmp/pyrelune-{os.getuid()}"


def preload_names(setting: str) -> str:
    """The comma-separated module names a setting (PYRELUNE_WARM, the launcher's) preloads."""
    return DEFAULT_PRELOAD if setting.strip().lower() in ("1", "on", "yes", "true") else ",".join(
        name.strip() for name in setting.split(",") if name.strip())


def name(preload: str) -> str:
    """The socket's file name: one warm process per environment, Python, pyrelune and preloads.

    Two environments (or two preload lists) never share a warm process. A
    64-bit FNV-1a hash of those: no hashlib import on the hot path.
    """
    from pyrelune import __version__

    key = f"{sys.prefix}\0{sys.version}\0{__version__}\0{preload}".encode("utf-8",
                                                                             "surrogateescape")
    value = 0xCBF29CE484222325
    for byte in key:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"warm-{value:016x}"


def paths(preload: str) -> tuple[str, str]:
    """The socket's and the lock's paths."""
    base = os.path.join(folder(), name(preload))
    return base + ".sock", base + ".lock"


def check_folder(path: str, create: bool) -> None:
    """Raise Unsafe unless `path` is a real folder of this user's that only they can enter."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise Unsafe(f"{path} does not exist") from None
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # another cell made it meanwhile: checked below all the same
        except OSError as exc:
            raise Unsafe(f"cannot create {path}: {exc.strerror}") from None
        st = os.lstat(path)
    if (st.st_mode & 0o170000) != 0o040000:  # S_ISDIR, without importing stat
        raise Unsafe(f"{path} is not a folder")
    if st.st_uid != os.getuid():
        raise Unsafe(f"{path} belongs to uid {st.st_uid}, not to this user")
    if st.st_mode & 0o077:
        raise Unsafe(f"{path} lets others in (mode {st.st_mode & 0o777:o})")


def check_socket(path: str) -> None:
    """Raise Unsafe unless `path` is a socket of this user's (FileNotFoundError if none)."""
    st = os.lstat(path)
    if (st.st_mode & 0o170000) != 0o140000:  # S_ISSOCK
        raise Unsafe(f"{path} is not a socket")
    if st.st_uid != os.getuid():
        raise Unsafe(f"{path} belongs to uid {st.st_uid}, not to this user")
