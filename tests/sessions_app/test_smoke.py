import pytest

from sessions_app import services
from sessions_app.models import Plan


@pytest.mark.django_db
def test_add_pull_complete(session, make_plan, sessions_dir):
    plan = make_plan(session)
    assert (sessions_dir / session.name / "plans" / f"{plan.id}.txt").exists()
    pulled = services.plan_pull(session_name=session.name)
    assert pulled.id == plan.id
    services.plan_complete(session_name=session.name, outcome="done")
    assert Plan.objects.get(id=plan.id).status == "completed"
