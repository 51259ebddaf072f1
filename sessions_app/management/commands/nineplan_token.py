"""`nineplan_token`: the former name of `token`, kept so that scripts written for it still work."""

import importlib

Command = importlib.import_module("sessions_app.management.commands.token").Command
