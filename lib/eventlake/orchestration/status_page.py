"""eventlake's status page: the FastAPI app that Airflow's api-server mounts.

The app (:func:`status_app`), mounted at ``/eventlake`` by the Airflow plugin of
:mod:`eventlake.orchestration.airflow_plugin`, serves

* ``/eventlake/``: one server-rendered HTML page (no JavaScript): per topic and
  checkpoint the lag, the last batch, the process holding the checkpoint, a recorded
  compaction risk and the topic's last data-quality verdict; then every partition;
* ``/eventlake/status.json``: the JSON of ``eventlake status --json``.

Both come from :func:`eventlake.status.report.warehouse_status`, the function the command
calls, and the page is rendered from its JSON: the page, the JSON and the command
cannot disagree. ``?topic=T`` (repeatable) is ``--topic T``.

Airflow mounts a plugin's app without authentication (``app.mount`` in
``airflow.api_fastapi.app.init_plugins``); the routes here ask Airflow's auth manager
themselves (:data:`_SIGNED_IN`: a signed-in user allowed to see the UI), and the page
sends a browser that is not signed in to Airflow's login page. Kafka and the warehouse
come from the api-server's settings, Kafka from the ``kafka_default`` connection when it
is defined, as for the DAGs' tasks; no setting and no credential reaches the page.

Example:
    $ curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/eventlake/status.json
    {"checkpoints": [{"name": "ingest-topics_demo.orders", ...}], ..., "quality": {...}}
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Final

from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
from airflow.api_fastapi.core_api.security import requires_access_view
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

#: Seconds Kafka has to answer: a page should not hang on a broker that is down.
KAFKA_TIMEOUT: Final = 5.0
#: A user Airflow's auth manager knows and lets see the UI (raises 401/403 otherwise).
_SIGNED_IN: Final = Depends(requires_access_view(AccessView.WEBSITE))
Topics = Annotated[list[str] | None, Query(alias="topic")]


@dataclass(frozen=True)
class TopicRow:
    """One line of the page: a topic as one checkpoint reads it."""

    topic: str
    checkpoint: str
    job: str
    lag: str
    landed: str
    last_batch: str
    held_by: str
    compaction_risk: str
    quality: str

    def cells(self) -> list[str]:
        """The row's cells, in the page's column order."""
        return [
            self.topic,
            f"{self.checkpoint} ({self.job})",
            self.lag,
            self.landed,
            self.last_batch,
            self.held_by,
            self.compaction_risk,
            self.quality,
        ]


def status_json(topics: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON of ``eventlake status --json`` (``--topic`` for each of ``topics``), with
    the settings an Airflow task would have (``kafka_default`` and ``aws_default`` when
    they are defined).

    Example:
        >>> status_json(["demo.orders"])["kafka_error"] is None
        True
    """
    from eventlake.orchestration.connections import task_settings
    from eventlake.status.report import warehouse_status

    report = warehouse_status(task_settings(), topics=tuple(topics), kafka_timeout=KAFKA_TIMEOUT)
    return report.to_json()


def topic_rows(report: dict[str, Any]) -> list[TopicRow]:
    """The page's summary rows from a status JSON, one per (topic, checkpoint), by topic.

    Example:
        >>> [r.lag for r in topic_rows(status_json())]
        ['4']
    """
    rows = [
        _topic_row(report, checkpoint, topic)
        for checkpoint in report["checkpoints"]
        for topic in sorted({p["topic"] for p in checkpoint["partitions"]})
    ]
    return sorted(rows, key=lambda row: (row.topic, row.checkpoint))


def render_page(report: dict[str, Any], now: datetime | None = None) -> str:
    """The HTML page of a status JSON: a table per topic and checkpoint, one of every
    partition, the problems below. Every value is escaped.

    Example:
        >>> "<table" in render_page(status_json())
        True
    """
    now = now or datetime.now(UTC)
    summary = _table(
        [
            "topic",
            "checkpoint",
            "lag",
            "landed / log end",
            "last batch",
            "held by",
            "compaction risk",
            "last quality check",
        ],
        [r.cells() for r in topic_rows(report)],
        numeric={2},
    )
    partitions = _table(
        ["topic", "partition", "checkpoint", "current offset", "log end offset", "lag"],
        [
            [p["topic"], str(p["partition"]), c["name"], *_offsets(p)]
            for c in report["checkpoints"]
            for p in c["partitions"]
        ],
        numeric={1, 3, 4, 5},
    )
    notes = [f"<p class=problem>{_e(line)}</p>" for line in _problems(report)]
    empty = "" if report["checkpoints"] else "<p>Nothing landed yet.</p>"
    return _PAGE.format(
        now=_e(now.isoformat(timespec="seconds")),
        empty=empty,
        summary=summary,
        partitions=partitions,
        notes="\n".join(notes),
    )


