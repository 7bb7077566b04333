/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libparq: an application asks parqd for bandwidth across the cluster.
 *
 * A reservation is a rate from this host to another host of the cluster's
 * topology, for some of the traffic toward it (a match), admitted only if
 * every link on its path stays within what is reservable
 * (Documentation/admission.md).  parqd's admission role on this host
 * decides, installs the reserved class on the local parq qdisc, and holds
 * the reservation until it is released, parqd stops, or its etcd lease is
 * lost.  The library talks to parqd's Unix socket; parqd knows the caller
 * from the socket (SO_PEERCRED), so a process can neither reserve for
 * another user nor beyond its user's allowance.
 *
 *	struct parq_ctx *p = parq_open(NULL);
 *	struct parq_reservation r;
 *
 *	if (!p)
 *		return -1;
 *	if (parq_reserve(p, "n2", 100000000, "proto=udp,dport=5001", &r))
 *		fprintf(stderr, "parq: %s\n", parq_error(p));
 *	...
 *	parq_release(p, r.id);
 *	parq_close(p);
 *
 * Every call but parq_open() and parq_close() returns PARQ_OK (0) or a
 * negative enum parq_status; parq_error() then says what happened in a
 * sentence.  A struct parq_ctx is used by one thread at a time; threads may
 * each open their own.  Each call is one connection to parqd, blocking
 * for at most the handle's timeout.
 */
#ifndef PARQ_H
#define PARQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PARQ_API_VERSION 3

/* What parq_open(NULL) uses: $PARQ_ADMISSION_SOCKET, else this. */
#define PARQ_DEFAULT_SOCKET "/run/parqd/admission.sock"
#define PARQ_DEFAULT_TIMEOUT_MS 30000

enum parq_status {
  PARQ_OK = 0,
  /* A bad argument: nothing was asked. */
  PARQ_ERR_INVALID = -1,
  /* No parqd at the socket, or it did not answer in time. */
  PARQ_ERR_UNREACHABLE = -2,
  /* parqd said no: a full link, the allowance, an unknown host or id. */
  PARQ_ERR_DENIED = -3,
  /* parqd's answer is not one this library reads. */
  PARQ_ERR_REPLY = -4,
  /* Out of memory. */
  PARQ_ERR_NOMEM = -5,
  /* parq_list(): more reservations than the array holds. */
  PARQ_ERR_RANGE = -6,
};

/* Sizes of the strings below, their terminating NUL included. */
#define PARQ_ID_SIZE 96
#define PARQ_HOST_SIZE 64
#define PARQ_MATCH_SIZE 64
#define PARQ_OWNER_SIZE 64

struct parq_reservation {
  char id[PARQ_ID_SIZE];     /* "FROM-<16 hex digits>" */
  char from[PARQ_HOST_SIZE]; /* this host, as the topology names it */
  char to[PARQ_HOST_SIZE];
  uint64_t rate_bps;           /* bits per second */
  char match[PARQ_MATCH_SIZE]; /* "" for all traffic to @to */
  char owner[PARQ_OWNER_SIZE]; /* the user who asked */
};

struct parq_ctx;

/*
 * A handle for parqd's socket at @socket_path (NULL: the default above).
 * Nothing is connected yet.  NULL when out of memory or @socket_path is
 * not a Unix socket path (empty or longer than 107 bytes).
 */
struct parq_ctx* parq_open(const char* socket_path);
void parq_close(struct parq_ctx* p);

/* How long each call waits for parqd's answer; @ms > 0. */
int parq_set_timeout(struct parq_ctx* p, int ms);

/* The last call's outcome as a sentence ("" after success). */
const char* parq_error(const struct parq_ctx* p);
/* A status's name, such as "PARQ_ERR_DENIED". */
const char* parq_status_name(int status);

/*
 * Reserves @rate_bps toward host @to (a host's name or one of its addresses
 * in the topology) for the traffic @match selects: NULL or "" for all of
 * it, else comma-separated proto=udp|tcp, dport=N, sport=N (ports need
 * proto).  On PARQ_OK, @out (if not NULL) is the reservation.
 */
