"""Completion, inspection, completeness, user_expressions and the debugger's questions
(`worker.debugging`), answered by IPython's shell.

The replies' contents are those ipykernel gives (its experimental completions
with their types, as JupyterLab asks for them), bounded as pyrelune's own
answers are (`introspect.MAX_MATCHES`, `MAX_TEXT`).
"""

from __future__ import annotations

from pyrelune.worker.introspect import MAX_MATCHES, MAX_TEXT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pyrelune.worker.introspect import Answers
    from pyrelune.worker.ipyshell.shell import ZMQInteractiveShell


def answers(shell: ZMQInteractiveShell) -> Answers:
    """Each question's answer through `shell` (see `introspect.answer`)."""

    def complete(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
        from IPython.core.completer import provisionalcompleter, rectify_completions

        code, cursor = args["code"], args["cursor_pos"]
        with provisionalcompleter():
            found = list(rectify_completions(code, shell.Completer.completions(code, cursor)))
        found = found[:MAX_MATCHES]
        start, end = (found[0].start, found[0].end) if found else (cursor, cursor)
        types = [{"start": c.start, "end": c.end, "text": c.text, "type": c.type,
                  "signature": c.signature} for c in found]
        return {"matches": [c.text for c in found], "cursor_start": start, "cursor_end": end,
                "metadata": {"_jupyter_types_experimental": types}}

    def inspect(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
        from IPython.utils.tokenutil import token_at_cursor

        name = token_at_cursor(args["code"], args["cursor_pos"])
        try:
            bundle = shell.object_inspect_mime(name, detail_level=args["detail_level"])
        except KeyError:
            return {"found": False, "data": {}, "metadata": {}}
        if not shell.enable_html_pager:
            bundle.pop("text/html", None)
        data = {mime: value[:MAX_TEXT] if isinstance(value, str) else value
                for mime, value in bundle.items()}
        return {"found": True, "data": data, "metadata": {}}

    def is_complete(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
        status, indent = shell.input_transformer_manager.check_complete(args["code"])
        reply: dict[str, Any] = {"status": status}
        if status == "incomplete":
            reply["indent"] = " " * (indent or 0)
        return reply

    def expressions(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
        values: dict[str, Any] = shell.user_expressions(args["expressions"])
        return values

    def debug(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
        from pyrelune.worker.debugging import answer

        return answer(shell, args)

    return {"complete": complete, "inspect": inspect, "is_complete": is_complete,
            "expressions": expressions, "debug": debug}
