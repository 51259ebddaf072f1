"""Bad input at the service layer: every value is rejected with VALIDATION_ERROR (or
*_NOT_FOUND) naming the field, nothing is written, and no file appears anywhere."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.maintenance import invariants
from sessions_app.models import Plan
from sessions_app.reads import queries
from tests.conftest import plan_fields

TRAVERSAL = ["../../etc", "a/b/c", "brave-amber-otter/../x", "..", ".", "/etc", "/tmp/x", "~", "a\\b"]
BAD_SESSION_NAMES = TRAVERSAL + [
    "abc",
    "ABCDE",
    "Brave-Amber-Otter",
    "brave-amber-otter\n",
    " brave-amber-otter",
    "brave_amber_otter",
    "brave-amber-otter-x",
    "brave-amber-otter\x00",
    "brave-amber-ötter",
    "a" * 70 + "-b-c",
    "",
    None,
    5,
    ["brave-amber-otter"],
]
BAD_PLAN_IDS = TRAVERSAL + ["ABCDE", "abc", "abcdef", "abcd/", "abcd\n", "abc-d", "abçde", "", None, 12345, ["abcde"]]


def session_calls(name):
    """Every service and query that takes a session name, called with `name`."""
    return {
        "enqueue": lambda: services.plan_enqueue(session_name=name, **plan_fields()),
        "enqueue_many": lambda: services.plan_enqueue_many(session_name=name, plans=[plan_fields()]),
        "pull": lambda: services.plan_pull(session_name=name),
        "defer": lambda: services.plan_defer(session_name=name, reason="r"),
        "complete": lambda: services.plan_complete(session_name=name, outcome="o"),
        "discard": lambda: services.plan_discard(session_name=name, reason="r"),
        "note": lambda: services.plan_note(session_name=name, text="t"),
        "move": lambda: services.plan_move(session_name=name, plan_id="abcde", position="front", actor="staff"),
        "requeue": lambda: services.plan_requeue(session_name=name, plan_id="abcde", actor="staff"),
        "discard_any": lambda: services.plan_discard_any(session_name=name, plan_id="abcde", reason="r", actor="s"),
        "state": lambda: queries.session_state(name),
        "search": lambda: queries.history_search("x", session_name=name),
        "history_get": lambda: queries.history_get(session_name=name, plan_id="abcde"),
        "validate": lambda: invariants.check_invariants(name),
    }


SESSION_OPS = list(session_calls(None))


def plan_calls(session_name, plan_id):
    return {
        "move": lambda: services.plan_move(session_name=session_name, plan_id=plan_id, position="front", actor="s"),
        "requeue": lambda: services.plan_requeue(session_name=session_name, plan_id=plan_id, actor="s"),
        "discard_any": lambda: services.plan_discard_any(
            session_name=session_name, plan_id=plan_id, reason="r", actor="s"
        ),
        "history_get": lambda: queries.history_get(session_name=session_name, plan_id=plan_id),
    }


@pytest.fixture
def busy(session, make_plan):
    """A session with a queued and an active plan, so a wrongly accepted call would change something."""
    make_plan(session, goal="Active")
    make_plan(session, goal="Queued")
    services.plan_pull(session_name=session.name)
    return session


@pytest.mark.django_db
@pytest.mark.parametrize("op", SESSION_OPS)
def test_a_malformed_session_name_is_rejected_before_any_file_access(busy, rejects, tmp_path, op):
    for name in BAD_SESSION_NAMES + [str(tmp_path / "outside"), str(tmp_path)]:
        if op == "search" and name is None:
            continue  # no session name means "search every session"
        with rejects("VALIDATION_ERROR", field="session_name") as info:
            session_calls(name)[op]()
        assert "three lowercase words" in info.value.message, name
    assert not (tmp_path / "outside").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("op", SESSION_OPS)
def test_a_well_formed_unknown_session_name_gives_session_not_found(busy, rejects, op):
    with rejects("SESSION_NOT_FOUND", match="calm-blue-heron"):
        session_calls("calm-blue-heron")[op]()


@pytest.mark.django_db
@pytest.mark.parametrize("op", ["move", "requeue", "discard_any", "history_get"])
def test_a_malformed_plan_id_is_rejected(busy, rejects, tmp_path, op):
    for plan_id in BAD_PLAN_IDS + [str(tmp_path / "abcde")]:
        with rejects("VALIDATION_ERROR", field="plan_id") as info:
            plan_calls(busy.name, plan_id)[op]()
        assert "5 characters of a-z and 0-9" in info.value.message, plan_id


@pytest.mark.django_db
@pytest.mark.parametrize("op", ["move", "requeue", "discard_any", "history_get"])
def test_a_well_formed_unknown_plan_id_gives_plan_not_found(busy, rejects, op):
    with rejects("PLAN_NOT_FOUND", match="zzzzz"):
        plan_calls(busy.name, "zzzzz")[op]()


BAD_POSITIONS = ["Front", "BACK", "front ", " back", "", "top", "end", 1, 0, True, ["front"]]


def position_calls(session_name, plan_id, position):
    return {
        "enqueue": lambda: services.plan_enqueue(session_name=session_name, position=position, **plan_fields()),
        "enqueue_many": lambda: services.plan_enqueue_many(
            session_name=session_name, plans=[plan_fields()], position=position
        ),
        "defer": lambda: services.plan_defer(session_name=session_name, reason="r", position=position),
        "move": lambda: services.plan_move(session_name=session_name, plan_id=plan_id, position=position, actor="s"),
        "requeue": lambda: services.plan_requeue(
            session_name=session_name, plan_id=plan_id, position=position, actor="s"
        ),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("op", ["enqueue", "enqueue_many", "defer", "move", "requeue"])
def test_position_is_exact_and_case_sensitive(busy, rejects, op):
    active = Plan.objects.get(session=busy, status="active")
    queued = Plan.objects.get(session=busy, status="queued")
    target = active.id if op == "requeue" else queued.id
    for position in BAD_POSITIONS:
        with rejects("VALIDATION_ERROR", field="position") as info:
            position_calls(busy.name, target, position)[op]()
        assert "'front' or 'back'" in info.value.message, position


REQUIRED = ["context", "goal", "approach", "success_criteria"]
OPTIONAL = ["inputs", "outputs"]
BAD_TEXT = {
    "non-string int": (7, "must be a string"),
    "non-string list": (["a"], "must be a string"),
    "non-string dict": ({"a": 1}, "must be a string"),
    "non-string bytes": (b"text", "must be a string"),
    "NUL byte": ("before\x00after", "NUL"),
    "lone surrogate": ("before\ud83dafter", "surrogate"),
}
BLANK_TEXT = ["", " ", "\t\n\r", "\u00a0\u0085\u3000", "\u2028\u2029\u1680\u2000\u200a\u202f\u205f\x0b\x0c"]


@pytest.mark.django_db
@pytest.mark.parametrize("field", REQUIRED + OPTIONAL)
def test_plan_text_that_cannot_be_stored_is_rejected(busy, rejects, field):
    for value, why in BAD_TEXT.values():
        with rejects("VALIDATION_ERROR", field=field, match=why):
            services.plan_enqueue(session_name=busy.name, **plan_fields(**{field: value}))


@pytest.mark.django_db
@pytest.mark.parametrize("field", REQUIRED)
def test_a_required_section_that_is_blank_or_missing_is_rejected(busy, rejects, field):
    for value in BLANK_TEXT + [None]:
        with rejects("VALIDATION_ERROR", field=field) as info:
            services.plan_enqueue(session_name=busy.name, **plan_fields(**{field: value}))
        assert field in info.value.message


@pytest.mark.django_db
@pytest.mark.parametrize("field", OPTIONAL)
def test_an_optional_section_may_be_left_out(busy, field):
    plan = services.plan_enqueue(session_name=busy.name, **plan_fields(**{field: None})).plan
    assert getattr(Plan.objects.get(id=plan.id), field) == ""


@pytest.mark.django_db
@pytest.mark.parametrize("field", REQUIRED + OPTIONAL)
def test_an_oversized_section_is_rejected_with_its_size(busy, settings, rejects, field):
    settings.NINEPLAN_MAX_FIELD_CHARS = 100
    with rejects("VALIDATION_ERROR", field=field, match=f"{field} is 101 characters; at most 100"):
        services.plan_enqueue(session_name=busy.name, **plan_fields(**{field: "x" * 101}))
    plan = services.plan_enqueue(session_name=busy.name, **plan_fields(**{field: "x" * 100})).plan
    assert getattr(Plan.objects.get(id=plan.id), field) == "x" * 100


@pytest.mark.django_db
def test_an_oversized_plan_is_rejected_with_its_size(busy, settings, rejects):
    settings.NINEPLAN_MAX_PLAN_CHARS = 200
    fields = plan_fields(context="c" * 60, goal="g" * 60, approach="a" * 60, success_criteria="s" * 21)
    with rejects("VALIDATION_ERROR", field="plan", match="would be 201 characters; at most 200"):
        services.plan_enqueue(session_name=busy.name, **fields)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "call, field",
    [
        (lambda s: services.plan_defer(session_name=s, reason=["late"]), "reason"),
        (lambda s: services.plan_defer(session_name=s, reason="a\x00b"), "reason"),
        (lambda s: services.plan_complete(session_name=s, outcome=3.5), "outcome"),
        (lambda s: services.plan_complete(session_name=s, outcome="\udfff"), "outcome"),
        (lambda s: services.plan_discard(session_name=s, reason=None), "reason"),
        (lambda s: services.plan_discard(session_name=s, reason="\u3000"), "reason"),
        (lambda s: services.plan_discard_any(session_name=s, plan_id="abcde", reason=" ", actor="s"), "reason"),
    ],
)
def test_bad_reasons_and_outcomes_are_rejected(busy, rejects, call, field):
    with rejects("VALIDATION_ERROR", field=field):
        call(busy.name)


@pytest.mark.django_db
def test_an_oversized_outcome_is_rejected(busy, settings, rejects):
    settings.NINEPLAN_MAX_FIELD_CHARS = 100
    with rejects("VALIDATION_ERROR", field="outcome", match="outcome is 101 characters"):
        services.plan_complete(session_name=busy.name, outcome="o" * 101)


@pytest.mark.django_db
def test_unicode_text_that_is_not_whitespace_is_accepted(busy):
    text = "\u200b zero-width space is not White_Space; nor is 🎉 or ö"
    plan = services.plan_enqueue(session_name=busy.name, **plan_fields(goal="\u200b", context=text)).plan
    stored = Plan.objects.get(id=plan.id)
    assert (stored.goal, stored.context) == ("\u200b", text)
