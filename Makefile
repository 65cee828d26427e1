# eventlake: `make demo` and `make test` set everything up on a fresh machine.
# Set-up is incremental: the venv and the jars are rebuilt only when pyproject.toml
# or infra/pom.xml change. The demo installs only what it uses (demo-setup: the runtime
# venv, with pip and Maven at once); `make setup` (and so `make test`) adds the rest.

SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
EVENTLAKE := $(VENV)/bin/eventlake
MVN := mvn -q -B -s infra/maven-settings.xml -f infra/pom.xml

.PHONY: help docs setup demo-setup class-archive system-packages venv venv-dev jars test-jvm demo demo-ui demo-s3 test lint test-faults test-cluster trino test-trino cluster-start cluster-stop cluster-status bench bench-5m bench-latency bench-s3 bench-peers kdi-binary clean stop

help:
	@echo "make demo   - set up; broker, sample stream, Airflow runs the DAGs; queries"
	@echo "make demo-ui - the same, and leave the Airflow UI running (127.0.0.1:8080)"
	@echo "make demo-s3 - the demo with its warehouse on the local S3 server"
	@echo "make test   - set up, then run the whole test suite (lint included)"
	@echo "make lint   - ruff, mypy, the packages' layers (import-linter), no import circle, no module over 450 lines"
	@echo "make test-jvm - the JUnit tests of the JVM decoder and encoder (lib/jvm)"
	@echo "make test-cluster - the DAGs end to end on a local cluster (Spark standalone, PostgreSQL, its metastore, Airflow)"
	@echo "make cluster-start / cluster-stop / cluster-status - that local cluster, for you"
	@echo "make trino  - fetch Trino's server once (var/trino-server); eventlake trino start runs it"
	@echo "make test-trino - Trino reads the landed tables by name from the metastore (tests/warehouse/test_trino.py)"
	@echo "make bench  - benchmarks at N=100k and 1M, streaming latency, queries at 5M, --dedup's cost, S3 against local, 20 topics in one run (results/)"
	@echo "make bench-5m - N=1M and 5M; make bench-latency - streaming latency alone"
	@echo "make bench-s3 - the warehouse on the local S3 server against a local folder (KDI=<binary>: and kafka-delta-ingest)"
	@echo "make bench-peers KDI=<binary> - eventlake against kafka-delta-ingest and the plain PySpark job, 1M and 5M"
	@echo "make stop   - stop the local Airflow, broker, metastore, Trino and S3 server"
	@echo "make clean  - remove var/ (warehouse, broker data)"

setup: system-packages demo-setup venv-dev class-archive

# What the demo runs on: the venv without the dev tools, the jars and eventlake's JVM
# code. pip and Maven download at once (two jobs); the Debian packages and the class
# archive are left to `make setup`: the demo uses neither (its three jobs start ~2 s
# later each without the archive, which takes ~40 s to build).
demo-setup:
	@$(MAKE) --no-print-directory -j2 venv jars

# The Spark driver's class archive (JVM class-data sharing): every job starts seconds
# sooner. The command rebuilds it only when Java, pyspark or the jars changed.
class-archive: venv jars
	$(EVENTLAKE) class-archive

# Debian tools the tests use: docker-compose validates docker-compose.yml, kcat is an
# independent Kafka client, chromium takes the Airflow UI screenshot and tesseract-ocr
# reads it back; postgresql is the local cluster's Airflow database (its binaries are
# not on PATH: /usr/lib/postgresql/<version>/bin).
DEBIAN_PACKAGES := docker-compose kcat chromium tesseract-ocr postgresql
system-packages:
	@if ! command -v docker-compose >/dev/null || ! command -v kcat >/dev/null \
	    || ! command -v chromium >/dev/null || ! command -v tesseract >/dev/null \
	    || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  echo "installing Debian packages $(DEBIAN_PACKAGES)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(DEBIAN_PACKAGES) >/dev/null; \
	fi

# The runtime (what the demo and the jobs import), then the dev tools (tests, lint).
venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	@touch $@

