"""`nineplan_project`: the former name of `project`, kept so that scripts written for it still work."""

import importlib

Command = importlib.import_module("sessions_app.management.commands.project").Command
