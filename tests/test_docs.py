"""What the README and docs/ promise about 9plan's behaviour, checked against the code."""

from __future__ import annotations

import re

from mcp_bridge import prompts
from tests.conftest import REPO

DEPLOYMENT = REPO / "docs" / "deployment.md"


def sentences(path) -> list[str]:
    text = " ".join(path.read_text(encoding="utf-8").split())
    return re.split(r"(?<=[.!?:])\s+", text)


def test_the_deployment_guide_credits_only_texts_that_say_to_pass_session_name_on_every_call():
    claims = [s for s in sentences(DEPLOYMENT) if "session_name" in s and "on every call" in s]
    assert claims
    for sentence in claims:
        if "bootstrap" in sentence:
            assert "on every call" in prompts.bootstrap(), sentence
        if "instructions" in sentence:
            assert "on every call" in " ".join(prompts.INSTRUCTIONS.split()), sentence
