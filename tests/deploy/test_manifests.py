"""What can be checked here of ``deploy/`` (no container runtime, no Kubernetes cluster):
every manifest parses and matches the Kubernetes API schemas (strict: no unknown field),
the probes and the autoscaler name what the server serves, and the image copies every
package the project installs."""

import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from stream.metrics import SESSIONS

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
KUBERNETES = "1.33.0"
"""The API version validated against (the oldest the manifests are meant for)."""


def documents() -> list[dict]:
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


def by_kind(kind: str) -> list[dict]:
    return [doc for doc in documents() if doc["kind"] == kind]


@pytest.mark.parametrize(
    "document", documents(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}"
)
def test_every_manifest_matches_the_kubernetes_schema(document):
    kubernetes_validate.validate(document, KUBERNETES, strict=True)


def test_the_probes_ask_the_servers_own_endpoints():
    (deployment,) = [d for d in by_kind("Deployment") if d["metadata"]["name"] == "fuscan"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert any(arg.startswith("--redis=redis://redis:") for arg in container["args"])
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > 5


def test_the_autoscaler_scales_on_the_sessions_gauge_the_server_exports():
    (hpa,) = by_kind("HorizontalPodAutoscaler")
    (metric,) = hpa["spec"]["metrics"]
    assert metric["pods"]["metric"]["name"] == SESSIONS._name


def test_the_image_copies_every_package_the_project_installs():
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    ignore = (ROOT / "deploy" / "Dockerfile.dockerignore").read_text().split()
    for package in packages["packages"]:
        assert f"COPY {package} {package}" in dockerfile
        assert f"!{package}" in ignore
