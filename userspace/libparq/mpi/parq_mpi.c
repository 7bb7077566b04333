// SPDX-License-Identifier: GPL-2.0
/*
 * libparq-mpi (parq_mpi.h): the QoS attribute of a communicator, admitted
 * as a job of libparq across the communicator's hosts, and the PMPI
 * wrappers that make it work for an unmodified program.
 *
 * Setting the attribute runs, on every rank of the communicator:
 *   1. the ranks' host names are gathered; the first rank of each host
 *      speaks for it, rank 0's host leads the job, rank 0 names it;
 *   2. each host's first rank joins the job (parq_job_join);
 *   3. rank 0 reserves it (parq_job_reserve) or changes its rate;
 *   4. each host's first rank asks for it (parq_job_query), so that its
 *      parqd installs its flows before the setting returns.
 * After each step every rank learns whether all succeeded and, if not,
 * the first failing rank's reason; a failure undoes what was done.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <parq.h>

#include "parq_mpi.h"

struct qos {
	struct parq_mpi_status st;	/* first: what MPI_Comm_get_attr gives */
	struct qos *next;		/* every qos this library made */
	int speaks;			/* this rank speaks for its host */
	int joined;			/* its host has joined the job */
	int rank;
	char leader[PARQ_HOST_SIZE];	/* rank 0's host */
	char (*hosts)[PARQ_HOST_SIZE];	/* rank 0: the distinct hosts */
};

static int qos_keyval = MPI_KEYVAL_INVALID;
static unsigned int qos_jobs;	/* rank 0's jobs so far, for their names */
/*
 * What this library made: a value stored under its keyval some other way
 * (MPI_Attr_put, Fortran) is not one, and is neither read nor freed.
 */
static struct qos *qos_made;

static int qos_forget(struct qos *q)
{
	struct qos **at;

	for (at = &qos_made; *at; at = &(*at)->next) {
		if (*at == q) {
			*at = q->next;
			return 1;
		}
	}
	return 0;
}

static int parse_rate(const char *text, uint64_t *bps)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {
		{ "", 1 }, { "bit", 1 }, { "kbit", 1e3 }, { "mbit", 1e6 },
		{ "gbit", 1e9 }, { "tbit", 1e12 },
	};
	char *end;
	double v;
	size_t i;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || !(v > 0))	/* NaN too */
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0) {
			v *= units[i].scale;
			if (v < 1 || v > 9.2e18)
				return -1;
			*bps = (uint64_t)v;
			return 0;
		}
	}
	return -1;
}

static void host_name(char out[PARQ_HOST_SIZE])
{
	const char *env = getenv("PARQ_HOST");

	memset(out, 0, PARQ_HOST_SIZE);
	if (env && *env)
		snprintf(out, PARQ_HOST_SIZE, "%s", env);
	else if (gethostname(out, PARQ_HOST_SIZE - 1))
		snprintf(out, PARQ_HOST_SIZE, "localhost");
}

/*
 * Whether every rank's @rc is PARQ_OK; if not, @why becomes the first
 * failing rank's reason (its @reason) on every rank.  Collective.
 */
static int agree(MPI_Comm comm, const struct qos *q, int rc,
		 const char *reason, char why[PARQ_MPI_ERROR_SIZE])
{
	int size, mine, first;

	PMPI_Comm_size(comm, &size);
	mine = rc == PARQ_OK ? size : q->rank;
	PMPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
	if (first == size)
		return 0;
	if (q->rank == first)
		snprintf(why, PARQ_MPI_ERROR_SIZE, "%s", reason);
	PMPI_Bcast(why, PARQ_MPI_ERROR_SIZE, MPI_CHAR, first, comm);
	why[PARQ_MPI_ERROR_SIZE - 1] = '\0';
	return -1;
}

/* What this rank's call asks of its parqd: a handle, used once. */
static int ask(int (*call)(struct parq_ctx *, const struct qos *),
	       const struct qos *q, char reason[PARQ_MPI_ERROR_SIZE])
{
	struct parq_ctx *p = parq_open(NULL);
	int rc;

	if (!p) {
		snprintf(reason, PARQ_MPI_ERROR_SIZE,
			 "libparq: bad $PARQ_ADMISSION_SOCKET");
		return PARQ_ERR_INVALID;
	}
	rc = call(p, q);
	if (rc)
		snprintf(reason, PARQ_MPI_ERROR_SIZE, "%s: %s", q->st.job,
			 parq_error(p));
	parq_close(p);
	return rc;
}

/* Joins, or joins again, agreeing to flows of up to the rate asked. */
static int do_join(struct parq_ctx *p, const struct qos *q)
{
	return parq_job_join(p, q->st.job, q->leader, q->st.rate_bps);
}

static int do_reserve(struct parq_ctx *p, const struct qos *q)
{
	const char **hosts = calloc(q->st.hosts, sizeof(*hosts));
	uint32_t i;
	int rc;

	if (!hosts)
		return PARQ_ERR_NOMEM;
	for (i = 0; i < q->st.hosts; i++)
		hosts[i] = q->hosts[i];
	rc = parq_job_reserve(p, q->st.job, hosts, q->st.hosts,
			      q->st.rate_bps, NULL, NULL);
	free(hosts);
	return rc;
}

