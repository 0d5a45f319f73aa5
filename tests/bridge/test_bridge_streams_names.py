"""The names the broker plugin (Java) and the operator (Python) share for group.protocol=streams apps are
spelled the same on both sides: `smoothscale.client.streams_protocol` against the plugin's sources."""

from __future__ import annotations

from pathlib import Path

from smoothscale.contract import streams_protocol as names

SOURCES = Path(__file__).resolve().parents[2] / "bridge/broker-assignor/src/main/java/io/smoothscale/broker"


def test_the_plugin_and_the_operator_use_the_same_names() -> None:
    follower = (SOURCES / "PlanFollower.java").read_text()
    assert f'APP_TAG = "{names.APP_TAG}"' in follower
    assert f'POD_TAG = "{names.POD_TAG}"' in follower
    settings = (SOURCES / "PluginSettings.java").read_text()
    assert f'DEFAULT_TOPIC = "{names.PLANS_TOPIC}"' in settings
    assert f'"{names.PLANS_BOOTSTRAP_PROPERTY}"' in settings
    assignor = (SOURCES / "SmoothscaleTaskAssignor.java").read_text()
    assert f'NAME = "{names.ASSIGNOR_NAME}"' in assignor
    package, _, simple = names.ASSIGNOR_CLASS.rpartition(".")
    assert f"package {package};" in assignor
    assert f"public final class {simple} implements TaskAssignor" in assignor
    publisher = (SOURCES / "GroupViewPublisher.java").read_text()
    assert f'DEFAULT_TOPIC = "{names.GROUPS_TOPIC}"' in publisher
