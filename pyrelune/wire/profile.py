"""What a kernel's host is, decided once by its protocol and read by the engine and its workers.

A host's policy used to travel as five loose arguments through four hops
(mode, engine, fork target, worker loop). It is one value now: each
protocol says what its host is (`protocols.lines.profile`,
`protocols.rpc.profile`, `protocols.jupyter.profile`), the mode hands it to
the engine (`supervisor.kernel.Kernel`), and a forked worker inherits it as
it is (never pickled, never sent down a pipe).
"""

from __future__ import annotations

from pyrelune.settings import PLAIN


class HostProfile:
    """A kernel host's policy.

    `interactive`: the host shows a cell's output while it runs and can answer
    its `input()` (rpc, Jupyter; see `worker.kernelloop.serve`). `comms`: a
    Jupyter front end, which widgets talk to (see `worker.comms`). `shown`:
    the MIME types the host shows, the only ones its workers build (see
    `worker.display.host_shows`); None, every type. `shell`: what runs the
    cells, `settings.PLAIN` or `settings.IPYTHON`. `cap`: the output cap in
    bytes that no event of a worker exceeds (see `worker.bounds`).
    `snapshot_max`: the budget in bytes of the snapshot of the namespace a
    worker keeps after each cell (see `worker.snapshot`); 0: none kept
    (`settings.snapshot_max`).
    """

    __slots__ = ("cap", "comms", "interactive", "shell", "shown", "snapshot_max")

    def __init__(self, cap: int, *, interactive: bool = False, comms: bool = False,
                 shown: tuple[str, ...] | None = None, shell: str = PLAIN,
                 snapshot_max: int = 0) -> None:
        self.cap = cap
        self.interactive = interactive
        self.comms = comms
        self.shown = shown
        self.shell = shell
        self.snapshot_max = snapshot_max

    def __repr__(self) -> str:
        return (f"HostProfile(cap={self.cap}, interactive={self.interactive}, "
                f"comms={self.comms}, shown={self.shown!r}, shell={self.shell!r}, "
                f"snapshot_max={self.snapshot_max})")
