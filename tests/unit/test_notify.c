// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl_notify_open/send (src/server/notify.c), systemd's sd_notify protocol:
 * a path and an abstract ("@name") socket each receive the datagram as sent;
 * addresses it cannot use (empty, relative, "vsock:", too long, nothing
 * listening) are refused with their errno; a receiver that went away is an
 * error, not a signal.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/server.h"
#include "tap.h"

/* A datagram receiver at addr ("/path" or "@abstract"): fd or -1 */
static int receiver(const char *addr)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(addr);
	socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	memcpy(sa.sun_path, addr, len);
	if (addr[0] == '@')
		sa.sun_path[0] = '\0';
	else
		salen++;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, salen) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The next datagram on fd within 5 s, NUL-terminated in buf: its length or -1 */
static ssize_t received(int fd, char *buf, size_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&p, 1, 5000) != 1)
		return -1;
	n = recv(fd, buf, len - 1, 0);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

static void roundtrip(const char *addr, const char *what)
{
	char buf[128];
	int r = receiver(addr), fd;

	if (!ok(r >= 0, "%s: receiver bound", what))
		return;
	fd = vcxl_notify_open(addr);
	ok(fd >= 0, "%s: opened (%d)", what, fd);
	is(vcxl_notify_send(fd, VCXL_NOTIFY_READY), 0, "%s: READY=1 sent", what);
	ok(received(r, buf, sizeof(buf)) == 7 && !strcmp(buf, "READY=1"), "%s: received as sent",
	   what);
	is(vcxl_notify_send(fd, "STOPPING=1\nSTATUS=bye"), 0, "%s: two lines sent", what);
	ok(received(r, buf, sizeof(buf)) > 0 && !strcmp(buf, "STOPPING=1\nSTATUS=bye"),
	   "%s: in one datagram", what);
	close(r);
	if (addr[0] == '/')
		unlink(addr);
	/* the receiver is gone: an error, no SIGPIPE */
	ok(vcxl_notify_send(fd, VCXL_NOTIFY_READY) < 0, "%s: receiver gone: an error", what);
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	char dir[] = "/tmp/vcxl-notify-XXXXXX", path[128], abs[64], lng[200];

	setup_ok(mkdtemp(dir) ? 0 : -1);
	snprintf(path, sizeof(path), "%s/notify.sock", dir);
	snprintf(abs, sizeof(abs), "@vcxl-notify-test-%d", (int)getpid());
	roundtrip(path, "path");
	roundtrip(abs, "abstract");

	is(vcxl_notify_open(NULL), -EINVAL, "NULL refused");
	is(vcxl_notify_open(""), -EINVAL, "empty refused");
	is(vcxl_notify_open("@"), -EINVAL, "a bare @ refused");
	is(vcxl_notify_open("notify.sock"), -EAFNOSUPPORT, "a relative path refused");
	is(vcxl_notify_open("vsock:2:1234"), -EAFNOSUPPORT, "a vsock address refused");
	memset(lng, 'a', sizeof(lng) - 1);
	lng[0] = '/';
	lng[sizeof(lng) - 1] = 0;
	is(vcxl_notify_open(lng), -ENAMETOOLONG, "a path longer than sun_path refused");
	is(vcxl_notify_open(path), -ENOENT, "nothing there: ENOENT");
	is(vcxl_notify_open(dir), -ECONNREFUSED, "a directory: ECONNREFUSED");
	is(vcxl_notify_send(-1, VCXL_NOTIFY_READY), -EINVAL, "send on no socket refused");
	{
		int r = receiver(path), fd = vcxl_notify_open(path);

		is(vcxl_notify_send(fd, ""), -EINVAL, "an empty notification refused");
		is(vcxl_notify_send(fd, NULL), -EINVAL, "a NULL notification refused");
		if (fd >= 0)
			close(fd);
		if (r >= 0)
			close(r);
		unlink(path);
	}
	rmdir(dir);
	return tap_done();
}
