"""Whether the warm process's folder and socket (named by `gate.warm_paths`) are safe to use.

Only the user may enter the folder (0700, owned by them): another user can
neither connect to the socket nor replace it. The client refuses a folder or
socket that is not so, rather than repair it: someone else made it. Imported
by the client on every warm cell, so it imports nothing.
"""

from __future__ import annotations

import os

from pyrelune import PyreluneError


class Unsafe(PyreluneError):
    """The folder or the socket is not the user's alone: warm start is not used."""


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
