"""The environment variables of `smoothscale worker` beyond Contract 3's (`contract.shared_names`).

The kubelet stand-in sets them for every worker it starts and the command reads them, so both use these
names. A light module on purpose: `smoothscale --help` imports it.
"""

from __future__ import annotations

from typing import Final

KUBECONFIG_ENV: Final = "SMOOTHSCALE_KUBECONFIG"
ASSIGNMENT_DIR_ENV: Final = "SMOOTHSCALE_ASSIGNMENT_DIR"
METRICS_HOST_ENV: Final = "SMOOTHSCALE_METRICS_HOST"
RESTORE_RATE_ENV: Final = "SMOOTHSCALE_RESTORE_RATE"
PROCESS_RATE_ENV: Final = "SMOOTHSCALE_PROCESS_RATE"
INPUT_RATE_ENV: Final = "SMOOTHSCALE_INPUT_RATE"
INITIAL_OFFSET_ENV: Final = "SMOOTHSCALE_INITIAL_OFFSET"
CHANGELOG_EPOCH_ENV: Final = "SMOOTHSCALE_CHANGELOG_EPOCH"
STATELESS_SUBTOPOLOGIES_ENV: Final = "SMOOTHSCALE_STATELESS_SUBTOPOLOGIES"
RECORD_FILE_ENV: Final = "SMOOTHSCALE_RECORD_FILE"
TICK_SECONDS_ENV: Final = "SMOOTHSCALE_TICK_SECONDS"
CLAIM_SECONDS_ENV: Final = "SMOOTHSCALE_CLAIM_SECONDS"
PARENT_PID_ENV: Final = "SMOOTHSCALE_PARENT_PID"
LOG_LEVEL_ENV: Final = "SMOOTHSCALE_LOG_LEVEL"
