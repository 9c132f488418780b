"""Helpers for comparing run reports across runs that must agree."""

from __future__ import annotations

from typing import Any


def normalised(document: Any) -> Any:
    """A run report without what legitimately differs between two runs: durations, times,
    the loopback server's port (each run starts its own), whether the model answered live,
    recording or from cassettes, and the waits of retries and rate limits (a replay waits
    for nothing). A receipt capped in the report is compared by its digest."""
    if isinstance(document, dict):
        if {"digest", "truncated", "head"} <= document.keys():
            # A receipt capped in the report: its size, hash and head cover the receipt's
            # observations, which hold each call's duration; its digest covers the rest.
            return {"digest": document["digest"]}
        if isinstance(document.get("model_run"), dict):
            document = {**document, "model_run": {**document["model_run"], "mode": None}}
        return {
            key: None
            if "duration" in key
            or key in {"created", "started", "finished", "wall_s", "base_url_host", "waits"}
            else normalised(value)
            for key, value in document.items()
        }
    if isinstance(document, list):
        return [normalised(value) for value in document]
    return document
