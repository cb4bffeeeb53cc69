"""JSON files shared with Vix Note and other tools: read carefully, replace atomically.

Nothing here ever overwrites a file it could not understand: a malformed file
raises `Malformed` and stays as it is, unless the caller asks for a backup.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyrelune import PyreluneError


class Malformed(PyreluneError):
    """A file that exists but is not the JSON document expected."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on `lock_path` (created if needed) for the block.

    The lock file is never deleted: a process still waiting on the old inode
    would otherwise share the lock with one that created a new file.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def read(path: Path) -> Any:
    """The parsed document, or None when the file does not exist."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Malformed(path, f"cannot be read ({exc.strerror})") from None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise Malformed(path, f"is not UTF-8 (byte {exc.start})") from None
    except ValueError as exc:
        raise Malformed(path, f"is not valid JSON ({exc})") from None


def dumps(document: Any) -> bytes:
    """The bytes written for `document`: indented like Vix's own tools, UTF-8, final newline."""
    return (json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace `path` with `data` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def backup(path: Path) -> Path:
    """Move `path` aside to the first free `<name>.bak`, `<name>.bak1`, ... and say where."""
    for n in range(1000):
        target = path.with_name(f"{path.name}.bak{n or ''}")
        if not target.exists():
            os.replace(path, target)
            return target
    raise FileExistsError(f"{path}: too many backups already")
