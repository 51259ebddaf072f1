"""The forms a manager puts work in with: a new session, a plan, several plans at once, a
plan's text edited. They only carry what was typed to the services: the limits, the
checks and the words of every error are the services', as an agent's tools get them;
an error is shown at the field it names (``show_error``)."""

from __future__ import annotations

import json
from typing import cast

from django import forms

from sessions_app import planfiles
from sessions_app.errors import NineplanError, ValidationFailed
from sessions_app.models import LEASE_SECONDS, MAX_ATTEMPTS, SECTION_TITLES, ReviewPolicy

# The seven sections a new plan is given.
NEW_PLAN_SECTIONS = ("context", "goal", "inputs", "outputs", "approach", "success_criteria", "notes")
POSITION_CHOICES = (("back", "Back of the queue (eventual)"), ("front", "Front of the queue (next)"))
# A plan-file text or a list as 9plan_queue_add_batch takes it.
BATCH_HELP = (
    "Either plan-file texts, one after another: each plan under the headings # Context, # Goal, # Inputs, "
    "# Outputs, # Approach, # Success Criteria and # Notes; a heading its plan already has starts the next plan. "
    'Or a JSON list of plans as 9plan_queue_add_batch takes it: [{"context": ..., "goal": ..., '
    '"approach": ..., "success_criteria": ..., "depends_on": [0]}].'
)


def _section(name: str, rows: int = 3) -> forms.CharField:
    # Not required and not stripped here: the service decides, with its own words.
    return forms.CharField(
        label=SECTION_TITLES[name],
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": rows, "cols": 80}),
    )


class SessionForm(forms.Form):
    project = forms.ChoiceField()
    task_description = forms.CharField(
        label="Task", required=False, strip=False, widget=forms.Textarea(attrs={"rows": 3, "cols": 80})
    )
    review = forms.ChoiceField(choices=ReviewPolicy.choices, initial=ReviewPolicy.NONE)
    lease_seconds = forms.IntegerField(
        required=False,
        initial=LEASE_SECONDS,
        help_text="How long a pull's claim lasts without a write by its worker.",
    )
    max_attempts = forms.IntegerField(
        required=False, initial=MAX_ATTEMPTS, help_text="Claims that may run out before the plan waits for a person."
    )

    def __init__(self, *args, projects: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["project"]).choices = [(p, p) for p in projects]


class SectionsForm(forms.Form):
    """A plan's seven sections, in the plan file's order."""

    context = _section("context")
    goal = _section("goal", 2)
    inputs = _section("inputs", 2)
    outputs = _section("outputs", 2)
    approach = _section("approach", 5)
    success_criteria = _section("success_criteria")
    notes = _section("notes", 2)


class PlanForm(SectionsForm):
    position = forms.ChoiceField(choices=POSITION_CHOICES, initial="back")
    depends_on = forms.MultipleChoiceField(
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 6}),
        help_text="Handed out only once every plan chosen here is completed.",
    )
    review = forms.BooleanField(required=False, help_text="Wait for a reviewer's approval once completed.")

    def __init__(self, *args, plans: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.MultipleChoiceField, self.fields["depends_on"]).choices = plans


class BatchForm(forms.Form):
    text = forms.CharField(
        label="Plans", strip=False, widget=forms.Textarea(attrs={"rows": 18, "cols": 100}), help_text=BATCH_HELP
    )
    position = forms.ChoiceField(choices=POSITION_CHOICES, initial="back")
    review = forms.BooleanField(required=False, help_text="Each waits for a reviewer's approval once completed.")


class EditForm(SectionsForm):
    # A plan being edited has usually grown: its approach and notes get more room.
    approach = _section("approach", 6)
    notes = _section("notes", 6)
    version = forms.IntegerField(widget=forms.HiddenInput)


def show_error(form: forms.Form, exc: NineplanError, *, default: str | None = None) -> None:
    """The service's error at the form field it names (``plans[1].goal`` is the field
    ``default`` of a batch), else above the form; in the service's own words."""
    named = exc.field[0] if isinstance(exc.field, list) and exc.field else exc.field
    field = str(named or "").split("[")[0].split(".")[0]
    if default is not None:
        field = default
    form.add_error(field if field in form.fields else None, f"{exc.category}: {exc.message}")


def plans_from_text(text: str) -> list[dict]:
    """The plans a pasted text holds: a JSON list of plan objects, or plan-file texts one
    after another (a heading its plan already has starts the next plan)."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            found = json.loads(stripped)
        except ValueError as exc:
            raise ValidationFailed(
                f"plans: the text starts as a JSON list but is not one ({exc}).", field="plans"
            ) from None
        if not isinstance(found, list):
            raise ValidationFailed("plans must be a list of plans.", field="plans")
        return found
    chunks: list[list[str]] = [[]]
    seen: set[str] = set()
    for line in text.split("\n"):
        name = planfiles.HEADINGS.get(line.rstrip())
        if name is not None:
            if name in seen:
                chunks.append([])
                seen = set()
            seen.add(name)
        chunks[-1].append(line)
    plans = []
    for i, chunk in enumerate(c for c in chunks if "".join(c).strip()):
        parsed = planfiles.parse("\n".join(chunk))
        if parsed.preamble:
            raise ValidationFailed(
                f"plans[{i}]: its text begins above any heading; put it under one of the plan's headings.",
                field=f"plans[{i}]",
            )
        if not parsed.sections:
            raise ValidationFailed(
                "plans: no plan found; each plan's sections go under the headings # Context, # Goal, # Approach and "
                "# Success Criteria.",
                field="plans",
            )
        plans.append({name: parsed.sections.get(name, "") for name in NEW_PLAN_SECTIONS})
    return plans
