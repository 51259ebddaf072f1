"""Agents on other machines are first-class: servers on several machines need only the
database, plan files are a local copy that never overwrites newer text, an agent gets its
plan back from any transport, and a write retried after its answer was lost (even to a
kill -9 between the commit and the answer) has exactly one effect.

Real processes throughout: `manage.py mcp --transport http` servers with folders of their
own on one PostgreSQL database, the SDK's HTTP client, and a raw stdio server killed with
SIGKILL."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sessions_app.models import Event, Plan, Session, WriteRequest
from tests.conftest import MANAGE, PYTHON
from tests.mcp_bridge.helpers import body_of, in_thread, ok, plan_args, text_of
from tests.mcp_bridge.http_server import http_client, start_server  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

ANSWER_TIMEOUT = 120  # a guard against a wedged process, not a speed limit


def folder_of(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / f"machine-{n}" / "sessions"
    folder.mkdir(parents=True)
    return folder


def append_to_notes(path: Path, line: str) -> None:
    """What an agent on that machine does: adds a line at the end of the file's Notes."""
    text = path.read_text()
    head, notes_heading, rest = text.partition("# Notes\n")
    assert notes_heading, text
    body, sep, tail = rest.partition("\n# ")
    path.write_text(f"{head}{notes_heading}{body.rstrip()}\n\n{line}\n{sep}{tail}")


class Agent:
    """One agent's calls through a client, remembering every note a server acknowledged and
    every answer's text."""

    def __init__(self, client, name: str, worker: str, answers: list[str]):
        self.client, self.name, self.worker, self.answers = client, name, worker, answers

    async def call(self, tool: str, **args):
        result = await self.client.call_tool(tool, {"session_name": self.name, "worker": self.worker, **args})
        self.answers.append(text_of(result))
        return ok(result, self.name)


async def mixed_workload(clients, name: str, folders: list[Path] | None) -> tuple[list[str], list[str]]:
    """Two workers, each plan pulled on one server, noted through both, its file edited on
    the machine whose copy the next call reads, and completed through the other server.
    Returns the acknowledged notes and file edits, and every answer's text."""
    acknowledged: list[str] = []
    answers: list[str] = []
    for round_ in range(3):
        for w, worker in enumerate(("wa", "wb")):
            here, there = clients[w % 2], clients[(w + 1) % 2]
            pulled = await Agent(here, name, worker, answers).call("9plan_queue_pull")
            plan_id = pulled["plan_id"]
            for i, client in enumerate((there, here, there)):
                note = f"note {i} of {plan_id} by {worker} in round {round_}"
                await Agent(client, name, worker, answers).call("9plan_plan_note", text=note)
                acknowledged.append(note)
                if folders is not None and i < 2:
                    # The agent on the machine the next call goes through edits its copy,
                    # which may be stale: the other server wrote a note since.
                    machine = (w + 1) % 2 if i == 1 else w % 2
                    stem = (await in_thread(Plan.objects.get, id=plan_id)).file_stem
                    path = folders[machine] / name / "plans" / f"{stem}.txt"
                    if path.exists():
                        edit = f"file edit {i} of {plan_id} on machine {machine}"
                        append_to_notes(path, edit)
                        acknowledged.append(edit)
            await Agent(there, name, worker, answers).call("9plan_plan_complete", outcome=f"{plan_id} done")
    return acknowledged, answers


async def setup_session(client, plans: int) -> str:
    created = await client.call_tool("9plan_session_create", {"task_description": "two machines"})
    name = created.structured_content["session_name"]
    batch = [plan_args(goal=f"Part {i}") for i in range(plans)]
    ok(await client.call_tool("9plan_queue_add_batch", {"plans": batch, "session_name": name}), name)
    return name


async def assert_valid_on_each(clients, name: str) -> None:
    for client in clients:
        checked = ok(await client.call_tool("9plan_admin_validate", {"session_name": name}), name)
        assert checked["valid"] is True, checked


def notes_of_session(name: str) -> str:
    return "\n".join(Plan.objects.filter(session_id=name).values_list("notes", flat=True))


