// SPDX-License-Identifier: GPL-2.0
/*
 * An MPI program that knows nothing of parq: ROUNDS all-reduces, then a
 * pause of SECONDS.  Run with libparq-mpi preloaded and $PARQ_MPI_RATE, it
 * holds a reservation for MPI_COMM_WORLD from MPI_Init to MPI_Finalize.
 *
 *	mpirun -x LD_PRELOAD=libparq-mpi.so.1 -x PARQ_MPI_RATE=15mbit \
 *		parq-mpi-plain [ROUNDS [SECONDS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <mpi.h>

int main(int argc, char **argv)
{
	int rank, size, i, rounds, pause;
	double v = 1, sum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	rounds = argc > 1 ? atoi(argv[1]) : 100;
	pause = argc > 2 ? atoi(argv[2]) : 0;
	for (i = 0; i < rounds; i++)
		MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (pause > 0)
		sleep((unsigned int)pause);
	if (rank == 0)
		printf("%d ranks, %d all-reduces, sum %g\n", size, rounds, sum);
	MPI_Finalize();
	return 0;
}
