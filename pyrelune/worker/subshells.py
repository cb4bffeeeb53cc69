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

A cell that runs while the main thread does not read (it runs a cell
itself) would leave the first subshell command unread: the supervisor sends
`subshellwake.SIGNAL` with each subshell it makes, and the main thread's
handler puts the thread in place at once.

A subshell's request is known by its header (`origin`), which its thread's
context names (`worker.origin`): what it prints or displays, and what
threads it starts write, goes to the session as that request's. A cell's
end is a Reply of kind `SUBSHELL` (its status, its result's MIME bundle,
its user_expressions' values, its error), sent from its thread; so is a
question's answer (completion, inspection, is_complete) and the end of a
comm message. Its `input()` asks the session with a Reply of kind
`SUBSHELL_PROMPT` and waits for its `SubshellInput`, which the pipe's thread
hands it. An `InterruptSubshells` raises KeyboardInterrupt in every
subshell's running request (the session decides when: see
`protocols.jupyter`). What threads do not survive, subshells do not: a
snapshot (a fork) has none, and makes them afresh when told to run a cell.
"""

from __future__ import annotations

import _signal
import os
import queue
import threading

from pyrelune.wire import subshellwake, write_all
from pyrelune.wire.commands import (
    SUBSHELL,
    SUBSHELL_LINE,
    SUBSHELL_PROMPT,
    AskInSubshell,
    EndSubshell,
    InputReply,
    InterruptSubshells,
    MakeSubshell,
    RefuseInput,
    RunInSubshell,
    SubshellInput,
    from_wire,
)
from pyrelune.wire.events import Reply
from pyrelune.worker import origin, sources

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    from pyrelune.wire.commands import PipeCommand
    from pyrelune.wire.events import InputRequest
    from pyrelune.worker.channel import Channel
    from pyrelune.worker.introspect import Answers

    #: What a subshell's thread serves.
    Request: TypeAlias = RunInSubshell | AskInSubshell
    from pyrelune.worker.ipyshell.shell import ZMQInteractiveShell

#: The most characters of a result's text sent when its whole bundle is too big to send.
RESULT_TEXT = 4096
#: How often a subshell waiting for its input() looks up (an interrupt ends the wait then).
INPUT_LOOK = 0.1


class Subshells:
    """The worker's subshells, by id, each a thread and its queue of requests."""

    def __init__(self, channel: Channel, namespace: Callable[[], dict[str, Any]],
                 ipython: ZMQInteractiveShell | None) -> None:
        self._channel = channel
        self._namespace = namespace  # the current one: a reset replaces it
        self._ipython = ipython
        self._queues: dict[str, queue.SimpleQueue[Request | None]] = {}
        self._filtering = False
        self._running: dict[int, str] = {}  # thread id: the origin of the request it serves
        self._interrupted: set[str] = set()  # requests interrupted before they began
        self._prompts: dict[str, queue.SimpleQueue[SubshellInput]] = {}  # by origin
        self._lock = threading.Lock()  # `_running`, and the interrupts raised in its threads
        self._asking = threading.local()  # the request the calling thread serves, if any
        os.register_at_fork(after_in_child=self._forked)
        if subshellwake.SIGNAL is not None:
            _signal.signal(subshellwake.SIGNAL, self._woken)
            _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {subshellwake.SIGNAL})  # see `block`

    def _forked(self) -> None:
        """In a fork (a snapshot) no thread of these runs: made afresh when needed."""
        self._queues = {}
        self._running = {}
        self._interrupted = set()
        self._prompts = {}
        self._filtering = False
        self._lock = threading.Lock()

    def _woken(self, signum: int, frame: object) -> None:
        """A subshell was made (`subshellwake`): while a cell (or a question) runs, the main
        thread does not read the pipe, so the thread that does starts now. Otherwise the
        main thread reads it itself: idle, or a snapshot not yet woken (whose control pipe
        is still to come)."""
        from pyrelune.worker.runtime import interrupt_guard

        if not self._filtering and interrupt_guard.running:
            self._filter_the_pipe()

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
        if isinstance(command, SubshellInput):
            waiting = self._prompts.get(command.origin)
            if waiting is not None:
                waiting.put(command)
            return
        if isinstance(command, InterruptSubshells):
            self._interrupt(command.origins)
            return
        assert isinstance(command, (MakeSubshell, RunInSubshell, AskInSubshell))
        requests = self._queues.get(command.subshell)
        if requests is None:  # made now, or again in a fresh worker (a snapshot has no threads)
            requests = self._queues[command.subshell] = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(requests,), daemon=True,
                             name=f"pyrelune-subshell-{command.subshell}").start()
        if not isinstance(command, MakeSubshell):
            requests.put(command)

    def _interrupt(self, origins: list[str]) -> None:
        """KeyboardInterrupt in the requests `origins`: those running now (C code one is in,
        a sleep, finishes first; the session kills the worker if it does not end), and the
        others as they begin (their command may still be on its way)."""
        import ctypes

        with self._lock:
            waiting = set(origins)
            for thread, origin in self._running.items():
                if origin in waiting:
                    waiting.discard(origin)
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(thread), ctypes.py_object(KeyboardInterrupt))
            self._interrupted |= waiting

    def _serve(self, requests: queue.SimpleQueue[Request | None]) -> None:
        """A subshell's thread: its requests in turn; after a failed cell, the cells queued
        behind it aborted. Those are taken before its reply goes: a cell the front end sends
        once it has the reply runs."""
        while (command := requests.get()) is not None:
            content = self._interruptibly(command)
            queued: list[Request | None] = []
            if (isinstance(command, RunInSubshell) and content["status"] == "error"
                    and command.stop_on_error):
                while True:
                    try:
                        queued.append(requests.get_nowait())
                    except queue.Empty:
                        break
            self._answer(content)
            for behind in queued:
                if behind is None:
                    return
                if isinstance(behind, AskInSubshell):
                    self._answer(self._interruptibly(behind))
                else:
                    self._answer({"origin": behind.origin, "status": "aborted"})

    def _interruptibly(self, command: Request) -> dict[str, Any]:
        """Serve `command`, open to `_interrupt` while it runs and to no other time."""
        import ctypes

        thread = threading.get_ident()
        try:
            with self._lock:
                if command.origin in self._interrupted:  # before it began
                    self._interrupted.discard(command.origin)
                    raise KeyboardInterrupt
                self._running[thread] = command.origin
            self._asking.origin = command.origin
            origin.cell.set(command.origin)  # what it writes goes under its request
            origin.serving.set(command.origin)  # and what a comm handler sends
            content = (self._run(command) if isinstance(command, RunInSubshell)
                       else self._ask(command))
            with self._lock:
                del self._running[thread]
                # An interrupt raised as it ended, not yet delivered, is dropped.
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), None)
        except KeyboardInterrupt:  # delivered between the request's end and the above
            with self._lock:
                self._running.pop(thread, None)
            content = {"origin": command.origin, "status": "error",
                       "ename": "KeyboardInterrupt", "evalue": "", "traceback": ""}
        finally:
            self._asking.origin = None
        return content

    def prompt(self, request: InputRequest) -> PipeCommand | None:
        """`input()` on a subshell's thread: the session's answer (None: not a subshell's
        thread, so no one can answer)."""
        asking = getattr(self._asking, "origin", None)
        if asking is None:
            return None
        answers: queue.SimpleQueue[SubshellInput] = queue.SimpleQueue()
        self._prompts[asking] = answers
        try:
            self._channel.notify(Reply({"origin": asking, "prompt": request.prompt,
                                        "password": request.password}, SUBSHELL_PROMPT))
            while True:
                try:
                    answer = answers.get(timeout=INPUT_LOOK)  # an interrupt ends it between
                    break
                except queue.Empty:
                    continue
        finally:
            self._prompts.pop(asking, None)
        return RefuseInput() if answer.value is None else InputReply(answer.value)

    def _ask(self, command: AskInSubshell) -> dict[str, Any]:
        """A question (completion, inspection, is_complete) answered, or a comm message
        handled, on the subshell's thread."""
        content: dict[str, Any] = {"origin": command.origin, "status": "ok"}
        if command.kind == "comm":
            from pyrelune.worker.comms import dispatch, report

            try:
                dispatch(command.args, self._channel)
            except Exception:  # as the main shell's: reported, the comm stays open
                report(command.args)
            return content
        from pyrelune.wire.commands import Query
        from pyrelune.worker.introspect import content_of

        content["answer"] = content_of(Query(command.kind, command.args), self._namespace(),
                                       self._answers())
        return content

    def _answers(self) -> Answers | None:
        """The IPython shell's answers (its completer), if the cells run through it."""
        if self._ipython is None:
            return None
        from pyrelune.worker.ipyshell.answers import answers

        return answers(self._ipython)

    def _run(self, command: RunInSubshell) -> dict[str, Any]:
        """Run the cell, then evaluate its user_expressions; what its Reply says."""
        import ast

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
        else:
            if command.expressions:
                from pyrelune.wire.commands import Query
                from pyrelune.worker.introspect import content_of

                content["user_expressions"] = content_of(
                    Query("expressions", {"expressions": command.expressions}),
                    self._namespace(), self._answers())
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
            content.pop("user_expressions", None)
            content.pop("answer", None)
            self._channel.notify(Reply(content, SUBSHELL))