@pytest.mark.postgres
async def test_two_machines_with_their_own_plan_files_lose_no_note(start_server, tmp_path):
    folders = [folder_of(tmp_path, 0), folder_of(tmp_path, 1)]
    servers = [start_server(NINEPLAN_PLAN_FILES="on", NINEPLAN_SESSIONS_PATH=str(f)) for f in folders]
    async with http_client(servers[0].url) as one, http_client(servers[1].url) as two:
        name = await setup_session(one, 6)
        acknowledged, answers = await mixed_workload([one, two], name, folders)
        await assert_valid_on_each([one, two], name)
    notes = await in_thread(notes_of_session, name)
    missing = [n for n in acknowledged if n not in notes]
    assert missing == [], missing
    assert any("file edit" in n for n in acknowledged)  # the files were really edited
    kept = await in_thread(lambda: list(Event.objects.filter(session_id=name, kind="file_edits_kept")))
    assert kept  # ... and taken in
    statuses = await in_thread(lambda: set(Plan.objects.filter(session_id=name).values_list("status", flat=True)))
    assert statuses == {"completed"}
    for text in answers:
        assert str(tmp_path) not in text and "Edit the file" not in text


@pytest.mark.postgres
async def test_two_machines_with_files_off_write_no_file(start_server, tmp_path):
    folders = [folder_of(tmp_path, 0), folder_of(tmp_path, 1)]
    # No NINEPLAN_PLAN_FILES: `mcp --transport http` keeps no files by default.
    servers = [start_server(NINEPLAN_SESSIONS_PATH=str(f)) for f in folders]
    async with http_client(servers[0].url) as one, http_client(servers[1].url) as two:
        name = await setup_session(one, 6)
        acknowledged, answers = await mixed_workload([one, two], name, None)
        await assert_valid_on_each([one, two], name)
    notes = await in_thread(notes_of_session, name)
    assert [n for n in acknowledged if n not in notes] == []
    assert [p for f in folders for p in f.rglob("*")] == []


async def test_a_remote_agent_that_lost_its_context_gets_its_plan_back(start_server, sessions_dir):
    server = start_server(NINEPLAN_PLAN_FILES="on")
    answers: list[str] = []
    async with http_client(server.url) as client:
        name = await setup_session(client, 2)
        agent = Agent(client, name, "remote-7", answers)
        pulled = await agent.call("9plan_queue_pull")
        assert "plan_path" not in pulled and "9plan_plan_note" in answers[-1]
        for note in ("Found the schema", "Models half written"):
            noted = await agent.call("9plan_plan_note", text=note)
            assert "plan_path" not in noted
    # A new connection: nothing of the old one is remembered.
    async with http_client(server.url) as client:
        resumed = await client.call_tool("9plan_session_resume", {"session_name": name})
        answers.append(text_of(resumed))
        assert "9plan_plan_read" in text_of(resumed).split("\n")[0]
        assert "file_path" not in json.dumps(resumed.structured_content)
        read = await client.call_tool("9plan_plan_read", {"session_name": name, "worker": "remote-7"})
        answers.append(text_of(read))
        data = ok(read, name)
        assert data["plan_id"] == pulled["plan_id"] and data["worker"] == "remote-7"
        assert "Found the schema\n\nModels half written" in body_of(read)
    for text in answers:
        assert str(sessions_dir) not in text and "Edit the file" not in text and "read its file" not in text


# --- a kill -9 between the commit and the answer --------------------------------------------


