"""The job commands: ingest, reconcile, maintain, republish, check.

Each builds its request from the options (refused arguments exit 2 with the reason),
runs the job in a Spark session and prints its summary line. The spark-submit entry
points in jobs/ run these same commands.

Example:
    $ eventlake ingest --topic demo.orders
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from eventlake.cli.common import (
    BootstrapOption,
    TriggerOption,
    WarehouseOption,
    app,
    import_in_background,
    job_settings,
    refused,
    run_job,
    topic_option,
)
from eventlake.core.errors import REFUSED_EXIT_CODE

SummaryT = TypeVar("SummaryT")


def _run_unless_idle(
    command: str,
    topics: Sequence[str],
    nothing_new: Callable[[], bool],
    idle_summary: Callable[[float], SummaryT],
    run: Callable[[], SummaryT],
) -> SummaryT:
    """``run()``, unless ``nothing_new()`` (:mod:`eventlake.status.pending`, checked without Spark)
    says the ledger holds every record of ``topics`` up to their ends: then say so and
    return the empty summary of the seconds the check took.

    Example:
        >>> _run_unless_idle("ingest", ["a"], lambda: True, IngestSummary, lambda: ...)
        ingest: nothing new on a
    """
    started = time.monotonic()
    if nothing_new():
        typer.echo(f"{command}: nothing new on {', '.join(topics)}")
        return idle_summary(time.monotonic() - started)
    return run()


@app.command()
def ingest(
    topic: Annotated[list[str] | None, topic_option("Topic to read; repeat for several.")] = None,
    topic_pattern: Annotated[
        str | None, typer.Option(help="Java regex of topics to subscribe to instead.")
    ] = None,
    trigger: TriggerOption = "available-now",
    starting_offsets: Annotated[
        str,
        typer.Option(
            help="'earliest', 'latest' or per-partition JSON "
            '({"topic":{"0":42}}; a partition it does not name: earliest); used for '
            "partitions the tables hold nothing of yet (elsewhere a run starts where the "
            "tables stand)."
        ),
    ] = "earliest",
    ending_offsets: Annotated[
        str | None,
        typer.Option(
            help="'latest' or per-partition JSON: makes a bounded batch run "
            "(backfill/replay) that adds only records not already in the tables. A "
            "partition the JSON does not name, or -1: up to its latest offset; an offset "
            "past a partition's end: up to its end."
        ),
    ] = None,
    checkpoint_name: Annotated[
        str | None, typer.Option(help="Checkpoint folder name under <warehouse>/_checkpoints.")
    ] = None,
    state: Annotated[
        bool, typer.Option("--state", help="Also keep state/<topic> (latest event per key).")
    ] = False,
    auto_reconcile: Annotated[
        bool,
        typer.Option(
            "--auto-reconcile",
            help="Reconcile a state table when tombstones may "
            "have been compacted away unseen (otherwise only warn).",
        ),
    ] = False,
    dedup: Annotated[
        bool,
        typer.Option(
            "--dedup",
            help="Land an event whose (source, id) is already in the events table (within "
            "EVENTLAKE_DEDUP_HORIZON_HOURS, default 168) or earlier in its batch in rejects, "
            "reason duplicate_event. Also on when EVENTLAKE_DEDUP is true.",
        ),
    ] = False,
    outcomes_file: Annotated[
        Path | None,
        typer.Option(
            help="Write each topic's outcome (landed, or refused and why) to this JSON file, "
            "as the ingest DAG's per-topic tasks read it; with it, a run that refused some "
            "of its topics and landed the others exits 0."
        ),
    ] = None,
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Ingest CloudEvents (binary and structured mode) into the events and rejects tables.

    Prints one summary line at the end: records read, events, rejects by reason, batches;
    with several topics, a line per topic before it. A topic Kafka does not have is
    refused, the others land (exit 2 then, unless --outcomes-file).
    """
    from eventlake.ingest import IngestRequest, IngestSummary, run_ingest
    from eventlake.status.pending import nothing_to_land

    settings = job_settings(bootstrap_servers, warehouse)
    with refused():
        request = IngestRequest(
            topics=tuple(topic or ()),
            topic_pattern=topic_pattern,
            trigger=trigger,
            starting_offsets=starting_offsets,
            ending_offsets=ending_offsets,
            checkpoint_name=checkpoint_name,
            state=state,
            auto_reconcile=auto_reconcile,
            dedup=dedup or settings.dedup,
        )
        summary = _run_unless_idle(
            "ingest",
            request.topics,
            partial(nothing_to_land, settings, request),
            lambda seconds: IngestSummary(seconds=seconds),
            partial(
                run_job, settings, "eventlake-ingest", run_ingest, request, work=request.driver_work
            ),
        )
    for line in summary.topic_lines():
        typer.echo(line)
    typer.echo(summary.line())
    if outcomes_file is not None:
        from eventlake.runs.outcomes import write_outcomes

        write_outcomes(outcomes_file, summary.outcomes(tuple(topic or ())))
    elif summary.refused:
        # The others landed; the run as a whole did not do all it was asked.
        topics = ", ".join(sorted(summary.refused))
        typer.echo(f"error: ingest refused {topics}; the other topics landed", err=True)
        raise typer.Exit(REFUSED_EXIT_CODE)


