"""Thin tornado handlers, one module per resource: parse, call ``Agi``, serialise."""