static int do_change(struct parq_ctx *p, const struct qos *q)
{
	return parq_job_change(p, q->st.job, q->st.rate_bps, NULL);
}

static int do_query(struct parq_ctx *p, const struct qos *q)
{
	return parq_job_query(p, q->st.job, NULL);
}

static int do_release(struct parq_ctx *p, const struct qos *q)
{
	return parq_job_release(p, q->st.job);
}

/*
 * Ends this host's part of the job: not collective (a communicator's
 * attributes are deleted rank by rank).
 */
static void leave(struct qos *q)
{
	char reason[PARQ_MPI_ERROR_SIZE];

	if (q->speaks && q->joined)
		ask(do_release, q, reason);
	q->joined = 0;
	q->st.admitted = 0;
	q->st.rate_bps = 0;
}

/*
 * The hosts of @comm's ranks, the job's name and who speaks.  Collective;
 * -1 on every rank if memory ran out on one.
 */
static int describe(MPI_Comm comm, struct qos *q)
{
	char me[PARQ_HOST_SIZE];
	char (*all)[PARQ_HOST_SIZE];
	int size, i, j, n = 0, ok, all_ok;

	PMPI_Comm_rank(comm, &q->rank);
	PMPI_Comm_size(comm, &size);
	host_name(me);
	all = calloc((size_t)size, PARQ_HOST_SIZE);
	q->hosts = calloc((size_t)size, PARQ_HOST_SIZE);
	ok = all && q->hosts;
	PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
	if (!all_ok) {
		free(all);
		free(q->hosts);
		q->hosts = NULL;
		return -1;
	}
	PMPI_Allgather(me, PARQ_HOST_SIZE, MPI_CHAR, all, PARQ_HOST_SIZE,
		       MPI_CHAR, comm);
	for (i = 0; i < size; i++) {
		all[i][PARQ_HOST_SIZE - 1] = '\0';
		for (j = 0; j < n; j++)
			if (strcmp(q->hosts[j], all[i]) == 0)
				break;
		if (j == n)
			memcpy(q->hosts[n++], all[i], PARQ_HOST_SIZE);
	}
	/* The first rank of each host speaks for it. */
	for (i = 0; i < q->rank; i++)
		if (strcmp(all[i], me) == 0)
			break;
	q->speaks = i == q->rank;
	memcpy(q->leader, all[0], PARQ_HOST_SIZE);
	q->st.hosts = (uint32_t)n;
	q->st.flows = (uint64_t)n * (uint64_t)(n - 1);
	free(all);
	if (q->rank == 0) {
		/*
		 * Unique in the cluster: rank 0's process and its own count
		 * (communicators split from one have other rank 0s), and in a
		 * Slurm job its step and rank in MPI_COMM_WORLD.
		 */
		const char *slurm = getenv("SLURM_JOB_ID");
		const char *step = getenv("SLURM_STEP_ID");
		int world;

		PMPI_Comm_rank(MPI_COMM_WORLD, &world);
		qos_jobs++;
		if (slurm && *slurm)
			snprintf(q->st.job, sizeof(q->st.job), "%s.%s%smpi%d-%u",
				 slurm, step && *step ? step : "",
				 step && *step ? "." : "", world, qos_jobs);
		else
			snprintf(q->st.job, sizeof(q->st.job), "mpi-%.32s-%ld-%u",
				 q->leader, (long)getpid(), qos_jobs);
	}
	PMPI_Bcast(q->st.job, sizeof(q->st.job), MPI_CHAR, 0, comm);
	q->st.job[sizeof(q->st.job) - 1] = '\0';
	return 0;
}

/* Reserves, changes or releases @rate for @comm's job.  Collective. */
static void negotiate(MPI_Comm comm, struct qos *q, uint64_t rate)
{
	char reason[PARQ_MPI_ERROR_SIZE] = "";
	uint64_t old = q->st.rate_bps;
	int rc = PARQ_OK;

	q->st.error[0] = '\0';
	if (rate == 0) {
		leave(q);
		return;
	}
	if (q->st.hosts < 2) {	/* one host: nothing crosses the network */
		q->st.admitted = 1;
		q->st.rate_bps = rate;
		return;
	}
	if (!q->st.admitted) {
		q->st.rate_bps = rate;
		if (q->speaks && !q->joined)
			rc = ask(do_join, q, reason);
		q->joined = q->speaks && rc == PARQ_OK;
		if (agree(comm, q, rc, reason, q->st.error))
			goto undo;
		rc = q->rank == 0 ? ask(do_reserve, q, reason) : PARQ_OK;
		if (agree(comm, q, rc, reason, q->st.error))
			goto undo;
	} else {
		q->st.rate_bps = rate;
		/* Each host agrees to the higher rate first. */
		if (rate > old) {
			rc = q->speaks ? ask(do_join, q, reason) : PARQ_OK;
			if (agree(comm, q, rc, reason, q->st.error)) {
				q->st.rate_bps = old;
				return;
			}
		}
		rc = q->rank == 0 ? ask(do_change, q, reason) : PARQ_OK;
		if (agree(comm, q, rc, reason, q->st.error)) {
			q->st.rate_bps = old;	/* the old rate stays */
			return;
		}
	}
	rc = q->speaks ? ask(do_query, q, reason) : PARQ_OK;
	if (agree(comm, q, rc, reason, q->st.error))
		goto undo;
	q->st.admitted = 1;
	return;
undo:
	leave(q);
}

