"""The Jupyter kernel as a front end sees it: a KernelManager from a kernelspec, jupyter_client.

Every request type a Python kernel answers, with the status and IOPub
messages around it, as ipykernel gives them.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from support import jupyter_host, warmhost
from support.jupyter_host import TIMEOUT, Kernel, collect, execute
from support.launch import SCRIPT
from support.poll import wait_until

kernel, client = jupyter_host.module_kernel()


def test_kernel_info_is_ipykernels_language_info_with_pyrelune_as_implementation(
        client: BlockingKernelClient) -> None:
    run = collect(client, client.kernel_info())
    content = run.content
    assert content["status"] == "ok"
    assert content["implementation"] == "pyrelune"
    assert content["implementation_version"]
    assert tuple(int(n) for n in content["protocol_version"].split(".")) >= (5, 3)
    assert content["language_info"] == {
        "name": "python", "version": ".".join(map(str, sys.version_info[:3])),
        "mimetype": "text/x-python", "codemirror_mode": {"name": "ipython", "version": 3},
        "pygments_lexer": "ipython3", "nbconvert_exporter": "python", "file_extension": ".py"}
    assert "pyrelune" in content["banner"] and content["help_links"]
    assert run.kinds == ["status:busy", "status:idle"]


def test_execute_streams_and_shows_the_result_with_its_execution_count(
        client: BlockingKernelClient) -> None:
    first = execute(client, "print('hello'); 6 * 7")
    assert first.content["status"] == "ok"
    assert first.kinds == ["status:busy", "execute_input", "stream", "execute_result",
                           "status:idle"]
    count = first.content["execution_count"]
    assert first.of("execute_input") == [{"code": "print('hello'); 6 * 7",
                                          "execution_count": count}]
    assert first.stdout() == "hello\n"
    assert first.of("execute_result") == [{"data": {"text/plain": "42"}, "metadata": {},
                                           "execution_count": count}]
    second = execute(client, "import sys; print('oops', file=sys.stderr)")
    assert second.content["execution_count"] == count + 1
    assert second.stdout("stderr") == "oops\n"


def test_a_silent_cell_runs_without_input_result_or_history(
        client: BlockingKernelClient) -> None:
    before = execute(client, "silent_marker = 0").content["execution_count"]
    run = execute(client, "silent_marker = 5\nprint('seen')\nsilent_marker", silent=True)
    assert run.content["status"] == "ok"
    assert "execute_input" not in run.kinds and "execute_result" not in run.kinds
    assert run.stdout() == "seen\n"
    unstored = execute(client, "silent_marker + 1", store_history=False)
    assert unstored.of("execute_result")[0]["data"]["text/plain"] == "6"
    after = execute(client, "silent_marker").content["execution_count"]
    assert after == before + 1
    history = client.history(hist_access_type="tail", n=3, reply=True)["content"]["history"]
    assert "silent_marker + 1" not in [entry[2] for entry in history]


def test_an_error_is_coloured_and_shows_only_the_users_frames(
        client: BlockingKernelClient) -> None:
    run = execute(client, "def inner():\n    return 1 / 0\n\ninner()")
    content = run.content
    assert content["status"] == "error"
    assert (content["ename"], content["evalue"]) == ("ZeroDivisionError", "division by zero")
    (error,) = run.of("error")
    assert error["traceback"] == content["traceback"]
    text = "\n".join(content["traceback"])
    assert "\x1b[" in text  # coloured
    plain = _plain(text)
    assert "in inner" in plain and "return 1 / 0" in plain
    assert plain.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "pyrelune" not in plain  # none of the runtime's frames


def test_a_syntax_error_is_reported_as_one(client: BlockingKernelClient) -> None:
    content = execute(client, "x = (1,)\nprint(2 2)").content
    assert content["status"] == "error" and content["ename"] == "SyntaxError"
    # As ipykernel says it: str() of the error, which names the line.
    assert content["evalue"].startswith("invalid syntax") and "line 2)" in content["evalue"]
    # Unfinished input is Python's own subclass of it from 3.13 on, named as such.
    unfinished = execute(client, "x = (1,\nprint(").content
    assert unfinished["ename"] in ("SyntaxError", "_IncompleteInputError")


def test_every_mime_type_of_a_bundle_reaches_the_front_end(
        client: BlockingKernelClient) -> None:
    code = """
class Rich:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": "rich", "text/html": "<b>rich</b>", "text/markdown": "**rich**",
                "application/vnd.custom+json": {"n": 1}, "image/svg+xml": "<svg></svg>"}
