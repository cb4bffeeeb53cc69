"""`pyrelune run FILE.py` at a terminal: a Vix Note response shown as a script's run shows."""

from __future__ import annotations

from typing import Any

from pyrelune.cli.app import as_text


def response(ok: bool = True, **fields: Any) -> dict[str, Any]:
    return {"protocol": "vix-note-extension-1", "ok": ok, "stdout": "", "stderr": "",
            "outputs": [], **fields}


def test_output_keeps_vix_notes_order_and_each_display_ends_its_line() -> None:
    shown = response(stdout="a\n", stderr="warned\n", outputs=[
        {"mime": "text/plain", "data": "{'k': 1}"}, {"mime": "text/plain", "data": "b\n"},
        {"mime": "text/plain", "data": ""}])
    assert as_text(shown) == ("a\n{'k': 1}\nb\n", "warned\n")


def test_a_python_error_is_its_traceback_alone() -> None:
    trace = "Traceback (most recent call last):\n  ...\nZeroDivisionError: division by zero\n"
    failed = response(False, stdout="a\n", error={
        "code": "python_runtime_error", "details": trace,
        "message": f"ZeroDivisionError: division by zero (line 4)\n\na\n\n{trace}"})
    assert as_text(failed) == ("a\n", trace)


def test_a_timeout_says_so_below_the_traceback_and_how_to_allow_more() -> None:
    trace = "Traceback (most recent call last):\n  ...\nKeyboardInterrupt: Execution interrupted\n"
    failed = response(False, error={"code": "timeout", "details": trace,
                                    "message": "Cell timed out after 1 s (line 3)\n\nTo allow..."})
    assert as_text(failed) == ("", f"{trace}Cell timed out after 1 s (line 3) "
                                   "(--timeout SECONDS allows more; 0: no limit)\n")


def test_a_refused_request_is_its_message() -> None:
    refused = response(False, error={"code": "invalid_working_directory", "details": "",
                                      "message": "Cannot run in '/gone': no such folder"})
    assert as_text(refused) == ("", "Cannot run in '/gone': no such folder\n")
