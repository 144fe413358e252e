/* plain_pingpong: the simplest MPI ping-pong between ranks 0 and 1, as a baseline for
 * xt-impactb. Usage: mpirun -np 2 plain_pingpong BYTES COUNT. One warm-up exchange, then
 * COUNT timed ones; rank 0 prints {"median_us": ..., "min_us": ..., "count": ...} (half RTT). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bytes = argc == 3 ? atoi(argv[1]) : -1, count = argc == 3 ? atoi(argv[2]) : 0;
    if (size != 2 || bytes < 0 || count < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 plain_pingpong BYTES COUNT\n");
        MPI_Finalize();
        return 2;
    }
    char *buf = calloc(bytes ? bytes : 1, 1);
    double *t = malloc(count * sizeof *t);
    for (int k = -1; k < count; k++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
        if (k >= 0)
            t[k] = (MPI_Wtime() - t0) / 2 * 1e6;
    }
    if (rank == 0) {
        qsort(t, count, sizeof *t, cmp);
        double med = count % 2 ? t[count / 2] : 0.5 * (t[count / 2 - 1] + t[count / 2]);
        printf("{\"median_us\": %.3f, \"min_us\": %.3f, \"count\": %d}\n", med, t[0], count);
    }
    free(t);
    free(buf);
    MPI_Finalize();
    return 0;
}
