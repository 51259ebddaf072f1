"""`nineplan_import`: the former name of `import`, kept so that scripts written for it still work."""

import importlib

Command = importlib.import_module("sessions_app.management.commands.import").Command
