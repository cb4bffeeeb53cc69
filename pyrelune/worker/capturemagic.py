"""`%%capture`: a cell's streams and displays kept in a variable instead of shown."""

from __future__ import annotations

import sys

from pyrelune.wire.events import Clear
from pyrelune.worker.magicbase import shell

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pyrelune.wire.events import Display
    from pyrelune.worker.magicbase import Body


class RichOutput:
    """One display `%%capture` kept: shown again by `display()` or `.show()`."""

    def __init__(self, data: dict[str, Any], metadata: dict[str, Any],
                 display_id: str | None = None) -> None:
        self.data = data
        self.metadata = metadata
        self.display_id = display_id

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        return self.data, self.metadata

    def display(self) -> None:
        from pyrelune.worker.display import display

        display(self)


class CapturedIO:
    """What `%%capture name` kept of the cell: `.stdout`, `.stderr`, `.outputs`, `.show()`."""

    def __init__(self, stdout: Any, stderr: Any, outputs: list[RichOutput]) -> None:
        self._stdout = stdout
        self._stderr = stderr
        self._outputs = outputs

    @property
    def stdout(self) -> str:
        return self._stdout.getvalue() if self._stdout is not None else ""

    @property
    def stderr(self) -> str:
        return self._stderr.getvalue() if self._stderr is not None else ""

    @property
    def outputs(self) -> list[RichOutput]:
        return list(self._outputs)

    def show(self) -> None:
        """Write the captured streams and show the displays again, as IPython's does."""
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)
        for output in self._outputs:
            output.display()

    __call__ = show

    def __str__(self) -> str:
        return self.stdout


def capture(line: str, body: Body) -> Any:
    """`%%capture [--no-stdout] [--no-stderr] [--no-display] [name]`."""
    import io

    from pyrelune.worker import display

    words = line.split()
    names = [w for w in words if not w.startswith("-")]
    outputs: list[RichOutput] = []
    stdout = io.StringIO() if "--no-stdout" not in words else None
    stderr = io.StringIO() if "--no-stderr" not in words else None
    keep_displays = "--no-display" not in words
    captured = CapturedIO(stdout, stderr, outputs)
    value = None
    with _redirected(stdout, stderr, outputs if keep_displays else None):
        value = body.run()
        if value is not None and keep_displays:
            display.show_result(value)  # kept with the rest, as IPython's display hook is
            value = None
        if "matplotlib.pyplot" in sys.modules:  # the body's figures are its displays too
            from pyrelune.worker.mplbackend import show_open_figures

            show_open_figures()
    if names:
        body.frame.f_globals[names[0]] = captured
    return value


class _redirected:
    """sys.stdout, sys.stderr and the displays diverted for `%%capture`, then put back."""

    def __init__(self, stdout: Any, stderr: Any, outputs: list[RichOutput] | None) -> None:
        self.streams = stdout, stderr
        self.outputs = outputs

    def __enter__(self) -> None:
        from pyrelune.worker import display

        shell().flush()
        self.saved = sys.stdout, sys.stderr
        self.diversion: display.diverted | None = None
        stdout, stderr = self.streams
        if stdout is not None:
            sys.stdout = stdout
        if stderr is not None:
            sys.stderr = stderr
        outputs = self.outputs
        if outputs is not None:
            def keep(event: Display | Clear) -> None:
                """Displays kept in the order shown, updates in place, as the host would."""
                if isinstance(event, Clear):
                    outputs.clear()
                elif event.update:
                    for index, kept in enumerate(outputs):
                        if kept.display_id == event.display_id:
                            outputs[index] = RichOutput(event.data, event.metadata,
                                                        event.display_id)
                elif event.data:
                    outputs.append(RichOutput(event.data, event.metadata, event.display_id))

            self.diversion = display.diverted(keep)
            self.diversion.__enter__()

    def __exit__(self, *exc: object) -> None:
        sys.stdout, sys.stderr = self.saved
        if self.diversion is not None:
            self.diversion.__exit__()
