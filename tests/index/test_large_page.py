"""A large project page costs memory per file, not per tag set (bench/hostile.py ``page``)."""

from __future__ import annotations

import json

from govern.index.simple import parse_json


def test_wheels_of_one_kind_share_one_tag_set() -> None:
    files = [
        {"filename": f"big-1.{n}-cp312-cp312-manylinux_2_28_x86_64.whl", "url": f"f/{n}"}
        for n in range(3)
    ]
    files.append({"filename": "big-2.0-py3-none-any.whl", "url": "f/any"})
    body = json.dumps({"meta": {"api-version": "1.1"}, "name": "big", "files": files})
    page = parse_json(body.encode(), name="big", base_url="http://127.0.0.1:1/simple/big/")
    first, second, third, other = page.files
    assert first.tags is second.tags is third.tags  # one frozenset, not one per file
    assert first.tags == {t for t in first.tags if t.platform == "manylinux_2_28_x86_64"}
    assert other.tags is not first.tags
    assert {t.interpreter for t in other.tags} == {"py3"}
