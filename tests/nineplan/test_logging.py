import json
import logging

from nineplan.logging import JsonFormatter


def test_json_lines_bind_extras_and_drop_terminal_colours():
    record = logging.makeLogRecord(
        {
            "msg": "served %s",
            "args": ("x",),
            "levelname": "WARNING",
            "name": "uvicorn.error",
            "session": "brave-amber-otter",
            "color_message": "\x1b[1mserved\x1b[0m %s",
        }
    )
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "served x"
    assert line["level"] == "warn"
    assert line["session"] == "brave-amber-otter"
    assert "color_message" not in line
