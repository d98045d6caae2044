"""From a finished Responses object (as JSON) to a deep research report."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agi_jupyter.records import JSON

REPORT_KIND = "deep_research_report"
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass
class Report:
    markdown: str
    title: str
    sources: list[JSON] = field(default_factory=list)
    usage: JSON = field(default_factory=dict)

    def artifact_data(
        self, *, model: str, response_id: str, raw: JSON | None = None
    ) -> dict[str, Any]:
        """The artifact's ``data`` (the markdown itself is the artifact's text)."""
        data: dict[str, Any] = {
            "type": REPORT_KIND,
            "format_version": 1,
            "model": model,
            "provider_response_id": response_id,
            "sources": self.sources,
            "usage": self.usage,
        }
        if raw is not None:
            data["raw_response"] = raw
        return data


def build_report(response: JSON, *, fallback_title: str = "Deep research report") -> Report:
    """The report text of the response's messages, its cited sources (deduplicated by URL, in
    order of first citation, with the cited span as snippet) and its usage."""
    texts: list[str] = []
    sources: dict[str, JSON] = {}
    for part in _output_texts(response):
        text = str(part.get("text") or "")
        texts.append(text)
        for annotation in part.get("annotations") or []:
            if isinstance(annotation, dict) and annotation.get("type") == "url_citation":
                _add_source(sources, annotation, text)
    markdown = "\n\n".join(t for t in texts if t)
    heading = _HEADING.search(markdown)
    title = heading.group(1) if heading else fallback_title
    return Report(
        markdown=markdown,
        title=title[:200],
        sources=list(sources.values()),
        usage=_usage(response.get("usage")),
    )


def _output_texts(response: JSON) -> list[JSON]:
    parts: list[JSON] = []
    for item in response.get("output") or []:
        if isinstance(item, dict) and item.get("type") == "message":
            parts += [
                c
                for c in item.get("content") or []
                if isinstance(c, dict) and c.get("type") == "output_text"
            ]
    return parts


def _add_source(sources: dict[str, JSON], annotation: JSON, text: str) -> None:
    url = annotation.get("url")
    if not isinstance(url, str) or not url or url in sources:
        return
    source: JSON = {"url": url}
    if annotation.get("title"):
        source["title"] = str(annotation["title"])
    start, end = annotation.get("start_index"), annotation.get("end_index")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text):
        source["snippet"] = text[start:end]
    sources[url] = source


def _usage(usage: Any) -> JSON:
    if not isinstance(usage, dict):
        return {}
    return {
        "input_tokens": int(usage.get("input_tokens") or 0),
        "output_tokens": int(usage.get("output_tokens") or 0),
        "total_tokens": int(usage.get("total_tokens") or 0),
    }


def failure_message(response: JSON) -> str:
    """Why a response did not complete, for the run's error."""
    error = response.get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    details = response.get("incomplete_details")
    if isinstance(details, dict) and details.get("reason"):
        return f"the response is incomplete ({details['reason']})"
    return f"the response ended {response.get('status')!r}"
