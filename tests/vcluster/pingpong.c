/* MPI ping-pong between ranks 0 and 1: prints one JSON line with the one-way bandwidth.
   usage: pingpong BYTES ITERATIONS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long bytes = argc > 1 ? atol(argv[1]) : 8L << 20;
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    char *buf = malloc(bytes);
    memset(buf, rank, bytes);
    char host[MPI_MAX_PROCESSOR_NAME];
    int len;
    MPI_Get_processor_name(host, &len);
    double t0 = 0;
    for (int i = -1; i < iters; i++) {          /* i == -1: warm-up, not timed */
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    char peer[MPI_MAX_PROCESSOR_NAME] = "";
    if (rank == 1)
        MPI_Send(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Recv(peer, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("{\"kernel\": \"pingpong\", \"type\": \"result\", \"metric\": \"bandwidth\", "
               "\"value\": %.6g, \"unit\": \"bit/s\", \"stat\": \"avg\", \"bytes\": %ld, "
               "\"iterations\": %d, \"hosts\": [\"%s\", \"%s\"]}\n",
               2.0 * bytes * iters * 8 / t, bytes, iters, host, peer);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
