#!/bin/bash
# nv:0's four timelines of 16 goroutines beside 0, 2, 4 and 6 processes that
# each keep a processor busy, under three settings of the wait's spin, two
# rounds. Run on the GPU machine from the repository root with .gpu-final
# carried (built by scripts/h200-build.sh); writes busy.txt under $OUT.
F=$(pwd)/.gpu-final; G=${OUT:-/tmp/out}/busy.txt; mkdir -p "$(dirname "$G")"; : > "$G"
for r in 1 2; do
  for h in 0 2 4 6; do
    pids=()
    for _ in $(seq 1 $h); do (while :; do :; done) & pids+=($!); done
    sleep 0.2
    for ws in default 0 20us; do
      a=()
      [ $ws != default ] && a=(-waitspin $ws)
      echo "== round $r busy $h waitspin $ws" >> "$G"
      timeout 30 "$F/rigbench" -device nv:0 -timelines 4 -c 16 -depth 1 -duration 3s "${a[@]}" >> "$G" 2>&1
    done
    for p in "${pids[@]}"; do kill "$p"; done
    wait 2>/dev/null
  done
done
