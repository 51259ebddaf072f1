"""The names and ids in a REST path (sessions_app/api/paths.py): a well-formed one passes
unchanged, a malformed one is simply not found."""

from __future__ import annotations

import pytest

from sessions_app.api import paths
from sessions_app.errors import PlanNotFound, SessionNotFound


def test_well_formed_names_and_ids_pass_unchanged():
    assert paths.session_name("calm-blue-heron") == "calm-blue-heron"
    assert paths.plan_id("ab12z") == "ab12z"


@pytest.mark.parametrize("raw", ["../etc", "Calm-Blue-Heron", "calm-blue", ""])
def test_a_malformed_session_name_is_not_found(raw):
    with pytest.raises(SessionNotFound) as refused:
        paths.session_name(raw)
    assert refused.value.category == "SESSION_NOT_FOUND" and "three lowercase words" in refused.value.message


@pytest.mark.parametrize("raw", ["../x", "ABCDE", "abcd", "abcdef"])
def test_a_malformed_plan_id_is_not_found(raw):
    with pytest.raises(PlanNotFound) as refused:
        paths.plan_id(raw)
    assert refused.value.category == "PLAN_NOT_FOUND" and "5 characters of a-z and 0-9" in refused.value.message
