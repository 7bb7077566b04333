// SPDX-License-Identifier: GPL-2.0
/*
 * An MPI program that reserves bandwidth for its communicator through the
 * QoS attribute (parq_mpi.h): every pair of its hosts gets RATE_BPS, then
 * NEW_RATE_BPS, then nothing.  Rank 0 prints what each setting gave.
 *
 *	mpirun ... parq-mpi-qos RATE_BPS [NEW_RATE_BPS]
 *
 * Build: mpicc parq-mpi-qos.c -lparq-mpi $(pkg-config --cflags --libs parq)
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>
#include <parq_mpi.h>

static void show(int rank, const char *what)
{
	struct parq_mpi_status *st;
	int found = 0;

	MPI_Comm_get_attr(MPI_COMM_WORLD, parq_mpi_keyval(), &st, &found);
	if (rank != 0)
		return;
	if (!found)
		printf("%s: no attribute\n", what);
	else if (st->admitted)
		printf("%s: admitted %llu bit/s for each of %llu flows among %u hosts (job %s)\n",
		       what, (unsigned long long)st->rate_bps,
		       (unsigned long long)st->flows, st->hosts, st->job);
	else
		printf("%s: not admitted%s%s\n", what, st->error[0] ? ": " : "",
		       st->error);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	uint64_t rate, zero = 0;
	int rank;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc < 2) {
		if (rank == 0)
			fprintf(stderr, "usage: parq-mpi-qos RATE_BPS [NEW_RATE_BPS]\n");
		MPI_Finalize();
		return 2;
	}
	rate = strtoull(argv[1], NULL, 10);
	MPI_Comm_set_attr(MPI_COMM_WORLD, parq_mpi_keyval(), &rate);
	show(rank, "set");
	MPI_Barrier(MPI_COMM_WORLD);
	if (argc > 2) {
		rate = strtoull(argv[2], NULL, 10);
		MPI_Comm_set_attr(MPI_COMM_WORLD, parq_mpi_keyval(), &rate);
		show(rank, "changed");
	}
	MPI_Comm_set_attr(MPI_COMM_WORLD, parq_mpi_keyval(), &zero);
	show(rank, "released");
	MPI_Finalize();
	return 0;
}
