"""`nineplan_export`: the former name of `export`, kept so that scripts written for it still work."""

import importlib

Command = importlib.import_module("sessions_app.management.commands.export").Command
