#!/usr/bin/env bash
# The host executor's control mailboxes between 2 and 3 real processes
# (tests/unit/exec/host_mailbox_mpi_test.cpp). Usage: mpi_mailbox_test.sh
# TEST_BINARY SOURCE_DIR. Exit 77 (skipped) without mpirun.
set -u
bin=$1
src=$2
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
source "$src/tests/cli/mpi_run.sh"
status=0
for n in 2 3; do
  mpi "$n" "$bin" || { echo "FAIL: mpirun -n $n"; status=1; }
done
exit $status
