#!/bin/sh
# ctest's header_only_mpicxx: builds mpi_app.cpp with MPI's compiler wrapper ($1) and nothing but
# ember's include folder ($2), into the scratch directory $3, and runs it on two ranks with the
# launcher ($4, its process-count flag $5): each rank must print the sum over both ranks.
# Prints "mpicxx check passed" at the end.
set -eu
mpicxx=$1 include=$2 work=$3 mpiexec=$4 np_flag=$5
here=$(dirname "$0")
rm -rf "$work"
mkdir -p "$work"
"$mpicxx" -O1 -std=c++20 -fopenmp -I"$include" "$here/mpi_app.cpp" -o "$work/mpi_app"
"$mpiexec" "$np_flag" 2 "$work/mpi_app" >"$work/out.txt" 2>&1 || { cat "$work/out.txt"; exit 1; }
cat "$work/out.txt"
grep -q "rank 0 of 2: 3" "$work/out.txt" && grep -q "rank 1 of 2: 3" "$work/out.txt"
echo "mpicxx check passed"
