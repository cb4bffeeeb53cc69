"""Jupyter kernel mode: Jupyter's messaging protocol over ZeroMQ, on the kernels' worker.

`pyrelune --mode jupyter -f CONNECTION_FILE`, as a kernelspec starts it. One
event loop (`loop.reactor.Reactor`) does everything, as in the rpc
kernel over a pipe: it reads the sockets (`transports.zmqsockets`), hands
each message to the state machine (`protocols.jupyter`), carries out
its commands on the kernel (`supervisor.evented`, which watches the worker
on the same loop) and sends what it answers. The heartbeat echoes on a
thread of its own. The worker, where cells run, holds no socket: whatever
a cell does, it cannot write into the protocol, and whatever kills it
costs a cell, never the kernel.

A front end's first request (kernel_info) is answered without the worker.
With IPython's shell the worker is forked as the loop starts: making the
shell (importing IPython, about 70 ms) then runs on the other core while the
front end connects and asks, so the first cell waits less. With the plain
shell, whose worker is ready at once, it is forked once that first answer is
out, or at once for a request that needs it: its fork would otherwise delay
the answer the front end waits for.
"""

from __future__ import annotations

import _signal
import os
import sys
import time
from datetime import datetime, timezone

from pyrelune.loop.reactor import Reactor
from pyrelune.loop.ticker import Ticker
from pyrelune.modes import ConfigError
from pyrelune.protocols import jupytermessages
from pyrelune.protocols.jupyter import IOPUB, JupyterCodec, profile
from pyrelune.settings import IOPUB_STALL, IPYTHON, PLAIN, snapshot_max
from pyrelune.shaping import JUPYTER_MAX_DISPLAY
from pyrelune.transports import prebound
from pyrelune.transports.iopubflow import HELD, OPEN, STALLED, IopubFlow
from pyrelune.wire.commands import (
    INTERRUPT,
    AskInSubshell,
    Debug,
    EndSubshell,
    Execute,
    Interrupt,
    InterruptSubshells,
    MakeSubshell,
    Query,
    RunInSubshell,
    Shutdown,
    SubshellInput,
)
from pyrelune.wire.events import Done

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyrelune.protocols.jupyter import Sent
    from pyrelune.protocols.outcome import Outcome
    from pyrelune.supervisor.debugrelay import DebugRelay
    from pyrelune.supervisor.evented import LoopDriver
    from pyrelune.supervisor.kernel import Kernel
    from pyrelune.supervisor.link import WorkerLink
    from pyrelune.transports.zmqsockets import CurveKeys, ZmqSockets
    from pyrelune.wire.commands import Command
    from pyrelune.wire.events import Event

