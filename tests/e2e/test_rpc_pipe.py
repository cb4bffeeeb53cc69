"""`pyrelune --mode rpc` over a real pipe, spoken to as an editor would; every message
the kernel sends is checked against the schemas."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from support.cells import DEEP_JSON
from support.processes import kept
from support.profiles import examples
from support.rpc_fuzz import lines
from support.rpc_host import PipeHost, kernel_command, stdout_of

from pyrelune.supervisor.kernel import LOST
from pyrelune.wire.events import RESUMED


@pytest.fixture
def kernel() -> Iterator[PipeHost]:
    host = PipeHost()
    ready = host.receive()
    assert ready["event"] == "kernel.ready"
    assert ready["data"]["version"] == 1
    assert ready["data"]["state"] == "idle"
    yield host
    assert host.close() == 0


def test_kernel_info(kernel: PipeHost) -> None:
    import sys

    result = kernel.call("kernel.info", {})["result"]
    assert result["language"] == "python"
    assert result["python_version"] == "{}.{}".format(*sys.version_info[:2])
    assert result["state"] == "idle"
    assert "interrupt" in result["capabilities"]


def test_auth_is_not_needed_over_a_pipe(kernel: PipeHost) -> None:
    authed = kernel.call("kernel.auth", {"token": "anything"})["result"]
    assert authed == {"ok": True, "state": "idle", "cell_id": None}


def test_output_display_and_done_keep_the_cells_order(kernel: PipeHost) -> None:
    events = kernel.run(
        "import sys\nprint('one')\nshow('two')\nprint('three')\n"
        "print('four', file=sys.stderr)\nshow('five')\n6 * 7",
        cell_id="order",
    )
    seen = [(e["event"], e["data"].get("text") or e["data"].get("item") or e["data"]["status"])
            for e in events]
    assert seen == [
        ("stream", "one\n"), ("display_data", "two"), ("stream", "three\n"), ("stream", "four\n"),
        ("display_data", "five"),
        ("display_data", "42"), ("execute.done", "ok"),
    ]
    assert all(e["data"]["cell_id"] == "order" for e in events)
    assert [e["data"]["name"] for e in events if e["event"] == "stream"] == [
        "stdout", "stdout", "stderr"]


def test_namespace_persists_and_inputs_are_bound(kernel: PipeHost) -> None:
    assert kernel.run("x = 20")[-1]["data"]["status"] == "ok"
    events = kernel.run("print(x + bonus, label)", inputs={"bonus": 22, "label": "ok"})
    assert stdout_of(events) == "42 ok\n"


@pytest.mark.parametrize("key", ["1abc", "a-b", "class", ""])
def test_inputs_keys_must_be_identifiers(kernel: PipeHost, key: str) -> None:
    reply = kernel.call("execute.cell", {"cell_id": "c", "source": "1", "inputs": {key: 1}})
    assert reply["error"]["code"] == -32600
    assert kernel.call("kernel.info", {})["result"]["state"] == "idle"


def test_error_is_reported_with_the_cells_traceback(kernel: PipeHost) -> None:
    done = kernel.run("def f():\n    return 1 / 0\nf()", cell_id="boom")[-1]
    assert done["data"]["status"] == "error"
    assert done["data"]["ename"] == "ZeroDivisionError"
    assert done["data"]["line"] == 2  # the deepest line of the cell
    assert "<cell boom>" in done["data"]["error"]
    assert "pyrelune" not in done["data"]["error"]


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("{not json", -32700),
        ("[1, 2]", -32600),
        ('{"kind": "request", "method": "kernel.info"}', -32600),
        ('{"kind": "request", "id": "a", "method": "execute.cell", "params": {}}', -32600),
        ('{"kind": "request", "id": "a", "method": "execute.cell", '
         '"params": {"source": 5}}', -32600),
        ('{"kind": "request", "id": "a", "method": "kernel.explode", "params": {}}', -32601),
        ('{"kind": "request", "id": "a", "method": "execute.input_reply", '
         '"params": {"value": "x"}}', -32600),
    ],
)
def test_bad_requests_get_their_error_code(kernel: PipeHost, raw: str, code: int) -> None:
    kernel.send_raw(raw)
    reply = kernel.receive()
    assert reply["kind"] == "response"
    assert reply["error"]["code"] == code
    assert reply["id"] == ("a" if '"id": "a"' in raw else None)
    assert kernel.call("kernel.info", {})["result"]["state"] == "idle"


def test_invalid_utf8_is_a_parse_error(kernel: PipeHost) -> None:
    kernel.send_bytes(b'{"kind": "request", "id": "\xff"}\n')
    assert kernel.receive()["error"]["code"] == -32700


def test_oversized_line_is_refused_and_the_kernel_goes_on() -> None:
    host = PipeHost("--max-message-size", "2048")
    host.receive()
    host.send_raw('{"kind": "request", "id": "big", "method": "execute.cell", "params": '
                  '{"source": "' + "x" * 5000 + '"}}')
    reply = host.receive()
    assert reply["error"]["code"] == -32600
    assert "larger than 2048 bytes" in reply["error"]["message"]
    assert stdout_of(host.run("print('still here')")) == "still here\n"
    assert host.close() == 0


def test_busy_kernel_rejects_a_second_cell(kernel: PipeHost) -> None:
    kernel.call("execute.cell", {"cell_id": "slow", "source": "input('wait: ')"})
    kernel.wait_event("input_request")
    busy = kernel.call("execute.cell", {"cell_id": "other", "source": "1"})
    assert busy["error"]["code"] == -32001
    assert kernel.call("kernel.info", {})["result"]["state"] == "waiting_input"
    assert kernel.call("execute.input_reply", {"value": "go"})["result"] == {"ok": True}
    assert kernel.until_done()[-1]["data"] == {"cell_id": "slow", "status": "ok"}


def test_input_round_trip(kernel: PipeHost) -> None:
    kernel.call("execute.cell", {"cell_id": "ask", "source": "name = input('Name? ')\n"
                                 "print('hello', name)"})
    request = kernel.wait_event("input_request")
    assert request["data"] == {"cell_id": "ask", "prompt": "Name? "}
    kernel.call("execute.input_reply", {"value": "Ada"})
    events = kernel.until_done()
    assert stdout_of(events) == "hello Ada\n"
    assert events[-1]["data"]["status"] == "ok"
    again = kernel.call("execute.input_reply", {"value": "late"})
    assert again["error"]["code"] == -32600


@pytest.mark.parametrize(
    "source",
    ["while True:\n    pass", "import time\ntime.sleep(600)", "input('never answered: ')"],
    ids=["busy-loop", "sleep", "input"],
)
def test_interrupt(kernel: PipeHost, source: str) -> None:
    kernel.run("kept = 'yes'")
    kernel.call("execute.cell", {"cell_id": "stuck", "source": "print('started', flush=True)\n"
                                 + source})
    kernel.wait_event("input_request" if "input" in source else "stream")
    reply = kernel.call("execute.interrupt", {})
    assert reply["result"] == {"ok": True, "interrupted": True}
    done = kernel.until_done()[-1]
    assert done["data"]["status"] == "error"
    assert done["data"]["ename"] == "KeyboardInterrupt"
    assert stdout_of(kernel.run("print(kept)")) == "yes\n"


def test_a_cell_that_ignores_interrupts_is_killed(kernel: PipeHost) -> None:
    kernel.call("execute.cell", {"cell_id": "stubborn", "source": (
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "print('go', flush=True)\nwhile True:\n    pass")})
    kernel.wait_event("stream")
    kernel.call("execute.interrupt", {})
    done = kernel.until_done()[-1]
    assert done["data"]["status"] == "error"
    assert LOST in done["data"]["error"]  # no cell had finished: no snapshot
    assert stdout_of(kernel.run("print('fresh')")) == "fresh\n"


def test_a_cell_that_raised_its_interrupt_may_clean_up(kernel: PipeHost) -> None:
    kernel.run("kept = 'yes'")
    kernel.call("execute.cell", {"cell_id": "tidy", "source": (
        "import time\nprint('go', flush=True)\n"
        "try:\n    time.sleep(100)\nfinally:\n    time.sleep(0.7)\n    print('cleaned up')")})
    kernel.wait_event("stream")
    kernel.call("execute.interrupt", {})
    events = kernel.until_done()
    assert stdout_of(events) == "cleaned up\n"
    assert events[-1]["data"]["ename"] == "KeyboardInterrupt"
    assert stdout_of(kernel.run("print(kept)")) == "yes\n"


def test_interrupt_while_idle_is_harmless(kernel: PipeHost) -> None:
    kernel.run("kept = 1")
    assert kernel.call("execute.interrupt", {})["result"] == {"ok": True, "interrupted": False}
    assert stdout_of(kernel.run("print(kept)")) == "1\n"


def test_reset_waits_for_the_running_cell(kernel: PipeHost) -> None:
    kernel.run("old = 1")
    kernel.call("execute.cell", {"cell_id": "long", "source": "x = input('hold: ')\nprint(x)"})
    kernel.wait_event("input_request")
    reset = kernel.request("kernel.reset", {})
    kernel.call("execute.input_reply", {"value": "released"})
    # execute.done of the running cell comes before the reset's answer
    messages = []
    while True:
        message = kernel.receive()
        messages.append(message)
        if message.get("id") == reset:
            break
    kinds = [m.get("event") or "reset" for m in messages]
    assert kinds == ["stream", "execute.done", "reset"]
    assert messages[-1]["result"] == {"ok": True}
    done = kernel.run("old")[-1]
    assert done["data"]["ename"] == "NameError"


def test_reset_while_idle(kernel: PipeHost) -> None:
    kernel.run("old = 1")
    assert kernel.call("kernel.reset", {})["result"] == {"ok": True}
    assert kernel.run("old")[-1]["data"]["ename"] == "NameError"
    assert kernel.run("show('helpers survive')")[0]["data"]["item"] == "helpers survive"


def test_a_dead_worker_is_replaced(kernel: PipeHost) -> None:
    kept(kernel.process.pid, lambda: kernel.run("x = 1", cell_id="x"), "cell x")
    done = kernel.run("import os\nos._exit(3)")[-1]
    assert done["data"]["status"] == "error"
    assert RESUMED in done["data"]["error"]
    assert stdout_of(kernel.run("print(x)")) == "1\n"  # as the last finished cell left it
    assert stdout_of(kernel.run("print('alive')")) == "alive\n"


def test_a_line_forged_into_the_event_pipe_replaces_the_worker(kernel: PipeHost) -> None:
    kept(kernel.process.pid, lambda: kernel.run("x = 1", cell_id="x"), "cell x")
    done = kernel.run(
        "import gc, os\n"
        "channel = next(o for o in gc.get_objects() if type(o).__name__ == 'Channel')\n"
        "os.write(channel._event_fd, b'[' * 100_000 + b']' * 100_000 + b'\\n')")[-1]
    assert done["data"]["status"] == "error"
    assert "worker stopped: its event pipe carried a line" in done["data"]["error"]
    assert RESUMED in done["data"]["error"]
    assert stdout_of(kernel.run("print(x)")) == "1\n"  # as the last finished cell left it


def test_stdout_and_stderr_keep_their_mutual_order(kernel: PipeHost) -> None:
    events = kernel.run(
        "import sys\nfor i in range(3):\n"
        "    print('out', i)\n    print('err', i, file=sys.stderr)\n"
        "print('partial', end='')\nprint('warning', file=sys.stderr)\nprint(' line')"
    )
    runs: list[list[str]] = []
    for e in events:
        if e["event"] == "stream":
            if runs and runs[-1][0] == e["data"]["name"]:
                runs[-1][1] += e["data"]["text"]
            else:
                runs.append([e["data"]["name"], e["data"]["text"]])
    assert runs == [
        ["stdout", "out 0\n"], ["stderr", "err 0\n"], ["stdout", "out 1\n"], ["stderr", "err 1\n"],
        ["stdout", "out 2\n"], ["stderr", "err 2\n"], ["stdout", "partial"],
        ["stderr", "warning\n"], ["stdout", " line\n"],
    ]


def test_fd_level_output_cannot_break_the_protocol(kernel: PipeHost) -> None:
    events = kernel.run("import os\nos.write(1, b'raw\\n')\nos.system('echo from-shell')")
    assert stdout_of(events) == "raw\nfrom-shell\n"


def test_streams_are_coalesced(kernel: PipeHost) -> None:
    events = kernel.run("for i in range(20000):\n    print(i)")
    streams = [e for e in events if e["event"] == "stream"]
    assert stdout_of(events) == "".join(f"{i}\n" for i in range(20000))
    assert len(streams) < 2000  # one event per 50 ms, not one per print


def test_huge_output_is_capped_with_a_marker() -> None:
    host = PipeHost(env={"PYRELUNE_MAX_OUTPUT": "65536"})
    host.receive()
    events = host.run("import sys\nfor i in range(200000):\n    sys.stdout.write(f'line {i}\\n')\n"
                      "print('the end')")
    text = stdout_of(events)
    assert len(text.encode()) < 65536 + 200
    assert text.startswith("line 0\nline 1\n")
    assert text.endswith("line 199999\nthe end\n")
    assert "bytes of stdout omitted ...]" in text
    assert events[-1]["data"]["status"] == "ok"
    assert stdout_of(host.run("print('next cell streams again')")) == "next cell streams again\n"
    assert host.close() == 0


def test_displays_past_the_cap_are_counted_in_a_note() -> None:
    """Output that may be taken back (after an updatable display) is sent in its last
    state, within the cap; the displays that fell between its head and tail are said."""
    host = PipeHost(env={"PYRELUNE_MAX_OUTPUT": "1024"})
    host.receive()
    events = host.run("display('first', display_id=True)\n"
                      "for i in range(20):\n    display('x' * 200)", cell_id="many")
    shown = [e["data"]["item"] for e in events if e["event"] == "display_data"]
    notes = [(e["data"]["name"], e["data"]["text"]) for e in events if e["event"] == "stream"]
    assert shown[0] == "'first'" and 1 < len(shown) < 21
    assert notes == [("stderr", f"[... {21 - len(shown)} displayed outputs omitted ...]\n")]
    assert all(e["data"]["cell_id"] == "many" for e in events)
    assert events[-1]["data"]["status"] == "ok"
    assert host.close() == 0


def test_plot_and_show_items(kernel: PipeHost) -> None:
    events = kernel.run(
        "plot([0, 1, 2], [1, 4, 9], title='squares', x_label='n', y_label='n²')\n"
        "show(HtmlOutput('<b>bold</b>'))\n"
        "class Custom:\n    def __show__(self):\n        return ['ul', {}, ['li', {}, 'a']]\n"
        "show(Custom())\nshow(3.5)"
    )
    items = [e["data"]["item"] for e in events if e["event"] == "display_data"]
    assert items == [
        {"kind": "plot", "title": "squares", "x_label": "n", "y_label": "n²",
         "series": [{"name": "series0", "x": [0.0, 1.0, 2.0], "y": [1.0, 4.0, 9.0]}]},
        {"kind": "html", "content": "<b>bold</b>"},
        ["ul", {}, ["li", {}, "a"]],
        "3.5",
    ]


def test_plot_rejects_values_that_are_not_finite_numbers(kernel: PipeHost) -> None:
    done = kernel.run("plot([1, float('nan')])")[-1]
    assert done["data"]["ename"] == "ValueError"
    assert "not finite" in done["data"]["evalue"]
    done = kernel.run("plot(['a', 'b'])")[-1]
    assert done["data"]["ename"] == "TypeError"


def test_show_tables_as_jsonml(kernel: PipeHost) -> None:
    pytest.importorskip("pandas")
    events = kernel.run(
        "import numpy as np, pandas as pd\n"
        "show(pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']}))\n"
        "show(np.array([[1, 2], [3, 4]]))"
    )
    frame, array = (e["data"]["item"] for e in events if e["event"] == "display_data")
    assert frame == ["table", {},
                     ["tr", {}, ["th", {}, "index"], ["th", {}, "a"], ["th", {}, "b"]],
                     ["tr", {}, ["td", {}, "0"], ["td", {}, "1"], ["td", {}, "x"]],
                     ["tr", {}, ["td", {}, "1"], ["td", {}, "2"], ["td", {}, "y"]]]
    assert array[0] == "table"
    assert array[3:] == [["tr", {}, ["td", {}, "1"], ["td", {}, "2"]],
                         ["tr", {}, ["td", {}, "3"], ["td", {}, "4"]]]


def test_show_a_matplotlib_figure_as_png(kernel: PipeHost) -> None:
    pytest.importorskip("matplotlib")
    import base64

    events = kernel.run(
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots()\nax.plot([1, 2, 3])\nshow(fig)\nplt.close(fig)"
    )
    item = next(e["data"]["item"] for e in events if e["event"] == "display_data")
    assert item["kind"] == "image"
    assert item["format"] == "png"
    assert base64.b64decode(item["data"]).startswith(b"\x89PNG")


def test_progress_bars_arrive_collapsed(kernel: PipeHost) -> None:
    events = kernel.run("for i in range(1001):\n    print(f'\\r{i / 10:.0f}%', end='')\nprint()")
    assert stdout_of(events) == "100%\n"


def test_display_and_final_values_of_tables_are_jsonml(kernel: PipeHost) -> None:
    pytest.importorskip("pandas")
    events = kernel.run("import pandas as pd\ndf = pd.DataFrame({'a': [1]})\ndisplay(df)\ndf")
    items = [e["data"]["item"] for e in events if e["event"] == "display_data"]
    expected = ["table", {}, ["tr", {}, ["th", {}, "index"], ["th", {}, "a"]],
                ["tr", {}, ["td", {}, "0"], ["td", {}, "1"]]]
    assert items == [expected, expected]


def test_json_nested_too_deep_shows_as_text(kernel: PipeHost) -> None:
    """Encodable under the cell's recursion limit, not under the kernel's: text instead."""
    events = kernel.run(DEEP_JSON)
    assert [e["data"]["item"] for e in events if e["event"] == "display_data"] == ["Deep()"]
    assert "nested at most 500 deep" in stdout_of(events, "stderr")
    assert events[-1]["data"]["status"] == "ok"


def test_matplotlib_figures_left_open_are_shown(kernel: PipeHost) -> None:
    pytest.importorskip("matplotlib")
    events = kernel.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nNone")
    (item,) = [e["data"]["item"] for e in events if e["event"] == "display_data"]
    assert item["kind"] == "image"
    assert item["format"] == "svg"
    assert item["data"].lstrip().startswith("<svg") or "<svg" in item["data"]


def test_stdout_is_watched_only_until_its_first_write_after_stderr(kernel: PipeHost) -> None:
    events = kernel.run(
        "import sys\nprint('err', file=sys.stderr)\nprint('out')\n"
        "print('write' in vars(sys.stdout))"
    )
    assert stdout_of(events) == "out\nFalse\n"
    # The next cell starts where this one left off: stdout first, nothing to wait for.
    assert stdout_of(kernel.run("print('again')")) == "again\n"


def test_the_running_cell_finishes_after_the_end_of_input(kernel: PipeHost) -> None:
    request = kernel.request("execute.cell", {
        "cell_id": "c", "source": "import time\ntime.sleep(0.3)\nprint('finished')"})
    kernel.end_input()
    assert kernel.response(request)["result"] == {"status": "started"}
    events = kernel.until_done()
    assert stdout_of(events) == "finished\n"
    assert events[-1]["data"]["status"] == "ok"


def test_input_after_the_end_of_input_raises_eof(kernel: PipeHost) -> None:
    request = kernel.request("execute.cell", {
        "cell_id": "c", "source": "import time\ntime.sleep(0.2)\nname = input('name? ')"})
    kernel.end_input()
    kernel.response(request)
    events = kernel.until_done()
    assert [e["event"] for e in events][-2:] == ["input_request", "execute.done"]
    assert events[-1]["data"]["ename"] == "EOFError"


def test_a_prompt_waiting_at_the_end_of_input_raises_eof(kernel: PipeHost) -> None:
    request = kernel.request("execute.cell", {"cell_id": "c", "source": "name = input('name? ')"})
    kernel.response(request)
    assert kernel.wait_event("input_request")["data"]["prompt"] == "name? "
    kernel.end_input()
    events = kernel.until_done()
    assert events[-1]["data"]["ename"] == "EOFError"


def test_requests_from_a_file_are_all_answered(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        json.dumps({"kind": "request", "id": 1, "method": "execute.cell",
                    "params": {"cell_id": "a", "source": "6 * 7"}}) + "\n"
        + json.dumps({"kind": "request", "id": 2, "method": "kernel.info"}) + "\n")
    with requests.open("rb") as stdin:
        done = subprocess.run(kernel_command(), stdin=stdin, capture_output=True, timeout=60)
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0
    assert {m.get("id") for m in messages if m["kind"] == "response"} == {1, 2}
    assert [m["data"]["item"] for m in messages if m.get("event") == "display_data"] == ["42"]
    assert [m["event"] for m in messages if m["kind"] == "event"][-1] == "execute.done"


def test_threads_of_a_cell_print_display_and_ask(kernel: PipeHost) -> None:
    events = kernel.run(
        "import sys, threading\n"
        "from IPython.display import display\n"
        "answers = []\n"
        "def work(n):\n"
        "    for i in range(100):\n"
        "        print(n, i)\n"
        "        if i % 10 == 0:\n"
        "            print('warning', n, i, file=sys.stderr)\n"
        "    display(f'from {n}')\n"
        "    try:\n"
        "        input('? ')\n"
        "    except EOFError as exc:\n"
        "        answers.append(str(exc))\n"
        "threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "print(sorted(set(answers)))"
    )
    assert events[-1]["data"]["status"] == "ok", events[-1]
    out = stdout_of(events).splitlines()
    assert sorted(out[:-1]) == sorted(f"{n} {i}" for n in range(4) for i in range(100))
    assert "only on the thread that runs the cell" in out[-1]
    assert stdout_of(events, "stderr").count("warning") == 40
    displays = sorted(e["data"]["item"] for e in events if e["event"] == "display_data")
    assert displays == ["'from 0'", "'from 1'", "'from 2'", "'from 3'"]


def test_a_bad_max_output_is_a_usage_error() -> None:
    done = subprocess.run(kernel_command(), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=os.environ | {"PYRELUNE_MAX_OUTPUT": "12"})
    assert done.returncode == 2
    assert "PYRELUNE_MAX_OUTPUT must be a whole number of bytes" in done.stderr
    assert done.stdout == ""


def test_fuzzed_lines_are_each_answered_and_the_kernel_lives_on() -> None:
    """Each line gets schema-valid answers (or none, for blank ones); then the kernel still works.

    One kernel for the whole run: a fixed budget of examples, each followed by a
    `kernel.info` whose answer marks where the line's answers end.
    """
    host = PipeHost()
    assert host.receive()["event"] == "kernel.ready"

    @settings(max_examples=examples(1.5), database=None)
    @given(lines)
    def answered(raw: bytes) -> None:
        host.send_bytes(raw + b"\n")
        mark = host.request("kernel.info", {})
        while (message := host.receive()).get("id") != mark:  # each one schema-checked
            assert message["kind"] in ("response", "event")

    answered()
    assert host.call("kernel.reset", {})["result"] == {"ok": True}  # any fuzzed cell is over
    # A fuzzed reset that waited for a fuzzed cell is answered with this one, after its mark.
    late = host.take_backlog()
    assert all(m["kind"] == "event" or m.get("result") == {"ok": True} for m in late), late
    assert host.call("kernel.info", {})["result"]["state"] == "idle"
    assert stdout_of(host.run("print(6 * 7)")) == "42\n"
    assert host.close() == 0
