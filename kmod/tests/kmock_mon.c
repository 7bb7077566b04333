// SPDX-License-Identifier: GPL-2.0
/*
 * What the receive monitor (parq_monitor.c) calls of the kernel, as a model
 * for the unit tests: one possible CPU whose per-CPU offset is 0, hooks
 * recorded so that a test can pass packets through them, and hrtimers that
 * fire when the test says (kmock_fire_timers()).
 */
#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/netfilter.h>
#include <linux/percpu.h>
#include <linux/sort.h>

#include "kmock.h"

/* --- one CPU ------------------------------------------------------------ */

unsigned int nr_cpu_ids = 1;
struct cpumask __cpu_possible_mask = { .bits = { 1 } };
unsigned long __per_cpu_offset[NR_CPUS];
DEFINE_PER_CPU_READ_MOSTLY(unsigned long, this_cpu_off);

void __percpu *__alloc_percpu_gfp(size_t size, size_t align, gfp_t gfp)
{
	return (void __percpu *)kmock_zalloc(size);
}

void free_percpu(void __percpu *ptr)
{
	kvfree((void __force *)ptr);
}

unsigned int __bitmap_weight(const unsigned long *bitmap, unsigned int bits)
{
	unsigned int i, w = 0;

	for (i = 0; i < bits; i++)
		w += test_bit(i, bitmap);
	return w;
}

unsigned long _find_next_bit(const unsigned long *addr, unsigned long size,
			     unsigned long offset)
{
	for (; offset < size; offset++)
		if (test_bit(offset, addr))
			return offset;
	return size;
}

void _raw_spin_lock(raw_spinlock_t *lock)
{
}

void _raw_spin_unlock(raw_spinlock_t *lock)
{
}

bool __list_add_valid(struct list_head *new, struct list_head *prev,
		      struct list_head *next)
{
	return !WARN_ON(next->prev != prev || prev->next != next ||
			new == prev || new == next);
}

bool __list_del_entry_valid(struct list_head *entry)
{
	return !WARN_ON(entry->prev->next != entry ||
			entry->next->prev != entry);
}

/* Insertion sort: the monitor sorts a few hundred addresses at most. */
void sort(void *base, size_t num, size_t size,
	  cmp_func_t cmp, swap_func_t swap)
{
	char *a = base, tmp[64];
	size_t i, j;

	if (WARN_ON(size > sizeof(tmp)))
		return;
	for (i = 1; i < num; i++) {
		memcpy(tmp, a + i * size, size);
		for (j = i; j > 0 && cmp(a + (j - 1) * size, tmp) > 0; j--)
			memcpy(a + j * size, a + (j - 1) * size, size);
		memcpy(a + j * size, tmp, size);
	}
}

/* --- hooks and timers ------------------------------------------------- */

const struct nf_hook_ops *kmock_hooks;
unsigned int kmock_nhooks;

int nf_register_net_hooks(struct net *net, const struct nf_hook_ops *reg,
			  unsigned int n)
{
	kmock_hooks = reg;
	kmock_nhooks = n;
	return 0;
}

void nf_unregister_net_hooks(struct net *net, const struct nf_hook_ops *reg,
			     unsigned int n)
{
	if (WARN_ON(kmock_hooks != reg || kmock_nhooks != n))
		return;
	kmock_hooks = NULL;
	kmock_nhooks = 0;
}

#define KMOCK_TIMERS	8

static void *kmock_timers[KMOCK_TIMERS];	/* struct hrtimer * */

void hrtimer_init(struct hrtimer *timer, clockid_t clock,
		  enum hrtimer_mode mode)
{
	memset(timer, 0, sizeof(*timer));
}

void hrtimer_start_range_ns(struct hrtimer *timer, ktime_t tim,
			    u64 range_ns, const enum hrtimer_mode mode)
{
	hrtimer_set_expires(timer, tim);
	kmock_pending_add(kmock_timers, KMOCK_TIMERS, timer);
}

int hrtimer_cancel(struct hrtimer *timer)
{
	return kmock_pending_del(kmock_timers, KMOCK_TIMERS, timer);
}

unsigned int kmock_fire_timers(void)
{
	unsigned int i, n = 0;
	struct hrtimer *t;

	for (i = 0; i < KMOCK_TIMERS; i++) {
		t = kmock_timers[i];
		if (!t || ktime_to_ns(hrtimer_get_expires(t)) > kmock_now)
			continue;
		kmock_timers[i] = NULL;
		n++;
		if (t->function(t) == HRTIMER_RESTART)
			kmock_timers[i] = t;
	}
	return n;
}
