"""The chart's settings of alerts and of fitting the cycle reach the programs that read them:
the webapp's rendered environment loaded by its real Django settings (a subprocess), the
orchestrator's by load_settings. A renamed variable on either side fails here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from orchestrator.campaign.settings import load_settings
from tests.support.helm_chart import Helm, find

REPO = Path(__file__).resolve().parents[2]


def plain_env(objects: list[dict[str, Any]], kind: str, suffix: str, name: str) -> dict[str, str]:
    """The literal (value:) environment of container `name` in the `kind` object."""
    spec = find(objects, kind, suffix)["spec"]["template"]["spec"]
    (container,) = [c for c in spec["containers"] if c["name"] == name]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def env_from_secrets(objects: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    spec = find(objects, "Deployment", "-webapp")["spec"]["template"]["spec"]
    (container,) = [c for c in spec["containers"] if c["name"] == "webapp"]
    return {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in container["env"]
        if "secretKeyRef" in e.get("valueFrom", {})
    }


def django_settings(env: dict[str, str]) -> dict[str, Any]:
    """The webapp's settings as its real settings module reads `env`."""
    names = [
        "TPCBENCH_ALERT_MEDIAN_FRACTION", "TPCBENCH_ALERT_MEDIAN_DAYS", "TPCBENCH_ALERT_IN_A_ROW",
        "TPCBENCH_ALERT_MIN_HISTORY", "TPCBENCH_ALERT_WEBHOOK_URL", "TPCBENCH_ALERT_MAIL_TO",
        "TPCBENCH_ALERT_MAIL_FROM", "EMAIL_HOST", "EMAIL_PORT", "TPCBENCH_PUBLIC_URL",
    ]  # fmt: skip
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        f"print(json.dumps({{n: getattr(settings, n) for n in {names!r}}}))"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TPCBENCH_", "DJANGO_"))}
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env, "DJANGO_SETTINGS_MODULE": "webapp.tpcbench_web.settings",
             "DJANGO_SECRET_KEY": "chart-test", "DATABASE_URL": "sqlite:///:memory:"},
        cwd=REPO, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_default_alert_rules_reach_the_webapp_and_nobody_is_notified(helm: Helm) -> None:
    objects = helm.template()
    env = plain_env(objects, "Deployment", "-webapp", "webapp")
    read = django_settings(env)
    assert read["TPCBENCH_ALERT_MEDIAN_FRACTION"] == 0.7
    assert read["TPCBENCH_ALERT_MEDIAN_DAYS"] == 20.0
    assert (read["TPCBENCH_ALERT_IN_A_ROW"], read["TPCBENCH_ALERT_MIN_HISTORY"]) == (2, 3)
    assert read["TPCBENCH_ALERT_WEBHOOK_URL"] == "" and read["TPCBENCH_ALERT_MAIL_TO"] == []
    assert read["TPCBENCH_PUBLIC_URL"] == ""
    assert "TPCBENCH_ALERT_WEBHOOK_URL" not in env_from_secrets(objects)


def test_notifications_and_rules_set_in_values_are_what_the_webapp_reads(
    helm: Helm, tmp_path: Path
) -> None:
    values = tmp_path / "alerts.yaml"  # a file: --set cannot give 0.5 as a number
    values.write_text(
        yaml.safe_dump(
            {
                "webapp": {
                    "alerts": {
                        "medianFraction": 0.5,
                        "inARow": 3,
                        "webhookUrl": "https://chat.example.org/hooks/abc",
                        "mailTo": ["noc@example.org", "net@example.org"],
                        "smtpHost": "relay.example.org",
                        "smtpPort": 587,
                    },
                    "ingress": {"enabled": True, "host": "tpc.example.org", "tlsSecret": "tpc-tls"},
                }
            }
        )
    )
    objects = helm.template(str(values))  # an absolute path: not one of ci/
    read = django_settings(plain_env(objects, "Deployment", "-webapp", "webapp"))
    assert read["TPCBENCH_ALERT_MEDIAN_FRACTION"] == 0.5 and read["TPCBENCH_ALERT_IN_A_ROW"] == 3
    assert read["TPCBENCH_ALERT_WEBHOOK_URL"] == "https://chat.example.org/hooks/abc"
    assert read["TPCBENCH_ALERT_MAIL_TO"] == ["noc@example.org", "net@example.org"]
    assert (read["EMAIL_HOST"], read["EMAIL_PORT"]) == ("relay.example.org", 587)
    assert read["TPCBENCH_PUBLIC_URL"] == "https://tpc.example.org"  # the Ingress's address


def test_a_webhook_url_from_a_secret_wins_and_is_never_in_the_manifest(helm: Helm) -> None:
    objects = helm.template(
        **{
            "webapp.alerts.webhookUrl": "https://in-values.example.org/",
            "webapp.alerts.webhookSecret": "chat-hook",
            "webapp.alerts.webhookSecretKey": "hook-url",
        }
    )
    assert env_from_secrets(objects)["TPCBENCH_ALERT_WEBHOOK_URL"] == {
        "name": "chat-hook",
        "key": "hook-url",
    }
    assert "TPCBENCH_ALERT_WEBHOOK_URL" not in plain_env(objects, "Deployment", "-webapp", "webapp")


def test_cycle_fit_and_full_duplex_reach_the_orchestrators_settings(helm: Helm) -> None:
    default = plain_env(helm.template(), "Deployment", "-orchestrator", "orchestrator")
    settings = load_settings({}, env=default)
    assert (settings.cycle_fit, settings.full_duplex) == ("rotate", False)
    chosen = helm.template(**{"campaign.cycleFit": "shorten", "campaign.fullDuplex": "true"})
    settings = load_settings(
        {}, env=plain_env(chosen, "Deployment", "-orchestrator", "orchestrator")
    )
    assert (settings.cycle_fit, settings.full_duplex) == ("shorten", True)
    assert settings.sources["cycle_fit"] == "environment"


def test_the_schema_refuses_a_cycle_fit_and_a_fraction_it_does_not_know(helm: Helm) -> None:
    from tests.support.helm_chart import CHART, KUBE_VERSION

    for key, value in (("campaign.cycleFit", "drop"), ("webapp.alerts.medianFraction", "1.5")):
        result = helm.run(
            "template", "rel", str(CHART), "--kube-version", KUBE_VERSION,
            "--set", f"{key}={value}", check=False,
        )  # fmt: skip
        assert result.returncode != 0 and key.split(".")[-1] in result.stderr, result.stderr
