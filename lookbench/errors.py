"""The library's error type and the one way a failure reaches a user: one message naming its cause, never a traceback.

Near a leaf: the engine, the commands and the model scripts import it; it imports only ``lookbench.terminal``, on a
failure, to wrap the message to the terminal's width as every other printed line is."""
from __future__ import annotations

import os
import sys
from typing import Callable


SHOWN = 80  # characters of a user's input a message echoes


def shown(value, limit: int = SHOWN) -> str:
    """``value`` as a message quotes it (its repr), at most ``limit`` characters, cut with an ellipsis: a message
    names the bad input without echoing 10,000 characters of it back."""
    return clip(repr(value if isinstance(value, str) else str(value)), limit)


def shorten(value, limit: int = SHOWN) -> str:
    """``repr(value)`` cut to ``limit`` characters: ids and reasons from outside never flood a message."""
    return clip(repr(value), limit)


def clip(text, limit: int = SHOWN) -> str:
    """``str(text)`` cut to ``limit`` characters, an ellipsis last."""
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def one_line(err, limit: int | None = None) -> str:
    """An exception's text (or any text) on one line, whitespace runs as one space, cut at ``limit`` characters: how a
    library's multi-line message (huggingface_hub's, transformers') fits the one line a user is told."""
    return " ".join(str(err).split())[:limit]


class EvaluationError(ValueError):
    """Bad input or unusable model output; the message names the subset, row, item id or model at fault."""


def tell(text, file=None) -> None:
    """``text`` as one message on stderr: its whitespace runs one space (``one_line``), wrapped to the terminal's width
    with its continuation indented (``lookbench.terminal.say``), so a 300-character error neither runs past the
    edge nor reads as several."""
    from lookbench.terminal import say

    say(one_line(text), file=file or sys.stderr)


def report_errors(prog: str, run: Callable[[], object]) -> int:
    """Run a command so that a failure reaches the user as one message naming its cause (``tell``), not as a
    traceback; the exit code is the command's own when it returns one. Shared by `lookbench` and the model scripts."""
    try:
        result = run()
        return result if isinstance(result, int) else 0
    except KeyboardInterrupt:
        tell(f"{prog}: interrupted")
        return 130
    except BrokenPipeError:  # `lookbench leaderboard | head`: the reader has gone; end quietly, as SIGPIPE would
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return 141
    except (ValueError, OSError) as err:  # bad input: the message names the file, row, id or model at fault
        tell(f"{prog}: error: {err}")
        return 2
    except Exception as err:  # a failure inside torch/transformers/faiss: still one line (LOOKBENCH_DEBUG=1 for the traceback)
        if os.environ.get("LOOKBENCH_DEBUG") == "1":
            raise
        tell(f"{prog}: error: {type(err).__name__}: {err}")
        return 2
