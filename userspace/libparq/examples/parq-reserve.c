// SPDX-License-Identifier: GPL-2.0
/*
 * An application's use of libparq (parq.h): reserve a rate toward a host
 * for a phase of work, look at it, change it, and release it.
 *
 *	parq-reserve HOST RATE_BPS [MATCH [SECONDS [NEW_RATE_BPS]]]
 *
 * holds the reservation for SECONDS (default 0), changing its rate to
 * NEW_RATE_BPS half way if given.  An MPI program does the same around a
 * communication phase (or a PMPI shim in MPI_Init and MPI_Finalize).
 * Build: cc parq-reserve.c $(pkg-config --cflags --libs parq)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <parq.h>

static int number(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end || *s == '-' ? -1 : 0;
}

static void show(const char *what, const struct parq_reservation *r)
{
	printf("%s %s: %s -> %s %" PRIu64 " bit/s, match \"%s\", owner %s\n",
	       what, r->id, r->from, r->to, r->rate_bps, r->match, r->owner);
}

int main(int argc, char **argv)
{
	struct parq_reservation r;
	uint64_t rate, seconds = 0, new_rate = 0;
	struct parq_ctx *p;
	int rc;

	if (argc < 3 || argc > 6 || number(argv[2], &rate) ||
	    (argc > 4 && number(argv[4], &seconds)) ||
	    (argc > 5 && number(argv[5], &new_rate))) {
		fprintf(stderr, "usage: %s HOST RATE_BPS [MATCH [SECONDS "
			"[NEW_RATE_BPS]]]\n", argv[0]);
		return 2;
	}
	p = parq_open(NULL);
	if (!p) {
		fprintf(stderr, "parq_open: out of memory or a bad "
			"PARQ_ADMISSION_SOCKET\n");
		return 1;
	}
	rc = parq_reserve(p, argv[1], rate, argc > 3 ? argv[3] : NULL, &r);
	if (rc) {
		fprintf(stderr, "parq_reserve: %s: %s\n", parq_status_name(rc),
			parq_error(p));
		parq_close(p);
		return 1;
	}
	show("reserved", &r);
	sleep((unsigned int)(seconds / 2));
	if (new_rate) {
		rc = parq_change(p, r.id, new_rate, &r);
		if (rc)
			fprintf(stderr, "parq_change: %s: %s\n",
				parq_status_name(rc), parq_error(p));
		else
			show("changed", &r);
	}
	sleep((unsigned int)(seconds - seconds / 2));
	rc = parq_query(p, r.id, &r);
	if (rc)
		fprintf(stderr, "parq_query: %s: %s\n", parq_status_name(rc),
			parq_error(p));
	else
		show("held", &r);
	rc = parq_release(p, r.id);
	if (rc)
		fprintf(stderr, "parq_release: %s: %s\n", parq_status_name(rc),
			parq_error(p));
	else
		printf("released %s\n", r.id);
	parq_close(p);
	return rc ? 1 : 0;
}
