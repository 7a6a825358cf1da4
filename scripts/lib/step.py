"""One step's summary line for scripts/lib/step.sh: process time and peak memory from
/usr/bin/time, then the figures of the step's JSON (a harvest's or a warm's summary) that it has.

    python3 step.py STEP.json STEP.time
"""
import json
import sys

t = open(sys.argv[2]).read().split()
out = "%s s, %.0f MiB" % (t[-2], int(t[-1]) / 1024) if len(t) >= 2 else "no time"
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print(out + "; no JSON")
    sys.exit()
if not isinstance(d, dict):
    print(out)
    sys.exit()
dev = d.get("device") if isinstance(d.get("device"), dict) else {}
parts = []
if "wall_seconds_per_pass" in d and len(d["wall_seconds_per_pass"]) > 1:
    parts.append("passes " + ", ".join("%.1f" % (w * 1e3) for w in d["wall_seconds_per_pass"]) + " ms")
elif "wall_seconds" in d:
    parts.append("wall %.3f s" % d["wall_seconds"])
for label, value, unit in (
    ("hits", dev.get("cache_hits", d.get("cache_hits")), ""),
    ("driver/cpu", dev.get("driver_seconds", d.get("cpu_seconds")), " s"),
    ("ok", d.get("succeeded", d.get("pipelines")), ""),
):
    if value is not None:
        parts.append("%s %s%s" % (label, value, unit))
cap = d.get("capture") or {}
if cap.get("mode"):
    parts.append("capture " + cap["mode"])
if "process_cpu_seconds" in d:
    parts.append("process cpu %.2f s" % d["process_cpu_seconds"])
chk = ((d.get("output_checks") or {}).get("stats") or {}).get("wall_ns")
if chk is not None:
    parts.append("checks %.2f s" % (chk / 1e9))
ds = d.get("device_seconds") or {}
if ds.get("open") is not None:
    parts.append("device open %.3f close %.3f s" % (ds["open"], ds["close"]))
print(out + ("; " + ", ".join(parts) if parts else ""))
