#!/usr/bin/env bash
# Regenerates taskgov-dashboard-configmap.yaml from taskgov.json (run after editing the JSON;
# //metrics:dashboard_test checks that the two agree).
set -euo pipefail
cd "$(dirname "$0")"
{
  cat <<'HEADER'
# Generated from taskgov.json by make-configmap.sh: edit the JSON, then rerun it.
# Grafana's dashboard sidecar (kiwigrid k8s-sidecar, as in the kube-prometheus-stack and grafana
# Helm charts) loads every ConfigMap labelled grafana_dashboard: "1".
apiVersion: v1
kind: ConfigMap
metadata:
  name: taskgov-dashboard
  labels:
    grafana_dashboard: "1"
    app.kubernetes.io/name: taskgov
    app.kubernetes.io/component: dashboard
data:
  taskgov.json: |
HEADER
  sed -e 's/^\(.\)/    \1/' taskgov.json
} > taskgov-dashboard-configmap.yaml.tmp
mv taskgov-dashboard-configmap.yaml.tmp taskgov-dashboard-configmap.yaml
