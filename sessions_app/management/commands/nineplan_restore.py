"""`nineplan_restore`: the former name of `restore`, kept so that scripts written for it still work."""

import importlib

Command = importlib.import_module("sessions_app.management.commands.restore").Command
