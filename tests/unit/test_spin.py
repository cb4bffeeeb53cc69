"""`spin.poll`: a short poll before sleeping, for answers due any moment."""

from __future__ import annotations

import os
import threading

from pyrelune import spin


def test_a_readable_pipe_is_reported_at_once() -> None:
    r, w = os.pipe()
    try:
        os.write(w, b"x")
        assert spin.poll([r], seconds=10) == [r]
    finally:
        os.close(r)
        os.close(w)


def test_a_write_made_while_polling_is_seen() -> None:
    r, w = os.pipe()
    writer = threading.Timer(0.01, os.write, (w, b"x"))
    try:
        writer.start()
        assert spin.poll([r], seconds=10) == [r]
    finally:
        writer.join()
        os.close(r)
        os.close(w)


def test_nothing_readable_gives_up_empty() -> None:
    r, w = os.pipe()
    try:
        assert spin.poll([r], seconds=0.001) == []
    finally:
        os.close(r)
        os.close(w)
