"""The headless Chromium the browser tests of this folder share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser import Browser, find_chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    # One browser a module; every test asking for it is marked to skip without Chromium.
    chromium = find_chromium()
    assert chromium is not None
    instance = Browser(chromium, tmp_path_factory.mktemp("profile"))
    yield instance
    instance.close()
