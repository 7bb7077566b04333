/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libparq-mpi: an MPI program reserves bandwidth for a communicator
 * through MPI's attributes (the QoS attribute of Senapathi, Panda et al.,
 * section V), admitted across the cluster as one job (libparq's jobs).
 *
 *	uint64_t rate = 15000000;      (bits/s for each pair of hosts)
 *	struct parq_mpi_status *st;
 *	int found;
 *
 *	MPI_Comm_set_attr(comm, parq_mpi_keyval(), &rate);
 *	MPI_Comm_get_attr(comm, parq_mpi_keyval(), &st, &found);
 *	if (!st->admitted)
 *		fprintf(stderr, "parq: %s\n", st->error);
 *
 * Setting the attribute is collective over the communicator: every rank
 * sets it, with the same rate.  It reserves the rate for every ordered
 * pair of distinct hosts among the communicator's ranks (ranks on one
 * host need nothing), all or nothing; setting it again re-negotiates the
 * rate (the old one stays if the new one is refused); setting 0 releases
 * it, as freeing the communicator or MPI_Finalize does.  The attribute
 * read back is a struct parq_mpi_status, the same on every rank.
 *
 * Each rank's host is its name in the cluster's topology: $PARQ_HOST, else
 * the system's host name.  The job is named $SLURM_JOB_ID.STEP.mpiR-N in a
 * Slurm job (R: rank 0's rank in MPI_COMM_WORLD), else mpi-HOST-PID-N
 * (rank 0's host and process).  Intercommunicators are refused.
 *
 * The library intercepts MPI_Init, MPI_Init_thread, MPI_Comm_set_attr and
 * MPI_Finalize through MPI's profiling interface (PMPI): link it before
 * the MPI library, or preload it.  An unmodified program gets a
 * reservation for MPI_COMM_WORLD from MPI_Init to MPI_Finalize with
 *
 *	mpirun -x LD_PRELOAD=libparq-mpi.so.1 -x PARQ_MPI_RATE=15mbit ... app
 *
 * $PARQ_MPI_RATE is a tc rate ("15mbit", "1gbit") or bits/s; a refusal is
 * reported on rank 0's standard error and the program runs without it.
 * $PARQ_MPI_VERBOSE=1 reports what was admitted too.
 */
#ifndef PARQ_MPI_H
#define PARQ_MPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PARQ_MPI_ERROR_SIZE 256
#define PARQ_MPI_JOB_SIZE 64

struct parq_mpi_status {
  int admitted;      /* 1 while the rate below is reserved */
  uint64_t rate_bps; /* for each ordered pair of distinct hosts */
  uint32_t hosts;    /* distinct hosts among the ranks */
  uint64_t flows;    /* hosts (hosts - 1) */
  char job[PARQ_MPI_JOB_SIZE];
  char error[PARQ_MPI_ERROR_SIZE]; /* why the last setting failed, or "" */
};

/*
 * The QoS keyval (made at its first call, after MPI_Init; MPI_KEYVAL_INVALID
 * before).  The attribute's value, when set, is a pointer to a uint64_t
 * rate in bits/s.
 */
int parq_mpi_keyval(void);

#ifdef __cplusplus
}
#endif

#endif /* PARQ_MPI_H */