class MutedStdioServer:
    """A `manage.py mcp` whose stdout the test does not read until it has killed it: once the
    pipe is full, every answer the server computes waits to be written, after its commit."""

    def __init__(self, env: dict[str, str], stderr: Path):
        self._stderr = stderr.open("ab")
        self.proc = subprocess.Popen(
            [PYTHON, MANAGE, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env
        )
        self.next_id = 0

    def send(self, method: str, params: dict | None = None, *, notify: bool = False) -> int | None:
        message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        return message.get("id")

    def initialize(self) -> None:
        self.send(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}},
        )
        assert json.loads(self.proc.stdout.readline())["id"] == 1
        self.send("notifications/initialized", notify=True)

    def kill(self) -> list[dict]:
        """SIGKILL, then every whole answer that had reached the pipe."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=ANSWER_TIMEOUT)
        out = self.proc.stdout.read()
        self._stderr.close()
        return [json.loads(line) for line in out.split(b"\n") if line.strip().endswith(b"}")]


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + ANSWER_TIMEOUT
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def effects(name: str) -> dict:
    return {
        "plans": sorted(Plan.objects.filter(session_id=name).values_list("goal", "status", "notes", "outcome")),
        "events": Event.objects.filter(session_id=name).count(),
    }


async def test_writes_whose_answers_a_kill_9_lost_are_replayed_with_one_effect(subprocess_env, tmp_path, sessions_dir):
    from mcp import Client, StdioServerParameters

    from sessions_app import services
    from tests.conftest import plan_fields

    def prepare() -> str:
        name = services.session_create(task_description="killed mid-answer").name
        for goal in ("Held by h1", "Held by h2", "Held by h3", "Queued A", "Queued B"):
            services.plan_enqueue(session_name=name, **plan_fields(goal=goal))
        for worker in ("h1", "h2", "h3"):
            services.plan_pull(session_name=name, worker=worker)
        return name

    name = await in_thread(prepare)
    calls = [
        ("9plan_queue_add", {**plan_args(goal="Added once"), "session_name": name}),
        (
            "9plan_queue_add_batch",
            {"plans": [plan_args(goal="Batch 1"), plan_args(goal="Batch 2")], "session_name": name},
        ),
        ("9plan_queue_pull", {"session_name": name, "worker": "p"}),
        ("9plan_plan_note", {"session_name": name, "worker": "h1", "text": "noted once"}),
        ("9plan_plan_renew", {"session_name": name, "worker": "h1"}),
        ("9plan_plan_defer", {"session_name": name, "worker": "h2", "reason": "deferred once"}),
        ("9plan_plan_complete", {"session_name": name, "worker": "h3", "outcome": "completed once"}),
        ("9plan_session_create", {"task_description": "created once"}),
        ("9plan_plan_discard", {"session_name": name, "worker": "p2", "reason": "discarded once"}),
    ]
    # p2 holds a plan too, so that the discard has one to act on.
    await in_thread(lambda: services.plan_pull(session_name=name, worker="p2"))
    server = MutedStdioServer(subprocess_env, tmp_path / "stdio.err")
    server.initialize()
    for _ in range(8):  # about 16 KB each: more than the pipe holds
        server.send("tools/list")
    sent = {}
    for i, (tool, args) in enumerate(calls):
        sent[server.send("tools/call", {"name": tool, "arguments": {**args, "request_id": f"kill9-{i}"}})] = i
    await in_thread(wait_for, lambda: WriteRequest.objects.count() == len(calls), "every write to commit")
    committed = await in_thread(effects, name)
    answered = {a.get("id") for a in server.kill()}
    assert not answered & set(sent), "an answer got out before the kill: the pipe was not full"

    params = StdioServerParameters(command=PYTHON, args=[str(MANAGE), "mcp"], env=subprocess_env)
    async with Client(params) as client:
        for i, (tool, args) in enumerate(calls):
            replay = await client.call_tool(tool, {**args, "request_id": f"kill9-{i}"})
            assert not replay.is_error, text_of(replay)
            stored = await in_thread(lambda i=i: WriteRequest.objects.get(request_id=f"kill9-{i}").answer)
            assert replay.structured_content == stored["structuredContent"]
    assert await in_thread(effects, name) == committed  # the replays changed nothing
    final = committed["plans"]
    assert sum(1 for p in final if p[0] == "Added once") == 1
    assert sum(1 for p in final if p[0] in ("Batch 1", "Batch 2")) == 2
    assert sum(p[2].count("noted once") for p in final) == 1
    assert sum(p[2].count("deferred once") for p in final) == 1
    assert [p[1] for p in final if p[3] == "completed once"] == ["completed"]
    assert sum(1 for p in final if p[1] == "discarded") == 1
    created = await in_thread(lambda: Session.objects.filter(task_description="created once").count())
    assert created == 1