#: Seconds between looks at whether the process that started the kernel is still there.
PARENT_POLL = 1.0
#: Seconds between looks at IOPub's backlog while the worker is not read (see `_hold`).
DRAIN_POLL = 0.02
#: Seconds between looks at it while a subscriber has stalled (the worker is read).
STALL_POLL = 0.25
#: Signals a kernel has no use for, each of which would end it (a cell's
#: `os.kill(os.getppid(), ...)`, a terminal's hang-up): noted on stderr and ignored. The
#: worker has their default actions back (see `worker.runtime`), for the cells' own use.
IGNORED_SIGNALS = ("SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
#: A CurveZMQ key's length in Z85 text.
CURVE_KEY_LENGTH = 40
#: Said at start when nothing encrypts the kernel's TCP ports (ipykernel warns likewise).
UNENCRYPTED = ("pyrelune: the kernel's TCP transport is not encrypted: code and outputs "
               "cross it in plain text, open to eavesdropping; use the ipc transport, or a "
               "front end that gives the kernel CurveZMQ keys (jupyter_client 8.9 or later, "
               "transport_encryption)\n")


class Connection:
    """What a connection file says: where to bind, and how messages are signed."""

    def __init__(self, transport: str, ip: str, ports: dict[str, int], key: bytes,
                 signature_scheme: str, path: str = "",
                 curve: CurveKeys | None = None) -> None:
        self.path = path  # the file it was read from
        self.transport = transport
        self.ip = ip
        self.ports = ports
        self.key = key
        self.signature_scheme = signature_scheme
        self.curve = curve  # CurveZMQ's public and secret key: the transport is encrypted


def read_connection(path: str) -> Connection:
    """The connection file at `path`, checked: `ConfigError` says what is wrong with it."""
    import json

    try:
        with open(path, encoding="utf-8") as file:
            info = json.load(file)
    except OSError as exc:
        raise ConfigError(f"cannot read the connection file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"the connection file {path} is not JSON: {exc}") from None
    if not isinstance(info, dict):
        raise ConfigError(f"the connection file {path} is not a JSON object")
    transport = info.get("transport", "tcp")
    if transport not in ("tcp", "ipc"):
        raise ConfigError(f"transport {transport!r}: expected 'tcp' or 'ipc'")
    ip = info.get("ip", "127.0.0.1")
    if not isinstance(ip, str) or not ip:
        raise ConfigError("ip must be a non-empty string")
    ports = {}
    for channel in prebound.CHANNELS:
        port = info.get(f"{channel}_port", 0)
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            raise ConfigError(f"{channel}_port {port!r}: expected a port number 0-65535")
        ports[channel] = port
    key = info.get("key", "")
    scheme = info.get("signature_scheme", "hmac-sha256")
    if not isinstance(key, str) or not isinstance(scheme, str):
        raise ConfigError("key and signature_scheme must be strings")
    try:
        jupytermessages.Signer(b"", scheme)
        encoded = key.encode()
    except ValueError as exc:  # an unknown scheme; a key that is not text (a lone surrogate)
        raise ConfigError(f"key: not text that UTF-8 can encode ({exc.reason})"
                          if isinstance(exc, UnicodeEncodeError)
                          else str(exc)) from None
    connection = Connection(transport, ip, ports, encoded, scheme, path, _curve(info))
    check(connection)
    return connection


def _curve(info: dict[str, object]) -> CurveKeys | None:
    """The CurveZMQ keys a connection file gives (jupyter_client writes them as text), or None."""
    public, secret = info.get("curve_publickey"), info.get("curve_secretkey")
    if public is None and secret is None:
        return None
    keys = []
    for name, value in (("curve_publickey", public), ("curve_secretkey", secret)):
        if not (isinstance(value, str) and len(value) == CURVE_KEY_LENGTH and value.isascii()):
            raise ConfigError(f"{name} must be a CurveZMQ key: {CURVE_KEY_LENGTH} characters "
                              "of Z85 (curve_publickey and curve_secretkey go together)")
        keys.append(value.encode())
    return keys[0], keys[1]


def check(connection: Connection) -> None:
    """Refuse to run code for anyone who can reach the port: no key, no network address."""
    if connection.key or connection.transport != "tcp":
        return
    from pyrelune.transports.addresses import is_loopback  # here: only for an empty key

    if not is_loopback(connection.ip):
        raise ConfigError(
            f"refusing to listen on {connection.ip} with an empty key: anyone who can reach "
            "it could run code; give the connection file a key, or use 127.0.0.1")


class JupyterServer:
    """Connects the sockets, the state machine and the kernel."""

    def __init__(self, connection: Connection, sockets: ZmqSockets, loop: Reactor,
                 cap: int | None = None, parent: int | None = None,
                 shell: str = IPYTHON, stall: float = IOPUB_STALL) -> None:
        """`parent`: the process that started the kernel (see `_watch_parent`), None for none
        to watch; `shell`, what runs its cells (see `settings.shell`); `stall`, how long a cell
        waits on IOPub with nothing written (see `transports.iopubflow`)."""
        self.loop = loop
        self._shell = shell
        self.sockets = sockets
        self.signer = jupytermessages.Signer(connection.key, connection.signature_scheme)
        builder = jupytermessages.Builder(os.urandom(16).hex(), _username())
        self.codec = JupyterCodec(builder, self.signer, cap)
        self._cap = JUPYTER_MAX_DISPLAY if cap is None else cap  # PYRELUNE_MAX_OUTPUT
        self.kernel: Kernel | None = None  # until the first request is answered
        self._driver: LoopDriver | None = None  # its loop layer
        from pyrelune.transports.zmqsockets import IOPUB_BUDGET, TRACKED

        self._flow = IopubFlow(IOPUB_BUDGET, stall, TRACKED)  # HELD: the worker is not read
        self._watching = False  # a look at IOPub is due (`_watch_iopub`)
        self._debug: DebugRelay | None = None  # from the first debug session on
        self._pump_due = False
        self._ticker = Ticker(loop, self._flush)  # the codec's coalesced stream text
        self.stopping: Shutdown | None = None
        self.terminated = False  # SIGTERM came: the kernel ends once the running cell is over
        for fd in sockets.fds():
            loop.add_reader(fd, self._pump)
        self._parent = parent
        if parent is not None:
            loop.call_later(PARENT_POLL, self._watch_parent)
        self._apply(self.codec.starting())
        if shell == IPYTHON:  # its worker makes IPython's shell first: on the other core, now
            loop.call_soon(self._worker)

    def _watch_parent(self) -> None:
        """End with the process that started the kernel (a Jupyter server that died), as
        ipykernel does: an orphaned kernel would hold its worker and ports for ever."""
        if os.getppid() != self._parent:  # re-parented: to init, or to a subreaper
            sys.stderr.write("pyrelune: the process that started the kernel is gone; "
                             "shutting down\n")
            self.loop.stop()
            return
        self.loop.call_later(PARENT_POLL, self._watch_parent)

    def _pump(self) -> None:
        """Read every message waiting on the sockets, control first; welcome IOPub's new
        subscribers."""
        self._pump_due = False
        received = False
        for channel in self.sockets.incoming:
            while self.stopping is None and (frames := self.sockets.receive(channel)) is not None:
                received = True
                self._apply(self.codec.receive(channel, frames))
        for topic in self.sockets.subscriptions():
            self._apply(self.codec.welcome(topic))
        if received and self.kernel is None and self.stopping is None:
            self.loop.call_soon(self._worker)  # the answers are on their way

    def _worker(self) -> Kernel:
        """The kernel, its worker started on first need (see the module's docstring)."""
        if self.kernel is None:
            from pyrelune.supervisor.evented import LoopDriver
            from pyrelune.supervisor.kernel import Kernel

            _line_buffered_c_stdout()
            self.kernel = Kernel(profile(self._cap, self._shell, snapshot_max()))
            self._driver = LoopDriver(self.loop, self.kernel, self._on_event, lambda: self._apply(
                self.codec.worker_lost(SUBSHELLS_LOST)))
            if self._flow.state == HELD:
                self._driver.hold()
        return self.kernel

    def _look_again(self) -> None:
        """After a send: the sockets' edge-triggered descriptors may not wake the loop."""
        if not self._pump_due and self.sockets.waiting():
            self._pump_due = True
            self.loop.call_soon(self._pump)

    def _apply(self, outcome: Outcome[Sent]) -> None:
        if outcome.messages and self._flow.state == STALLED:
            self._look_at_iopub()  # drained since the last look: this goes out whole
        for channel, message in outcome.messages:
            frames = jupytermessages.serialize(message, self.signer)
            if channel != IOPUB or self._flow.admit(sum(map(len, frames))):
                self.sockets.send(channel, frames)
        if outcome.messages and self._flow.sent(self.sockets.backlog(), self.sockets.written,
                                                time.monotonic()):
            self._hold()
        for problem in outcome.problems:
            sys.stderr.write(f"pyrelune: {problem}\n")
        for command in outcome.commands:
            self._carry_out(command)
        self._ticker.arm(self.codec.flush_at)
        self._look_again()

    def _hold(self) -> None:
        """IOPub has more unwritten than its budget (a subscriber is slow, or stopped
        reading): read nothing more from the worker, whose cell then waits on its own
        output, until IOPub has drained, or has written nothing for the stall limit
        (`transports.iopubflow`)."""
        if self._driver is not None:
            self._driver.hold()
        if not self._watching:
            self._watching = True
            self.loop.call_later(DRAIN_POLL, self._watch_iopub)

    def _watch_iopub(self) -> None:
        """Look at IOPub until it is open again: often while the worker waits, less while
        a subscriber has stalled (the worker goes on)."""
        self._watching = False
        if (state := self._look_at_iopub()) != OPEN:
            self._watching = True
            self.loop.call_later(DRAIN_POLL if state == HELD else STALL_POLL, self._watch_iopub)

    def _look_at_iopub(self) -> str:
        """IOPub's state now (see `IopubFlow.look`), and what its change calls for."""
        before = self._flow.state
        now = self._flow.look(self.sockets.backlog(), self.sockets.written, time.monotonic())
        if before == HELD and now != HELD and self._driver is not None:
            self._driver.release()
        if before == HELD and now == STALLED:
            sys.stderr.write(
                f"pyrelune: an IOPub subscriber has read nothing for {self._flow.stall:g} s: "
                "the cells go on without it, and large outputs are not sent until it reads "
                "or disconnects\n")
        elif before == STALLED and now == OPEN:
            sys.stderr.write("pyrelune: IOPub has drained: every output is sent again\n")
            self._say_unsent()
        return now

    def _say_unsent(self) -> None:
        """Tell the front ends what they were not sent (see `IopubFlow.note`), if anything."""
        if (note := self._flow.note()) is not None:
            self._apply(self.codec.said(note))

    def _carry_out(self, command: Command) -> None:
        if isinstance(command, (Execute, Query)):
            # Next turn: this may be the Done of the cell before, still being delivered.
            self.loop.call_soon(self._start, command)
        elif isinstance(command, (RunInSubshell, AskInSubshell, MakeSubshell, EndSubshell,
                                  SubshellInput)):
            # Next turn too, in order: the subshells of a worker being replaced are made
            # again in the fresh one (`JupyterCodec.worker_lost`).
            self.loop.call_soon(self._to_subshell, command)
        elif isinstance(command, InterruptSubshells):
            self.loop.call_soon(self._interrupt_subshells, command)
        elif isinstance(command, Interrupt):
            self._interrupt_soon()
        elif isinstance(command, Debug):
            self._debug_relay(command)
        elif isinstance(command, Shutdown):
            self.stopping = command
            self.loop.call_soon(self.loop.stop)
        else:
            self._worker().apply(command)

    def _to_subshell(self, command: RunInSubshell | AskInSubshell | MakeSubshell | EndSubshell
                     | SubshellInput) -> None:
        if self.stopping is None and not self.terminated:
            kernel = self._worker()
            kernel.apply(command)
            if isinstance(command, MakeSubshell):
                self._wake_for_subshells(kernel)

    def _wake_for_subshells(self, kernel: Kernel) -> None:
        """Have the worker take subshell commands now, even while a cell runs (see
        `wire.subshellwake`); where it cannot be signalled, the command waits for the cell."""
        from pyrelune.supervisor.kernel import NoWorker
        from pyrelune.wire.subshellwake import SIGNAL

        if SIGNAL is not None:
            try:
                kernel.signal_worker(SIGNAL)
            except (NoWorker, OSError):
                pass  # no worker: its fresh one reads the command when it starts

    def _interrupt_subshells(self, command: InterruptSubshells) -> None:
        """KeyboardInterrupt in the subshells' requests it names; a worker in which one still
        runs after `PATIENCE` is killed, as a main shell's cell would be (a snapshot, or a
        fresh worker, takes its place; the requests fail with `WorkerDied`)."""
        if self.kernel is None or self.kernel.link.closed:
            return
        self.kernel.apply(command)
        from pyrelune.supervisor.session import PATIENCE

        self.loop.call_later(PATIENCE, self._unended, self.kernel.link,
                             frozenset(command.origins))

    def _unended(self, link: WorkerLink, requests: frozenset[str], looks: int = 20) -> None:
        """Kill `link`'s worker if one of `requests` is still not over; what the worker has
        written and the loop not yet read (their ends, maybe) is read first, for a while."""
        if not (self.kernel is not None and link is self.kernel.link and not link.closed
                and requests & self.codec.aside_requests()):
            return
        from select import select

        from pyrelune.supervisor.session import LINGER

        if looks > 0 and select([link.worker.event_fd], [], [], 0)[0]:
            self.loop.call_later(LINGER, self._unended, link, requests, looks - 1)
        else:
            link.worker.signal_group(_signal.SIGKILL)

    def _debug_relay(self, command: Debug) -> None:
        """To debugpy's adapter in the worker (see `supervisor.debugrelay`)."""
        if self._debug is None:
            from pyrelune.supervisor.debugrelay import DebugRelay

            self._debug = DebugRelay(self.loop, lambda data: self._apply(
                self.codec.debug_data(data)), lambda: self._apply(self.codec.debug_lost()))
        if command.start:
            self._start_debugpy()
        if command.address is not None:
            self._debug.connect(command.address)
        self._debug.send(command.data)

    def _start_debugpy(self) -> None:
        """Signal the worker to start debugpy (see `wire.debugstart`); its Reply follows."""
        from pyrelune.supervisor.kernel import NoWorker
        from pyrelune.wire.debugstart import SIGNAL

        try:
            if SIGNAL is None:
                raise OSError("this platform has no signal to start it with")
            self._worker().signal_worker(SIGNAL)
        except (NoWorker, OSError) as exc:
            self._apply(self.codec.debug_started({"error": f"debugpy could not start: {exc}"}))

    def _start(self, command: Execute | Query) -> None:
        if self.terminated:
            self.loop.stop()  # SIGTERM came before it began: nothing runs now
        if self.stopping is not None or self.terminated:
            return
        self._worker().apply(command)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, Done):
            self._pump()  # what was sent meanwhile is queued first: a failure may abort it
            self._say_unsent()  # before the reply: the cell's outputs that did not go out
        self._apply(self.codec.output(event, time.monotonic()))
        if self.terminated and isinstance(event, Done):
            self.loop.stop()  # its reply is out

    def _flush(self) -> None:
        self._apply(self.codec.tick(time.monotonic()))

    def interrupt(self) -> None:
        """SIGINT to the kernel process (interrupt_mode "signal"): interrupt what the worker
        runs (`JupyterCodec.interrupt`); if nothing, the cell the front end sent just before,
        still on its way."""
        if self.codec.busy:
            self._interrupt_soon()
        elif self.codec.busy_aside:
            self._apply(self.codec.interrupt())
        else:
            self.codec.interrupted_idle(datetime.now(timezone.utc))

    def _interrupt_soon(self) -> None:
        """Next turn, after a cell still to be started."""
        if self.codec.busy:
            self.loop.call_soon(self._interrupt_now)

    def terminate(self) -> None:
        """SIGTERM: end as a shutdown_request ends the kernel, but a running cell (or a
        query) is interrupted first, so that the front end has its reply."""
        self.terminated = True
        if self.codec.busy:
            self._interrupt_soon()
        else:
            self.loop.stop()

    def ignore(self, name: str) -> None:
        sys.stderr.write(f"pyrelune: {name} ignored (the kernel has no use for it)\n")

    def _interrupt_now(self) -> None:
        if self.codec.busy:
            self._worker().apply(INTERRUPT)

    def close(self) -> None:
        if self._debug is not None:
            self._debug.close()
        if self.kernel is not None:
            self.kernel.close()


def _username() -> str:
    try:
        import getpass

        return getpass.getuser()
    except (ImportError, KeyError, OSError):
        return "pyrelune"


def serve(connection: Connection, cap: int | None = None, shell: str = IPYTHON,
          stall: float = IOPUB_STALL) -> None:
    """Bind the sockets and serve until a shutdown_request, SIGTERM, or the end of the
    process that started the kernel. `shell`: what runs the cells (see `settings.shell`);
    `stall`: see `settings.iopub_stall`."""
    parent = watched_parent()  # before the connection file says the kernel is there
    from pyrelune.transports.zmqsockets import ZmqSockets

    # Figures as ipykernel's inline backend draws them, unless the user chose.
    os.environ.setdefault("PYRELUNE_FIGURE_FORMATS", "png")
    os.environ["PYRELUNE_PAGER"] = "payload"  # `obj?` for the front end's pager
    sockets = ZmqSockets(connection.transport, connection.ip, connection.ports,
                         connection.curve)
    from pyrelune.wire import debugstart, subshellwake

    debugstart.block()  # before any worker is forked: see `wire.debugstart`
    subshellwake.block()
    if connection.transport == "tcp" and connection.curve is None:  # once it has started
        sys.stderr.write(UNENCRYPTED)
    reactor = Reactor()
    server = None
    try:
        if sockets.ports != connection.ports:
            _write_ports(connection.path, sockets.ports)
        server = JupyterServer(connection, sockets, reactor, cap, parent, shell, stall)
        reactor.add_signal_handler(_signal.SIGTERM, server.terminate)
        for name in IGNORED_SIGNALS:
            if (signum := getattr(_signal, name, None)) is not None:
                reactor.add_signal_handler(signum, server.ignore, name)
        reactor.add_signal_handler(_signal.SIGINT, server.interrupt)
        reactor.run()
    finally:
        if server is not None:
            server.close()
        reactor.close()
        sockets.close()


def watched_parent(env: Mapping[str, str] = os.environ) -> int | None:
    """The parent the kernel ends with, when the process that started it asks for that as
    jupyter_client's launch and pyrelune's remote launcher do (`JPY_PARENT_PID`, ipykernel's
    convention); else None: a kernel started over SSH outlives the shell that started it."""
    value = env.get("JPY_PARENT_PID", "")
    return os.getppid() if value.isdigit() and int(value) > 1 else None


def _shell(chosen: str) -> str:
    """`chosen`, unless it is IPython's shell and IPython is not installed: then pyrelune's
    own, said on stderr (the kernel runs; what needs `get_ipython()` does not)."""
    if chosen != IPYTHON:
        return chosen
    from importlib.util import find_spec

    if find_spec("IPython") is not None:
        return chosen
    from pyrelune.extras import hint

    sys.stderr.write("pyrelune: IPython is not installed, so cells run in pyrelune's plain "
                     f"shell: {hint('ipython', 'jupyter')}\n")
    return PLAIN


def _write_ports(path: str, ports: dict[str, int]) -> None:
    """A connection file that left ports to the kernel (0) gets the ones it bound, as
    ipykernel writes them: the front end reads it back."""
    import json

    with open(path, encoding="utf-8") as file:
        info = json.load(file)
    info.update({f"{channel}_port": port for channel, port in ports.items()})
    fresh = f"{path}.{os.getpid()}.tmp"
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(descriptor, "w", encoding="utf-8") as file:
        json.dump(info, file, indent=1)
    os.replace(fresh, path)


#: Why a subshell's cell failed when its worker went (see `JupyterCodec.worker_lost`).
SUBSHELLS_LOST = ("the kernel's worker ended (a cell crashed it, or it was restarted), and "
                  "every subshell's running cell with it; the subshells remain")


def _line_buffered_c_stdout() -> None:
    """C code's printf reaches the cell line by line, in order with Python's prints.

    C stdio buffers a pipe's output whole blocks at a time (unless Python runs
    unbuffered, `-u`), so a C extension's lines would come after the cell's
    later prints, or at its end. Set here, in the supervisor, which never
    writes to C's stdout, every worker forked from it inherits it (Linux's
    and macOS's C libraries name the stream `stdout`; elsewhere nothing changes).
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        stream = ctypes.c_void_p.in_dll(libc, "stdout" if sys.platform != "darwin"
                                        else "__stdoutp")
        libc.setvbuf(stream, None, 1, 1 << 13)  # _IOLBF, as on a terminal
    except (ImportError, OSError, ValueError, AttributeError):
        pass


#: The one line every failure to start begins with (after "pyrelune: ").
CANNOT_START = "cannot start the Jupyter kernel: "


def main(connection_file: str, shell: str | None = None) -> int:
    """Start the kernel. A failure to start is one line on stderr (`CANNOT_START`, why), and
    the exit status 2 for a connection file or a setting it refuses, 1 for what this machine
    refuses (a port, descriptors, a ZeroMQ without CurveZMQ). `shell`: the command line's
    `--shell`, if given (see `settings.shell`)."""
    try:
        return _run(connection_file, shell)
    finally:
        prebound.close()  # what no socket took over: a kernel that did not start


def _run(connection_file: str, shell: str | None) -> int:
    try:
        import zmq  # here: to say clearly when it is missing, and to name its errors
    except ImportError:
        from pyrelune.extras import hint

        return _refuse("--mode jupyter needs pyzmq, which is not installed in this "
                       f"environment: {hint('pyzmq', 'jupyter')}", 2)
    from pyrelune import settings

    try:
        connection = read_connection(connection_file)
        cap = settings.max_output(None)
        chosen = settings.shell(IPYTHON, shell)
        stall = settings.iopub_stall()
        settings.snapshot_max()  # a bad one refuses to start; the kernel reads it again
    except (ConfigError, settings.SettingError) as exc:
        return _refuse(str(exc), 2)
    if connection.curve is not None and not zmq.has("curve"):
        return _refuse("the connection file gives CurveZMQ keys, and this ZeroMQ (libzmq "
                       f"{zmq.zmq_version()}) was built without CurveZMQ: install a pyzmq "
                       "whose libzmq has it (the wheels on PyPI do)", 1)
    try:
        serve(connection, cap, _shell(chosen), stall)
    except (OSError, zmq.ZMQError) as exc:  # a port another process took, ...
        return _refuse(str(exc), 1)
    return 0


def _refuse(why: str, status: int) -> int:
    """Say in one line why the kernel did not start; `status`, to exit with."""
    sys.stderr.write(f"pyrelune: {CANNOT_START}{why}\n")
    return status
