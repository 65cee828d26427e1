"""eventlake.orchestration.ingest: the ingest DAG's params and its spark-submit plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventlake.core.settings import Settings
from eventlake.ledger.checkpoint import claim_checkpoint, hold_checkpoint
from eventlake.orchestration import OrchestrationError
from eventlake.orchestration.ingest import (
    IngestParams,
    ingest_application_args,
    ingest_params,
    plan_ingest,
    plan_reconcile,
    plan_topics,
)
from eventlake.spark.conf import LANDING_YOUNG_GENERATION


def test_incremental_run_reads_available_now() -> None:
    assert IngestParams(("a",)).application_args("a") == [
        "--topic",
        "a",
        "--starting-offsets",
        "earliest",
        "--trigger",
        "available-now",
    ]


def test_ending_offsets_make_a_bounded_run() -> None:
    assert IngestParams(("a",), ending_offsets="latest").application_args("a") == [
        "--topic",
        "a",
        "--starting-offsets",
        "earliest",
        "--ending-offsets",
        "latest",
    ]


def test_per_partition_offsets_are_cut_down_to_each_topics_job() -> None:
    ending = json.dumps({"a": {"0": 5}})
    params = IngestParams(("a", "b"), ending_offsets=ending)
    assert params.application_args("a")[-1] == '{"a": {"0": 5}}'
    assert params.application_args("b")[-1] == "latest"


def test_offsets_of_a_topic_not_in_the_run_are_refused() -> None:
    with pytest.raises(OrchestrationError, match="does not read"):
        IngestParams(("a",), starting_offsets='{"zz": {"0": 1}}')


@pytest.mark.parametrize(
    "params",
    [
        {"topics": []},
        {"topics": ["a", "a"]},
        {"topics": "a"},
        {"topics": ["a"], "starting_offsets": "yesterday"},
        {"topics": ["a"], "ending_offsets": "earliest"},
        {"topics": ["a"], "ending_offsets": '{"a": {"0": "x"}}'},
        {"topics": ["a"], "dry_run": "yes"},
    ],
)
def test_bad_params_are_refused(params: dict[str, object]) -> None:
    with pytest.raises(OrchestrationError):
        IngestParams.from_params(params)


def test_missing_topics_are_refused_with_the_expected_type() -> None:
    with pytest.raises(OrchestrationError, match="topics must be a list of strings, not None"):
        IngestParams.from_params({})


def test_params_form_lists_the_options_with_their_defaults() -> None:
    params = ingest_params(["demo.orders"])

    assert list(params) == [
        "topics",
        "starting_offsets",
        "ending_offsets",
        "full_refresh",
        "dedup",
        "dry_run",
    ]
    assert {name: param.value for name, param in params.items()} == {
        "topics": ["demo.orders"],
        "starting_offsets": "earliest",
        "ending_offsets": None,
        "full_refresh": False,
        "dedup": False,
        "dry_run": False,
    }
    assert params["topics"].schema["minItems"] == 1


def test_a_scheduled_plan_lands_its_topics_in_one_submit_and_a_backfill_one_each(
    settings: Settings,
) -> None:
    (submit,) = plan_ingest({"topics": ["a", "b"]}, settings)
    assert submit["application_args"] == [
        "--topic", "a", "--topic", "b", "--starting-offsets", "earliest",
        "--trigger", "available-now",
    ]  # fmt: skip
    backfill = plan_ingest({"topics": ["a", "b"], "ending_offsets": "latest"}, settings)
    assert [s["application_args"][1] for s in backfill] == ["a", "b"]


def test_a_scheduled_run_cuts_per_partition_starting_offsets_down_to_its_topics() -> None:
    params = IngestParams(("a", "b"), starting_offsets='{"a": {"0": 5}, "b": {"0": 7}}')
    assert params.scheduled_args(("a",))[:4] == [
        "--topic", "a", "--starting-offsets", '{"a": {"0": 5}}',
    ]  # fmt: skip


def test_the_topics_of_a_plan_are_the_params_but_those_a_stream_reads(
    settings: Settings, tmp_path: Path
) -> None:
    own = settings.model_copy(update={"warehouse": tmp_path})
    checkpoint = own.checkpoints / "ingest-topics_b"
    claim_checkpoint(checkpoint, source="topics:b", targets=["events", "rejects"])
    with hold_checkpoint(checkpoint, job="ingest", trigger="processing-time=5 seconds"):
        assert plan_topics({"topics": ["a", "b", "c"]}, own) == ["a", "c"]


def test_a_topic_that_a_running_stream_reads_is_skipped_with_a_message(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = settings.model_copy(update={"warehouse": tmp_path})
    checkpoint = own.checkpoints / "ingest-pattern_clicks"
    claim_checkpoint(checkpoint, source=r"pattern:clicks\..*", targets=["events", "rejects"])

    with hold_checkpoint(checkpoint, job="ingest", trigger="processing-time=5 seconds"):
        plan = plan_ingest({"topics": ["clicks.web", "orders"]}, own)

    assert [submit["application_args"][1] for submit in plan] == ["orders"]
    assert "skipping ingest of topic 'clicks.web': the running stream ingest-pattern_clicks" in (
        capsys.readouterr().out
    )


def test_a_reconcile_of_a_topic_that_a_running_stream_reads_is_skipped_with_a_message(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = settings.model_copy(update={"warehouse": tmp_path, "state_topics": ["c", "d"]})
    checkpoint = own.checkpoints / "ingest-topics_c"
    claim_checkpoint(checkpoint, source="topics:c", targets=["events", "rejects"])

    with hold_checkpoint(checkpoint, job="ingest", trigger="processing-time=5 seconds"):
        plan = plan_reconcile({"topics": ["c", "d"], "full_refresh": True}, own)

    assert [submit["application_args"] for submit in plan] == [["--topic", "d"]]
    assert "skipping reconcile of topic 'c': the running stream ingest-topics_c" in (
        capsys.readouterr().out
    )


def test_a_stopped_stream_does_not_hold_its_topics(settings: Settings, tmp_path: Path) -> None:
    own = settings.model_copy(update={"warehouse": tmp_path})
    checkpoint = own.checkpoints / "ingest-pattern_clicks"
    claim_checkpoint(checkpoint, source=r"pattern:clicks\..*", targets=["events", "rejects"])
    with hold_checkpoint(checkpoint, job="ingest", trigger="processing-time=5 seconds"):
        pass

    plan = plan_ingest({"topics": ["clicks.web"]}, own)

    assert [submit["application_args"][1] for submit in plan] == ["clicks.web"]


def test_state_topics_stream_with_state(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    plan = plan_ingest({"topics": ["customers", "orders"]}, with_state)
    # The plain topics in one submit first, then each state topic in its own.
    assert [("--state" in submit["application_args"]) for submit in plan] == [False, True]
    assert plan[1]["application_args"][:2] == ["--topic", "customers"]


def test_state_topics_reconcile_on_risk_by_default(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    plan = plan_ingest({"topics": ["customers", "orders"]}, with_state)
    assert [("--auto-reconcile" in s["application_args"]) for s in plan] == [False, True]


def test_bounded_run_of_a_state_topic_does_not_pass_state(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    plan = plan_ingest({"topics": ["customers"], "ending_offsets": "latest"}, with_state)
    assert "--state" not in plan[0]["application_args"]


def test_full_refresh_replays_earliest_to_latest_and_rebuilds_state(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    params = {"topics": ["customers", "orders"], "full_refresh": True}

    ingest_args = [submit["application_args"] for submit in plan_ingest(params, with_state)]
    rebuild_args = [submit["application_args"] for submit in plan_reconcile(params, with_state)]

    assert [args[3:] for args in ingest_args] == [["earliest", "--ending-offsets", "latest"]] * 2
    assert rebuild_args == [["--topic", "customers"]]


def test_incremental_run_rebuilds_nothing(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["customers"]})
    assert plan_reconcile({"topics": ["customers"]}, with_state) == []


def test_full_refresh_with_explicit_offsets_is_refused() -> None:
    with pytest.raises(OrchestrationError, match="full_refresh"):
        IngestParams.from_params(
            {"topics": ["a"], "full_refresh": True, "ending_offsets": "latest"}
        )


def test_the_dedup_param_passes_dedup_to_every_topics_job() -> None:
    params = IngestParams.from_params({"topics": ["a", "b"], "dedup": True})

    assert all("--dedup" in args for args in ingest_application_args(params))
    assert "--dedup" not in IngestParams(("a",)).application_args("a")


def test_only_a_plain_landing_gets_the_landings_young_generation(settings: Settings) -> None:
    local = settings.model_copy(
        update={
            "driver_java_options": None,
            "spark_master": "local[2]",
            "driver_memory": "2g",
            "state_topics": ["customers"],
        }
    )
    plan = plan_ingest({"topics": ["customers", "orders"]}, local)
    deduplicated = plan_ingest({"topics": ["orders"], "dedup": True}, local)

    options = [s["conf"]["spark.driver.extraJavaOptions"].split() for s in [*plan, *deduplicated]]
    assert [LANDING_YOUNG_GENERATION in o for o in options] == [True, False, False]


def test_a_dedup_switched_on_by_the_settings_is_no_plain_landing(settings: Settings) -> None:
    # EVENTLAKE_DEDUP turns --dedup on in the job (as in `eventlake ingest`): its driver
    # holds the batch, so it gets no landing's young generation.
    local = settings.model_copy(
        update={
            "driver_java_options": None,
            "spark_master": "local[2]",
            "driver_memory": "2g",
            "dedup": True,
        }
    )
    (submit,) = plan_ingest({"topics": ["orders"]}, local)

    assert LANDING_YOUNG_GENERATION not in submit["conf"]["spark.driver.extraJavaOptions"]
