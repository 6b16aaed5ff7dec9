# Shared by the benchmark scripts (sourced): the wall clock of a command and the median of a column.

# The wall clock of a command, in seconds to the millisecond; its output is dropped and its
# failure ignored (a benchmark times what a user waits for, whatever the command answered).
seconds() {
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f\n", e - s }'
}

# The median of the numbers on stdin, one per line.
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
