#!/usr/bin/env bash
# Checks that two builds decide the same: plans each snapshot with a reference binary (a build
# of the commit before a change) and with this tree's binary, and compares the JSON reports
# byte for byte. The golden fixtures are compared by `cargo test --test plan`; this is for the
# generated benchmark clusters (BENCHMARKS.md, "Same decisions").
#
#   scripts/same-decisions.sh REFERENCE_BINARY POLICY SNAPSHOT...
#
# The binary under test: VSPHERE_DESCHEDULER_BIN, default target/release/vsphere-descheduler.
# Both plan at one fixed instant, so pod ages cannot differ. Exit 0 when every report is the
# same, 1 naming the first snapshot whose reports differ (both reports are kept for diff).
set -euo pipefail

if [[ $# -lt 3 ]]; then
    sed -n '2,11p' "$0" >&2
    exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
reference="$1"
policy="$2"
shift 2
candidate="${VSPHERE_DESCHEDULER_BIN:-$root/target/release/vsphere-descheduler}"
now="2026-11-26T00:00:00Z"
work="$(mktemp -d)"

for snapshot in "$@"; do
    name="$(basename "$snapshot")"
    "$reference" plan --snapshot "$snapshot" --policy "$policy" --now "$now" --output json \
        > "$work/$name.reference.json"
    "$candidate" plan --snapshot "$snapshot" --policy "$policy" --now "$now" --output json \
        > "$work/$name.candidate.json"
    if ! cmp -s "$work/$name.reference.json" "$work/$name.candidate.json"; then
        echo "same-decisions: $snapshot: the reports differ ($work/$name.*.json)" >&2
        exit 1
    fi
    echo "same-decisions: $snapshot: same report ($(wc -c < "$work/$name.candidate.json") bytes)"
done
rm -rf "$work"
