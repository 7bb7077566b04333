// SPDX-License-Identifier: GPL-2.0
/*
 * test-print.so: an LD_PRELOAD shim that stands in for the kernel's side of
 * rtnetlink so that the unmodified tc binary can drive q_parq.so on a host
 * without the sch_parq module (used by test-plugin.sh only):
 *
 *  PARQ_TEST_CAPTURE=FILE  qdisc/class add, change, replace and delete
 *                          requests are appended to FILE instead of being
 *                          sent; tc gets an ACK carrying PARQ_TEST_ERRNO
 *                          (default 0, i.e. success).  Nothing reaches the
 *                          kernel.
 *  PARQ_TEST_DUMP=FILE     a qdisc or class dump request is answered with
 *                          the netlink messages in FILE (their seq and pid
 *                          are filled in here), followed by NLMSG_DONE.
 *
 * Every other netlink message (link lookups, ...) goes to the kernel.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_recvmsg)(int, struct msghdr *, int);

static int pending_fd = -1;
static char *pending;
static size_t pending_len;

static void resolve(void)
{
	if (!real_sendmsg)
		real_sendmsg = (ssize_t (*)(int, const struct msghdr *, int))
			dlsym(RTLD_NEXT, "sendmsg");
	if (!real_recvmsg)
		real_recvmsg = (ssize_t (*)(int, struct msghdr *, int))
			dlsym(RTLD_NEXT, "recvmsg");
}

static __u32 local_pid(int fd)
{
	struct sockaddr_nl sa;
	socklen_t len = sizeof(sa);

	memset(&sa, 0, sizeof(sa));
	if (getsockname(fd, (struct sockaddr *)&sa, &len) ||
	    sa.nl_family != AF_NETLINK)
		return 0;
	return sa.nl_pid;
}

static void queue(int fd, char *buf, size_t len)
{
	free(pending);
	pending = buf;
	pending_len = len;
	pending_fd = fd;
}

/* The request, gathered from its iovecs. */
static char *gather(const struct msghdr *msg, size_t *lenp)
{
	size_t len = 0, off = 0, i;
	char *buf;

	for (i = 0; i < msg->msg_iovlen; i++)
		len += msg->msg_iov[i].iov_len;
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	for (i = 0; i < msg->msg_iovlen; i++) {
		memcpy(buf + off, msg->msg_iov[i].iov_base,
		       msg->msg_iov[i].iov_len);
		off += msg->msg_iov[i].iov_len;
	}
	*lenp = len;
	return buf;
}

static ssize_t capture(int fd, const struct msghdr *msg, const char *path)
{
	const char *e = getenv("PARQ_TEST_ERRNO");
	struct nlmsghdr *req, *ack;
	struct nlmsgerr *err;
	size_t len;
	char *buf;
	FILE *f;

	buf = gather(msg, &len);
	req = (struct nlmsghdr *)buf;
	f = fopen(path, "ab");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror("test-print: capture");
		exit(99);
	}

	ack = calloc(1, NLMSG_SPACE(sizeof(*err)));
	if (!ack)
		abort();
	ack->nlmsg_len = NLMSG_LENGTH(sizeof(*err));
	ack->nlmsg_type = NLMSG_ERROR;
	ack->nlmsg_seq = req->nlmsg_seq;
	ack->nlmsg_pid = local_pid(fd);
	err = NLMSG_DATA(ack);
	err->error = e ? -atoi(e) : 0;
	memcpy(&err->msg, req, sizeof(*req));
	free(buf);
	queue(fd, (char *)ack, ack->nlmsg_len);
	return (ssize_t)len;
}

static ssize_t dump(int fd, const struct nlmsghdr *req, size_t req_len,
		    const char *path)
{
	struct nlmsghdr *h, *done;
	size_t len = 0, cap = 4096, off;
	char *buf;
	FILE *f;

	buf = malloc(cap);
	f = fopen(path, "rb");
	if (!buf || !f) {
		perror("test-print: dump");
		exit(99);
	}
	for (;;) {
		size_t n;

		if (cap - len < 1024) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		n = fread(buf + len, 1, cap - len - NLMSG_SPACE(sizeof(int)),
			  f);
		if (!n)
			break;
		len += n;
	}
	fclose(f);

	for (off = 0; off + sizeof(*h) <= len; off += NLMSG_ALIGN(h->nlmsg_len)) {
		h = (struct nlmsghdr *)(buf + off);
		if (h->nlmsg_len < sizeof(*h))
			break;
		h->nlmsg_seq = req->nlmsg_seq;
		h->nlmsg_pid = local_pid(fd);
		h->nlmsg_flags |= NLM_F_MULTI;
	}
	len = off;

	done = (struct nlmsghdr *)(buf + len);
	memset(done, 0, NLMSG_SPACE(sizeof(int)));
	done->nlmsg_len = NLMSG_LENGTH(sizeof(int));
	done->nlmsg_type = NLMSG_DONE;
	done->nlmsg_flags = NLM_F_MULTI;
	done->nlmsg_seq = req->nlmsg_seq;
	done->nlmsg_pid = local_pid(fd);
	len += NLMSG_SPACE(sizeof(int));

	queue(fd, buf, len);
	return (ssize_t)req_len;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	const struct nlmsghdr *n;
	const char *path;
	size_t len = 0, i;

	resolve();
	if (msg->msg_iovlen < 1 ||
	    msg->msg_iov[0].iov_len < sizeof(struct nlmsghdr))
		return real_sendmsg(fd, msg, flags);
	for (i = 0; i < msg->msg_iovlen; i++)
		len += msg->msg_iov[i].iov_len;
	n = msg->msg_iov[0].iov_base;

	switch (n->nlmsg_type) {
	case RTM_NEWQDISC:
	case RTM_DELQDISC:
	case RTM_NEWTCLASS:
	case RTM_DELTCLASS:
		path = getenv("PARQ_TEST_CAPTURE");
		if (path && local_pid(fd))
			return capture(fd, msg, path);
		break;
	case RTM_GETQDISC:
	case RTM_GETTCLASS:
		path = getenv("PARQ_TEST_DUMP");
		if (path && (n->nlmsg_flags & NLM_F_DUMP) && local_pid(fd))
			return dump(fd, n, len, path);
		break;
	}
	return real_sendmsg(fd, msg, flags);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	size_t cap, n;
	ssize_t ret;

	resolve();
	if (fd != pending_fd || !pending)
		return real_recvmsg(fd, msg, flags);

	if (msg->msg_name && msg->msg_namelen >= sizeof(struct sockaddr_nl)) {
		struct sockaddr_nl *sa = msg->msg_name;

		memset(sa, 0, sizeof(*sa));
		sa->nl_family = AF_NETLINK;
		msg->msg_namelen = sizeof(*sa);
	}
	cap = msg->msg_iovlen ? msg->msg_iov[0].iov_len : 0;
	n = pending_len < cap ? pending_len : cap;
	if (n)
		memcpy(msg->msg_iov[0].iov_base, pending, n);
	msg->msg_flags = pending_len > cap ? MSG_TRUNC : 0;
	msg->msg_controllen = 0;
	ret = (flags & MSG_TRUNC) ? (ssize_t)pending_len : (ssize_t)n;
	if (!(flags & MSG_PEEK)) {
		free(pending);
		pending = NULL;
		pending_fd = -1;
	}
	return ret;
}
