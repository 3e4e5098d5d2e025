"""The C extension, which pyproject.toml can declare only in an experimental table.

rnea_cli._csvfast is the CSV reader's fast path. It is optional: where it cannot be built (no C
compiler, no 128-bit integers, a big-endian machine) the install goes on, and the reader parses
with polars alone.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("rnea_cli._csvfast", ["rnea_cli/_csvfast.c"], optional=True)])
