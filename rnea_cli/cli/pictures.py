"""`rnea report` and `rnea plot`: pictures of a run."""
