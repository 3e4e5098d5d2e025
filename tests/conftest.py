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


def run(*args, input=None):
    """`rnea ARGS` through Click's runner; stdout and stderr apart; exceptions propagate."""
    from click.testing import CliRunner

    from rnea_cli.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)


def load(source):
    """load_urdf without its URDFWarnings (for robots with impossible inertias)."""
    import warnings

    from rnea_cli import URDFWarning, load_urdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        return load_urdf(source)


def columns(text):
    """{name: (N,) floats} of a CSV text."""
    import csv
    import io

    import numpy as np

    rows = list(csv.reader(io.StringIO(text)))
    data = np.array([[float(x) for x in r] for r in rows[1:]])
    return {name: data[:, k] for k, name in enumerate(rows[0])}
