# Run by LAMMPS' rank 0 before run $1 (in.lj's before_run): asks the job script for that run's
# actions (reframe-tests/xtlib/betweenruns.py, e.g. set the links) and waits until they are done.
# Fails if the job script gave up, or after 600 s; the run's missing log then fails the case.
d=between_runs
touch "$d/ready.$1"
n=0
while [ ! -e "$d/go.$1" ]; do
    if [ -e "$d/failed" ]; then echo "between_runs: the job script failed before run $1" >&2; exit 1; fi
    if [ "$n" -ge 6000 ]; then echo "between_runs: no go for run $1 after 600 s" >&2; exit 1; fi
    sleep 0.1
    n=$((n + 1))
done
