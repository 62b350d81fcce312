#!/usr/bin/env bash
# make playground: Confer in Teams local mode with its embedded defaults, and Microsoft 365 Agents
# Playground (a Teams-like web chat with a mocked connector), both on this machine only. Ctrl-C
# stops both and ends quietly (status 0). AGENTSPLAYGROUND names another agentsplayground binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
CONFER_PORT="${PORT:-3978}"
PLAYGROUND_PORT="${PLAYGROUND_PORT:-56150}"
PLAYGROUND_DIR=deploy/teams/node
BIN=.venv/bin

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "make playground needs Node.js 18 or newer with npm, and this machine has none." >&2
  echo "Install it (for example: apt-get install nodejs npm, or https://nodejs.org) and run make playground again." >&2
  exit 2
fi
playground="${AGENTSPLAYGROUND:-$PWD/$PLAYGROUND_DIR/node_modules/.bin/agentsplayground}"
if [ -z "${AGENTSPLAYGROUND:-}" ] && [ ! -x "$playground" ]; then
  echo "Installing Microsoft 365 Agents Playground (pinned in $PLAYGROUND_DIR/package.json)…"
  npm ci --prefix "$PLAYGROUND_DIR" --no-audit --no-fund --loglevel=error
fi

work="$(mktemp -d)"
# The Playground opens a browser with xdg-open and exits when that fails: give it one that does nothing.
printf '#!/bin/sh\nexit 0\n' >"$work/xdg-open"
chmod +x "$work/xdg-open"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# Ctrl-C (or a TERM) is how people stop it: stop both and exit 0, so make reports no "Error 130".
trap 'exit 0' INT TERM

export CONFER_TEAMS_LOCAL=true PORT="$CONFER_PORT"
"$BIN/confer" index
"$BIN/confer" serve &
pids+=($!)
for _ in $(seq 1 100); do
  if "$BIN/python" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)" \
      "http://127.0.0.1:$CONFER_PORT/healthz" >/dev/null 2>&1; then
    break
  fi
  kill -0 "${pids[0]}" 2>/dev/null || { echo "confer serve did not start (see above)." >&2; exit 1; }
  sleep 0.2
done

# Run it in the scratch folder: it writes its own logs under devTools/ in its working directory.
(cd "$work" && PATH="$work:$PATH" exec "$playground" \
  -e "http://127.0.0.1:$CONFER_PORT/api/messages" -c msteams -p "$PLAYGROUND_PORT" --dt >"$work/playground.log" 2>&1) &
pids+=($!)
for _ in $(seq 1 150); do
  port="$(sed -n 's/.*Listening on \([0-9][0-9]*\).*/\1/p' "$work/playground.log" | head -n 1)"
  [ -n "$port" ] && break
  kill -0 "${pids[1]}" 2>/dev/null || { cat "$work/playground.log" >&2; echo "the Playground stopped." >&2; exit 1; }
  sleep 0.2
done
echo
echo "Confer is ready in Microsoft 365 Agents Playground: open http://127.0.0.1:${port:-$PLAYGROUND_PORT}"
echo "Write a question in Personal Chat (in a channel or group chat, @-mention the bot). Ctrl-C stops both."
# Until Ctrl-C, or until one of them stops on its own: then the other is stopped too (a Playground
# with no Confer behind it would answer nothing). A plain loop, not `wait -n`, which bash 3 lacks.
while kill -0 "${pids[0]}" 2>/dev/null && kill -0 "${pids[1]}" 2>/dev/null; do
  sleep 1
done
if ! kill -0 "${pids[0]}" 2>/dev/null; then
  status=0
  wait "${pids[0]}" || status=$?
  [ "$status" -eq 0 ] && exit 0 # it was stopped (a signal that reached it alone) and said so
  echo "confer serve stopped (status $status, see above); the Playground is stopped too." >&2
  exit 1
fi
wait "${pids[1]}"
