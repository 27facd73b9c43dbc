#!/usr/bin/env bash
# bench/kernel_summary.py over Nsight Compute CSV logs written here in ncu's two layouts (the raw
# page: a column per metric under a units row; the details page: a row per metric): one step is
# the longer run less the shorter, per kernel, in microseconds whatever the unit, longest first.
set -euo pipefail
repo="${1:?usage: kernel_summary_test.sh REPO}"
summary="$repo/bench/kernel_summary.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Raw page, base units (ns). The 1-step run: init once, then a step of gemm x2 and adamw x1.
cat > "$work/short.csv" <<'CSV'
==PROF== Connected to process 4242 (/build/bin/gradsync-model-bench)
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"
"","","","","","","","","","","","nsecond"
"0","4242","gradsync-model-bench","127.0.0.1","init_params","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","5,000"
"1","4242","gradsync-model-bench","127.0.0.1","gemm","1","7","(128, 1, 1)","(96, 1, 1)","0","9.0","1,000"
"2","4242","gradsync-model-bench","127.0.0.1","gemm","1","7","(128, 1, 1)","(96, 1, 1)","0","9.0","3,000"
"3","4242","gradsync-model-bench","127.0.0.1","adamw","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","500"
CSV
# The 2-step run: one more step, in microseconds this time, with a kernel the first lacked.
cat > "$work/long.csv" <<'CSV'
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"
"","","","","","","","","","","","usecond"
"0","4243","gradsync-model-bench","127.0.0.1","init_params","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","5.00"
"1","4243","gradsync-model-bench","127.0.0.1","gemm","1","7","(128, 1, 1)","(96, 1, 1)","0","9.0","1.00"
"2","4243","gradsync-model-bench","127.0.0.1","gemm","1","7","(128, 1, 1)","(96, 1, 1)","0","9.0","3.00"
"3","4243","gradsync-model-bench","127.0.0.1","adamw","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","0.50"
"4","4243","gradsync-model-bench","127.0.0.1","gemm","1","7","(128, 1, 1)","(96, 1, 1)","0","9.0","1.20"
"5","4243","gradsync-model-bench","127.0.0.1","gemm","1","7","(128, 1, 1)","(96, 1, 1)","0","9.0","2.80"
"6","4243","gradsync-model-bench","127.0.0.1","adamw","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","0.60"
"7","4243","gradsync-model-bench","127.0.0.1","grad_norm","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","0.40"
CSV
out="$(python3 "$summary" "$work/short.csv" "$work/long.csv")"
echo "$out"
# gemm: 2 launches, 4.0 us; adamw: 1, 0.6 us; grad_norm: 1, 0.4 us; total 4 launches, 5.0 us.
echo "$out" | grep -Eq '^gemm +2 +4\.0 +80\.0%$' || fail "gemm's row"
echo "$out" | grep -Eq '^adamw +1 +0\.6 +12\.0%$' || fail "adamw's row"
echo "$out" | grep -Eq '^grad_norm +1 +0\.4 +8\.0%$' || fail "grad_norm's row (a kernel only the longer run has)"
echo "$out" | grep -q 'init_params' && fail "start-up work counted in the step"
echo "$out" | grep -Eq '^total kernel time of one step +4 +5\.0$' || fail "the total"
[ "$(echo "$out" | sed -n 2p | cut -d' ' -f1)" = gemm ] || fail "longest kernel not first"

# Details page: a row per kernel and metric; other metrics' rows are not durations.
cat > "$work/short-details.csv" <<'CSV'
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","b","h","gemm","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","0.002"
"0","1","b","h","gemm","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","93"
CSV
cat > "$work/long-details.csv" <<'CSV'
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","b","h","gemm","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","0.002"
"1","1","b","h","gemm","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,500"
"1","1","b","h","gemm","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","91"
CSV
out="$(python3 "$summary" "$work/short-details.csv" "$work/long-details.csv")"
echo "$out" | grep -Eq '^gemm +1 +1\.5 +100\.0%$' || fail "details page: $out"

# Errors name the problem and exit non-zero.
printf 'no table here\n' > "$work/empty.csv"
if python3 "$summary" "$work/empty.csv" "$work/long.csv" 2> "$work/err"; then fail "a log without a table accepted"; fi
grep -q 'no ncu CSV table' "$work/err" || fail "the error does not say what is missing: $(cat "$work/err")"
if python3 "$summary" "$work/long.csv" "$work/long.csv" 2> "$work/err"; then fail "two equal runs accepted"; fi
grep -q 'no more kernels' "$work/err" || fail "equal runs' error: $(cat "$work/err")"
echo "kernel_summary: ok"
