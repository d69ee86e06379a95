# Sourced by the mpirun tests (mpi_sweep_test.sh, mpi_capacity_test.sh):
# mpi N ARGS... runs ARGS under mpirun -n N (oversubscribed; as root when root),
# with the sanitizer settings Open MPI needs. Needs $src (the source tree).
#
# Under ASan, LeakSanitizer would abort on Open MPI's own allocations (Open MPI
# 4.1 keeps some until exit). Leak checking is off here all the same (ASan's
# memory checks stay on): at exit under mpirun -n 3 on 2 loaded cores,
# LeakSanitizer's stop-the-world tracer itself crashed ("Tracer caught signal
# 11", CI's sanitizer run); these tests are about byte-identical output, and the
# same code's leaks are checked in one process (the unit and CLI tests keep
# detect_leaks=1). With leaks unchecked, allocations keep ASan's fast unwinder:
# the slow one (fast_unwind_on_malloc=0, which suppressions of Open MPI's frames
# needed) made mpi-sweep 17x slower than the plain build.
mpi() {
  local n=$1
  shift
  local extra=()
  [[ $(id -u) == 0 ]] && extra=(--allow-run-as-root)
  env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    OMPI_MCA_mca_base_component_disable_dlclose=1 mpirun -n "$n" --oversubscribe "${extra[@]}" "$@"
}
