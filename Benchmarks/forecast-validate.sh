#!/usr/bin/env bash
# The forecast against the real thing: one scenario run both ways with the same seed and settings —
# N simulated iPhones (default 500) of the shipped mix against a real gateway over real sockets for S
# seconds (default 600), a version every P seconds (default 60) announced through the provider API, users
# opening apps O more times an hour (default 12), the built-in content server on an L bytes/s link
# (default 2,500,000) — then `pushgate forecast` of the same span (from the real run's first
# publication, as long as it ran) with the same link. Prints every count of the freshness table side by
# side, per kind of iPhone and for all, with the difference; the goals (docs/forecast.md) are marked.
# Fails (non-zero) if either run fails or prints no figure; a missed goal is reported, not a failure.
# Usage: Benchmarks/forecast-validate.sh [devices] [seconds] [publish every] [opens per hour] [link bytes/s]
# IPHONES=news=1 (any --iphones mix) runs another fleet; SEED=n another seed.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-500}
SECONDS_=${2:-600}
EVERY=${3:-60}
OPENS=${4:-12}
LINK=${5:-2500000}
SEED=${SEED:-7}
MIX=(--iphones "${IPHONES:-news=40,chat=30,podcast=20,misbehaving=10}")
# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh
announcing_gateway 22800
"$PG" simulate "${ANNOUNCE[@]}" --devices "$DEVICES" --tokens-file "$WORK/tokens.txt" \
  --publish-every "$EVERY" --link-bytes-per-second "$LINK" --opens-per-hour "$OPENS" --duration "$SECONDS_" \
  --seed "$SEED" "${MIX[@]}" --json "$WORK/real.json" > "$WORK/simulate.log" 2>&1 \
  || { show_log "$WORK/simulate.log"; fail "the real run failed"; }
[ -s "$WORK/real.json" ] || { show_log "$WORK/simulate.log"; fail "the real run wrote no figures"; }
# The backends' fan-out as the real run had it: from each publication to its announcement's last answer.
read -r START SPAN FANOUT < <(python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))
first = min(f["published"], key=lambda p: p["version"])
at = {p["version"]: p["publishedAt"] for p in f["published"]}
spreads = [a["sentAt"] + a["milliseconds"] - at.get(a["version"], a["sentAt"]) for a in f["announcements"] if a.get("sentAt")]
print(first["publishedAt"], f["seconds"], sum(spreads) / len(spreads) / 1000 if spreads else 0)' "$WORK/real.json") \
  || fail "the real run's figures have no publication"
need "the real run's start" "$START"
need "the real run's length" "$SPAN"
need "the real run's announcement time" "$FANOUT"
HOURS=$(awk -v s="$SPAN" 'BEGIN {printf "%.6f", s / 3600}')
# Loopback: the transfers' latency is the link's alone.
"$PG" forecast --devices "$DEVICES" --hours "$HOURS" --start-ms "$START" --publish-every "$EVERY" \
  --opens-per-hour "$OPENS" --link-bytes-per-second "$LINK" --latency-ms 1 --announce-seconds "$FANOUT" --seed "$SEED" "${MIX[@]}" --threads 1 \
  --json "$WORK/forecast.json" > "$WORK/forecast.log" 2>&1 || { show_log "$WORK/forecast.log"; fail "the forecast failed"; }
echo "Forecast against the real run — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'),"
echo "$DEVICES iPhones, ${SPAN} s, a version every ${EVERY} s, ${OPENS} extra opens an hour, ${LINK} bytes/s, seed $SEED,"
echo "each announcement sent within ${FANOUT} s (the real run's mean, replayed by the forecast)"
echo
python3 - "$WORK/real.json" "$WORK/forecast.json" <<'PY'
import json, sys
real = {r["profile"]: r for r in json.load(open(sys.argv[1]))["report"]["rows"]}
fore = {r["profile"]: r for r in json.load(open(sys.argv[2]))["runs"][0]["result"]["report"]["rows"]}
for rows in (real, fore):
    if "all" not in rows and len(rows) == 1:  # one kind of iPhone: its row is the fleet's
        only = next(iter(rows.values()))
        rows.clear()
        rows["all"] = only
if not real.get("all") or not fore.get("all"):
    sys.exit("forecast-validate.sh: a run has no figures for the whole fleet")
counts = ["opens", "opensWithoutContent", "freshOpens", "silentWakes", "silentWakesWithNewContent", "wakesRefused",
          "relaunches", "foregroundTransfers", "backgroundTransfers", "failedTransfers"]
def flat(row):
    out = {k: row.get(k, 0) for k in counts}
    for group in ("wakes", "terminations"):
        for key, value in (row.get(group) or {}).items():
            out[f"{group}: {key}"] = value
    return out
print("| kind | figure | real | forecast | difference | goal |")
print("|---|---|---|---|---|---|")
missed = []
for kind in sorted(set(real) | set(fore), key=lambda k: (k == "all", k)):
    r, f = real.get(kind, {}), fore.get(kind, {})
    rf, ff = r.get("freshAtOpen"), f.get("freshAtOpen")
    if rf is not None and ff is not None:
        pp = (ff - rf) * 100
        ok = abs(pp) <= 3
        if not ok: missed.append(f"{kind} fresh at open")
        print(f"| {kind} | fresh at open | {rf*100:.1f} % | {ff*100:.1f} % | {pp:+.1f} pp | ≤ 3 pp {'✓' if ok else '✗'} |")
    a, b = flat(r), flat(f)
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key, 0), b.get(key, 0)
        if x == 0 and y == 0: continue
        diff = (y - x) / x * 100 if x else float("inf")
        goal = ""
        if key == "opens" and kind == "all":
            ok = abs(diff) <= 5
            goal = f"≤ 5 % {'✓' if ok else '✗'}"
            if not ok: missed.append(f"{kind} opens")
        print(f"| {kind} | {key} | {x} | {y} | {diff:+.1f} % | {goal} |")
print()
print("goals missed: " + (", ".join(missed) if missed else "none"))
PY
