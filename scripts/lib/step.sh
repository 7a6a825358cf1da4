# Sourced by scripts/device-*.sh: one measured step of a device run. The caller sets R (the
# folder for each step's files) and SUM (the summary file).
#
# step_run NAME LIMIT CMD...: runs CMD under `timeout LIMIT` and /usr/bin/time; its standard
# output (the JSON) goes to $R/NAME.json, its standard error to $R/NAME.err, "process-seconds
# peak-KiB" to $R/NAME.time. Returns CMD's exit status.
step_run() {
  local name=$1 limit=$2; shift 2
  /usr/bin/time -f "%e %M" -o "$R/$name.time" timeout -k 5 "$limit" "$@" > "$R/$name.json" 2> "$R/$name.err"
}

# step_say NAME RC: appends (and prints) NAME's summary line: exit status, process time and peak
# memory, then what its JSON says (scripts/lib/step.py).
step_say() {
  echo "$1: exit $2, $(python3 "$(dirname "${BASH_SOURCE[0]}")/step.py" "$R/$1.json" "$R/$1.time")" | tee -a "$SUM"
}
