"""A pytester project whose demo-tools suite the built-in chat agent answers.

Shared by the model-run and transcript tests: the suite, the ini file of a
scripted loopback model, and the arguments every such run takes.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tests.demo_world import write_demo_suite

CHAT_RUN_ARGS = (
    "--agentbench-adapter=pytest_agentbench.agents.chat:ChatAgent",
    "--agentbench-timeout=20",
    "-m",
    "not agentbench_control",
    "-p",
    "no:randomly",
)


def write_chat_project(
    demo: pytest.Pytester, questions: Mapping[str, str], *extra_ini: str
) -> pytest.Pytester:
    """``chat-suite`` (each answer 3) and an ini naming the scripted model, plus ``extra_ini``."""
    write_demo_suite(
        demo.path,
        "chat-suite",
        questions=dict(questions),
        answers=dict.fromkeys(questions, 3),
        world="demo-tools",
    )
    demo.makeini(
        "[pytest]\n"
        "agentbench_llm_model = scripted-model\n"
        "agentbench_llm_timeout = 5\n"
        "agentbench_llm_max_turns = 4\n"
        "agentbench_llm_retry_backoff = 0\n"
        "agentbench_cassettes = cassettes\n" + "".join(f"{line}\n" for line in extra_ini)
    )
    return demo
