"""The domain registry: adding a domain is a folder here plus one line below.

Each entry names the ``module:attribute`` of a :class:`Domain`; the
conformance tests run against every registered domain.
"""

from __future__ import annotations

from importlib import import_module

from pytest_agentbench.worlds.toolgrammar.domain import Domain

REGISTRY: dict[str, str] = {
    "ops": "pytest_agentbench.worlds.toolgrammar.domains.ops:DOMAIN",
    "clinic": "pytest_agentbench.worlds.toolgrammar.domains.clinic:DOMAIN",
    "doc": "pytest_agentbench.worlds.toolgrammar.domains.doc:DOMAIN",
}

_LOADED: dict[str, Domain] = {}


class UnknownDomain(KeyError):
    pass


def register(name: str, target: str) -> None:
    """Add a domain at run time (a third party's, or a test's)."""
    REGISTRY[name] = target
    _LOADED.pop(name, None)


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)
    _LOADED.pop(name, None)


def domain_names() -> list[str]:
    return list(REGISTRY)


def get_domain(name: str) -> Domain:
    if name not in _LOADED:
        if name not in REGISTRY:
            raise UnknownDomain(name)
        module, _, attribute = REGISTRY[name].partition(":")
        domain = getattr(import_module(module), attribute)
        if not isinstance(domain, Domain) or domain.name != name:
            raise TypeError(f"{REGISTRY[name]} is not the domain {name!r}")
        _LOADED[name] = domain
    return _LOADED[name]
