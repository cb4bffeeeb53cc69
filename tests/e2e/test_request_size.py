"""Oneshot's bounds on what a request brings: its size, and what an error message quotes.

A request past `MAX_REQUEST` is answered `request_too_large` after stdin is
read to its end (the host never gets SIGPIPE), without holding it in memory;
a value an error message quotes is cut, so the response stays small.
"""

from __future__ import annotations

import json
import resource
import subprocess

from support.launch import SCRIPT
from support.rpc_host import PipeHost
from support.vixhost import PROTOCOL, VixHost, encode_request

from pyrelune import MAX_REQUEST

#: The runtime's address space in the memory test: generous for what it needs
#: (about 60 MB), far less than a 300 MB request held, parsed or joined.
ADDRESS_SPACE = 512 << 20
TIMEOUT = 300  # generous: writing 300 MB on a busy machine


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_a_huge_request_is_read_to_its_end_unheld_and_refused() -> None:
    process = subprocess.Popen([SCRIPT], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=_limited)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(b'{"protocol": "%s", "source": "x = 1", "pad": "' % PROTOCOL.encode())
        chunk = b"p" * (1 << 20)
        for _ in range(300):  # 300 MB, every byte written: a BrokenPipeError fails the test
            process.stdin.write(chunk)
        process.stdin.write(b'"}')
        process.stdin.close()
        out = process.stdout.read()
        assert process.wait(timeout=TIMEOUT) == 0, process.stderr.read() if process.stderr else ""
    finally:
        process.kill()
    response = json.loads(out)
    assert response["ok"] is False and response["error"]["code"] == "request_too_large"
    assert f"{MAX_REQUEST:,} bytes" in response["error"]["message"]


def test_a_20_mb_source_is_refused_at_once() -> None:
    result = VixHost.roomy().run_cell("x = 1\n" * ((20 << 20) // 6))
    assert result.error["code"] == "request_too_large"
    assert result.headline is not None and "2 MiB" in result.headline


def test_a_request_of_exactly_the_limit_runs() -> None:
    base = encode_request({"protocol": PROTOCOL, "source": "s = ''\nprint(len(s))"})
    pad = MAX_REQUEST - len(base)
    raw = encode_request({"protocol": PROTOCOL, "source": "s = '" + "a" * pad + "'\nprint(len(s))"})
    assert len(raw) == MAX_REQUEST
    result = VixHost.roomy().run(raw)
    assert result.ok and result.text() == f"{pad}\n"


def test_a_huge_working_directory_is_quoted_cut() -> None:
    folder = "/no/such/" + "d" * (1 << 20)
    result = VixHost.roomy().run_cell("1", workingDirectory=folder)
    assert result.error["code"] == "invalid_working_directory"
    assert len(result.stdout) < 8192, len(result.stdout)
    assert "bytes omitted" in result.error["message"]
    assert result.error["message"].startswith("Cannot use workingDirectory '/no/such/ddd")


def test_every_quoted_field_is_bounded() -> None:
    """A long protocol name, a wrong field's long value: each response stays small."""
    for fields in ({"protocol": "x" * (1 << 20)}, {"cellId": ["c" * (1 << 20)]},
                   {"source": {"k" * (1 << 20): 1}}):
        request = {"protocol": PROTOCOL, "source": "1", **fields}
        result = VixHost.roomy().run(json.dumps(request).encode())
        assert not result.ok and len(result.stdout) < 32768, (fields.keys(), len(result.stdout))


def test_rpc_busy_error_quotes_a_long_cell_id_cut() -> None:
    host = PipeHost()
    try:
        host.wait_event("kernel.ready")
        started = host.call("execute.cell", {"cell_id": "c" * (1 << 20), "source": "input()"})
        assert started["result"] == {"status": "started"}
        host.wait_event("input_request")
        busy = host.call("execute.cell", {"cell_id": "second", "source": "1"})
        message = busy["error"]["message"]
        assert message.startswith("Kernel busy: cell 'ccc") and len(message) < 1024, len(message)
        assert "bytes omitted" in message
    finally:
        host.close()
