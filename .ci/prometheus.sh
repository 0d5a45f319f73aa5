#!/usr/bin/env bash
# Installs Debian's prometheus package (Prometheus 2.42 and promtool), if missing: tests/install checks the
# chart's alert rules with promtool and runs a real Prometheus, on loopback, against the demo. CI's machine is
# fresh and runs as root; the package stays installed (and apt keeps its download cached) for later runs.
set -euo pipefail
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
	echo "installing prometheus" >&2
	apt-get -o DPkg::Lock::Timeout=600 update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
		prometheus >&2
fi
prometheus --version 2>&1 | head -1
