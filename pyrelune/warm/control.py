"""Start, ask and stop the warm process from the command line (`pyrelune warm ...`, doctor)."""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

from pyrelune import PyreluneError
from pyrelune.warm import frames, place, route, starts
from pyrelune.warm.gate import DEFAULT_PRELOAD, preload_names, warm_paths


def setting() -> str:
    """The preload list $PYRELUNE_WARM names, else (unset, off) the default one.

    Raises settings.SettingError for a bad value.
    """
    return preload_names(os.environ.get("PYRELUNE_WARM", "")) or DEFAULT_PRELOAD


def ask(preload: str, kind: bytes, timeout: float = 5.0) -> bytes | None:
    """The warm process's whole answer to `kind`, or None when none answers (or it is unsafe)."""
    socket_path, _ = warm_paths(preload)
    try:
        place.check_folder(os.path.dirname(socket_path), create=False)
        place.check_socket(socket_path)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(socket_path)
            conn.sendall(kind)
            chunks = []
            while chunk := conn.recv(1 << 16):
                chunks.append(chunk)
    except (OSError, place.Unsafe):
        return None
    return b"".join(chunks) or None


def status(preload: str) -> dict[str, Any] | None:
    """What the warm process says of itself (pid, preloaded, rss, idle...), None if not running."""
    answer = ask(preload, frames.STATUS)
    if answer is None:
        return None
    try:
        found: dict[str, Any] = json.loads(answer)
    except ValueError:
        return None
    return found


class NotStarted(PyreluneError):
    """The warm process could not be started, or died before it served; the message says why."""


def start(preload: str, timeout: float = 120.0) -> dict[str, Any]:
    """Start the warm process unless it runs, and wait until it answers; its status.

    Asked by a person (`warm start`, doctor): it starts even while cells back
    off from a warm process that keeps dying (see `starts`), and says why it
    died if it does. Raises NotStarted, or place.Unsafe.
    """
    socket_path, lock_path = warm_paths(preload)
    place.check_folder(os.path.dirname(socket_path), create=True)
    found = status(preload)
    if found is not None:
        return found
    try:
        route.Start.reserve(preload, lock_path, patient=False).spawn()
    except route.NoStart as why:
        if not why.busy:  # else one is on its way: waited for below
            raise NotStarted(str(why)) from None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = status(preload)
        if found is not None:
            return found
        if not starts.held(lock_path):  # no warm process, nor one starting: it died
            found = status(preload)
            if found is not None:
                return found
            raise NotStarted(starts.describe(lock_path) or "the warm process ended at once")
        time.sleep(0.05)
    raise NotStarted(f"the warm process did not answer within {timeout:g} s")


def failure(preload: str) -> str | None:
    """Why the warm process is not running, if its last start failed (see `starts`)."""
    return starts.describe(warm_paths(preload)[1])


def stop(preload: str, timeout: float = 10.0) -> int | None:
    """Stop the warm process; the pid it had, or None if none ran."""
    found = status(preload)
    if found is None:
        return None
    ask(preload, frames.STOP)
    socket_path, _ = warm_paths(preload)
    deadline = time.monotonic() + timeout
    while os.path.lexists(socket_path) and time.monotonic() < deadline:
        time.sleep(0.02)
    pid: int = found["pid"]
    return pid
