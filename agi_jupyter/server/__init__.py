"""The jupyter-server extension: REST + streaming API under ``/agi/`` (DESIGN.md section 9).

``extension.AgiExtensionApp`` is the extension app (loaded through
``agi_jupyter._jupyter_server_extension_points``); ``routes.ROUTES`` is the route table that
both registers the handlers (``handlers/``, one module per resource) and generates the OpenAPI
document (``openapi.py``) from the pydantic models (``models.py``).
"""
