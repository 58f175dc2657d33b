"""Saved runs: the export written after a run, the one reader of an export file, and playback into the panels."""
