"""The application layer: ``Agi``, the composition root and public Python API every front
door goes through (``agi.py``), and the parts it holds: ``Sessions`` (``sessions.py``),
``Catalogue`` (``catalogue.py``), ``RunRecords`` (``run_records.py``); the heartbeat's prompt
(``heartbeat.py``)."""

from agi_jupyter.app.agi import Agi
from agi_jupyter.app.sessions import RunInput
from agi_jupyter.runtime.result import RunResult

__all__ = ["Agi", "RunInput", "RunResult"]
