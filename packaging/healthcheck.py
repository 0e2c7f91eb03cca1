"""Docker HEALTHCHECK of ``tianma serve``: exit 0 when ``GET /api/version`` answers 200, else 1.

``/api/version`` is Ollama's, passed through by tianma (with the caller's key checked first), so
healthy means: tianma answers on its port and reaches its Ollama. Standard library only, and no
``import tianma``: that loads the whole runtime (~2 s of CPU), too much every 30 s on a NAS. The
port and a key are read the way ``tianma serve`` reads them — ``TIANMA_SERVE__PORT``,
``TIANMA_SERVE__ADMIN_KEYS`` / ``TIANMA_SERVE__API_KEYS`` (JSON), else ``[serve]`` in
``$TIANMA_HOME/tianma.toml``, else the defaults (tests/packaging/test_healthcheck.py holds this
to tianma's own settings).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

DEFAULT_PORT = 11435


def serve_section(environ: dict[str, str]) -> dict[str, Any]:
    """The ``[serve]`` table of ``<home>/tianma.toml`` (empty when there is none)."""
    home = Path(environ.get("TIANMA_HOME") or Path.home() / ".tianma").expanduser()
    try:
        section = tomllib.loads((home / "tianma.toml").read_text(encoding="utf-8")).get("serve", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return section if isinstance(section, dict) else {}


def port_and_key(environ: dict[str, str]) -> tuple[int, str | None]:
    """The port ``tianma serve`` listens on and a key it accepts (None: it needs none)."""
    toml = serve_section(environ)
    port = int(environ.get("TIANMA_SERVE__PORT") or toml.get("port") or DEFAULT_PORT)
    admins = json.loads(environ["TIANMA_SERVE__ADMIN_KEYS"]) if "TIANMA_SERVE__ADMIN_KEYS" in environ else toml.get("admin_keys", [])
    users = json.loads(environ["TIANMA_SERVE__API_KEYS"]) if "TIANMA_SERVE__API_KEYS" in environ else toml.get("api_keys", {})
    keys = [*admins, *users]
    return port, (str(keys[0]) if keys else None)


def main() -> int:
    port, key = port_and_key(dict(os.environ))
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/version")
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through an HTTP proxy
    try:
        with opener.open(request, timeout=8) as answer:
            status = int(answer.status)
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        print(f"tianma serve does not answer on port {port}: {exc}", file=sys.stderr)
        return 1
    if status != 200:
        print(f"tianma serve answered /api/version with {status} (502: Ollama unreachable)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
