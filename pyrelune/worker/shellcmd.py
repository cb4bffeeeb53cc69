"""Shell commands a cell runs: `!cmd` as a terminal runs it, `x = !cmd`, `%%bash` and friends.

`!cmd` runs as ipykernel runs it: the user's `$SHELL -c cmd` with a
pseudo-terminal for its stdin, stdout and stderr, so it writes one stream in
order, `isatty()` is true and colours are kept (`ls --color`, `git`,
`rich`). The terminal's `\\r\\n` line ends become `\\n` (what a terminal
shows), while a lone `\\r` (a progress bar) stays for the hosts' own
handling. The command stays in the worker's process group, so an interrupt
or a kill of the cell reaches it, and reading its terminal gives end of file
at once: no one types into a notebook's command, which would otherwise
wait forever. `x = !cmd` takes `/bin/sh`'s output through a pipe, stderr
with stdout, as IPython's `getoutput` does: a program that sees no terminal
writes no colours into the lines. Where the cell redirected sys.stdout
(`%%capture`, `contextlib.redirect_stdout`), the output goes there.

`%%script PROG` (and `%%bash`, `%%sh`, `%%perl`, `%%ruby`, `%%python3`,
...) gives the body to the program's stdin and its two streams to the
cell's two, through pipes, as IPython's script magics do; `--out`/`--err`
keep them in variables instead, `--bg` runs it in the background.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO

#: The terminal's size, as pexpect gives ipykernel's commands: 24 rows of 80 columns.
ROWS, COLUMNS = 24, 80
_EOF = b"\x04"  # the terminal's end-of-file character (VEOF): reads of stdin end at once
#: How long an interrupted command has to end before it is killed, in seconds.
GRACE = 1.0


class SList(list[str]):
    """A shell command's output lines, with IPython's ways to join them."""

    @property
    def s(self) -> str:
        """The lines joined by spaces."""
        return " ".join(self)

    @property
    def n(self) -> str:
        """The lines joined by newlines."""
        return "\n".join(self)

    @property
    def l(self) -> list[str]:  # noqa: E743 (IPython's name)
        """The lines as a plain list."""
        return list(self)

    @property
    def p(self) -> list[Any]:
        """The lines that name existing files, as paths."""
        from pathlib import Path

        return [Path(line) for line in self if os.path.exists(line)]

    def grep(self, pattern: str | Callable[[str], bool], prune: bool = False) -> SList:
        """The lines matching `pattern` (a regex or a predicate); `prune` drops them instead."""
        import re

        test = pattern if callable(pattern) else re.compile(pattern).search
        return SList(line for line in self if bool(test(line)) != prune)


def terminal(command: str) -> int:
    """Run `command` with the user's shell under a pseudo-terminal; its exit status.

    As IPython gives it: the status, or minus the signal that ended the command.
    """
    import subprocess

    flush()
    command = with_pip(command)
    shell = _shell()
    try:
        master, slave = _open_terminal()
    except OSError:  # no pseudo-terminal to be had (/dev/pts not mounted): pipes, then
        return _status(run_script([shell, "-c", command], b"", (False, False))[0])
    try:
        try:
            child = subprocess.Popen([shell, "-c", command], stdin=slave, stdout=slave,
                                     stderr=slave, close_fds=True)
        finally:
            os.close(slave)
        os.write(master, _EOF)
        _relay(master, child)
    finally:
        os.close(master)
    return _status(child.returncode)


def _status(returncode: int) -> int:
    """The shell's status as IPython gives it: a shell's 128 + n is signal n, so -n."""
    return -(returncode - 128) if returncode > 128 else returncode


def _shell() -> str:
    """`$SHELL` found on PATH (ipykernel's shell), else /bin/sh."""
    import shutil

    return shutil.which(os.environ.get("SHELL") or "sh") or "/bin/sh"


def _open_terminal() -> tuple[int, int]:
    """A pseudo-terminal of `ROWS` x `COLUMNS` that does not echo; (master, slave)."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    modes = termios.tcgetattr(slave)
    modes[3] &= ~termios.ECHO
    termios.tcsetattr(slave, termios.TCSANOW, modes)
    os.set_inheritable(master, False)
    return master, slave


def _relay(master: int, child: Any) -> None:
    """Copy the terminal's output to sys.stdout until the command ends.

    What its own background children write later is not waited for, as a
    terminal's prompt does not wait. An interrupt gives the command (which
    got the same SIGINT, in the same group) `GRACE` to end, then kills it.
    """
    import codecs
    import select

    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    held = ""  # a final `\r` that may be half of a `\r\n`
    try:
        while True:
            ended = child.poll() is not None
            ready, _, _ = select.select([master], [], [], 0 if ended else 0.05)
            chunk = _read(master) if ready else b""
            if chunk:
                text = held + decoder.decode(chunk)
                held = "\r" if text.endswith("\r") else ""
                _write(text[: len(text) - len(held)].replace("\r\n", "\n"))
            elif ended or chunk is None:
                break
        _write(held + decoder.decode(b"", final=True))
        child.wait()
    except KeyboardInterrupt:
        _end(child)
        raise


def _read(master: int) -> bytes | None:
    """What the terminal has, or None when no one holds its other end any more."""
    try:
        return os.read(master, 65536) or None
    except OSError:  # EIO: every writer closed it
        return None


def _end(child: Any) -> None:
    import subprocess

    try:
        child.wait(GRACE)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _write(text: str) -> None:
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()


def output_lines(command: str) -> SList:
    """`x = !cmd`: its output lines, stderr with stdout, from /bin/sh through a pipe."""
    import subprocess

    flush()
    done = subprocess.run(with_pip(command), shell=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, check=False)
    return SList(done.stdout.decode(errors="replace").splitlines())


def run_script(argv: list[str], body: bytes, keep: tuple[bool, bool]) -> tuple[int, str, str]:
    """Run `argv` with `body` on its stdin; its status, and the streams `keep` asks for.

    A stream not kept is the cell's, live: straight to the capture pipes, as
    any subprocess's, or copied where the cell redirected sys.stdout or
    sys.stderr.
    """
    import subprocess

    flush()
    streams = ((sys.stdout, 1), (sys.stderr, 2))
    piped = [subprocess.PIPE if kept or _fd(stream) != fd else None
             for kept, (stream, fd) in zip(keep, streams, strict=True)]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=piped[0],
                          stderr=piped[1]) as child:
        try:
            out, err = child.communicate(body)
        except KeyboardInterrupt:
            _end(child)
            raise
    texts = [(data or b"").decode(errors="replace") for data in (out, err)]
    for kept, (stream, _), text in zip(keep, streams, texts, strict=True):
        if text and not kept:
            stream.write(text)
    return child.returncode, texts[0], texts[1]


def start_background(argv: list[str], stdin: bytes) -> Any:
    """`%%script --bg`: the program started with the body on its stdin, not waited for.

    Its output pipes are the caller's to read (`--out`, `--err`), or closed.
    """
    import subprocess
    import threading

    flush()
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)

    def feed(pipe: BinaryIO) -> None:
        try:
            pipe.write(stdin)
            pipe.close()
        except OSError:
            pass  # the program did not read it all

    threading.Thread(target=feed, args=(child.stdin,), daemon=True).start()
    return child


def with_pip(command: str) -> str:
    """`pip ...` as pip of the interpreter that runs the cell, whatever PATH finds first."""
    word, _, rest = command.strip().partition(" ")
    if word not in ("pip", "pip3"):
        return command
    import shlex

    return f"{shlex.quote(sys.executable)} -m pip {rest}"


def flush() -> None:
    """What the cell printed goes out before what a subprocess writes."""
    from pyrelune.worker.channel import flush_output

    flush_output()


def _fd(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
