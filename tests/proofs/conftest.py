"""The fixtures the proofs share with the tests of the modules they exercise: a plan being
worked on and a clock the test moves (tests/sessions_app/conftest.py), and the SDK's
in-memory MCP client with a second session (tests/mcp_bridge/conftest.py)."""

from tests.mcp_bridge.conftest import client, other_session  # noqa: F401  (fixtures)
from tests.sessions_app.conftest import active, now, snapshot  # noqa: F401  (fixtures)