venv-dev: $(VENV)/.installed-dev

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PY) -m pip install -q -e ".[dev]"
	@touch $@

# eventlake's own JVM code (lib/jvm: the binding's decoder and encoder, the ledger's Delta commits),
# compiled from source; its JUnit tests run in `make test`.
JVM_MVN := mvn -q -B -s infra/maven-settings.xml -f lib/jvm/pom.xml
DECODER_JAR := infra/jars/spark/eventlake-cloudevents-0.1.0.jar
HADOOP_JAR := infra/jars/spark/eventlake-hadoop-0.1.0.jar
JVM_SOURCES := lib/jvm/pom.xml $(shell find lib/jvm/src/main -name '*.java' 2>/dev/null)

jars: infra/jars/.fetched $(DECODER_JAR) $(HADOOP_JAR)

$(DECODER_JAR): infra/jars/.fetched $(JVM_SOURCES)
	$(JVM_MVN) package -DskipTests
	cp lib/jvm/target/eventlake-cloudevents-0.1.0.jar $@

# The same build's second jar (lib/jvm/pom.xml: io.eventlake.hadoop alone).
$(HADOOP_JAR): $(DECODER_JAR)
	test -f lib/jvm/target/eventlake-cloudevents-0.1.0-hadoop.jar || $(JVM_MVN) package -DskipTests
	cp lib/jvm/target/eventlake-cloudevents-0.1.0-hadoop.jar $@