from IPython.display import display
display(Rich())
Rich()
"""
    run = execute(client, code)
    (shown,) = run.of("display_data")
    (result,) = run.of("execute_result")
    for bundle in (shown["data"], result["data"]):
        assert bundle == {"text/plain": "rich", "text/html": "<b>rich</b>",
                          "text/markdown": "**rich**", "application/vnd.custom+json": {"n": 1},
                          "image/svg+xml": "<svg></svg>"}


def test_update_display_and_clear_output_are_sent_as_such(
        client: BlockingKernelClient) -> None:
    code = """
from IPython.display import display, update_display, clear_output
display("first", display_id="slot")
update_display("second", display_id="slot")
clear_output(wait=True)
print("after")
"""
    run = execute(client, code)
    assert run.kinds == ["status:busy", "execute_input", "display_data", "update_display_data",
                         "clear_output", "stream", "status:idle"]
    shown, updated = run.of("display_data")[0], run.of("update_display_data")[0]
    assert shown["transient"] == updated["transient"] == {"display_id": "slot"}
    assert updated["data"]["text/plain"] == "'second'"
    assert run.of("clear_output") == [{"wait": True}]


def test_matplotlib_figures_come_as_png_with_their_size(client: BlockingKernelClient) -> None:
    code = ("import matplotlib.pyplot as plt\n"
            "fig = plt.figure(figsize=(4, 3), dpi=50)\nplt.plot([1, 2, 3])\nplt.show()")
    run = execute(client, code)
    assert run.content["status"] == "ok", run.content
    (figure,) = run.of("display_data")
    png = base64.b64decode(figure["data"]["image/png"])
    assert png.startswith(b"\x89PNG")
    width, height = (int.from_bytes(png[at:at + 4], "big") for at in (16, 20))
    assert figure["metadata"] == {}  # as matplotlib-inline gives it: the size is the PNG's
    assert 100 < width <= 200 and 75 < height <= 150  # 4 x 3 inches at 50 dpi, cropped tight


def test_user_expressions_are_evaluated_after_the_cell(client: BlockingKernelClient) -> None:
    run = execute(client, "ue = 20", user_expressions={"double": "ue * 2", "bad": "nope"})
    values = run.content["user_expressions"]
    assert values["double"] == {"status": "ok", "data": {"text/plain": "40"}, "metadata": {}}
    assert values["bad"]["status"] == "error" and values["bad"]["ename"] == "NameError"


def test_after_an_error_the_queued_cells_are_aborted(client: BlockingKernelClient) -> None:
    # The sleep gives the queued requests time to reach the kernel (as the front end sends them
    # at once): only those already there when the cell fails are aborted, as in ipykernel.
    failing = client.execute("import time; time.sleep(2); raise ValueError('first')")
    queued = [client.execute("print('never ran')") for _ in range(2)]
    assert collect(client, failing).content["status"] == "error"
    for msg_id in queued:
        run = collect(client, msg_id)
        assert run.content["status"] == "aborted"
        assert run.kinds == ["status:busy", "status:idle"]
    assert execute(client, "print('runs again')").stdout() == "runs again\n"


def test_without_stop_on_error_the_queued_cells_run(client: BlockingKernelClient) -> None:
    failing = client.execute("import time; time.sleep(0.5); raise ValueError('x')",
                             stop_on_error=False)
    queued = client.execute("print('ran')")
    assert collect(client, failing).content["status"] == "error"
    assert collect(client, queued).stdout() == "ran\n"


def test_input_asks_the_front_end_on_stdin(client: BlockingKernelClient) -> None:
    msg_id = client.execute("name = input('Who? ')\nprint('hi', name)", allow_stdin=True)
    request = client.get_stdin_msg(timeout=TIMEOUT)
    assert request["msg_type"] == "input_request"
    assert request["parent_header"]["msg_id"] == msg_id
    assert request["content"] == {"prompt": "Who? ", "password": False}
    client.input("Ada")
    run = collect(client, msg_id)
    assert run.content["status"] == "ok"
    assert run.stdout() == "hi Ada\n"


def test_getpass_asks_for_a_password(client: BlockingKernelClient) -> None:
    msg_id = client.execute("import getpass\nsecret = getpass.getpass()\nlen(secret)",
                            allow_stdin=True)
    request = client.get_stdin_msg(timeout=TIMEOUT)
    assert request["content"] == {"prompt": "Password: ", "password": True}
    client.input("hunter2")
    assert collect(client, msg_id).of("execute_result")[0]["data"]["text/plain"] == "7"


def test_input_without_allow_stdin_raises_stdin_not_implemented(
        client: BlockingKernelClient) -> None:
    run = execute(client, "input('x')", allow_stdin=False)
    assert run.content["status"] == "error"
    assert run.content["ename"] == "StdinNotImplementedError"


def test_completion_offers_names_attributes_and_modules(client: BlockingKernelClient) -> None:
    execute(client, "import os\nsome_long_name = 1")
    names = client.complete("some_lo", reply=True)["content"]
    assert names["matches"] == ["some_long_name"]
    assert (names["cursor_start"], names["cursor_end"]) == (0, 7)
    attributes = client.complete("os.pa", reply=True)["content"]
    assert "path" in attributes["matches"] and attributes["cursor_start"] == 3
    modules = client.complete("import jso", reply=True)["content"]
    assert "json" in modules["matches"]


def test_inspection_gives_the_signature_and_docstring(client: BlockingKernelClient) -> None:
    execute(client, "def documented(a, b=2):\n    'Adds things.'\n    return a + b")
    reply = client.inspect("documented(", 11, reply=True)["content"]
    assert reply["status"] == "ok" and reply["found"]
    text = _plain(reply["data"]["text/plain"])
    assert "documented(a, b=2)" in text and "Adds things." in text
    source = client.inspect("documented", detail_level=1, reply=True)["content"]
    assert "return a + b" in _plain(source["data"]["text/plain"])
    missing = client.inspect("no_such_thing", reply=True)["content"]
    assert missing["found"] is False


def test_is_complete_says_complete_incomplete_with_indent_or_invalid(
        client: BlockingKernelClient) -> None:
    answers = []
    for code in ("x = 1", "for i in range(3):", "x = (1,", "1 +* 2"):
        client.is_complete(code)
        answers.append(client.get_shell_msg(timeout=TIMEOUT)["content"])
    assert answers == [{"status": "complete"}, {"status": "incomplete", "indent": "    "},
                       {"status": "incomplete", "indent": ""}, {"status": "invalid"}]


def test_history_tail_range_and_search(client: BlockingKernelClient) -> None:
    counts = [execute(client, f"hist_{n} = {n}").content["execution_count"] for n in range(3)]
    tail = client.history(hist_access_type="tail", n=3, reply=True)["content"]["history"]
    assert [entry[1:] for entry in tail] == [[c, f"hist_{n} = {n}"] for n, c in
                                             zip(range(3), counts, strict=True)]
    session = tail[0][0]
    ranged = client.history(hist_access_type="range", session=session, start=counts[1],
                            stop=counts[2], reply=True)["content"]["history"]
    assert ranged == [[session, counts[1], "hist_1 = 1"]]
    found = client.history(hist_access_type="search", pattern="hist_? = *", reply=True)
    assert [entry[2] for entry in found["content"]["history"]][-3:] == [
        "hist_0 = 0", "hist_1 = 1", "hist_2 = 2"]
    with_output = client.history(hist_access_type="tail", n=1, output=True, reply=True)
    assert with_output["content"]["history"][0][2] == ["hist_2 = 2", None]


def test_comm_info_answers(client: BlockingKernelClient) -> None:
    client.comm_info()
    reply = client.get_shell_msg(timeout=TIMEOUT)
    assert reply["msg_type"] == "comm_info_reply"
    assert reply["content"]["status"] == "ok" and isinstance(reply["content"]["comms"], dict)


def test_status_wraps_control_requests_too(client: BlockingKernelClient) -> None:
    msg = client.session.msg("kernel_info_request", {})
    client.control_channel.send(msg)
    run = collect(client, msg["header"]["msg_id"], reply_channel="control")
    assert run.reply["msg_type"] == "kernel_info_reply"
    assert run.kinds == ["status:busy", "status:idle"]


def test_a_message_with_a_wrong_signature_is_dropped_never_run(
        kernel: Kernel, client: BlockingKernelClient) -> None:
    import zmq
    from jupyter_client.session import Session

    manager = kernel[0]
    forger = Session(key=b"not the key")
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    try:
        socket.connect(f"tcp://{manager.ip}:{manager.shell_port}")
        forged = forger.msg("execute_request", {"code": "print('forged')", "silent": False,
                                                "store_history": True, "user_expressions": {},
                                                "allow_stdin": False})
        forger.send(socket, forged)
        real = execute(client, "print('real')")
    finally:
        socket.close(linger=0)
        context.term()
    assert real.stdout() == "real\n"
    assert all(m["parent_header"].get("msg_id") != forged["header"]["msg_id"]
               for m in real.iopub)
    history = client.history(hist_access_type="tail", n=5, reply=True)["content"]["history"]
    assert "print('forged')" not in [entry[2] for entry in history]


def _plain(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# -- start and stop -----------------------------------------------------------------------


def _connection(tmp_path: Path, **changes: Any) -> Path:
    info = {"transport": "tcp", "ip": "127.0.0.1", "shell_port": 0, "iopub_port": 0,
            "stdin_port": 0, "control_port": 0, "hb_port": 0, "key": "k",
            "signature_scheme": "hmac-sha256", **changes}
    path = tmp_path / "kernel.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


def _start(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code, *args] if code else [SCRIPT, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def _flat(text: str) -> str:
    """Text from a typer error box as one line."""
    return " ".join(text.replace("\u2502", " ").split())


def test_an_empty_key_on_a_network_address_is_refused(tmp_path: Path) -> None:
    path = _connection(tmp_path, ip="0.0.0.0", key="")
    done = _start("--mode", "jupyter", "-f", str(path))
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0 with an empty key" in done.stderr


def test_a_port_another_process_holds_is_said_in_one_line(tmp_path: Path) -> None:
    """No traceback: the line docs/jupyter.md's troubleshooting tells users to look for."""
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        path = _connection(tmp_path, shell_port=taken.getsockname()[1])
        done = _start("--mode", "jupyter", "-f", str(path))
    finally:
        taken.close()
    assert done.returncode == 1
    assert done.stderr.startswith("pyrelune: cannot start the Jupyter kernel: Address already "
                                  "in use"), done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_or_broken_connection_file_is_said_clearly(tmp_path: Path) -> None:
    missing = _start("--mode", "jupyter", "--connection-file", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "cannot read the connection file" in missing.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    bad = _start("--mode=jupyter", f"--connection-file={broken}")
    assert bad.returncode == 2 and "is not JSON" in bad.stderr
    scheme = _start("--mode", "jupyter", "-f", str(_connection(tmp_path,
                                                               signature_scheme="md5")))
    assert scheme.returncode == 2 and "signature_scheme" in scheme.stderr
    alone = _start("--mode", "jupyter")  # the full command line judges what the fast one cannot
    assert alone.returncode == 2
    assert "--mode jupyter and --connection-file go together" in _flat(alone.stderr)
    slow = _start("--mode", "jupyter", "-f", str(tmp_path / "none.json"), "--timeout", "3")
    assert slow.returncode == 2 and "applies to oneshot mode only" in _flat(slow.stderr)


def test_without_pyzmq_the_mode_says_how_to_install_it(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['zmq'] = None; "
            "sys.argv = ['pyrelune', '--mode', 'jupyter', '-f', sys.argv[1]]; "
            "from pyrelune.__main__ import main; main()")
    done = _start(str(_connection(tmp_path)), code=code)
    assert done.returncode == 2
    assert "needs pyzmq, which is not installed in this environment: pip install 'pyzmq>=" \
        in done.stderr, done.stderr
    assert "pip install '<pyrelune checkout or wheel>[jupyter]'" in done.stderr


def test_shutdown_ends_the_kernel_process(tmp_path: Path) -> None:
    from support.processes import gone_soon

    with jupyter_host.started(tmp_path) as (manager, client):
        pid = manager.provisioner.process.pid  # type: ignore[union-attr]
        msg_id = client.shutdown()
        reply = client.get_control_msg(timeout=TIMEOUT)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"] == {"status": "ok", "restart": False}
        assert gone_soon(pid, within=TIMEOUT)


def test_a_restart_gives_a_fresh_namespace(tmp_path: Path) -> None:
    # A restart binds the same five endpoints again, and `started` retries only the first
    # start: over TCP another test process could take a port in between, so this kernel
    # listens on socket files of its own, in a folder short enough for AF_UNIX's limit.
    sockets = warmhost.runtime_folder() / "kernel"
    with jupyter_host.started(tmp_path, transport="ipc", ip=str(sockets)) as (manager, client):
        execute(client, "kept = 1")
        manager.restart_kernel(now=False)
        client.wait_for_ready(timeout=TIMEOUT)
        jupyter_host.drain_iopub(client)
        assert execute(client, "kept").content["ename"] == "NameError"
        assert execute(client, "1 + 1").of("execute_result")[0]["data"]["text/plain"] == "2"
        assert list(sockets.parent.glob("kernel-*"))  # the restarted kernel's, as files


# -- nothing of it on the oneshot path ------------------------------------------------------

JUPYTER_MODULES = ("zmq", "pyrelune.modes.jupyter", "pyrelune.protocols.jupytermessages",
                   "pyrelune.protocols.jupyter", "pyrelune.protocols.colourtb",
                   "pyrelune.transports.zmqsockets", "pyrelune.cli.jupyterargs",
                   "pyrelune.worker.introspect", "pyrelune.worker.completeness")


def test_a_oneshot_cell_loads_nothing_of_the_jupyter_mode(tmp_path: Path) -> None:
    done = subprocess.run([SCRIPT], input=b'{"source": "print(2 + 3)"}', capture_output=True,
                          timeout=TIMEOUT, cwd=tmp_path,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert json.loads(done.stdout)["stdout"] == "5\n"
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "pyrelune.modes.oneshot" in imported  # it did run, and was watched
    assert not {name for name in imported if name.startswith(JUPYTER_MODULES)}


def test_config_inline_backend_chooses_svg_or_retina(client: BlockingKernelClient) -> None:
    plot = ("import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 2), dpi=50)\n"
            "plt.plot([1, 2])\nplt.show()")
    execute(client, "%config InlineBackend.figure_formats = ['svg']")
    (svg,) = execute(client, plot).of("display_data")
    assert "image/png" not in svg["data"]
    assert svg["data"]["image/svg+xml"].lstrip().startswith("<?xml")
    execute(client, "%config InlineBackend.figure_format = 'retina'")
    (retina,) = execute(client, plot).of("display_data")
    png = base64.b64decode(retina["data"]["image/png"])
    width = int.from_bytes(png[16:20], "big")
    assert retina["metadata"]["image/png"]["width"] == width // 2
    ignored = execute(client, "%config Completer.use_jedi = False")  # IPython's, accepted
    assert ignored.content["status"] == "ok" and not ignored.stdout()
    wrong = execute(client, "%config InlineBackend.figure_formats = ['bmp']")
    # IPython logs the refusal, and the cell succeeds, as under ipykernel.
    assert wrong.content["status"] == "ok" and "not 'bmp'" in wrong.stdout("stderr")
    execute(client, "%config InlineBackend.figure_formats = ['png']")


@contextlib.contextmanager
def _own_kernel(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], BlockingKernelClient]]:
    """The kernel started by hand on a connection file whose ports are all 0, its stderr
    kept (in `tmp_path / "stderr"`), and a client once the file says where it is."""
    path = _connection(tmp_path)
    path.chmod(0o644)  # readable by others, as a careless writer may leave it
    with open(tmp_path / "stderr", "wb") as errors:
        process = subprocess.Popen([SCRIPT, "--mode", "jupyter",
                                    "-f", str(path)], stderr=errors)
    client = BlockingKernelClient()
    try:
        start = time.monotonic()
        while json.loads(path.read_text(encoding="utf-8"))["shell_port"] == 0:
            assert time.monotonic() - start < TIMEOUT and process.poll() is None
            time.sleep(0.05)
        client.load_connection_file(str(path))
        client.start_channels()
        client.wait_for_ready(timeout=TIMEOUT)
        yield process, client
    finally:
        client.stop_channels()
        if process.poll() is None:
            process.kill()
        process.wait()


