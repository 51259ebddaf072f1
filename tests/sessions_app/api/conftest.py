"""The REST API's fixtures, for every test of the API: a reader and its client, a client of
someone outside the project, an anonymous one, and a session with plans in every state."""

from tests.sessions_app.api_fixtures import anonymous, api, full_session, outsider_api, reader  # noqa: F401  (fixtures)
