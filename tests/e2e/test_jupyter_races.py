"""Races between the Jupyter kernel's channels, reproduced on purpose through jupyter_client.

Each channel is a connection of its own, so what a front end sends in one
order may reach the kernel in another: an interrupt sent right after an
execute_request, on a control connection that is already up, overtakes the
execute_request on a shell connection still being made. The interrupt must
still stop the cell it followed.
"""

from __future__ import annotations

from jupyter_client.session import Session
from support import jupyter_host
from support.jupyter_host import TIMEOUT, Kernel

#: Rounds of the race: a fresh shell connection each, which the interrupt overtakes.
ROUNDS = 8


kernel, client = jupyter_host.module_kernel("message", "signal")


def test_an_interrupt_stops_the_cell_it_followed_even_when_it_arrives_first(
        kernel: Kernel) -> None:
    manager = kernel[0]
    for _ in range(ROUNDS):
        session = Session(key=manager.session.key)  # an identity of its own on shell
        client = manager.client(session=session)
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        try:
            msg_id = client.execute("import time\ntime.sleep(600)")  # the connection is new
            manager.interrupt_kernel()  # on the manager's control connection, up since start
            while True:
                reply = client.shell_channel.get_msg(timeout=TIMEOUT)  # Empty: the cell ran on
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
        finally:
            client.stop_channels()
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
