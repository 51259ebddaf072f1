"""The history search tests' corpus: completed plans whose ranking is known in advance."""

from __future__ import annotations

import pytest

from tests.sessions_app.search.helpers import FILLER


@pytest.fixture
def corpus(session, complete_plan):
    """Completed plans whose ranking for a few queries is known in advance."""
    plans = {
        # "sqlite" three times in a short plan: the best single-word match.
        "dense": complete_plan(session, goal="Tune sqlite", context="sqlite pragmas", outcome="sqlite is faster"),
        # "sqlite" once, drowned in filler: a weaker match.
        "sparse": complete_plan(session, goal="Write the docs", context=f"mentions sqlite once {FILLER}"),
        # Both "invoice" and "rounding", once each, in a long plan.
        "both": complete_plan(session, goal="Fix invoice rounding", context=FILLER, outcome=FILLER),
        # "invoice" many times in a short plan, but never "rounding".
        "one": complete_plan(session, goal="invoice invoice invoice", context="invoice invoice"),
        "configuration": complete_plan(session, goal="Load the configuration from the environment"),
        "unrelated": complete_plan(session, goal="Paint the fence", outcome="Painted green"),
    }
    return {k: p.id for k, p in plans.items()}