test-jvm:
	$(JVM_MVN) test
	@grep -h "Tests run" lib/jvm/target/surefire-reports/*.txt

infra/jars/.fetched: infra/pom.xml infra/maven-settings.xml
	rm -rf infra/jars
	$(MVN) -P spark dependency:copy-dependencies -DoutputDirectory=jars/spark
	$(MVN) -P kafka dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=jars/kafka
	$(MVN) -P s3a dependency:copy-dependencies -DoutputDirectory=jars/spark
	$(MVN) -P s3server dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=jars/s3server
	$(MVN) -P metastore dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=jars/metastore
	@touch $@

# The broker, a sample stream, a local Airflow running the DAGs, then queries; ends on
# its own (Airflow stopped). demo-ui leaves the Airflow UI up on 127.0.0.1:8080.
demo: demo-setup
	$(EVENTLAKE) demo --count 500

demo-ui: demo-setup
	$(EVENTLAKE) demo --count 500 --keep-ui

# The demo with its warehouse on the local S3 server (s3proxy, started by the demo).
demo-s3: demo-setup
	$(EVENTLAKE) demo --count 500 --object-store

lint: venv-dev
	$(VENV)/bin/ruff check lib jobs dags tests
	$(VENV)/bin/ruff format --check lib jobs dags tests
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	@# No import circle between any two modules (imports inside functions counted), and
	@# no module over 450 lines: what import-linter's contracts cannot state.
	$(PY) -m pytest -q -p no:cacheprovider tests/test_architecture.py -k "circle or import_each_other or over_450"

# Two pytest-xdist workers: much of the suite waits on a broker, a JVM or a subprocess.
# A module (or the modules sharing the local Airflow) stays on one worker; the longest
# go first. TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
PYTEST_PARALLEL := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

test: setup lint test-jvm
	$(VENV)/bin/pytest $(PYTEST_PARALLEL) -m "not faults and not bench and not cluster and not trino"

# Trino's server (io.trino:trino-server, 821 MB) downloaded once into var/downloads
# (checked against Maven Central's .sha1) and only lib/, bin/ and its Delta Lake plugin
# unpacked into var/trino-server (395 MB): a no-op while that folder is current.
trino: venv
	$(PY) -m eventlake.local.trino_install

# Trino (Java 24+: a Temurin 25 JDK) reads the tables eventlake registered in a metastore,
# by name: not in `make test`, for the download and a third JVM beside Spark and the
# metastore on 2 cores.
test-trino: setup trino
	$(VENV)/bin/pytest -m trino tests/warehouse/test_trino.py

# The DAGs through Airflow's REST API on a local cluster the tests start and stop (its
# own folder and free ports; the master on EVENTLAKE_SPARK_MASTER_PORT, 7077 unless
# set): executors on both workers, tables equal to a local-mode run, a worker killed
# during an ingest. Figures in results/cluster-run.json. 6-8 minutes on 2 cores; not in
# `make test`, which it would push past its 25-minute budget.
test-cluster: setup
	$(VENV)/bin/pytest -m cluster -s tests/cluster

# The same cluster for you, on the ports and folders of the settings (var/cluster).
cluster-start: setup
	$(EVENTLAKE) cluster start

cluster-stop: venv
	$(EVENTLAKE) cluster stop

cluster-status: venv
	$(EVENTLAKE) cluster status

# Benchmarks: not part of `make test` (a 2,000-event smoke run is). Results in results/.
bench: setup
	$(PY) tests/benchmarks/bench.py --sizes 100000 1000000 --repeats 3
	$(PY) tests/benchmarks/latency.py
	$(PY) tests/benchmarks/query_bench.py --records 5000000 --repeats 3
	$(PY) tests/benchmarks/dedup_bench.py --records 1000000 --rounds 3
	$(PY) tests/benchmarks/landing_floor.py --records 1000000 --rounds 3
	$(PY) tests/benchmarks/object_store_bench.py --records 1000000 --rounds 3 $(if $(KDI),--kdi $(KDI))
	$(PY) tests/benchmarks/many_topics_bench.py --records 1000000 --topics 20 --rounds 3
	$(if $(KDI),$(PY) tests/benchmarks/peer_bench.py --kdi $(KDI) --records 1000000 --rounds 3)

# eventlake against kafka-delta-ingest (KDI=<binary>, a release build of its source with
# --features s3) on the structured topic and the plain PySpark job on the mixed one, local
# folder: 1,000,000 records in 3 interleaved rounds, then 5,000,000 in one.
bench-peers: kdi-binary setup
	$(PY) tests/benchmarks/peer_bench.py --kdi $(KDI) --records 1000000 --rounds 3
	$(PY) tests/benchmarks/peer_bench.py --kdi $(KDI) --records 5000000 --rounds 1

# Before set-up (minutes on a new machine): a missing or wrong KDI= is said at once.
kdi-binary:
	@test -n "$(KDI)" || { echo "make bench-peers needs KDI=<kafka-delta-ingest binary>"; exit 2; }
	@test -x "$(KDI)" || { echo "KDI=$(KDI) is not an executable file: build kafka-delta-ingest (docs/benchmarks.md) and give its binary"; exit 2; }

# The warehouse on the local S3 server against a local folder (ingest, ingest --state),
# and with KDI=<kafka-delta-ingest binary built with --features s3> eventlake against
# kafka-delta-ingest on the same server; 1,000,000 records, 3 interleaved rounds.
bench-s3: setup
	$(PY) tests/benchmarks/object_store_bench.py --records 1000000 --rounds 3 $(if $(KDI),--kdi $(KDI))

# A running stream against a producer at 1,000 and 20,000 events/s (and 20,000 with
# --state), 5 minutes each: time until a record is visible in Delta, lag, stop.
bench-latency: setup
	$(PY) tests/benchmarks/latency.py

bench-5m: setup
	$(PY) tests/benchmarks/bench.py --sizes 1000000 5000000 --repeats 3

# docs/settings.md from the settings' descriptions (a test fails when it is stale).
docs: venv
	$(PY) -m eventlake.local.settings_reference > docs/settings.md

test-faults: setup
	$(VENV)/bin/pytest $(PYTEST_PARALLEL) -m faults

stop: venv
	$(EVENTLAKE) airflow stop
	$(EVENTLAKE) broker stop
	$(EVENTLAKE) metastore stop
	$(EVENTLAKE) trino stop
	$(EVENTLAKE) s3-server stop

clean:
	-$(EVENTLAKE) airflow stop
	-$(EVENTLAKE) broker stop
	-$(EVENTLAKE) metastore stop
	-$(EVENTLAKE) trino stop
	-$(EVENTLAKE) s3-server stop
	rm -rf var
