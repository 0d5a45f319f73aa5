# The smoothscale operator image: `smoothscale operator` as a non-root user, ready for a read-only root
# filesystem (the Helm chart mounts an emptyDir at /tmp). Two stages: the first builds a virtual environment
# with the project and its operator dependencies (all prebuilt wheels: no compiler is needed anywhere), the
# second copies only that environment onto a fresh slim base, so no pip cache, source tree or build
# dependency reaches the image.
#
#   docker build -t smoothscale/operator:0.1.0 .
#
# Both stages use the same exactly pinned base, so the environment's interpreter path stays valid.

FROM python:3.11.13-slim-bookworm AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# The package's source tree (src/smoothscale, every part of it) and what pyproject.toml needs to build it.
COPY pyproject.toml README.md ./
COPY src src
# The API emulator and the in-memory pod runtime (smoothscale.sandbox.emulator) are test infrastructure: they
# need the `sandbox` extra, which the image does not install, and are removed from the environment.
RUN python -m venv /opt/smoothscale \
    && /opt/smoothscale/bin/pip install --no-cache-dir ".[operator]" \
    && rm -r /opt/smoothscale/lib/python3.11/site-packages/smoothscale/sandbox/emulator \
    && /opt/smoothscale/bin/pip uninstall --yes pip


FROM python:3.11.13-slim-bookworm

ENV PATH=/opt/smoothscale/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

RUN groupadd --system --gid 10001 smoothscale \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin smoothscale

COPY --from=build /opt/smoothscale /opt/smoothscale

# Numeric, so that Kubernetes can verify runAsNonRoot without looking the name up.
USER 10001:10001
# 8080: the operator's /metrics; 8081: kopf's health endpoint (the chart passes --liveness).
EXPOSE 8080 8081
ENTRYPOINT ["smoothscale", "operator"]
