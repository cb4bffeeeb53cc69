"""Where a Vix Note cell runs and imports from: Vix Note's folder rules, beside its codec.

A request names two folders: `workingDirectory`, which `vix note` picks as
the nearest project folder above the note, and `documentPath`, the note
itself. The cell runs in the first (or the note's own folder, where the host
sent HOME only because of its own `~/.vix`: `meant_folder`) and imports from
both (`cell_folders`). The oneshot mode asks this once per request; a warm
process asks `note_folder` too, to look for files that would shadow its
preloaded modules. The one module of `protocols` that looks at the file
system (the codecs do no I/O): host policy lives with the protocol that
needs it, and here it costs the hot path no package of its own. `os` only.
"""

from __future__ import annotations

import os

from pyrelune.protocols import vixnote
from pyrelune.wire.events import INVALID_WORKING_DIRECTORY


def cell_folders(request: vixnote.Request) -> tuple[str, ...]:
    """chdir where `request`'s cell runs; the folders it imports from (the note's first).

    Raises `vixnote.Rejected` for a working directory that cannot be used.
    """
    note = note_folder(request.document_path)  # before enter(): relative to our own cwd
    folder = enter(meant_folder(request.working_directory, note))
    return (note, folder) if note is not None and note != folder else (folder,)


def note_folder(document_path: str) -> str | None:
    """The folder of the note `documentPath` names, if it names a file.

    Vix Note sends the path as typed where `vix note` was started, so a
    relative one is relative to this process's current directory (which it
    inherited), not to `workingDirectory`: read it before `enter`. Anything
    that is not a file (empty, a folder, a NUL, a lone surrogate) changes
    nothing: the path is a hint, and the cell still runs.
    """
    if not document_path:
        return None
    try:
        path = os.path.abspath(document_path)
        return os.path.dirname(path) if os.path.isfile(path) else None
    except (OSError, ValueError):  # the current directory is gone; an unencodable name
        return None


#: What makes a folder a project to `vix note`, besides the `.vix` that `meant_folder` reads.
_PROJECT_MARKERS = ("vix.app", "vix.json", "CMakeLists.txt", ".git")


def meant_folder(directory: str, note: str | None) -> str:
    """`workingDirectory`, or the note's folder when the host sent HOME only for its own `~/.vix`.

    `vix note` sends the nearest folder above the note holding a project
    marker. Once anything is installed into Vix Note's global prefix,
    `~/.vix/global`, the `~/.vix` holding it is such a marker, and every note
    under HOME without a nearer one gets HOME: a data file beside the note
    would not open by its name. Without it the host would have sent the
    note's folder, so that is where such a cell runs. Any other folder (HOME
    with a project marker of its own, a prefix elsewhere) is honoured as sent.
    """
    home = os.environ.get("HOME", "")
    if note is None or not home.startswith("/") or not directory:
        return directory
    home = os.path.normpath(home)
    vix = os.path.join(home, ".vix")
    prefix = os.path.normpath(os.environ.get("VIX_GLOBAL_PREFIX") or os.path.join(vix, "global"))
    if (os.path.normpath(directory) != home or not note.startswith(home + "/")
            or not prefix.startswith(vix + "/") or not os.path.isdir(prefix)
            or any(os.path.lexists(os.path.join(home, name)) for name in _PROJECT_MARKERS)):
        return directory
    return note


def enter(directory: str) -> str:
    """chdir into the request's working directory; the folder the cell imports from.

    Only the worker puts that folder on sys.path: this process imports
    modules of its own after this (`select`, say), and a file of the same
    name in a user's folder must not stand in for them.

    Whatever the path holds (a NUL, a lone surrogate, a folder deleted under
    the runtime) is the request's problem, said in the response.
    """
    try:
        if directory:
            os.chdir(os.path.abspath(directory))
        return os.getcwd()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    except UnicodeEncodeError as exc:  # a lone surrogate: no file name can hold it
        reason = f"{exc.object[exc.start:exc.end]!r} cannot be part of a file name"
    except ValueError:  # embedded null byte
        reason = "a NUL character cannot be part of a file name"
    where = f"workingDirectory {vixnote.echo(directory)}" if directory else "the current directory"
    raise vixnote.Rejected(INVALID_WORKING_DIRECTORY, f"Cannot use {where}: {reason}")
