#!/usr/bin/env bash
# deploy/teams/package.sh APP_ID [OUTPUT]: the Teams app package to upload (Teams admin center, or
# Apps > Manage your apps > Upload an app): manifest.json with your bot's Entra app id, and the icons.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
app_id="${1:?usage: deploy/teams/package.sh APP_ID [OUTPUT.zip]}"
out="${2:-confer-teams.zip}"
if ! [[ "$app_id" =~ ^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$ ]]; then
  echo "APP_ID must be the bot's Entra application (client) id, a GUID" >&2
  exit 2
fi
python3 - "$here" "$app_id" "$out" <<'PY'
import json, sys, zipfile
from pathlib import Path

here, app_id, out = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
manifest = json.loads((here / "manifest.json").read_text())
manifest["id"] = app_id
for bot in manifest["bots"]:
    bot["botId"] = app_id
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
    package.writestr("manifest.json", json.dumps(manifest, indent=2))
    for icon in ("color.png", "outline.png"):
        package.write(here / icon, icon)
print(f"wrote {out}")
PY
