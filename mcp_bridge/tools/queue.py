"""The queue tools: add one plan, add several in order, pull the next one, renew its lease."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from mcp_bridge import responses
from mcp_bridge.tools import answers, runner
from mcp_bridge.tools.arguments import (
    DependsArg,
    PositionArg,
    RequestIdArg,
    ReviewArg,
    SessionArg,
    WholeNumber,
    WorkerArg,
)
from sessions_app import planfiles, services
from sessions_app.models import DEFAULT_WORKER
from sessions_app.reads import excerpts, queries


def queue_add(
    ctx: Context,
    context: Annotated[str, Field(description="Where it fits in the task.")],
    goal: Annotated[str, Field(description="What it achieves, checkably.")],
    approach: Annotated[str, Field(description="Concrete steps.")],
    success_criteria: Annotated[str, Field(description="Observable signs it is done.")],
    inputs: Annotated[
        str | None,
        Field(description="Needs from other plans, in words."),
    ] = None,
    outputs: Annotated[str | None, Field(description="What it produces, for search.")] = None,
    position: PositionArg = None,
    review: ReviewArg = None,
    depends_on: DependsArg = None,
    session_name: SessionArg = None,
    request_id: RequestIdArg = None,
) -> CallToolResult:
    """Queue one self-contained plan: 'front' if it blocks your work, else 'back'.
    Example: {"context": "Billing port", "goal": "Invoice models", "approach": "Write models",
    "success_criteria": "Tests pass"}"""
    call = runner.asked(
        "queue_add",
        context=context,
        goal=goal,
        approach=approach,
        success_criteria=success_criteria,
        inputs=inputs,
        outputs=outputs,
        position=position,
        review=review,
        depends_on=depends_on,
        session_name=session_name,
    )

    def body(name: str) -> CallToolResult:
        spec = {  # the plan as one of a batch (PlanSpec's fields)
            "context": context,
            "goal": goal,
            "approach": approach,
            "success_criteria": success_criteria,
            "inputs": inputs,
            "outputs": outputs,
            "depends_on": depends_on,
        }
        placed = services.plan_enqueue_many(
            session_name=name,
            plans=[spec],
            position=position,
            review=review,
            actor=runner.actor(ctx),
        )[0]
        plan = placed.plan
        data = {
            "plan_id": plan.id,
            **answers.file_path(runner.files_for(ctx), plan),
            "queue_position": placed.place,
        }
        return responses.ok(name, "Plan added.", data)

    return runner.run(ctx, session_name, body, request_id=request_id, call=call)


class PlanSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # The fields of 9plan_queue_add, described there: tools/list is spent from the model's
    # context on every turn, so they are not described twice.
    context: str
    goal: str
    approach: str
    success_criteria: str
    inputs: str | None = None
    outputs: str | None = None
    depends_on: list[str | WholeNumber] | None = Field(default=None, description="Plan ids or indexes in this batch.")


def queue_add_batch(
    ctx: Context,
    plans: Annotated[list[PlanSpec], Field(description="1 to 50, as in 9plan_queue_add.")],
    position: PositionArg = None,
    review: ReviewArg = None,
    session_name: SessionArg = None,
    request_id: RequestIdArg = None,
) -> CallToolResult:
    """Queue plans in order, all or none; depends_on [0, 1] waits for the first two.
    Example: {"plans": [{"context": "..", "goal": "A", "approach": "..", "success_criteria":
    ".."}]}"""
    call = runner.asked("queue_add_batch", plans=plans, position=position, review=review, session_name=session_name)

    def body(name: str) -> CallToolResult:
        created = services.plan_enqueue_many(
            session_name=name,
            plans=[p.model_dump() if isinstance(p, BaseModel) else p for p in plans],
            position=position,
            review=review,
            actor=runner.actor(ctx),
        )
        data = {
            "plans": [{"plan_id": q.plan.id, "queue_position": q.place} for q in created[: answers.BATCH_CAP]],
            "added": len(created),
        }
        if runner.files_for(ctx):
            data["plans_dir"] = str(planfiles.plans_dir(name))
        return responses.ok(name, f"{len(created)} plans added in order.", data)

    return runner.run(ctx, session_name, body, request_id=request_id, call=call)


def queue_pull(
    ctx: Context,
    worker: WorkerArg = None,
    session_name: SessionArg = None,
    request_id: RequestIdArg = None,
) -> CallToolResult:
    """Claim the next ready plan and get its text; then complete, defer or discard it.
    Example: {}"""
    call = runner.asked("queue_pull", worker=worker, session_name=session_name)

    def body(name: str) -> CallToolResult:
        plan = services.plan_pull(session_name=name, worker=worker, actor=runner.actor(ctx))
        pull_result = plan.pull_result
        assert pull_result is not None  # a pull always says what it knew
        local = runner.files_for(ctx)
        data = {
            "plan_id": plan.id,
            **answers.file_path(local, plan),
            "goal": excerpts.one_line(plan.goal, 300),
            "queue_remaining": pull_result.queue_remaining,
        }
        if plan.worker != DEFAULT_WORKER or plan.attempts:
            data.update(
                worker=plan.worker,
                attempt=plan.attempts + 1,
                lease_until=answers.lease_text(plan),
            )
        summary = "Plan pulled; its full text follows. " + (
            "Edit the file's Notes as you work." if local else "Write what you find with 9plan_plan_note as you work."
        )
        if pull_result.has_dependencies:
            answers.add_dependency_outcomes(data, plan)
        if "dependencies" in data:
            summary += " What its dependencies produced is in dependencies (9plan_plan_read gives one whole)."
        late = queries.late_writes(plan.id) if plan.attempts else []
        if late:
            data["late_writes"] = [
                {"worker": w.worker, "op": w.op, "text": excerpts.fit_json(w.text, 300)} for w in late
            ]
            summary += " Text a worker sent after losing this plan is in late_writes."
        if local and pull_result.file_text is not None:
            text, notice = pull_result.file_text, ""  # the file as the pull read or wrote it
        else:
            text, notice = answers.plan_text(local, plan)
        rejected = queries.last_rejection(plan)
        if rejected is not None:
            # Shown first: the reviewer's notes say what the last attempt lacked.
            data["review_notes"] = {
                "by": rejected.actor,
                "at": rejected.created_at.isoformat(timespec="seconds"),
                "notes": excerpts.fit_json(rejected.detail.get("notes", ""), 700),
                "rejections": plan.rejections,
            }
            summary = (
                f"This plan was sent back in review by {rejected.actor}: read review_notes first (they are also at "
                f"the end of its Notes). {summary}"
            )
        summary = answers.with_file_notice(notice, summary, data, local=local)
        return responses.ok(name, summary, data, body=text)

    return runner.run(ctx, session_name, body, request_id=request_id, call=call)


def plan_renew(
    ctx: Context,
    worker: WorkerArg = None,
    session_name: SessionArg = None,
    request_id: RequestIdArg = None,
) -> CallToolResult:
    """Extend your plan's lease without writing (every write extends it too).
    Example: {}"""
    call = runner.asked("plan_renew", worker=worker, session_name=session_name)

    def body(name: str) -> CallToolResult:
        plan = services.plan_renew(session_name=name, worker=worker, actor=runner.actor(ctx))
        return responses.ok(
            name,
            "Lease renewed.",
            {"plan_id": plan.id, "lease_until": answers.lease_text(plan)},
        )

    return runner.run(ctx, session_name, body, request_id=request_id, call=call)
