/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel glue's unit tests: a test is a function in a file compiled
 * against the kernel's headers, registered by KTEST(), run by ktest_main.c
 * (compiled against the C library).  This header is included on both
 * sides, so it uses nothing but C's own types.
 */
#ifndef _PARQ_KTEST_H
#define _PARQ_KTEST_H

struct ktest {
	const char *name;
	void (*fn)(void);
	struct ktest *next;
};

void ktest_register(struct ktest *t);
/* Record a failure of the running test; it returns right after. */
void ktest_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Is the running test failed? */
int ktest_failed(void);
/*
 * After each test: the module's state goes (its tables, its namespace's
 * data), so that a test that fails leaves nothing to the next.
 */
void ktest_teardown(void);
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define KTEST(name)							\
	static void ktest_fn_##name(void);				\
	static struct ktest ktest_##name = { #name, ktest_fn_##name, 0 }; \
	static void __attribute__((constructor)) ktest_reg_##name(void) \
	{								\
		ktest_register(&ktest_##name);				\
	}								\
	static void ktest_fn_##name(void)

#define KT_ASSERT(cond) do {						\
	if (!(cond)) {							\
		ktest_fail(__FILE__, __LINE__, "%s", #cond);		\
		return;							\
	}								\
} while (0)

#define KT_ASSERT_EQ(a, b) do {						\
	long long __a = (long long)(a), __b = (long long)(b);		\
	if (__a != __b) {						\
		ktest_fail(__FILE__, __LINE__, "%s == %lld, want %s == %lld", \
			   #a, __a, #b, __b);				\
		return;							\
	}								\
} while (0)

#endif /* _PARQ_KTEST_H */