int parq_reserve(struct parq_ctx* p, const char* to, uint64_t rate_bps,
                 const char* match, struct parq_reservation* out);

/*
 * parq_reserve(), and the rates between which parqd may move it when its
 * configuration has [admission] adapt on (since PARQ_API_VERSION 3): down
 * to @min_bps while it leaves most of its rate unused, up to @max_bps
 * while it is choked (0: parqd's defaults, adapt-floor of @rate_bps and
 * @rate_bps).  parq_query() says the rate it has now.
 */
int parq_reserve_adaptive(struct parq_ctx* p, const char* to, uint64_t rate_bps,
                          uint64_t min_bps, uint64_t max_bps, const char* match,
                          struct parq_reservation* out);

/* Changes reservation @id's rate, admitted as a new one would be. */
int parq_change(struct parq_ctx* p, const char* id, uint64_t rate_bps,
                struct parq_reservation* out);

/* Releases reservation @id; its capacity is free at once. */
int parq_release(struct parq_ctx* p, const char* id);

/* Reservation @id, which this host holds. */
int parq_query(struct parq_ctx* p, const char* id,
               struct parq_reservation* out);

/*
 * This host's reservations, every user's: up to @max into @out, their
 * number into *@count.  PARQ_ERR_RANGE if there are more than @max
 * (*@count then says how many there are).
 */
int parq_list(struct parq_ctx* p, struct parq_reservation* out, size_t max,
              size_t* count);

/*
 * Jobs admitted as a whole (since PARQ_API_VERSION 2): a rate for every
 * ordered pair of distinct hosts among a job's hosts, admitted all or
 * nothing across the cluster (Documentation/admission.md, "Jobs admitted
 * as a whole").  One process on each host of the job joins it, naming its
 * leader; then the leader's reserves it; each host then carries its
 * flows toward every other host of the job, for the sockets of the user
 * who joined.  A process in Slurm job N names its jobs N or N.NAME.
 *
 *	on every host:	parq_job_join(p, "42.world", "n1", 50000000);
 *	on n1:		parq_job_reserve(p, "42.world", hosts, 4, 50000000,
 *					 NULL, &job);
 *	on every host:	parq_job_query(p, "42.world", &job);  (installs now)
 *	at the end:	parq_job_release(p, "42.world");      (each host)
 */
#define PARQ_JOB_SIZE 64

struct parq_job {
  char name[PARQ_JOB_SIZE];
  char leader[PARQ_HOST_SIZE];
  char owner[PARQ_OWNER_SIZE];
  uint64_t rate_bps; /* each ordered pair of distinct hosts */
  uint64_t flows;    /* n (n - 1) for n hosts */
  uint32_t hosts;    /* the job's hosts */
  uint32_t joined;   /* of which have joined it: their flows are reserved */
};

/*
 * This host's consent to carry its part of job @name, led by @leader, for
 * flows of at most @max_rate_bps (0: any); joining again changes it.
 */
int parq_job_join(struct parq_ctx* p, const char* name, const char* leader,
                  uint64_t max_rate_bps);

/*
 * On the leader: admits job @name of the @n hosts @hosts (names or
 * addresses in the topology), each of which has joined it, at @rate_bps
 * for each ordered pair; @match as parq_reserve()'s.
 */
int parq_job_reserve(struct parq_ctx* p, const char* name,
                     const char* const* hosts, size_t n, uint64_t rate_bps,
                     const char* match, struct parq_job* out);

/* On the leader: the job's new rate for each pair, admitted the same way. */
int parq_job_change(struct parq_ctx* p, const char* name, uint64_t rate_bps,
                    struct parq_job* out);

/* Job @name as admitted, once this host carries its flows of it. */
int parq_job_query(struct parq_ctx* p, const char* name, struct parq_job* out);

/*
 * Ends what this host has of job @name: the job if this host leads it,
 * and this host's consent (its flows of the job end).  Also releases this
 * host's reservations made for Slurm job @name, if it is one.
 */
int parq_job_release(struct parq_ctx* p, const char* name);

#ifdef __cplusplus
}
#endif

#endif /* PARQ_H */
