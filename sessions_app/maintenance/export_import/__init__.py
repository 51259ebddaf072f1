"""Export a session as one JSON document, and import such a document into a database
that does not hold the session yet.

The export is lossless: the session, every plan in every state with every field and every
revision of its text, every event, and the text of each open plan's file as the agent left
it. The import checks the
whole document before it writes anything, then restores it in one transaction: the same
session name, plan ids, fields and timestamps, the events in their order, and the plan
files of the queued and active plans.

Event ids are not carried over: an id is a position in one database's event feed, and an
imported event given an id below a reader's cursor would never reach that reader. The
events are inserted in their exported order, so they keep their relative order.

The package holds its ideas apart: the document's format and the checks of its pieces
(document.py), the export (export.py), the import (restore.py), reading a document as a
stream within bounds (reader.py), and the import's plan files written aside until its
commit (staging.py).
"""

from sessions_app.maintenance.export_import.document import CLAIM_KEYS, FORMAT, FORMAT_VERSION, READABLE_VERSIONS
from sessions_app.maintenance.export_import.export import export_session, export_stream
from sessions_app.maintenance.export_import.restore import import_file, session_import
from sessions_app.maintenance.export_import.staging import (
    ImportLeftover,
    clear_import_leftover,
    import_leftovers,
    running_imports,
)

__all__ = [
    "CLAIM_KEYS",
    "FORMAT",
    "FORMAT_VERSION",
    "READABLE_VERSIONS",
    "ImportLeftover",
    "clear_import_leftover",
    "export_session",
    "export_stream",
    "import_file",
    "import_leftovers",
    "running_imports",
    "session_import",
]
