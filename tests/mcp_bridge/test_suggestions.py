"""Each edge words the next step itself; the core only says what happened."""

from __future__ import annotations

import pytest

from mcp_bridge import responses, suggestions
from sessions_app import errors
from sessions_app.api.errors import _translate


@pytest.mark.parametrize("category", errors.CATEGORIES)
def test_every_category_has_an_agent_suggestion_naming_what_to_do(category):
    assert suggestions.BY_CATEGORY[category].strip()


def test_a_reason_picks_a_more_precise_suggestion_than_its_category():
    full = errors.ValidationFailed("queue: too long", field="queue", reason=errors.QUEUE_FULL)
    plain = errors.ValidationFailed("goal is empty", field="goal")
    assert "9plan_queue_pull" in suggestions.for_error(full)
    assert suggestions.for_error(plain) == suggestions.BY_CATEGORY["VALIDATION_ERROR"]


def test_the_mcp_answer_carries_the_agent_suggestion():
    result = responses.from_exception("brave-amber-otter", errors.NoActivePlan("Session has no active plan."))
    assert result.is_error
    assert result.structured_content["suggestion"] == "Pull the next plan with 9plan_queue_pull first."
    assert result.content[0].text.endswith("Suggested action: Pull the next plan with 9plan_queue_pull first.")


def test_plans_awaiting_review_are_worded_for_each_edge():
    waiting = errors.QueueBlocked("1 plan(s) await review (k3x9q)", reason=errors.AWAITING_REVIEW)
    assert "reviewer" in suggestions.for_error(waiting) and "9plan_queue_pull" in suggestions.for_error(waiting)
    assert suggestions.for_error(waiting) != suggestions.BY_CATEGORY["QUEUE_BLOCKED"]
    _, body, _ = _translate(waiting)
    assert "/review/" in body["suggestion"]
