"""Kernel subshells (JEP 91), the worker's side: each a thread that runs its cells beside the
main shell's, in the one namespace.

The main thread reads the control pipe only between its cells and when its
cell waits for an answer, so a subshell's cell could not start while a cell
runs. The first subshell command it reads (`Channel.aside`) puts a thread
between the pipe and it: the thread reads the pipe, hands the subshell
commands to their subshells and passes every other line on, unchanged and in
order, through a pipe of its own that takes the control pipe's number (so
the main thread, and a snapshot's `select`, read it as before). A worker with
no subshell pays nothing for them.

A subshell's cell is known by its request's header (`origin`), which its
thread's context names (`worker.origin`): what it prints or displays, and
what threads it starts write, goes to the session as that cell's. Its end is
a Reply of kind `SUBSHELL` (its status, its result's MIME bundle, its error),
sent from its thread. What threads do not survive, subshells do not: a
snapshot (a fork) has none, and makes them afresh when told to run a cell.
A subshell's `input()` raises EOFError (only the main thread waits for
answers) and an interrupt reaches the main shell's cell alone, as in
ipykernel, where SIGINT reaches the main thread.
"""

from __future__ import annotations

import os
import queue
import threading

from pyrelune.wire import write_all
from pyrelune.wire.commands import (
    SUBSHELL,
    SUBSHELL_LINE,
    EndSubshell,
    MakeSubshell,
    RunInSubshell,
    from_wire,
)
from pyrelune.wire.events import Reply
from pyrelune.worker import origin, sources

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from pyrelune.worker.channel import Channel
    from pyrelune.worker.ipyshell.shell import ZMQInteractiveShell

#: The most characters of a result's text sent when its whole bundle is too big to send.
RESULT_TEXT = 4096


class Subshells:
    """The worker's subshells, by id, each a thread and its queue of cells."""

    def __init__(self, channel: Channel, namespace: Callable[[], dict[str, Any]],
                 ipython: ZMQInteractiveShell | None) -> None:
        self._channel = channel
        self._namespace = namespace  # the current one: a reset replaces it
        self._ipython = ipython
        self._queues: dict[str, queue.SimpleQueue[RunInSubshell | None]] = {}
        self._filtering = False
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        """In a fork (a snapshot) no thread of these runs: made afresh when needed."""
        self._queues = {}
        self._filtering = False

    def aside(self, line: bytes) -> bool:
        """Whether the control pipe's `line` is a subshell's command, taken (`Channel.aside`);
        the first starts the thread that sets them aside from then on."""
        if not line.startswith(SUBSHELL_LINE):
            return False
        if not self._filtering:
            self._filter_the_pipe()
        self._take(line)
        return True

    def _filter_the_pipe(self) -> None:
        """The control pipe read by a thread, the main thread reading what it passes on."""
        control = self._channel.control_fd
        real = os.dup(control)
        passed, forward = os.pipe()
        os.dup2(passed, control, inheritable=False)
        os.close(passed)
        self._filtering = True
        threading.Thread(target=self._filter, args=(real, forward), name="pyrelune-subshells",
                         daemon=True).start()

    def _filter(self, real: int, forward: int) -> None:
        held = b""
        try:
            while chunk := os.read(real, 1 << 16):
                *lines, held = (held + chunk).split(b"\n")
                kept = [line for line in lines if not self.aside(line)]
                if kept:
                    write_all(b"\n".join(kept) + b"\n", forward)
        finally:
            os.close(forward)  # the session is gone: the main thread reads the end, and ends

    def _take(self, line: bytes) -> None:
        command = from_wire(line)
        if isinstance(command, EndSubshell):
            ended = self._queues.pop(command.subshell, None)
            if ended is not None:
                ended.put(None)
            return
        assert isinstance(command, (MakeSubshell, RunInSubshell))
        cells = self._queues.get(command.subshell)
        if cells is None:  # made now, or again in a fresh worker (a snapshot has no threads)
            cells = self._queues[command.subshell] = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(cells,), daemon=True,
                             name=f"pyrelune-subshell-{command.subshell}").start()
        if isinstance(command, RunInSubshell):
            cells.put(command)

    def _serve(self, cells: queue.SimpleQueue[RunInSubshell | None]) -> None:
        """A subshell's thread: its cells in turn; after a failure, the queued ones aborted."""
        while (command := cells.get()) is not None:
            content = self._run(command)
            self._answer(content)
            if content["status"] == "error" and command.stop_on_error:
                while True:
                    try:
                        queued = cells.get_nowait()
                    except queue.Empty:
                        break
                    if queued is None:
                        return
                    self._answer({"origin": queued.origin, "status": "aborted"})

    def _run(self, command: RunInSubshell) -> dict[str, Any]:
        """Run the cell; what its Reply says."""
        import ast

        origin.cell.set(command.origin)
        content: dict[str, Any] = {"origin": command.origin, "status": "ok"}
        try:
            source = command.source
            if self._ipython is not None:  # magics and `!`, as the main shell reads them
                source = self._ipython.transform_cell(source)  # type: ignore[no-untyped-call]
            sources.remember(command.filename, source)
            tree = ast.parse(source, command.filename)
            last = tree.body[-1] if tree.body else None
            if isinstance(last, ast.Expr):  # its value is the cell's result
                tree.body.pop()
            else:
                last = None
            namespace = self._namespace()
            exec(compile(tree, command.filename, "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), command.filename, "eval"),
                             namespace)
                if value is not None and not command.silent:
                    content["result"] = self._format(value)
        except BaseException as exc:  # a cell's SystemExit too ends only that cell
            import traceback

            content.update(status="error", ename=type(exc).__name__, evalue=str(exc),
                           traceback="".join(traceback.format_exception(
                               type(exc), exc, exc.__traceback__.tb_next
                               if exc.__traceback__ is not None else None)))
        return content

    def _format(self, value: object) -> dict[str, Any]:
        """The result's MIME bundle, as the main shell would display it."""
        formatter = self._ipython.display_formatter if self._ipython is not None else None
        if formatter is not None:
            data, metadata = formatter.format(value)  # type: ignore[no-untyped-call]
            return {"data": data, "metadata": metadata}
        return {"data": {"text/plain": repr(value)}, "metadata": {}}

    def _answer(self, content: dict[str, Any]) -> None:
        try:
            self._channel.notify(Reply(content, SUBSHELL))
        except ValueError:  # too big to send whole: the result's text, cut
            result = content.get("result") or {}
            text = str(result.get("data", {}).get("text/plain", ""))[:RESULT_TEXT]
            content["result"] = {"data": {"text/plain": text}, "metadata": {}}
            content["traceback"] = str(content.get("traceback", ""))[-RESULT_TEXT:]
            self._channel.notify(Reply(content, SUBSHELL))
