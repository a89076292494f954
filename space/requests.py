"""A visitor's request to the demo: what it may send, the image files it is handed back, and how a refusal is said.

An image reaches a handler only as a file gradio's upload produced (in its upload cache, regular, size-capped, read
without blocking); a number only as a whole one in its range; anything else is refused with one line, logged once
without a traceback (bad input is expected, and a traceback would print it in full). The images the page shows as
files are written to the one folder the app lets gradio serve. docs/architecture.md §5.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import gradio as gr

from lookbench.errors import shown
from lookbench.files import contained_file, read_regular, replacing
from lookbench.space.retrieval import QueryError

MAX_UPLOAD_BYTES = 25 * 1024 * 1024  # gradio's upload limit, and the most the app reads of one file
# The one answer to a file that gradio's upload did not produce: it says nothing about the server's files.
REFUSED = "The query image was not uploaded through this page: upload it again, or pick a benchmark query"
log = logging.getLogger("lookbench.space")


def read_upload(path) -> bytes:
    """The bytes of a file in gradio's upload cache: a regular file (never a FIFO, device or folder, never opened
    blocking) of at most ``MAX_UPLOAD_BYTES``. Anything else is the one ``REFUSED`` message."""
    from gradio.utils import get_upload_folder

    upload = Path(get_upload_folder())
    if not isinstance(path, str) or not os.path.isabs(path):
        raise QueryError(REFUSED)
    try:
        return read_regular(contained_file(upload, os.path.relpath(path, upload)), MAX_UPLOAD_BYTES)
    except ValueError:
        raise QueryError(REFUSED) from None


def uploaded(value) -> bytes | None:
    """The bytes of an image component's raw value (the search events skip gradio's own image decoding, so a bad
    file reaches our checks and gets our message): only a file gradio's upload produced, i.e. one that comes with
    gradio's upload ``meta`` and lies in its upload cache. ``None``: no image."""
    if value is None or value == "":
        return None
    meta = value.get("meta") if isinstance(value, dict) else None
    if not isinstance(meta, dict) or meta.get("_type") != "gradio.FileData":
        raise QueryError(REFUSED)
    return read_upload(value.get("path"))


def whole(value, name: str, low: int, high: int) -> int:
    """A whole number in [low, high] from a component's value, or a ``QueryError`` saying so."""
    try:
        number = float(value)
        integer = int(number)
    except (TypeError, ValueError, OverflowError):
        raise QueryError(f"{name} must be a whole number from {low} to {high}, got {shown(value)}") from None
    if integer != number or not low <= integer <= high:
        raise QueryError(f"{name} must be a whole number from {low} to {high}, got {shown(value)}")
    return integer


def refused(err) -> str:
    """The message of a refused input, logged as one line: bad input is expected, so it gets no traceback (which
    would also print the input in full, however long)."""
    message = " ".join(str(err).split())
    log.warning("refused: %s", message)
    return message


def error(err) -> gr.Error:
    """A refused input as gradio's error: shown to the caller, logged once by ``refused``, no traceback printed."""
    return gr.Error(refused(err), print_exception=False)


def images_folder() -> Path:
    """The one folder of files the app hands gradio to serve (in gradio's cache folder)."""
    from gradio.utils import get_upload_folder

    return Path(get_upload_folder()) / "lookbench-images"


def image_file(blob: bytes) -> str:
    """A thumbnail's bytes as a file gradio serves: in ``images_folder``, named by its content, written once."""
    path = images_folder() / f"{hashlib.sha256(blob).hexdigest()[:32]}.webp"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(path) as tmp:
            tmp.write_bytes(blob)
    return str(path)
