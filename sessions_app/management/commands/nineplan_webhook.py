"""`nineplan_webhook`: the former name of `webhook`, kept so that scripts written for it still work."""

import importlib

Command = importlib.import_module("sessions_app.management.commands.webhook").Command