def test_a_cell_sent_at_once_after_the_start_runs(tmp_path: Path) -> None:
    """No kernel_info first: the cell itself starts the worker (see `modes.jupyter`)."""
    jupyter_host.kernelspec(tmp_path)
    manager = KernelManager(kernel_name=jupyter_host.KERNEL_NAME,
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[
                                str(tmp_path / "kernels")]))
    manager.start_kernel()
    client = manager.blocking_client()
    client.start_channels()
    try:
        msg_id = client.execute("answer = 6 * 7", user_expressions={"answer": "answer"})
        reply = client.get_shell_msg(timeout=TIMEOUT)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "ok"
        assert reply["content"]["user_expressions"]["answer"]["data"] == {"text/plain": "42"}
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_ports_left_to_the_kernel_are_written_back_and_served(tmp_path: Path) -> None:
    with _own_kernel(tmp_path) as (process, client):
        # The file it writes back holds the key: for this user's eyes only (SECURITY.md).
        assert (tmp_path / "kernel.json").stat().st_mode & 0o777 == 0o600
        assert execute(client, "print('bound')").stdout() == "bound\n"
        client.shutdown()
        assert process.wait(timeout=TIMEOUT) == 0


def test_a_dropped_message_is_logged(tmp_path: Path) -> None:
    import zmq
    from jupyter_client.session import Session

    dropped = ("pyrelune: dropped a message on shell: invalid signature",
               "pyrelune: dropped a message on shell: no <IDS|MSG> delimiter")

    def logged() -> str:
        return (tmp_path / "stderr").read_text()

    with _own_kernel(tmp_path) as (process, client):
        context = zmq.Context()
        socket = context.socket(zmq.DEALER)
        try:
            socket.connect(f"tcp://127.0.0.1:{client.shell_port}")
            Session(key=b"wrong").send(socket, "execute_request", {"code": "1"})
            socket.send_multipart([b"not", b"a", b"message"])
            # Its own connection: nothing orders it before the client's cell
            # (on a busy machine it once had not arrived when the kernel ended).
            assert wait_until(lambda: all(line in logged() for line in dropped)), logged()
            assert execute(client, "print('after')").stdout() == "after\n"
        finally:
            socket.close(linger=0)
            context.term()
        client.shutdown()
        process.wait(timeout=TIMEOUT)


