"""Helpers for checking run reports and comparing them across runs that must agree."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from pytest_agentbench.report.json_report import SCHEMA_PATH


@functools.cache
def _report_validator() -> Any:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def assert_valid_report(document: Any) -> None:
    """What ``jsonschema.validate(document, <the run report schema>)`` checks, with the
    schema read, checked and compiled once per process (``jsonschema.validate`` checks
    the schema itself on every call: about a quarter of a CPU-second each)."""
    error = jsonschema.exceptions.best_match(_report_validator().iter_errors(document))
    if error is not None:
        raise error


def normalised(document: Any) -> Any:
    """A run report without what legitimately differs between two runs: durations, times,
    the loopback server's port (each run starts its own), whether the model answered live,
    recording or from cassettes, and the waits of retries and rate limits (a replay waits
    for nothing). A receipt capped in the report is compared by its digest; a transcripts
    file by its name and digest (its folder is named after the report)."""
    if isinstance(document, dict):
        if {"digest", "truncated", "head"} <= document.keys():
            # A receipt capped in the report: its size, hash and head cover the receipt's
            # observations, which hold each call's duration; its digest covers the rest.
            return {"digest": document["digest"]}
        if document.keys() == {"suite_id", "file", "digest_sha256", "cases"}:
            # A transcripts file lies beside its report, named after it; its bytes must match.
            return {**document, "file": document["file"].rsplit("/", 1)[-1]}
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
