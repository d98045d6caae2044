"""Inline completion: a short model request where the cursor is, not a run."""
