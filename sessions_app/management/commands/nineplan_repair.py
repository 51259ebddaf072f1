"""`nineplan_repair`: the former name of `repair`, kept so that scripts written for it still work."""

import importlib

Command = importlib.import_module("sessions_app.management.commands.repair").Command
