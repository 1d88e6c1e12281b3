#!/bin/sh
# A test exec credential plugin. $1 is a state directory:
#   token   the token to return (required)
#   expiry  an RFC 3339 expirationTimestamp to return (optional)
#   fail    if present, exit 1 with its content on stderr
#   cert, key  if present (JSON-escaped PEM), returned as clientCertificateData / clientKeyData
# It counts its runs in $1/count and saves $KUBERNETES_EXEC_INFO and $PLUGIN_GREETING (an env
# entry of the kubeconfig) for the test to inspect.
state="$1"
count=$(cat "$state/count" 2>/dev/null || echo 0)
echo $((count + 1)) > "$state/count"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$state/exec_info"
printf '%s' "$PLUGIN_GREETING" > "$state/greeting"
if [ -f "$state/fail" ]; then
  cat "$state/fail" >&2
  exit 1
fi
api=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"apiVersion":"\([^"]*\)".*/\1/p')
token=$(cat "$state/token")
expiry=""
if [ -f "$state/expiry" ]; then
  expiry=",\"expirationTimestamp\":\"$(cat "$state/expiry")\""
fi
tls=""
if [ -f "$state/cert" ]; then
  tls=",\"clientCertificateData\":\"$(cat "$state/cert")\",\"clientKeyData\":\"$(cat "$state/key")\""
fi
printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s"%s%s}}\n' "$api" "$token" "$expiry" "$tls"
