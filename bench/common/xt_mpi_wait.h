/* Waiting for MPI requests without spinning through long waits.
 *
 * Open MPI and MPICH spin in a blocking call. On nodes of their own that costs nothing; where ranks
 * share cores (a virtual cluster, an oversubscribed node) a spinning rank takes the CPU of the
 * ranks that measure, and a long wait on a slow or congested link spins the longest. xt_wait_all
 * tests the requests as a blocking call would (spinning) for `spin_s`, then, asleep in between,
 * every `fraction` of the time waited so far. A completion is then seen late by at most that
 * fraction of the wait plus the kernel's timer slack (50 us); a wait shorter than `spin_s`, as on
 * a fast network, is a spin as before.
 */
#ifndef XT_MPI_WAIT_H
#define XT_MPI_WAIT_H

#include "xt_common.h"

#include <mpi.h>

/* Measured waits (a canary's ring): spin 10 ms, then late by 0.1 % of the wait at most. */
#define XT_MEASURED_SPIN_S 0.01
#define XT_MEASURED_FRACTION 0.001
/* Load (congestors, background traffic): spin 1 ms, then late by 1 % at most (the socket buffers
 * keep the links busy while a rank sleeps). */
#define XT_LOAD_SPIN_S 0.001
#define XT_LOAD_FRACTION 0.01

/* Wait for `n` requests started at `t0` (xt_now()). */
static inline void xt_wait_all(int n, MPI_Request *rq, double t0, double spin_s, double fraction)
{
    int done = 0;
    for (MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE); !done;
         MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE)) {
        double waited = xt_now() - t0;
        if (waited >= spin_s)
            xt_sleep_until(t0 + waited * (1 + fraction));
    }
}

#endif
