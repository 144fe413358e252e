/* MPI_Init then an Allgather of host names: the first message can reach a rank still in MPI_Init. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n, len;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char me[MPI_MAX_PROCESSOR_NAME] = {0};
    char *all = malloc((size_t)n * MPI_MAX_PROCESSOR_NAME);
    MPI_Get_processor_name(me, &len);
    MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  MPI_COMM_WORLD);
    free(all);
    MPI_Finalize();
    return 0;
}
