#!/bin/bash
# HEALTHCHECK: GET /health on the container's own port answers 200. bash's /dev/tcp, since the slim
# image carries no HTTP client.
set -euo pipefail
exec 3<>"/dev/tcp/127.0.0.1/${CHATTERBOX_PORT:-8080}"
printf 'GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
read -r -t 5 status_line <&3
[[ "$status_line" == "HTTP/1."[01]" 200"* ]]
