"""Where fusion IR text comes from: the text itself, or the file a path names.

Kept apart from the builder so that `mmcomp.compile` of IR text can find the text's kernel
in the compile cache without importing xDSL or numpy.
"""

from __future__ import annotations

import os

from mmcomp.errors import FusionError


def ir_source(text: str | os.PathLike[str], where: str) -> tuple[str, str]:
    """(IR text, its name in diagnostics) of `text`: the file's text where `text` is a path
    (an os.PathLike, or a str of one line that names a file or holds none of IR's `{`, `@`,
    `%`, `=`, `(`)."""
    written = os.fspath(text)
    if not isinstance(written, str):
        raise FusionError(f"{where}: argument 'text': expected a str path, found bytes")
    one_line = bool(written.strip()) and "\n" not in written
    is_path = isinstance(text, os.PathLike) or (
        one_line and (os.path.isfile(written) or not any(c in written for c in "{@%=("))
    )
    if not is_path:
        return written, "<fusion>"
    try:
        with open(written, encoding="utf-8") as file:
            return file.read(), written
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise FusionError(
            f"{where}: cannot read the file {written!r}: {reason} (a str of one line without "
            "'{', '@', '%', '=' or '(' is read as a path; IR text holds a func.func)"
        ) from None
