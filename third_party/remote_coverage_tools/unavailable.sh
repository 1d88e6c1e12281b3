#!/bin/sh
echo "remote_coverage_tools: coverage tools are not available offline" >&2
exit 1
