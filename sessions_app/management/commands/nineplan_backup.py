"""`nineplan_backup`: the former name of `backup`, kept so that scripts written for it still work."""

import importlib

Command = importlib.import_module("sessions_app.management.commands.backup").Command
