"""The JSON codec: orjson when installed (it measurably wins, see ``make bench``), else ujson.

Loaded on first use, not at ``import lambda_kit``: orjson alone costs ~20 ms to import in a
fresh process. ``LAMBDA_KIT_JSON=ujson`` forces the baseline codec.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

loads: Callable[[str | bytes], Any]
dumps: Callable[[Any], str]
name: str


def _load() -> None:
    global loads, dumps, name
    choice = os.environ.get("LAMBDA_KIT_JSON", "").lower()
    if choice != "ujson":
        try:
            import orjson
        except ImportError:
            if choice == "orjson":
                raise
        else:
            _orjson_dumps = orjson.dumps

            def _dumps(obj: Any) -> str:
                return _orjson_dumps(obj).decode()

            loads, dumps, name = orjson.loads, _dumps, "orjson"
            return
    import ujson

    _ujson_dumps = ujson.dumps

    def _dumps_u(obj: Any) -> str:
        text = _ujson_dumps(obj, ensure_ascii=False, reject_bytes=True, allow_nan=False)
        if not text.isascii():
            # ujson copies lone surrogates into its output, which then cannot be written as
            # UTF-8: raise here instead, as orjson does, so callers take their fallback path.
            text.encode("utf-8")
        return text

    loads, dumps, name = ujson.loads, _dumps_u, "ujson"


def __getattr__(attr: str) -> Any:
    if attr in ("loads", "dumps", "name"):
        _load()
        return globals()[attr]
    raise AttributeError(attr)


def reload() -> None:
    """Pick the codec again (after changing ``LAMBDA_KIT_JSON``); used by the benchmark."""
    _load()
