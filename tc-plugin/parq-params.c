// SPDX-License-Identifier: GPL-2.0
/*
 * parq-params: prints sch_parq's parameter table (<parq/params.h>) and the
 * DSCP names as JSON, for the selftests' harness (scripts/parqlab/params.py),
 * so that it takes the parameters from the one table.  Not installed.
 */
#include <stdio.h>
#include <string.h>

#include <linux/parq.h>
#include <parq/params.h>

static const char *const parq_types[] = {
	[PARQ_U8] = "u8", [PARQ_U32] = "u32", [PARQ_S32] = "s32",
	[PARQ_U64] = "u64",
};

static const char *const parq_syntaxes[] = {
	[PARQ_SYN_NUMBER] = "number", [PARQ_SYN_PERCENT] = "percent",
	[PARQ_SYN_RATE] = "rate", [PARQ_SYN_NAMES] = "names",
	[PARQ_SYN_FLAG] = "flag", [PARQ_SYN_DSCP] = "dscp",
	[PARQ_SYN_DSCP_SET] = "dscp-set",
};

/* A JSON string, or null; the table's strings need no escapes. */
static void json_str(const char *s)
{
	if (s)
		printf("\"%s\"", s);
	else
		fputs("null", stdout);
}

static void json_names(const char *const *names)
{
	const char *sep = "";

	if (!names) {
		fputs("[]", stdout);
		return;
	}
	putchar('[');
	for (; *names; names++, sep = ", ") {
		fputs(sep, stdout);
		json_str(*names);
	}
	putchar(']');
}

#define PARQ_NAMES(...)		((const char *const[]){ __VA_ARGS__, NULL })
#define PARQ_NO_NAMES		NULL
#define PARQ_ROW(attr, field, kw, type, syn, meta, min, max, dflt, word,	\
		 wval, names, msg)					\
	do {								\
		printf("%s{\"attr\": %d, \"keyword\": ", sep, attr);	\
		json_str(kw);						\
		printf(", \"type\": \"%s\", \"syntax\": \"%s\", \"meta\": ", \
		       parq_types[type], parq_syntaxes[syn]);		\
		json_str(meta);						\
		printf(", \"min\": %lld, \"max\": %llu, \"default\": %lld", \
		       (long long)(min), (unsigned long long)(max),	\
		       (long long)(dflt));				\
		fputs(", \"word\": ", stdout);				\
		json_str(word);						\
		printf(", \"word_value\": %lld, \"accept_min\": %lld"	\
		       ", \"accept_max\": %llu, \"names\": ",		\
		       (long long)(wval),				\
		       (long long)PARQ_PARAM_LO(min, wval),		\
		       (unsigned long long)PARQ_PARAM_HI(max, wval));	\
		json_names(names);					\
		fputs(", \"message\": ", stdout);			\
		json_str(msg);						\
		putchar('}');						\
		sep = ",\n  ";						\
	} while (0);
#define PARQ_DSCP_ROW(name, dscp)					\
	do {								\
		printf("%s\"%s\": %d", sep, name, dscp);		\
		sep = ", ";						\
	} while (0);

int main(void)
{
	const char *sep = "";

	fputs("{\"params\": [\n  ", stdout);
	PARQ_PARAMS(PARQ_ROW)
	fputs("],\n \"dscp_names\": {", stdout);
	sep = "";
	PARQ_DSCP_NAMES(PARQ_DSCP_ROW)
	fputs("}}\n", stdout);
	return ferror(stdout) ? 1 : 0;
}
