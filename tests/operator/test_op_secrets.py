"""The operator's output never carries a value of a template or of a Kafka Secret, nor a full pod spec.

An app's template may hold credentials as plain env values (bad practice, but it happens), and pods are
built from it; the operator's own Kafka login takes an OAuth client secret from a Secret and sends it to an
identity provider, which refuses it here. The operator runs as a process with debug logging and the
journal on standard output, creates pods, replaces them after a template change, and scales; its whole
output and its journal file are then searched for the planted values and for pod specs."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from op_testkit import SMOOTHSCALE, Kubectl, balanced, operator_process, streamsapp, wait_for
from token_endpoint import TokenEndpoint

from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime

PLANTED = "pl4nted-s3cret-9f2c"
CLIENT_SECRET = "pl4nted-client-s3cret-41d7"
POD_SPEC = re.compile(r"""["']containers["']\s*:|["']volumeMounts["']\s*:""")
"""How a pod spec (or a template's) shows in a dump: keys no log line of the operator needs."""


def _with_secret(app: dict[str, Any], image: str) -> dict[str, Any]:
    container = app["spec"]["template"]["spec"]["containers"][0]
    container["image"] = image
    container["env"] = [{"name": "DB_PASSWORD", "value": PLANTED}]
    return app


def test_debug_output_and_journal_carry_no_secret_and_no_pod_spec(
    cluster: RunningEmulator, kube: Kubectl, fake: MemoryRuntime, tmp_path: Path
) -> None:
    journal, log = tmp_path / "journal.jsonl", tmp_path / "operator.log"
    command = [
        SMOOTHSCALE,
        "operator",
        f"--kubeconfig={cluster.kubeconfig}",
        "--standalone",
        "--verbose",
        "--scrape-interval=0.2",
        "--scrape-timeout=0.5",
        "--debounce=0.05",
        "--metrics-host=127.0.0.1",
        "--metrics-port=0",
        f"--journal-file={journal}",
    ]
    app = _with_secret(
        streamsapp(replicas=2, partitions=4, scaling={"updateStrategy": "RollingRestart"}), "a:1"
    )
    kube.put_secret("orders-oauth", {"clientId": "orders-app", "clientSecret": CLIENT_SECRET})
    with TokenEndpoint("orders-app", "another-secret") as idp, operator_process(command, log) as process:
        app["spec"]["kafka"] = {
            "bootstrapServers": "127.0.0.1:1",  # no broker: the token is refused before any connection
            "securityProtocol": "SASL_PLAINTEXT",
            "saslMechanism": "OAUTHBEARER",
            "secretRef": {"name": "orders-oauth"},
            "oauthbearer": {"tokenEndpointUrl": idp.url},
            "refreshInterval": "1s",
            "timeout": "2s",
        }
        kube.apply(app)
        refused = kube.wait_condition(
            "KafkaUnavailable", "the OAuth client refused", reason="KafkaAuthenticationFailed"
        )
        wait_for(lambda: balanced(kube.publication(), 2, 4), timeout=30, what="balance on 2")
        kube.patch_app(
            "orders", {"spec": {"replicas": 3, "template": _with_secret(app, "a:2")["spec"]["template"]}}
        )
        wait_for(
            lambda: (
                balanced(kube.publication(), 3, 4)
                and {pod.spec.containers[0].image for pod in kube.pods().values()} == {"a:2"}
            ),
            timeout=60,
            what="3 pods of the new template",
        )
        assert any(PLANTED in str(pod.spec.containers[0].env) for pod in kube.pods().values()), (
            "the pods do get the value"
        )
        said = str(kube.app()["status"]) + str(kube.events())
        process.terminate()
        process.wait(timeout=20)

    output = log.read_text() + journal.read_text()
    assert "orders-2" in output, "the output is the operator's, with its actions"
    assert refused["message"].startswith("no OAUTHBEARER token for OAuth client 'orders-app'")
    sent = base64.b64encode(f"orders-app:{CLIENT_SECRET}".encode()).decode()
    assert idp.requests and all(r.authorization == f"Basic {sent}" for r in idp.requests)
    assert PLANTED not in output
    assert CLIENT_SECRET not in output + said and sent not in output + said
    assert not POD_SPEC.search(output), POD_SPEC.search(output)