@app.command()
def reconcile(
    topic: Annotated[str, topic_option("Compacted topic whose state table to rebuild.")],
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Make state/<topic> equal to the topic: read it in full, keep the latest record per
    key, upsert what differs and delete keys that no longer exist on the topic.

    Takes the topic's lease: beside a running state stream it waits for the batch in
    progress, and the stream goes on after the offsets read here."""
    from eventlake.state.reconcile import reconcile_state

    settings = job_settings(bootstrap_servers, warehouse)
    with refused():
        report = run_job(
            settings,
            "eventlake-reconcile",
            reconcile_state,
            topic,
            after_stop="what it committed stays; run it again to finish the rebuild",
        )
    typer.echo(report.line())


@app.command()
def maintain(
    retention_hours: Annotated[
        float,
        typer.Option(help="VACUUM retention in hours (default: 168, Delta's safety default)."),
    ] = 168.0,
    allow_below_safety: Annotated[
        bool,
        typer.Option(
            help="Allow a retention below 168 hours (files that running streams or readers "
            "of recent versions need may be deleted)."
        ),
    ] = False,
    topic: Annotated[
        list[str] | None,
        topic_option("State topic to check; repeatable (default: every state table)."),
    ] = None,
    auto_reconcile: Annotated[
        bool,
        typer.Option(help="Rebuild a state table that may have missed tombstones."),
    ] = True,
    dry_run: Annotated[
        bool, typer.Option(help="Change nothing; say what VACUUM would delete.")
    ] = False,
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Upkeep of the warehouse: the compaction check of every state table (reconciling
    those at risk), then Delta OPTIMIZE and VACUUM of every table. One line per step and
    a summary; exit 2 when the arguments are refused, 1 when the compaction check failed
    (the tables are still maintained)."""
    from eventlake.maintenance.request import MaintenanceRequest
    from eventlake.maintenance.run import run_maintenance

    with refused():
        request = MaintenanceRequest(
            retention_hours=retention_hours,
            allow_below_safety=allow_below_safety,
            topics=tuple(topic or ()),
            auto_reconcile=auto_reconcile,
            dry_run=dry_run,
        )
    # The request first: refused arguments exit 2 before the settings are read.
    settings = job_settings(bootstrap_servers, warehouse)
    each_step_printed = partial(run_maintenance, report=typer.echo)
    with refused():
        summary = run_job(
            settings,
            "eventlake-maintenance",
            each_step_printed,
            request,
            after_stop="the steps it finished stay; run it again for the rest",
        )
    if not summary.tables:
        typer.echo(f"maintenance: no Delta tables under {settings.warehouse}")
    typer.echo(summary.line())
    if summary.sweep_failed:
        raise typer.Exit(1)


@app.command()
def republish(
    source: Annotated[str, typer.Option(help="Topic to read.")],
    target: Annotated[str, typer.Option(help="Topic to write; created when missing.")],
    key_mapper: Annotated[
        str,
        typer.Option(
            help="'keep' (the record key as-is, any record), 'partitionkey' (the "
            "partitionkey extension), or 'attribute:<name>' (e.g. attribute:subject)."
        ),
    ] = "keep",
    on_missing: Annotated[
        str,
        typer.Option(
            help="Event without the key attribute: 'keep-key' (its old key), 'null-key', "
            "or 'reject' (to the rejects table)."
        ),
    ] = "keep-key",
    to_mode: Annotated[
        str,
        typer.Option(
            help="'keep' (value and headers byte for byte), 'binary' or 'structured' "
            "(JSON format; converts events exactly, copies those already in the mode)."
        ),
    ] = "keep",
    allow_tombstone_to_structured: Annotated[
        bool,
        typer.Option(
            "--allow-tombstone-to-structured",
            help="Convert binary events without data (tombstones) to structured records, "
            "which are updates, not deletes. Refused (rejected) by default.",
        ),
    ] = False,
    allow_no_data_to_binary: Annotated[
        bool,
        typer.Option(
            "--allow-no-data-to-binary",
            help="Convert structured events without data to binary records without value, "
            "which are tombstones. Refused (rejected) by default.",
        ),
    ] = False,
    insert_header: Annotated[
        list[str] | None,
        typer.Option(help="NAME=VALUE: append a header with a literal value; repeatable."),
    ] = None,
    drop_header: Annotated[
        list[str] | None,
        typer.Option(help="NAME: remove every header of that name; repeatable."),
    ] = None,
    attribute_header: Annotated[
        list[str] | None,
        typer.Option(help="ATTRIBUTE=HEADER: copy an event attribute into a header; repeatable."),
    ] = None,
    header_attribute: Annotated[
        list[str] | None,
        typer.Option(
            help="HEADER=EXTENSION: with --to-mode structured only, copy a header into an "
            "extension attribute the event does not have; repeatable."
        ),
    ] = None,
    trail_header: Annotated[
        str,
        typer.Option(help="Routing-trail header each hop appends to; '' for no trail."),
    ] = "eventlake-trail",
    trigger: TriggerOption = "available-now",
    starting_offsets: Annotated[
        str,
        typer.Option(
            help="'earliest', 'latest' or per-partition JSON; used for partitions nothing "
            "was sent from yet (elsewhere a run starts where the last one stopped)."
        ),
    ] = "earliest",
    ending_offsets: Annotated[
        str | None,
        typer.Option(help="'latest' or per-partition JSON: a bounded batch run, no checkpoint."),
    ] = None,
    partitions: Annotated[
        int | None,
        typer.Option(min=1, help="Partitions of a new target (default: as many as the source)."),
    ] = None,
    cleanup_policy: Annotated[
        str | None,
        typer.Option(help="cleanup.policy of a new target: compact, delete or compact,delete."),
    ] = None,
    checkpoint_name: Annotated[
        str | None,
        typer.Option(
            help="Checkpoint folder under <warehouse>/_checkpoints "
            "(default: republish-<source>-<target>, ending in a digest of the route where "
            "that name could be another route's: a '-' in the source, or over 120 characters)."
        ),
    ] = None,
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Re-key and republish a topic, e.g. keyed by entity into a compacted topic.

    The key mapper never changes the event; header transforms never touch ce_* or content-type.

    Keys land where the Java client's murmur2 partitioner puts them. Delivery: at least once.

    Records that cannot be republished go to the rejects table with a reason.

    Example: eventlake republish --source raw --target orders --key-mapper partitionkey
    --cleanup-policy compact (a new target is created with the policy given; default:
    delete, as Kafka's)
    """
    from eventlake.republish import (
        RepublishRequest,
        RepublishSummary,
        parse_pair,
        run_republish,
    )
    from eventlake.status.pending import nothing_to_send

    settings = job_settings(bootstrap_servers, warehouse)
    with refused():
        request = RepublishRequest(
            source=source,
            target=target,
            key_mapper=key_mapper,
            on_missing=on_missing,
            to_mode=to_mode,
            allow_tombstone_to_structured=allow_tombstone_to_structured,
            allow_no_data_to_binary=allow_no_data_to_binary,
            trigger=trigger,
            starting_offsets=starting_offsets,
            ending_offsets=ending_offsets,
            partitions=partitions,
            cleanup_policy=cleanup_policy,
            insert_headers=tuple(
                parse_pair(p, option="--insert-header") for p in insert_header or ()
            ),
            drop_headers=tuple(drop_header or ()),
            attribute_headers=tuple(
                parse_pair(p, option="--attribute-header") for p in attribute_header or ()
            ),
            header_attributes=tuple(
                parse_pair(p, option="--header-attribute") for p in header_attribute or ()
            ),
            trail_header=trail_header or None,
            checkpoint_name=checkpoint_name,
        )
        summary = _run_unless_idle(
            "republish",
            [source],
            partial(nothing_to_send, settings, request),
            lambda seconds: RepublishSummary(source=source, target=target, seconds=seconds),
            partial(run_job, settings, "eventlake-republish", run_republish, request),
        )
    typer.echo(summary.line())


@app.command()
def check(
    table: Annotated[
        str, typer.Option(help="Table to check (checks exist for events).")
    ] = "events",
    full: Annotated[
        bool,
        typer.Option("--full", help="Check the whole table, not only rows new since last check."),
    ] = False,
    topic: Annotated[str | None, topic_option("Check only this topic.")] = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Run the data-quality checks (Great Expectations on Spark); rules: EVENTLAKE_QUALITY.

    Prints one line per expectation, appends them to <warehouse>/dq_results, rebuilds the
    Data Docs under <warehouse>/dq_docs. Exit code 1 when a check of severity error failed.
    """
    # pyspark first, on this thread: the import below must not race it for pyspark's modules.
    from eventlake.core.driver_work import DriverWork
    from eventlake.quality import (
        CheckRequest,
        load_quality_config,
        require_checkable,
    )
    from eventlake.spark.session import build_spark_session

    settings = job_settings(warehouse=warehouse)
    with refused():
        request = CheckRequest(table=table, full=full, topic=topic)
        # Refused before Spark: rules that do not hold, a missing table, an unlanded topic.
        load_quality_config(settings.quality)
        require_checkable(settings, request)
        # Great Expectations' import (~2.5 s) runs while the Spark session starts.
        import_in_background("eventlake.quality.run")
        spark = build_spark_session(settings, app_name="eventlake-check", work=DriverWork.CHECKING)
        from eventlake.quality import run_checks

        report = run_checks(spark, settings, request)
    typer.echo(report.render())
    if report.exit_code:
        raise typer.Exit(report.exit_code)
