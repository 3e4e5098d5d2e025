"""Shared test helpers: the URDF corpus in ../shared/urdf (beside the clone)."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROBOTS = ROOT / "robots"
CORPUS = ROOT.parent / "shared" / "urdf"
CORPUS_FILES = sorted(CORPUS.glob("*.urdf")) if CORPUS.is_dir() else []


def corpus_params(names=None):
    """One pytest param per shared URDF (or per name in names); one 'corpus-missing' param without it."""
    files = [p for p in CORPUS_FILES if names is None or p.stem in names]
    if CORPUS_FILES and names is not None:
        missing = set(names) - {p.stem for p in files}
        assert not missing, f"robots {sorted(missing)} are not in the corpus at {CORPUS}"
    if files:
        return [pytest.param(p, id=p.stem) for p in files]
    return [pytest.param(None, id="corpus-missing")]


def need_corpus(path):
    """The path, or a skip (a failure under CI=true) when the corpus is not beside the clone."""
    if path is None:
        message = f"URDF corpus not found at {CORPUS}"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: it must be there)")
        pytest.skip(message)
    return path
