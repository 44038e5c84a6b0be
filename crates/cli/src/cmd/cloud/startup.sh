#!/bin/bash
# The startup script of a VM made by `xlens cloud create` (it runs at every boot, as root).
# It fetches the xlens binary the VM's metadata names from the bucket (once per binary) and
# serves the log directory on 0.0.0.0 with the token, as the systemd unit `xlens` where systemd
# runs. The VM's own service account reads the bucket.
#
# Settings: the VM's metadata attributes xlens-logdir, xlens-binary, xlens-port, xlens-token;
# environment variables XLENS_LOGDIR, XLENS_BINARY, XLENS_PORT, XLENS_TOKEN, when set, take
# precedence (and XLENS_HOME, default /opt/xlens; XLENS_FOREGROUND=1 runs the server in the
# foreground instead): that is how the tests run this same script.
set -euo pipefail

attr() {
  curl -sf -H 'Metadata-Flavor: Google' \
    "http://metadata.google.internal/computeMetadata/v1/instance/attributes/$1"
}

: "${XLENS_LOGDIR:=$(attr xlens-logdir)}"
: "${XLENS_BINARY:=$(attr xlens-binary)}"
: "${XLENS_PORT:=$(attr xlens-port)}"
: "${XLENS_TOKEN:=$(attr xlens-token)}"
: "${XLENS_HOME:=/opt/xlens}"

mkdir -p "$XLENS_HOME"
(umask 077 && printf '%s\n' "$XLENS_TOKEN" > "$XLENS_HOME/token")

if [ ! -x "$XLENS_HOME/xlens" ] || [ "$(cat "$XLENS_HOME/binary-url" 2>/dev/null)" != "$XLENS_BINARY" ]; then
  echo "xlens-startup: fetching $XLENS_BINARY"
  gcloud storage cp "$XLENS_BINARY" "$XLENS_HOME/xlens.part"
  chmod 755 "$XLENS_HOME/xlens.part"
  mv -f "$XLENS_HOME/xlens.part" "$XLENS_HOME/xlens"
  printf '%s' "$XLENS_BINARY" > "$XLENS_HOME/binary-url"
fi
# A binary this VM cannot run fails here, in the serial console's log, not later.
"$XLENS_HOME/xlens" --version

args=(serve "$XLENS_LOGDIR" --bind "0.0.0.0:$XLENS_PORT" --token-file "$XLENS_HOME/token")
echo "xlens-startup: xlens ${args[*]}"
if [ "${XLENS_FOREGROUND:-0}" = 1 ]; then
  exec "$XLENS_HOME/xlens" "${args[@]}"
fi
if command -v systemd-run >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl stop xlens >/dev/null 2>&1 || true
  systemctl reset-failed xlens >/dev/null 2>&1 || true
  systemd-run --unit=xlens --property=Restart=on-failure "$XLENS_HOME/xlens" "${args[@]}"
else
  nohup "$XLENS_HOME/xlens" "${args[@]}" > "$XLENS_HOME/serve.log" 2>&1 &
fi
