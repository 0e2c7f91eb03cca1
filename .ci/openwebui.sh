#!/usr/bin/env bash
# The real Open WebUI for tests/browser/test_openwebui.py, in its own venv (never the project's:
# it pins hundreds of packages, torch among them, ~7 GB). Idempotent: a venv that already has
# open-webui $OPENWEBUI_VERSION is reused as it is, so only the first run pays the ~2 min.
#
#   .ci/openwebui.sh            # creates or reuses ${TIANMA_OPENWEBUI_VENV:-~/.cache/tianma/openwebui-0.12.4}
set -euo pipefail

OPENWEBUI_VERSION=0.12.4
venv="${TIANMA_OPENWEBUI_VENV:-$HOME/.cache/tianma/openwebui-$OPENWEBUI_VERSION}"

installed() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" - "$OPENWEBUI_VERSION" <<'EOF' 2>/dev/null
import importlib.metadata, importlib.util, sys
assert importlib.metadata.version("open-webui") == sys.argv[1]
assert importlib.util.find_spec("open_webui.main") is not None
EOF
}

if installed; then
  echo "open-webui $OPENWEBUI_VERSION: reusing $venv"
  exit 0
fi

# Open WebUI 0.12 wants Python >= 3.11, < 3.13
python=""
for candidate in python3.11 python3.12 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c \
      'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 13)))' 2>/dev/null; then
    python="$candidate"
    break
  fi
done
[ -n "$python" ] || { echo "open-webui $OPENWEBUI_VERSION needs Python 3.11 or 3.12" >&2; exit 1; }

echo "open-webui $OPENWEBUI_VERSION: installing into $venv (first run only)"
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -qq --upgrade pip
"$venv/bin/python" -m pip install -qq "open-webui==$OPENWEBUI_VERSION"
installed || { echo "open-webui $OPENWEBUI_VERSION did not install into $venv" >&2; exit 1; }
echo "open-webui $OPENWEBUI_VERSION: installed into $venv"
