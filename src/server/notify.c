// SPDX-License-Identifier: BSD-3-Clause
/*
 * Service readiness, the way systemd's sd_notify(3) reports it, without
 * libsystemd: one datagram of newline-separated "VAR=value" lines to the
 * AF_UNIX socket named by $NOTIFY_SOCKET (a path, or "@name" for the
 * abstract namespace). The socket is connected while the server still has
 * its privileges (before --user), so the permission check on the path is
 * done then; the datagrams go out later on the connected socket.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/server.h"

int vcxl_notify_open(const char *addr)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = addr ? strlen(addr) : 0;
	socklen_t salen;
	int fd;

	if (len < 2)
		return -EINVAL;
	if (addr[0] != '/' && addr[0] != '@')
		return -EAFNOSUPPORT; /* relative paths, "vsock:" addresses */
	if (len >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, addr, len);
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	if (addr[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract: the length bounds the name */
	else
		salen++; /* the path's NUL */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, salen) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* One non-blocking send of state (EINTR retried). */
static ssize_t send_now(int fd, const char *state, size_t len)
{
	ssize_t n;

	do
		n = send(fd, state, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	return n;
}

/*
 * Never blocks for longer than VCXL_NOTIFY_WAIT_MS: READY=1 goes out before
 * the loop runs, with SIGTERM blocked (the loop reads it from a signalfd),
 * so a supervisor whose queue is full (one that never reads) must not hold
 * the service or its stop: a full queue waits that long for room once, then
 * gives up with -EAGAIN (the caller logs it).
 */
int vcxl_notify_send(int fd, const char *state)
{
	size_t len = state ? strlen(state) : 0;
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	ssize_t n;

	if (fd < 0 || !len)
		return -EINVAL;
	n = send_now(fd, state, len);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
	    poll(&p, 1, VCXL_NOTIFY_WAIT_MS) == 1 && (p.revents & POLLOUT))
		n = send_now(fd, state, len);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}