def test_the_ipc_transport(tmp_path: Path) -> None:
    with jupyter_host.started(tmp_path, transport="ipc",
                              ip=str(tmp_path / "kernel-ipc")) as (_, client):
        assert execute(client, "print('over ipc')").stdout() == "over ipc\n"
        assert list(tmp_path.glob("kernel-ipc-*"))  # the sockets are files


def test_help_with_a_question_mark_is_a_page_for_the_pager(client: BlockingKernelClient) -> None:
    execute(client, "def paged(x):\n    'Paged help.'\n    return x")
    short = execute(client, "paged?")
    (page,) = short.content["payload"]
    assert page["source"] == "page" and page["start"] == 0
    text = _plain(page["data"]["text/plain"])
    assert "paged(x)" in text and "Paged help." in text and "return x" not in text
    assert short.stdout() == "" and not short.of("display_data")
    (longer,) = execute(client, "paged??").content["payload"]
    assert "return x" in _plain(longer["data"]["text/plain"])
    assert "not found" in execute(client, "no_such_name?").stdout()


def test_magics_and_shell_escapes_run_as_in_the_other_modes(client: BlockingKernelClient
                                                            ) -> None:
    # IPython runs it in a pseudo-terminal, whose line ends are \r\n (as under ipykernel).
    assert execute(client, "!echo from-the-shell").stdout() == "from-the-shell\r\n"
    timed = execute(client, "%timeit -n 2 -r 2 sum(range(10))")
    assert "loops each" in timed.stdout()
    assert execute(client, "files = !echo a\nfiles").of("execute_result")[0]["data"][
        "text/plain"] == "['a']"