static int qos_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
	struct qos *q = value;

	(void)comm;
	(void)keyval;
	(void)extra;
	if (!qos_forget(q))
		return MPI_SUCCESS;
	leave(q);
	free(q->hosts);
	free(q);
	return MPI_SUCCESS;
}

int parq_mpi_keyval(void)
{
	int up = 0;

	if (qos_keyval == MPI_KEYVAL_INVALID &&
	    PMPI_Initialized(&up) == MPI_SUCCESS && up)
		PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, qos_delete,
					&qos_keyval, NULL);
	return qos_keyval;
}

int MPI_Comm_set_attr(MPI_Comm comm, int keyval, void *value)
{
	struct qos *q;
	uint64_t rate;
	int found = 0, inter = 0;

	if (keyval == MPI_KEYVAL_INVALID || keyval != qos_keyval)
		return PMPI_Comm_set_attr(comm, keyval, value);
	/* Rank 0 of an intercommunicator's group is no root of the whole. */
	if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
		return MPI_ERR_COMM;
	rate = value ? *(const uint64_t *)value : 0;
	/* Rank 0's rate: the setting is collective. */
	PMPI_Bcast(&rate, 1, MPI_UINT64_T, 0, comm);
	PMPI_Comm_get_attr(comm, keyval, &q, &found);
	if (found && !qos_forget(q))
		found = 0;	/* not this library's: replaced */
	if (!found) {
		int made, all_made;

		q = calloc(1, sizeof(*q));
		made = q != NULL;
		PMPI_Allreduce(&made, &all_made, 1, MPI_INT, MPI_MIN, comm);
		if (!all_made || describe(comm, q)) {
			free(q);
			return MPI_ERR_NO_MEM;
		}
		q->next = qos_made;
		qos_made = q;
		negotiate(comm, q, rate);
		return PMPI_Comm_set_attr(comm, keyval, q);
	}
	q->next = qos_made;	/* qos_forget() took it out */
	qos_made = q;
	negotiate(comm, q, rate);
	return MPI_SUCCESS;
}

/*
 * $PARQ_MPI_RATE: a reservation for MPI_COMM_WORLD, from here on.  Rank
 * 0's environment decides, so that every rank takes the same way.
 */
static void reserve_from_env(void)
{
	const char *text = getenv("PARQ_MPI_RATE");
	const char *verbose = getenv("PARQ_MPI_VERBOSE");
	struct parq_mpi_status *st;
	uint64_t rate = 0;
	int rank, found = 0;

	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0 && text && *text && parse_rate(text, &rate)) {
		fprintf(stderr,
			"parq: PARQ_MPI_RATE=%s is not a rate (give e.g. 15mbit or bits/s); nothing reserved\n",
			text);
		rate = 0;
	}
	PMPI_Bcast(&rate, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (rate == 0)
		return;
	MPI_Comm_set_attr(MPI_COMM_WORLD, parq_mpi_keyval(), &rate);
	PMPI_Comm_get_attr(MPI_COMM_WORLD, parq_mpi_keyval(), &st, &found);
	if (rank != 0 || !found)
		return;
	if (!st->admitted)
		fprintf(stderr, "parq: nothing reserved: %s\n", st->error);
	else if (verbose && strcmp(verbose, "1") == 0)
		fprintf(stderr,
			"parq: job %s admitted: %llu bit/s for each of %llu flows among %u hosts\n",
			st->job, (unsigned long long)st->rate_bps,
			(unsigned long long)st->flows, st->hosts);
}

int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);

	if (rc == MPI_SUCCESS)
		reserve_from_env();
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);

	if (rc == MPI_SUCCESS)
		reserve_from_env();
	return rc;
}

/*
 * MPI_COMM_WORLD's attribute ends here (MPI deletes MPI_COMM_SELF's only),
 * and so do those of communicators never freed: each rank ends its part.
 */
int MPI_Finalize(void)
{
	struct qos *q;
	void *value;
	int found = 0;

	for (q = qos_made; q; q = q->next)
		leave(q);
	if (qos_keyval != MPI_KEYVAL_INVALID) {
		PMPI_Comm_get_attr(MPI_COMM_WORLD, qos_keyval, &value, &found);
		if (found)
			PMPI_Comm_delete_attr(MPI_COMM_WORLD, qos_keyval);
		PMPI_Comm_free_keyval(&qos_keyval);
	}
	return PMPI_Finalize();
}
