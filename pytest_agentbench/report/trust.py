"""The run's trust block: how far the adapter was kept from the oracle, and by what.

In-process the adapter shares the harness's interpreter and is trusted;
isolated it runs in a process of its own; sandboxed the kernel keeps each
promise it can (Landlock on Linux, see :mod:`pytest_agentbench.isolation.sandbox`).
Every report says which promises held.
"""

from __future__ import annotations

from typing import Literal

import pytest

from pytest_agentbench.sdk.contracts import BUILT_ON_FIRST_USE, Record


class TrustPromise(Record):
    model_config = BUILT_ON_FIRST_USE

    name: str
    """``filesystem``, ``network``, ``ptrace``, ``signals``, ``abstract_sockets``,
    ``no_new_privs``, ``limits`` or ``environment``."""
    held: bool
    reason: str | None = None
    """Why it did not hold (the sandbox off, an older kernel); ``None`` when it held."""


class Trust(Record):
    model_config = BUILT_ON_FIRST_USE

    isolation: Literal["in_process", "isolated"]
    sandbox: Literal["auto", "strict", "off"] | None = None
    """The sandbox mode of an isolated run; ``None`` in-process."""
    landlock_abi: int | None = None
    """The kernel's Landlock ABI (0: none), when the sandbox was asked for."""
    promises: tuple[TrustPromise, ...] = ()


TRUST_KEY = pytest.StashKey[Trust]()


def run_trust(config: pytest.Config, isolated: bool) -> Trust:
    """The trust block of this run (the kernel is probed only for a sandboxed run)."""
    if not isolated:
        return Trust(isolation="in_process")
    # Imported only for an isolated run, which imports them anyway.
    from pytest_agentbench.isolation.sandbox import PROMISES
    from pytest_agentbench.isolation.sandbox_plan import KernelOffer
    from pytest_agentbench.isolation.setup import sandbox_mode

    mode = sandbox_mode(config)
    if mode == "off":
        return Trust(
            isolation="isolated",
            sandbox="off",
            promises=tuple(
                TrustPromise(name=name, held=False, reason="the sandbox is off")
                for name in PROMISES
            ),
        )
    offer = KernelOffer.probe()
    return Trust(
        isolation="isolated",
        sandbox=mode,
        landlock_abi=offer.abi,
        promises=tuple(
            TrustPromise(name=name, held=why is None, reason=why)
            for name, why in offer.standing.items()
        ),
    )


def trust_line(trust: Trust) -> str:
    """One line for the terminal and the HTML page."""
    if trust.isolation == "in_process":
        return "trust: in-process (the adapter shares the harness's process; no sandbox)"
    if trust.sandbox == "off":
        return "trust: isolated process, sandbox off (no kernel promise)"
    held = [promise.name for promise in trust.promises if promise.held]
    unkept = [promise.name for promise in trust.promises if not promise.held]
    text = (
        f"trust: isolated process, sandbox {trust.sandbox} (Landlock ABI {trust.landlock_abi}); "
        f"held: {', '.join(held) or 'none'}"
    )
    return f"{text}; not held: {', '.join(unkept)}" if unkept else text
