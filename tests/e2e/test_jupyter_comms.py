"""Comms both ways on the Jupyter kernel, driven by jupyter_client as a front end: the `comm`
package's Comm and CommManager in the worker, so that ipywidgets 8 and anywidget work."""

from __future__ import annotations

from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, Run, collect, execute, until_idle
from support.jupyter_host import send_comm as send

pytest.importorskip("ipywidgets", reason="the widgets a notebook shows are the test")



kernel, client = jupyter_host.module_kernel("message")


def comm_contents(run: Run) -> list[dict[str, Any]]:
    """Every comm message's content, checked as the messaging spec words them."""
    contents = []
    for message in run.iopub:
        kind, content = message["msg_type"], message["content"]
        if kind in ("comm_open", "comm_msg", "comm_close"):
            assert isinstance(content["comm_id"], str) and isinstance(content["data"], dict)
            assert kind != "comm_open" or isinstance(content["target_name"], str), content
            contents.append(content)
    return contents


def comms(client: BlockingKernelClient, target: str | None = None) -> dict[str, Any]:
    reply = collect(client, client.comm_info(target)).content
    assert reply["status"] == "ok", reply
    found: dict[str, Any] = reply["comms"]
    return found


def test_a_slider_opens_its_comm_and_moves_both_ways(client: BlockingKernelClient) -> None:
    run = execute(client, "import ipywidgets\nslider = ipywidgets.IntSlider(value=3)\nslider")
    assert run.content["status"] == "ok", run.content
    assert comm_contents(run)  # a widget's models open their comms, as the spec words them
    opened = [c for c in run.of("comm_open") if c["data"]["state"].get("_model_name") ==
              "IntSliderModel"]
    assert len(opened) == 1, run.kinds
    comm_id = opened[0]["comm_id"]
    assert opened[0]["target_name"] == "jupyter.widget"
    assert opened[0]["data"]["state"]["value"] == 3
    view = run.of("execute_result")[0]["data"]["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == comm_id
    assert comms(client, "jupyter.widget")[comm_id] == {"target_name": "jupyter.widget"}

    # The page moves it: the kernel's value follows.
    moved = send(client, "comm_msg", {"comm_id": comm_id, "data": {
        "method": "update", "state": {"value": 7}, "buffer_paths": []}})
    assert moved.kinds[0] == "status:busy" and moved.kinds[-1] == "status:idle", moved.kinds
    assert execute(client, "print(slider.value)").stdout() == "7\n"

    # The kernel moves it: the page hears, under the cell that did.
    run = execute(client, "slider.value = 42")
    updates = [c["data"] for c in run.of("comm_msg") if c["comm_id"] == comm_id]
    assert {"method": "update", "state": {"value": 42}, "buffer_paths": []} in updates, updates

    run = execute(client, "slider.close()")
    assert [c["comm_id"] for c in run.of("comm_close")] == [comm_id]
    assert comm_id not in comms(client)


def test_an_observer_runs_when_the_page_moves_the_slider(client: BlockingKernelClient) -> None:
    run = execute(client, "import ipywidgets\nseen = []\nknob = ipywidgets.IntSlider()\n"
                  "knob.observe(lambda change: seen.append(change['new']), 'value')\n"
                  "knob_id = knob.model_id")
    comm_id = run.of("comm_open")[-1]["comm_id"]
    for value in (1, 2, 3):
        send(client, "comm_msg", {"comm_id": comm_id, "data": {
            "method": "update", "state": {"value": value}, "buffer_paths": []}})
    assert execute(client, f"print(seen, knob_id == {comm_id!r})").stdout() == (
        "[1, 2, 3] True\n")


def test_front_end_comms_to_a_target_with_buffers(client: BlockingKernelClient) -> None:
    setup = ("from comm import get_comm_manager\nopened = []\n"
             "def target(comm, message):\n"
             "    opened.append(message['content']['data'])\n"
             "    comm.on_msg(lambda m: comm.send(\n"
             "        {'echo': m['content']['data']},\n"
             "        buffers=[bytes(b)[::-1] for b in m['buffers']]))\n"
             "get_comm_manager().register_target('echo', target)")
    assert execute(client, setup).content["status"] == "ok"
    send(client, "comm_open", {"comm_id": "front-1", "target_name": "echo", "data": {"x": 1}})
    assert comms(client, "echo") == {"front-1": {"target_name": "echo"}}
    message = client.session.msg("comm_msg", {"comm_id": "front-1", "data": {"hi": 2}})
    client.session.send(client.shell_channel.socket, message, buffers=[b"\x00\x01\xff"])
    run = Run({}, until_idle(client, message["header"]["msg_id"]))
    echoed = [m for m in run.iopub if m["msg_type"] == "comm_msg"]
    assert len(echoed) == 1, run.kinds
    assert echoed[0]["content"] == {"comm_id": "front-1", "data": {"echo": {"hi": 2}}}
    assert [bytes(b) for b in echoed[0]["buffers"]] == [b"\xff\x01\x00"]
    assert execute(client, "print(opened)").stdout() == "[{'x': 1}]\n"
    send(client, "comm_close", {"comm_id": "front-1", "data": {}})
    assert "front-1" not in comms(client)


def test_a_comm_to_a_missing_target_is_closed(client: BlockingKernelClient) -> None:
    run = send(client, "comm_open", {"comm_id": "nobody", "target_name": "no.such.target",
                                     "data": {}})
    assert [c["comm_id"] for c in run.of("comm_close")] == ["nobody"], run.kinds
    assert "nobody" not in comms(client)
    assert run.of("stream") == []  # not the user's error to show


def test_a_failing_handler_is_reported_and_the_kernel_goes_on(
        client: BlockingKernelClient) -> None:
    execute(client, "from comm import get_comm_manager\n"
            "def broken(comm, message):\n    comm.on_msg(lambda m: 1 / 0)\n"
            "get_comm_manager().register_target('broken', broken)")
    send(client, "comm_open", {"comm_id": "b-1", "target_name": "broken", "data": {}})
    run = send(client, "comm_msg", {"comm_id": "b-1", "data": {}})
    assert "ZeroDivisionError" in "".join(c["text"] for c in run.of("stream")), run.iopub
    assert execute(client, "print('still here')").stdout() == "still here\n"


def test_anywidget_syncs_its_traits(client: BlockingKernelClient) -> None:
    pytest.importorskip("anywidget")
    run = execute(client, "import anywidget, traitlets\n"
                  "class Counter(anywidget.AnyWidget):\n"
                  "    _esm = 'export default { render({ model, el }) {} }'\n"
                  "    count = traitlets.Int(0).tag(sync=True)\n"
                  "counter = Counter()\ncounter")
    opened = [c for c in run.of("comm_open") if "count" in c["data"]["state"]]
    assert len(opened) == 1, run.kinds
    comm_id = opened[0]["comm_id"]
    assert "export default" in opened[0]["data"]["state"]["_esm"]
    send(client, "comm_msg", {"comm_id": comm_id, "data": {
        "method": "update", "state": {"count": 5}, "buffer_paths": []}})
    assert execute(client, "print(counter.count)").stdout() == "5\n"


def test_a_task_goes_on_between_cells_under_the_cell_that_started_it(
        client: BlockingKernelClient) -> None:
    """As in a notebook: the cells' asyncio loop runs while the kernel is idle."""
    started = execute(client, "import asyncio\nasync def later():\n"
                      "    for n in range(3):\n        await asyncio.sleep(0.05)\n"
                      "        print('tick', n, flush=True)\n"
                      "ticker = asyncio.get_event_loop().create_task(later())")
    msg_id = started.reply["parent_header"]["msg_id"]
    text = started.stdout()
    while text.count("tick") < 3:
        message = client.get_iopub_msg(timeout=TIMEOUT)
        if message["msg_type"] == "stream":
            assert message["parent_header"]["msg_id"] == msg_id, message
            text += message["content"]["text"]
    assert text == "tick 0\ntick 1\ntick 2\n"
    assert execute(client, "print(asyncio.run(asyncio.sleep(0, 'ran')), ticker.done())"
                   ).stdout() == "ran True\n"


def test_a_thread_of_an_earlier_cell_sends_comm_messages_under_the_running_cell(
        client: BlockingKernelClient) -> None:
    """A comm message of a thread an earlier cell started goes under the running cell, as
    ipykernel's do (unlike its prints): a front end that follows the running cell only, as
    nbclient does, keeps the widget state it changes."""
    started = execute(client, "import threading\nfrom comm import create_comm\n"
                      "noted = create_comm(target_name='noted')\n"
                      "gate, sent = threading.Event(), threading.Event()\n"
                      "def later():\n    gate.wait(30)\n"
                      "    noted.send({'from': 'thread'})\n    sent.set()\n"
                      "threading.Thread(target=later, daemon=True).start()")
    assert started.content["status"] == "ok"
    earlier = started.reply["parent_header"]["msg_id"]
    running = client.execute("gate.set()\nassert sent.wait(30)\nnoted.send({'from': 'cell'})")
    parents: dict[str, str] = {}  # each comm_msg's parent, until the later cell's idle
    while True:
        message = client.get_iopub_msg(timeout=TIMEOUT)
        parent = message["parent_header"].get("msg_id")
        if message["msg_type"] == "comm_msg":
            parents[message["content"]["data"]["from"]] = parent
        if parent == running and message["msg_type"] == "status" and (
                message["content"]["execution_state"] == "idle"):
            break
    assert parents == {"thread": running, "cell": running}
    assert earlier != running