def test_the_kernel_ends_when_the_process_that_started_it_is_gone(tmp_path: Path) -> None:
    from support.processes import gone_soon

    path = _connection(tmp_path)
    # The launcher starts the kernel in the background and exits once it has bound its ports;
    # it asks to be watched as jupyter_client does (without JPY_PARENT_PID the kernel stays:
    # tests/e2e/test_jupyter_remote.py).
    launcher = subprocess.run(
        ["sh", "-c", 'export JPY_PARENT_PID=$$; '
                     f'"{sys.executable}" -m pyrelune --mode jupyter -f "{path}" '
                     f'>/dev/null 2>&1 & echo $!; while grep -q \'"shell_port": 0\' "{path}"; '
                     "do sleep 0.05; done"], capture_output=True, text=True, timeout=TIMEOUT)
    pid = int(launcher.stdout)
    try:
        assert gone_soon(pid, within=TIMEOUT)
    finally:
        if not gone_soon(pid, within=0):
            os.kill(pid, 9)


def test_a_dataframe_is_html_and_text_as_ipykernel_gives_it(client: BlockingKernelClient) -> None:
    run = execute(client, "import pandas as pd\npd.DataFrame({'a': [1, 2]})")
    (result,) = run.of("execute_result")
    assert sorted(result["data"]) == ["text/html", "text/plain"]  # none of pyrelune's own types
    assert "<table" in result["data"]["text/html"]
