#!/bin/sh
# ctest's example_*_bad_*: runs a program ($3...) and requires its exit status to be $1 and its
# standard error to hold at most $2 lines (an option's error: one line, no stack trace, no abort).
set -u
want_status=$1 max_lines=$2
shift 2
err=$(mktemp)
"$@" >/dev/null 2>"$err"
status=$?
lines=$(wc -l <"$err")
cat "$err"
rm -f "$err"
[ "$status" -eq "$want_status" ] || { echo "exit status $status, expected $want_status"; exit 1; }
[ "$lines" -le "$max_lines" ] || { echo "$lines lines on stderr, expected at most $max_lines"; exit 1; }
echo "exit status check passed"
