"""The Jupyter kernel's cells run in IPython's own shell: what libraries reach through
`get_ipython()` works as under ipykernel, seen from jupyter_client as a front end sees it.

ipywidgets' `Output` and `interact` (the front end captures the messages whose parent is the
msg_id the widget names), payloads (`obj?`, `exit`, `%load`), `Out` and `_N`, extensions with
events (autoreload), sympy's printing, IPython's completion; and pyrelune's promises kept under
it: a crash costs only the cell (tests/e2e/test_jupyter_promises.py runs the rest of them on
this shell).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, Run, collect, execute, until_idle
from support.launch import runtime

kernel, client = jupyter_host.module_kernel("message")


def ok(run: Run) -> Run:
    assert run.content["status"] == "ok", run.content
    return run


def result(run: Run) -> str:
    (value,) = ok(run).of("execute_result")
    text: str = value["data"]["text/plain"]
    return text


def test_get_ipython_is_a_kernel_shell_serving_the_request(client: BlockingKernelClient) -> None:
    assert result(execute(client, "type(get_ipython()).__name__")) == "'ZMQInteractiveShell'"
    # IPython's own function answers it too, as libraries call it.
    assert result(execute(client, "import IPython\nIPython.get_ipython() is get_ipython()")
                  ) == "True"
    message = client.session.msg("execute_request", {
        "code": "get_ipython().kernel.get_parent()['header']['msg_id']", "silent": False,
        "store_history": True, "user_expressions": {}, "allow_stdin": False})
    client.shell_channel.send(message)
    run = collect(client, message["header"]["msg_id"])
    assert result(run) == repr(message["header"]["msg_id"])


def test_results_are_numbered_into_out_and_underscores(client: BlockingKernelClient) -> None:
    first = execute(client, "6 * 7")
    count = first.content["execution_count"]
    assert first.of("execute_result")[0]["execution_count"] == count
    assert result(execute(client, f"Out[{count}], _{count}, _")) == "(42, 42, 42)"
    hidden = execute(client, "1 + 1;")  # a trailing semicolon shows nothing
    assert ok(hidden).of("execute_result") == []


def test_an_output_widget_names_the_request_before_what_it_captures(
        client: BlockingKernelClient) -> None:
    code = textwrap.dedent("""\
        import ipywidgets
        out = ipywidgets.Output()
        display(out)
        with out:
            print("inside")
            display("shown inside")
        print("outside")
        """)
    message = client.session.msg("execute_request", {
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False})
    client.shell_channel.send(message)
    run = collect(client, message["header"]["msg_id"])
    ok(run)
    order = []
    for item in run.iopub:
        content = item["content"]
        if item["msg_type"] == "comm_msg" and "msg_id" in content["data"].get("state", {}):
            order.append(("capture", content["data"]["state"]["msg_id"]))
        elif item["msg_type"] == "stream":
            order.append(("stream", content["text"]))
        elif item["msg_type"] == "display_data" and "text/plain" in content["data"]:
            order.append(("display", content["data"]["text/plain"]))
    request = message["header"]["msg_id"]
    assert order == [("display", "Output()"), ("capture", request), ("stream", "inside\n"),
                     ("display", "'shown inside'"), ("capture", ""), ("stream", "outside\n")]


def test_interact_shows_its_result_under_the_slider_that_moves(
        client: BlockingKernelClient) -> None:
    run = ok(execute(client, "from ipywidgets import interact\n"
                             "shown = interact(lambda x: x * 2, x=5)"))
    sliders = [c["comm_id"] for c in run.of("comm_open")
               if c["data"]["state"].get("_model_name") == "IntSliderModel"]
    outputs = [c["comm_id"] for c in run.of("comm_open")
               if c["data"]["state"].get("_model_name") == "OutputModel"]
    assert len(sliders) == 1 and len(outputs) == 1, run.kinds
    # The first result went into the Output widget: under the cell, named by it.
    assert any(r["data"]["text/plain"] == "10" for r in run.of("display_data"))
    assert run.stdout() == ""

    moved = client.session.msg("comm_msg", {"comm_id": sliders[0], "data": {
        "method": "update", "state": {"value": 8}, "buffer_paths": []}})
    client.shell_channel.send(moved)
    callback = Run({}, until_idle(client, moved["header"]["msg_id"]))
    captured = [c["data"]["state"]["msg_id"] for c in callback.of("comm_msg")
                if c["comm_id"] == outputs[0] and "msg_id" in c["data"].get("state", {})]
    assert captured[0] == moved["header"]["msg_id"], callback.kinds
    assert callback.of("clear_output") and [d["data"]["text/plain"] for d in
                                            callback.of("display_data")] == ["16"]


def test_payloads_reach_the_reply(client: BlockingKernelClient) -> None:
    page = ok(execute(client, "len?")).content["payload"]
    assert [p["source"] for p in page] == ["page"] and "Return the number of items" in (
        page[0]["data"]["text/plain"]) and page[0]["start"] == 0
    assert ok(execute(client, "get_ipython().set_next_input('x = 1')")).content["payload"] == [
        {"source": "set_next_input", "text": "x = 1", "replace": False}]
    assert ok(execute(client, "exit")).content["payload"] == [
        {"source": "ask_exit", "keepkernel": False}]
    assert ok(execute(client, "exit(keep_kernel=True)")).content["payload"] == [
        {"source": "ask_exit", "keepkernel": True}]
    # The kernel is still there: exit only asks the front end to go.
    assert result(execute(client, "2 + 2")) == "4"


def test_load_fills_the_next_cell(client: BlockingKernelClient, tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text("answer = 42\n", encoding="utf-8")
    (payload,) = ok(execute(client, f"%load {script}")).content["payload"]
    assert payload["source"] == "set_next_input" and payload["replace"] is True
    assert payload["text"].endswith("answer = 42\n")


def test_autoreload_runs_the_edited_module(client: BlockingKernelClient, tmp_path: Path) -> None:
    module = tmp_path / "reloaded_here.py"
    module.write_text("def f():\n    return 1\nclass C:\n    def g(self):\n"
                      "        return 'old'\n", encoding="utf-8")
    ok(execute(client, f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
                       "%load_ext autoreload\n%autoreload 2\n"
                       "import reloaded_here\nfrom reloaded_here import f, C\nmade = C()"))
    assert result(execute(client, "f(), reloaded_here.f(), made.g()")) == "(1, 1, 'old')"
    module.write_text("def f():\n    return 2\nclass C:\n    def g(self):\n"
                      "        return 'new'\n", encoding="utf-8")
    stat = module.stat()  # a newer time, however coarse the file system's clock
    os.utime(module, (stat.st_atime, stat.st_mtime + 5))
    # The module, the name imported from it, and an instance made before: the new code.
    assert result(execute(client, "f(), reloaded_here.f(), made.g()")) == "(2, 2, 'new')"


def test_an_error_is_ipythons_traceback_of_the_users_frames(
        client: BlockingKernelClient) -> None:
    run = execute(client, "def inner():\n    return 1 / 0\ninner()")
    content = run.content
    assert content["status"] == "error" and content["ename"] == "ZeroDivisionError"
    assert content["evalue"] == "division by zero"
    coloured = "\n".join(content["traceback"])
    text = re.sub(r"\x1b\[[0-9;]*m", "", coloured)
    assert "\x1b[" in coloured and "Cell In[" in text and "return 1 / 0" in text  # IPython's
    assert "inner()" in text and "pyrelune" not in text  # none of the runtime's frames
    (error,) = run.of("error")
    assert error["traceback"] == content["traceback"]


def test_a_magic_that_is_not_there_is_a_usage_error(client: BlockingKernelClient) -> None:
    run = execute(client, "%no_such_magic")
    assert run.content["status"] == "error" and run.content["ename"] == "UsageError"
    # As ipykernel says it: IPython's one line on stderr, no traceback, no error message.
    assert run.stdout("stderr") == "UsageError: Line magic function `%no_such_magic` not found.\n"
    assert run.content["traceback"] == [] and run.of("error") == []


def test_sympy_prints_latex_through_the_shell(client: BlockingKernelClient) -> None:
    pytest.importorskip("sympy")
    ok(execute(client, "import sympy\nsympy.init_printing()\nx = sympy.Symbol('x')"))
    (value,) = execute(client, "x**2 / 2").of("execute_result")
    assert "text/latex" in value["data"] and "frac" in value["data"]["text/latex"]


def test_completion_and_inspection_are_ipythons(client: BlockingKernelClient) -> None:
    ok(execute(client, "import os\nrather_long_name = 3"))
    code = "rather_lo"
    reply = collect(client, client.complete(code, len(code))).content
    assert reply["status"] == "ok" and "rather_long_name" in reply["matches"]
    assert reply["cursor_start"] == 0 and reply["cursor_end"] == len(code)
    types = reply["metadata"]["_jupyter_types_experimental"]
    assert any(t["text"] == "rather_long_name" and t["type"] == "instance" for t in types)
    inspected = collect(client, client.inspect("os.path.join", 12)).content
    assert inspected["found"] is True and "join" in inspected["data"]["text/plain"]
    assert collect(client, client.inspect("no_such_thing", 3)).content["found"] is False
    assert collect(client, client.is_complete("for i in x:")).content == {
        "status": "incomplete", "indent": "    "}


def test_a_crash_costs_the_cell_and_the_next_worker_has_the_shell(
        client: BlockingKernelClient) -> None:
    content = execute(client, "import os\nos._exit(3)").content
    assert content["status"] == "error" and content["ename"] == "WorkerDied"
    assert result(execute(client, "type(get_ipython()).__name__")) == "'ZMQInteractiveShell'"


def _kernel_with(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The kernel started by hand with `env` on a connection file, until it ends or 10 s."""
    connection = tmp_path / "kernel.json"
    connection.write_text('{"transport": "tcp", "ip": "127.0.0.1", "key": "k", '
                          '"signature_scheme": "hmac-sha256", "shell_port": 0, '
                          '"iopub_port": 0, "stdin_port": 0, "control_port": 0, '
                          '"hb_port": 0}', encoding="utf-8")
    return subprocess.run(runtime("--mode", "jupyter", "-f", str(connection)),
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=TIMEOUT)


