// SPDX-License-Identifier: GPL-2.0
/*
 * The runner of the kernel glue's unit tests: every test registered by
 * KTEST(), or those whose name contains one of the arguments, each in
 * order of registration.  A WARN in the code under test executes ud2,
 * which the kernel would log and survive: here it is a failure.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ktest.h"

static struct ktest *ktest_head, **ktest_tail = &ktest_head;
static int ktest_cur_failed;
static const char *ktest_cur_name;

void ktest_register(struct ktest *t)
{
	*ktest_tail = t;
	ktest_tail = &t->next;
}

void ktest_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: %s: ", file, line, ktest_cur_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	ktest_cur_failed = 1;
}

int ktest_failed(void)
{
	return ktest_cur_failed;
}

static void ktest_on_ud2(int sig)
{
	static const char msg[] = "\nWARN or BUG (ud2) in the code under test, in ";
	static const char end[] = ": gdb shows where\n";
	const char *name = ktest_cur_name ? ktest_cur_name : "no test";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0 ||
	    write(2, name, strlen(name)) < 0 ||
	    write(2, end, sizeof(end) - 1) < 0)
		_exit(3);
	_exit(2);
}

static int ktest_selected(const struct ktest *t, int argc, char **argv)
{
	int i;

	if (argc < 2)
		return 1;
	for (i = 1; i < argc; i++)
		if (strstr(t->name, argv[i]))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	int run = 0, failed = 0;
	struct ktest *t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGILL, ktest_on_ud2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (t = ktest_head; t; t = t->next) {
		if (!ktest_selected(t, argc, argv))
			continue;
		ktest_cur_name = t->name;
		ktest_cur_failed = 0;
		t->fn();
		ktest_teardown();
		run++;
		if (ktest_cur_failed) {
			failed++;
			printf("FAIL %s\n", t->name);
		} else {
			printf("ok   %s\n", t->name);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%d tests, %d failed, %.0f ms\n", run, failed,
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	return failed || !run;
}
