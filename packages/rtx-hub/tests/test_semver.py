"""Semantic version precedence, against the order given in semver.org's specification (item 11)."""
import random

from hypothesis import given
from hypothesis import strategies as st

from rtx.hub import semver_key
from rtx.hub.semver import check_version

SPEC_ORDER = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
              "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "1.9.0", "1.10.0", "1.11.0", "2.0.0", "2.1.0", "2.1.1"]


def test_spec_precedence_examples():
    shuffled = SPEC_ORDER[:]
    random.Random(0).shuffle(shuffled)
    assert sorted(shuffled, key=semver_key) == SPEC_ORDER


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 1000)), min_size=1))
def test_releases_sort_like_integer_triples(triples):
    versions = [f"{a}.{b}.{c}" for a, b, c in triples]
    assert [check_version(v) for v in versions] == versions
    assert sorted(versions, key=semver_key) == [f"{a}.{b}.{c}" for a, b, c in sorted(triples)]