def status_app() -> FastAPI:
    """The FastAPI app Airflow mounts at :data:`URL_PREFIX`.

    Example:
        >>> [route.path for route in status_app().routes][-2:]
        ['/', '/status.json']
    """
    app = FastAPI(title="eventlake status", docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(HTTPException)
    async def _to_login(request: Request, error: HTTPException) -> Response:
        # A browser on the page without Airflow's session goes to Airflow's login and
        # comes back; a script asking for the JSON gets the status code.
        if error.status_code == 401 and request.url.path.endswith("/"):
            return RedirectResponse(_login_url(str(request.url)))
        return JSONResponse({"detail": error.detail}, status_code=error.status_code)

    @app.get("/", response_class=HTMLResponse, dependencies=[_SIGNED_IN])
    def page(topic: Topics = None) -> str:
        return render_page(status_json(topic or ()))

    @app.get("/status.json", dependencies=[_SIGNED_IN])
    def status(topic: Topics = None) -> dict[str, Any]:
        return status_json(topic or ())

    return app


def _login_url(next_url: str) -> str:
    from airflow.api_fastapi.app import get_auth_manager

    return str(get_auth_manager().get_url_login(next_url=next_url))


def _topic_row(report: dict[str, Any], checkpoint: dict[str, Any], topic: str) -> TopicRow:
    parts = [p for p in checkpoint["partitions"] if p["topic"] == topic]
    lags = [p["lag"] for p in parts]
    ends = [p["log_end_offset"] for p in parts]
    risk = report["compaction_risks"].get(topic)
    verdict = report["quality"].get(topic)
    return TopicRow(
        topic=topic,
        checkpoint=checkpoint["name"],
        job=checkpoint["job"],
        lag="?" if None in lags else str(sum(lags)),
        landed=f"{sum(p['current_offset'] or 0 for p in parts)} / "
        + ("?" if None in ends else str(sum(ends))),
        last_batch=_last_batch(checkpoint),
        held_by=_holder(checkpoint),
        compaction_risk="-" if risk is None else f"since {risk.get('found_at', '?')}: reconcile",
        quality="no check yet" if verdict is None else _verdict(verdict),
    )


def _last_batch(checkpoint: dict[str, Any]) -> str:
    if checkpoint.get("without_checkpoint"):
        return "no checkpoint"
    if checkpoint["last_batch"] is None:
        return "none yet"
    return f"#{checkpoint['last_batch']} at {_short_time(checkpoint['last_batch_at'])}"


def _holder(checkpoint: dict[str, Any]) -> str:
    holder = checkpoint["held_by"]
    if holder is None:
        return "not running"
    kind = "stream" if checkpoint["stream"] else "run"
    return f"{kind}: pid {holder.get('pid', '?')} on {holder.get('host', '?')}"


def _verdict(verdict: dict[str, Any]) -> str:
    failed = verdict["failed_errors"] + verdict["failed_warnings"]
    return (
        f"{verdict['verdict'].upper()}: {failed} of {verdict['checks']} failed, "
        f"{_short_time(verdict['run_time'])}"
    )


def _problems(report: dict[str, Any]) -> list[str]:
    from eventlake.status.report import absent_topic_line

    lines = [f"{c['name']}: {c['problem']}" for c in report["checkpoints"] if c["problem"]]
    if report["kafka_error"]:
        lines.append(f"Kafka did not answer ({report['kafka_error']}): log end offsets unknown.")
    lines += [absent_topic_line(topic) for topic in report.get("absent_topics", ())]
    return lines


def _short_time(text: str | None) -> str:
    """``2026-11-25 18:40:02 UTC`` from an ISO time: readable, seconds kept."""
    if text is None:
        return "?"
    moment = datetime.fromisoformat(text).astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _offsets(partition: dict[str, Any]) -> list[str]:
    keys = ("current_offset", "log_end_offset", "lag")
    return [_number(partition[key]) for key in keys]


def _number(value: int | None) -> str:
    return "?" if value is None else str(value)


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _table(header: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    if not rows:
        return ""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "\n".join(
        "<tr>"
        + "".join(
            f"<td class=num>{_e(c)}</td>" if i in numeric else f"<td>{_e(c)}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table>\n<tr>{head}</tr>\n{body}\n</table>"


# Large dark text on white, no shading: readable by a person and by OCR alike.
_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>eventlake status</title>
<style>
body {{ font-family: "DejaVu Sans", Arial, sans-serif; font-size: 18px; color: #111;
       background: #fff; margin: 24px; }}
h1 {{ font-size: 26px; margin: 0 0 4px; }}
h2 {{ font-size: 20px; margin: 24px 0 8px; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #999; padding: 6px 12px; text-align: left; }}
td.num {{ text-align: right; }}
.problem {{ color: #a00; }}
.meta {{ color: #444; }}
</style></head>
<body>
<h1>eventlake status</h1>
<p class=meta>as of {now}; the same report as <code>eventlake status --json</code>
(<a href="status.json">status.json</a>)</p>
{empty}
<h2>Topics</h2>
{summary}
{notes}
<h2>Partitions</h2>
{partitions}
</body></html>
"""
