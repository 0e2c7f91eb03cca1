# tianma serve for a NAS. With compose.yaml beside this file (Ollama + tianma + Open WebUI):
#   docker compose up -d --build            (README, "Run on a NAS")
# Alone:  docker build -t tianma . && docker run -d -p 11435:11435 -v tianma-data:/data \
#           -e TIANMA_OLLAMA__BASE_URL=http://<ollama>:11434 -e TIANMA_SERVE__ADMIN_KEYS='["<a long key>"]' tianma
# Any other command of the CLI runs in the running container, through the server:
#   docker compose exec tianma tianma memory list
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TIANMA_HOME=/data

# the package only (no dev or bench extras); the source tree is not kept in the image
WORKDIR /tmp/tianma-src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip install --no-cache-dir . \
    && rm -rf /tmp/tianma-src
COPY packaging/healthcheck.py /usr/local/lib/tianma/healthcheck.py

# a user of its own, owning the data home (a named volume starts as this folder: owner included)
RUN groupadd --system --gid 10001 tianma \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home --shell /usr/sbin/nologin tianma \
    && mkdir -p /data \
    && chown tianma:tianma /data \
    && chmod 0700 /data
VOLUME ["/data"]
USER 10001:10001
WORKDIR /data

EXPOSE 11435
# healthy = tianma answers and reaches its Ollama (/api/version is passed through to Ollama)
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
    CMD ["python", "/usr/local/lib/tianma/healthcheck.py"]
# tianma serve ends on SIGTERM: running replies recorded as far as they came (README, "Stopping")
STOPSIGNAL SIGTERM
ENTRYPOINT ["tianma"]
# binding 0.0.0.0 needs API keys (TIANMA_SERVE__ADMIN_KEYS / TIANMA_SERVE__API_KEYS): serve refuses to start without
CMD ["serve", "--host", "0.0.0.0"]
