/* SPDX-License-Identifier: GPL-2.0 */
/* parq receive monitor: see parq_monitor.c. */
#ifndef _PARQ_MONITOR_H
#define _PARQ_MONITOR_H

int parq_monitor_init(void);
void parq_monitor_exit(void);

#endif /* _PARQ_MONITOR_H */
