"""Semantic versions (semver.org 2.0.0): validation and precedence order."""
from __future__ import annotations

import re

from rtx.hub.errors import RegistryError

# The official regular expression from semver.org, without the named groups' verbosity.
# [0-9] rather than \d (which also matches Unicode digits such as '١'), and \Z rather than $ (which
# also matches before a trailing newline: "1.0.0\n" would become a directory name).
_SEMVER = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?\Z")


def check_version(version: object) -> str:
    """Return `version` if it is a semantic version string, else raise RegistryError saying why."""
    if not isinstance(version, str):
        raise RegistryError(f"version must be a semantic version string like '1.2.0', got {version!r} "
                            f"({type(version).__name__})")
    if not _SEMVER.match(version):
        hint = ""
        if version[:1] in "vV" and _SEMVER.match(version[1:]):
            hint = f"; drop the leading 'v': {version[1:]!r}"
        elif re.fullmatch(r"[0-9]+(\.[0-9]+)?", version):
            parts = version.split(".")
            hint = f"; all three parts are required: {'.'.join(parts + ['0'] * (3 - len(parts)))!r}"
        raise RegistryError(f"invalid version {version!r}: expected a semantic version MAJOR.MINOR.PATCH "
                            f"(e.g. '1.2.0', '2.0.0-rc.1', '1.0.0+build.5'){hint}")
    return version


def sort_key(version: str) -> tuple:
    """Precedence order: 1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-beta < 1.0.0 < 1.0.1 < 1.1.0.
    Build metadata (+...) has no precedence; the whole string breaks ties so the order is total."""
    m = _SEMVER.match(version)
    if m is None:
        raise RegistryError(f"invalid version {version!r}")
    major, minor, patch, pre, _build = m.groups()
    if pre is None:
        pre_key: tuple = (1,)  # a release sorts after all its pre-releases
    else:
        # numeric identifiers sort numerically and before alphanumeric ones
        pre_key = (0, *((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))
    return (int(major), int(minor), int(patch), pre_key, version)


def same_precedence(a: str, b: str) -> bool:
    """True when a and b differ at most in build metadata (1.0.0+a vs 1.0.0+b)."""
    return sort_key(a)[:4] == sort_key(b)[:4]
