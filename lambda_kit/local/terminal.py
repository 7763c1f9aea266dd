"""Text from logs, events and files, made safe to print on a terminal.

A log field, an event or a file can hold control characters: ESC sequences retitle the terminal,
move the cursor or clear the screen; CR and LF start a new row and forge one (a timeline line that
no function wrote). ``printable(value)`` writes each of them as a visible escape (``\\x1b``,
``\\n``, ``\\u202e``): the C0 controls, DEL, the C1 controls, the line and paragraph separators and
the bidirectional overrides. Every other character, ordinary Unicode included, is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))
_LAYOUT = (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))  # separators, bidi controls
_ESCAPES = {
    **{code: f"\\x{code:02x}" for code in _CONTROLS},
    **{code: f"\\u{code:04x}" for code in _LAYOUT},
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}


def printable(value: Any) -> str:
    """``str(value)`` with every control character written as a visible escape."""
    return str(value).translate(_ESCAPES)


def shown_path(path: Path) -> str:
    """``path`` as a message shows it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
