"""Operations: what the alert rules and dashboard query exists on a running ``confer serve``; the
Prometheus files pass promtool; a real Prometheus scrapes Confer; manifests and compose validate
and point only at settings and paths that exist; logs are JSON lines without people's text."""

import asyncio
import io
import json
import logging
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import ClientSession

from bot.logs import configure_logging
from bot.settings import ConferSettings
from retrieval.collections import load_collections
from tests.conftest import ROOT
from tests.integration.conftest import Harness

DEPLOY = ROOT / "deploy"
METRIC = re.compile(r"\bconfer_[a-z0-9_]+")
SETTINGS_VARIABLES = {
    str(field.validation_alias.choices[0])  # type: ignore[union-attr]
    for field in ConferSettings.model_fields.values()
}


def rule_expressions() -> list[str]:
    rules = yaml.safe_load((DEPLOY / "prometheus/alerts.yml").read_text())
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    dashboard = json.loads((DEPLOY / "grafana/dashboards/confer.json").read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def exported_names(metrics_text: str) -> set[str]:
    names = set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            name = line.split()[2]
            names |= {name, f"{name}_total", f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


async def test_every_metric_the_rules_and_dashboard_use_is_exported(harness: Harness) -> None:
    await harness.slack.mention("How long is parental leave?")
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    async with harness.http.get(harness.base + "/metrics") as response:
        exported = exported_names(await response.text())
    used = {name for expr in rule_expressions() + dashboard_expressions() for name in METRIC.findall(expr)}
    assert len(used) >= 14
    assert used - exported == set()


PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (.ci/run installs Debian's prometheus)")
def test_promtool_accepts_the_rules_and_the_config() -> None:
    for args in (["check", "rules", "alerts.yml"], ["check", "config", "prometheus.yml"]):
        result = subprocess.run(
            [str(PROMTOOL), *args], cwd=DEPLOY / "prometheus", capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.skipif(
    PROMETHEUS is None, reason="prometheus not installed (.ci/run installs Debian's prometheus)"
)
async def test_a_real_prometheus_scrapes_confer_and_sees_the_questions(
    harness: Harness, tmp_path: Path
) -> None:
    for question in ("How long is parental leave?", "What is the rate limit for Growth accounts?"):
        await harness.slack.mention(question)
    await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 2)
    port = _free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(DEPLOY / "prometheus/alerts.yml")],
        "scrape_configs": [
            {"job_name": "confer", "static_configs": [{"targets": [f"127.0.0.1:{harness.server.port}"]}]}
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    process = await asyncio.create_subprocess_exec(
        str(PROMETHEUS),
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    query = 'sum(confer_questions_total{surface="mention",outcome="answered"})'
    try:
        value = None
        deadline = time.monotonic() + 60
        async with ClientSession() as http:
            while value is None:
                assert time.monotonic() < deadline, "prometheus never returned the questions"
                try:
                    async with http.get(
                        f"http://127.0.0.1:{port}/api/v1/query", params={"query": query}
                    ) as response:
                        result = (await response.json())["data"]["result"]
                        value = float(result[0]["value"][1]) if result else None
                except (OSError, KeyError, ValueError):
                    value = None
                if value is None:
                    await asyncio.sleep(0.5)
            async with http.get(f"http://127.0.0.1:{port}/api/v1/rules") as response:
                groups = (await response.json())["data"]["groups"]
        assert value == 2.0
        assert {rule["name"] for group in groups for rule in group["rules"]} >= {
            "ConferNotReady",
            "ConferAnswerErrorRate",
        }
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_kubernetes_manifests_validate_and_reference_what_exists(tmp_path: Path) -> None:
    import kubernetes_validate

    documents = {p.name: _documents(p) for p in sorted((DEPLOY / "k8s").glob("*.yaml"))}
    kinds = {doc["kind"] for docs in documents.values() for doc in docs}
    assert kinds >= {
        "Deployment",
        "Service",
        "Job",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "ConfigMap",
    }
    for docs in documents.values():
        for doc in docs:
            kubernetes_validate.validate(doc, "1.30", strict=True)
    [deployment] = documents["deployment.yaml"]
    spec = deployment["spec"]["template"]["spec"]
    [container] = spec["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert set(env) <= SETTINGS_VARIABLES
    assert deployment["spec"]["replicas"] >= 2
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert spec["terminationGracePeriodSeconds"] > float(env["CONFER_SHUTDOWN_GRACE_SECONDS"])
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert "Secret" not in kinds  # `kubectl apply -f deploy/k8s/` must not overwrite the real one
    [secret] = _documents(DEPLOY / "k8s/examples/secret.example.yaml")
    assert set(secret["stringData"]) <= SETTINGS_VARIABLES
    assert container["envFrom"][0]["secretRef"]["name"] == secret["metadata"]["name"]
    [configmap] = documents["configmap.yaml"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["collections"]["configMap"]["name"] == configmap["metadata"]["name"]
    (tmp_path / "collections.yaml").write_text(configmap["data"]["collections.yaml"])
    assert load_collections(tmp_path / "collections.yaml").names == ("engineering", "security")
    assert env["CONFER_COLLECTIONS"] == "/config/collections.yaml"
    [job] = documents["job-index.yaml"]
    [index] = job["spec"]["template"]["spec"]["containers"]
    assert index["args"] == ["index"] and {e["name"] for e in index["env"]} <= SETTINGS_VARIABLES
    [claim] = documents["pvc-docs.yaml"]
    job_volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert job_volumes["docs"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    for example in sorted((DEPLOY / "k8s/examples").glob("*.yaml")):
        for doc in _documents(example):
            kubernetes_validate.validate(doc, "1.30", strict=True)
    [custom] = _documents(DEPLOY / "k8s/examples/hpa-questions-in-flight.yaml")
    [metric] = custom["spec"]["metrics"]
    assert metric["pods"]["metric"]["name"] == "confer_questions_in_flight"


def test_compose_validates_and_references_what_exists() -> None:
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("check-jsonschema")),
            "--builtin-schema",
            "vendor.compose-spec",
            str(DEPLOY / "compose.yaml"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"elasticsearch", "redis", "index", "confer", "prometheus", "grafana"} <= set(services)
    assert services["confer"]["depends_on"]["index"]["condition"] == "service_completed_successfully"
    assert services["index"]["command"] == ["index"]
    for name, service in services.items():
        if "build" in service:
            assert (DEPLOY / service["build"] / "Dockerfile").is_file(), name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name}: {source}"
        if name in ("index", "confer"):
            assert set(service["environment"]) <= SETTINGS_VARIABLES, name
    prometheus = yaml.safe_load((DEPLOY / "prometheus/prometheus.yml").read_text())
    assert prometheus["scrape_configs"][0]["static_configs"][0]["targets"] == ["confer:3000"]
    provisioning = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/confer.yml").read_text())
    assert provisioning["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"


def test_dockerfile_builds_a_small_non_root_image_that_serves() -> None:
    text = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM\s+(\S+)", text, re.MULTILINE)
    assert stages == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    [base] = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.MULTILINE)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base)  # pinned
    build, final = text.split("\nFROM ")[1:]
    assert "compileall" in build and "__pycache__" not in build  # bytecode ships in the image
    assert re.search(r"^USER\s+confer$", final, re.MULTILINE)
    assert "HEALTHCHECK" in final and "/healthz" in final
    assert 'ENTRYPOINT ["confer"]' in final and 'CMD ["serve"]' in final
    assert not re.search(r"apt-get|gcc|build-essential", final)
    for copied in re.findall(r"^COPY (?!--from)(\S+)", text, re.MULTILINE):
        assert (ROOT / copied).exists(), copied
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".git", ".env", "tests"} <= set(ignored)


async def test_logs_are_json_lines_with_ids_and_timings_but_never_the_question(
    harness: Harness, monkeypatch: Any
) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    configure_logging("INFO", "json")
    try:
        await harness.slack.mention("How long is parental leave for Zebulon?")
        await harness.fake.wait_for(lambda: len(harness.fake.answers()) == 1)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    lines = [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]
    finished = [e for e in lines if e["event"] == "question finished"]
    # nothing retrieved is about Zebulon: posted as an answer, logged as not found
    assert finished and finished[0]["outcome"] == "not_found" and finished[0]["surface"] == "mention"
    assert isinstance(finished[0]["seconds"], float) and len(finished[0]["question_id"]) == 12
    branches = [e for e in lines if e["event"] == "branch finished"]
    assert branches and all(
        e["question_id"] == finished[0]["question_id"] and e["collection"] for e in branches
    )
    assert "Zebulon" not in stream.getvalue() and "xoxb-test-token" not in stream.getvalue()
