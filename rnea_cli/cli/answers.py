"""`rnea payload`, `rnea scale` and `rnea compare`: answers along a whole trajectory."""