def test_a_shell_setting_that_is_neither_is_refused(tmp_path: Path) -> None:
    done = _kernel_with({"PYRELUNE_SHELL": "bash"}, tmp_path)
    assert done.returncode == 2
    assert "PYRELUNE_SHELL must be 'ipython' or 'plain', not 'bash'" in done.stderr


def test_the_plain_shell_is_pyrelunes_own(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with jupyter_host.started(data, env={"PYRELUNE_SHELL": "plain"}) as (_, client):
        run = execute(client, "get_ipython()")
        assert run.content["ename"] == "NameError", run.content
        assert "show(obj" in result(execute(client, "show"))  # pyrelune's own builtin
        # Its `obj?` is a page of the reply too, which a %%capture does not keep.
        (page,) = ok(execute(client, "len?")).content["payload"]
        assert page["source"] == "page" and "len" in page["data"]["text/plain"]
        captured = ok(execute(client, "%%capture kept\nlen?"))
        assert [p["source"] for p in captured.content["payload"]] == ["page"]
        assert result(execute(client, "len(kept.outputs)")) == "0"


def test_plotly_shows_its_figure_as_under_ipykernel(client: BlockingKernelClient) -> None:
    pytest.importorskip("plotly")
    run = ok(execute(client, "import plotly.graph_objects as go\n"
                             "go.Figure(go.Scatter(y=[1, 3, 2])).show()"))
    (shown,) = run.of("display_data")
    # Its mimetype renderer, as ipykernel gets it: the figure's JSON, not megabytes of script.
    assert shown["data"]["application/vnd.plotly.v1+json"]["data"][0]["y"] == [1, 3, 2]
    assert len(json.dumps(shown)) < 100_000


def test_bokeh_shows_its_figure_and_keeps_a_handle(client: BlockingKernelClient) -> None:
    pytest.importorskip("bokeh")
    run = ok(execute(client, textwrap.dedent("""\
        from bokeh.plotting import figure, output_notebook, show
        from bokeh.resources import INLINE
        output_notebook(INLINE, hide_banner=True)
        p = figure(width=200, height=200)
        line = p.line([1, 2], [3, 4])
        handle = show(p, notebook_handle=True)
        """)))
    loaded, div, embedded = run.of("display_data")
    assert "application/vnd.bokehjs_load.v0+json" in loaded["data"]
    assert 'data-root-id="' in div["data"]["text/html"]
    assert embedded["data"]["application/vnd.bokehjs_exec.v0+json"] == ""
    # The handle's comm is ipykernel's Comm class, relayed: push_notebook reaches the page.
    (opened,) = run.of("comm_open")
    pushed = ok(execute(client, "from bokeh.io import push_notebook\n"
                                "line.glyph.line_width = 5\npush_notebook(handle=handle)"))
    assert any(c["comm_id"] == opened["comm_id"] for c in pushed.of("comm_msg")), pushed.kinds


def test_matplotlib_widget_is_ipympls_canvas(client: BlockingKernelClient) -> None:
    pytest.importorskip("ipympl")
    run = ok(execute(client, "%matplotlib widget\nimport matplotlib.pyplot as plt\n"
                             "figure = plt.figure()\nplt.plot([1, 2]);"))
    models = [c["data"]["state"].get("_model_name") for c in run.of("comm_open")]
    assert "MPLCanvasModel" in models, models
    ok(execute(client, "plt.close('all')\n%matplotlib inline"))


def test_an_extension_with_magics_and_events_loads(client: BlockingKernelClient) -> None:
    pytest.importorskip("autotime")
    ok(execute(client, "%load_ext autotime"))
    assert ok(execute(client, "x = 1")).stdout().startswith("time: ")
    ok(execute(client, "%unload_ext autotime"))
    assert ok(execute(client, "x = 2")).stdout() == ""


def test_tqdm_auto_draws_its_widget_bar(client: BlockingKernelClient) -> None:
    """tqdm.auto tells a notebook by ipykernel's shell module (loaded where ipykernel is)."""
    pytest.importorskip("ipykernel")
    run = ok(execute(client, "from tqdm.auto import tqdm\nfor _ in tqdm(range(3)):\n    pass"))
    models = [c["data"]["state"].get("_model_name") for c in run.of("comm_open")]
    assert "FloatProgressModel" in models, models
    assert run.stdout("stderr") == ""  # no text bar


def test_jupyter_console_ends_on_exit(tmp_path: Path) -> None:
    """`exit` asks the front end to close (the ask_exit payload): the console ends there,
    and what was typed after it never runs."""
    pytest.importorskip("jupyter_console")
    jupyter_host.kernelspec(tmp_path, "message", name="pyrelune-console")
    typed = "print(6 * 7)\nexit\nprint('after exit')\n"
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_console", "--kernel", "pyrelune-console",
         "--simple-prompt"], input=typed, capture_output=True, text=True, timeout=TIMEOUT,
        env={**os.environ, "JUPYTER_PATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "42" in done.stdout and "after exit" not in done.stdout


def test_the_users_ipython_profile_is_read_as_ipykernel_reads_it(tmp_path: Path) -> None:
    """The default profile's kernel configuration, startup files, extensions and exec_lines
    (under $IPYTHONDIR, as ~/.ipython is found)."""
    profile = tmp_path / "ipython" / "profile_default"
    (profile / "startup").mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text(
        'c.InteractiveShell.ast_node_interactivity = "all"\n'
        'c.InteractiveShellApp.exec_lines = ["from_exec_lines = 1"]\n'
        'c.InteractiveShellApp.extensions = ["autoreload"]\n', encoding="utf-8")
    (profile / "startup" / "00-first.py").write_text("from_startup = 'yes'\n",
                                                     encoding="utf-8")
    env = {"IPYTHONDIR": str(tmp_path / "ipython")}
    with jupyter_host.started(tmp_path / "data", env=env) as (_, client):
        run = ok(execute(client, "1\n2"))
        assert [r["data"]["text/plain"] for r in run.of("execute_result")] == ["1", "2"]
        assert result(execute(client, "from_startup, from_exec_lines")) == "('yes', 1)"
        assert "autoreload" in result(execute(
            client, "sorted(get_ipython().extension_manager.loaded)"))


def test_matplotlibs_notebook_backend_draws_through_its_comm(
        client: BlockingKernelClient) -> None:
    """nbagg, as ipykernel runs it (no event loop); a real GUI loop is refused, said."""
    run = ok(execute(client, "import matplotlib\nmatplotlib.use('nbagg')\n"
                             "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"))
    kinds = [sorted(d["data"]) for d in run.of("display_data")]
    assert ["application/javascript", "text/plain"] in kinds and [
        "text/html", "text/plain"] in kinds
    assert [c["target_name"] for c in run.of("comm_open")] == ["matplotlib"]
    ok(execute(client, "plt.close('all')\n%matplotlib inline"))
    refused = ok(execute(client, "%gui qt"))  # IPython logs the refusal, as under ipykernel
    assert "the 'qt' event loop cannot run in pyrelune's kernel" in refused.stdout("stderr")


def test_a_thread_of_an_earlier_cell_captures_into_its_output_widget(
        client: BlockingKernelClient) -> None:
    """The request a thread's `with out:` names is its own cell's (where its output goes),
    not the one running when it writes: the widget keeps what it prints."""
    first = client.session.msg("execute_request", {
        "code": "import ipywidgets, threading\nout = ipywidgets.Output()\ndisplay(out)\n"
                "go = threading.Event()\n"
                "def later():\n    go.wait(60)\n    with out:\n        print('from the thread')\n"
                "threading.Thread(target=later).start()",
        "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False})
    client.shell_channel.send(first)
    ok(collect(client, first["header"]["msg_id"]))
    second = client.execute("go.set()\nimport time\ntime.sleep(1)\nprint('second')")
    mine = first["header"]["msg_id"]
    named, printed, idle = [], {mine: "", second: ""}, False
    deadline = time.monotonic() + TIMEOUT
    while not (idle and printed[mine]) and time.monotonic() < deadline:
        message = client.get_iopub_msg(timeout=TIMEOUT)
        parent, content = message["parent_header"].get("msg_id"), message["content"]
        if message["msg_type"] == "status" and parent == second:
            idle = content["execution_state"] == "idle"
        elif message["msg_type"] == "comm_msg" and "msg_id" in content["data"].get("state", {}):
            named.append(content["data"]["state"]["msg_id"])
        elif message["msg_type"] == "stream" and parent in printed:
            printed[parent] += content["text"]
    assert printed == {mine: "from the thread\n", second: "second\n"}
    assert named[:1] == [mine]  # the widget captures under the thread's own cell


def test_debug_asks_the_front_end_for_each_command(client: BlockingKernelClient) -> None:
    """IPython's %debug post-mortem reads its commands through input(): stdin requests."""
    ok(execute(client, "def halve(x):\n    return x / 0"))
    assert execute(client, "halve(21)").content["ename"] == "ZeroDivisionError"
    msg_id = client.execute("%debug", allow_stdin=True)
    prompts = []
    for answer in ("p x * 2", "q"):
        request = client.get_stdin_msg(timeout=TIMEOUT)
        prompts.append(request["content"]["prompt"])
        client.input(answer)
    run = collect(client, msg_id)
    assert run.content["status"] == "ok" and "42" in run.stdout().split("\n")
    assert all("ipdb>" in re.sub(r"\x1b\[[0-9;]*m", "", p) for p in prompts), prompts
