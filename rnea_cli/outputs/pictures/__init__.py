"""Pictures of a run: an HTML report, one figure for a slide, drawn by matplotlib (imported only here)."""
