"""The one answer every kernel codec gives: what its driver sends, carries out and logs.

A codec is fed a host's message (`receive`), an engine event (`output`) or the clock
(`tick`) and answers an `Outcome`: the messages to send in order (each protocol's own
form: an rpc message, a Jupyter channel and message), then the commands of
`wire.commands` to carry out (`supervisor.kernel.Kernel.apply`, or the mode's
own for `Shutdown`, `Admit` and `Disconnect`), and problems to log (messages dropped).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Generic, TypeVar

    from pyrelune.wire.commands import Command

    M = TypeVar("M")

    class _Typed(Generic[M]):
        __slots__ = ()
else:
    class _Typed:
        """`Outcome[X]` at run time is `Outcome`: a kernel's process never imports `typing`
        (its workers are forked from it, and start without what `typing` loads)."""

        __slots__ = ()

        def __class_getitem__(cls, item: object) -> type:
            return cls


class Outcome(_Typed["M"]):
    """Send `messages` in order, then carry out `commands`; log `problems`."""

    __slots__ = ("commands", "messages", "problems")

    def __init__(self, messages: list[M] | None = None,
                 commands: list[Command] | None = None) -> None:
        self.messages: list[M] = messages or []
        self.commands: list[Command] = commands or []
        self.problems: list[str] = []
