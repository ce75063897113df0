// SPDX-License-Identifier: BSD-3-Clause
/*
 * vfio-user transports: UNIX stream sockets carrying fds in SCM_RIGHTS
 * (vfio-user spec "Socket"), and an in-memory buffer for fuzzing and tests.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/server.h"

/* Room for more fds than anyone may send, so excess is seen and closed. */
#define SOCK_CMSG_FDS (VCXL_SRV_MAX_MSG_FDS * 2)

static int sock_fd(void *io)
{
	return (int)(intptr_t)io;
}

static int fill_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (!path || !*path || strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

static ssize_t sock_sendmsg(int fd, const struct iovec *iov, int iovcnt, const int *fds,
			    unsigned nfds, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VCXL_SRV_MAX_MSG_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
	ssize_t n;

	if (nfds > VCXL_SRV_MAX_MSG_FDS)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(fd, &mh, flags | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

/* Collect SCM_RIGHTS fds; anything beyond maxfds (or not SCM_RIGHTS) is closed. */
static void sock_collect_fds(struct msghdr *mh, int *fds, unsigned maxfds, unsigned *nfds,
			     bool *ctrunc)
{
	struct cmsghdr *cm;

	if (mh->msg_flags & MSG_CTRUNC)
		*ctrunc = true;
	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t n;
		int *p;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		p = (int *)CMSG_DATA(cm);
		for (size_t i = 0; i < n; i++) {
			int f;

			memcpy(&f, p + i, sizeof(f));
			if (*nfds < maxfds) {
				fds[(*nfds)++] = f;
			} else {
				close(f);
				*ctrunc = true;
			}
		}
	}
}

static ssize_t sock_recvmsg(int fd, void *buf, size_t len, int *fds, unsigned maxfds,
			    unsigned *nfds, bool *ctrunc, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SOCK_CMSG_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	ssize_t n;

	do {
		n = recvmsg(fd, &mh, flags | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	sock_collect_fds(&mh, fds, maxfds, nfds, ctrunc);
	return n;
}

static ssize_t sock_io_send(void *io, const struct iovec *iov, int iovcnt, const int *fds,
			    unsigned nfds)
{
	return sock_sendmsg(sock_fd(io), iov, iovcnt, fds, nfds, MSG_DONTWAIT);
}

static ssize_t sock_io_recv(void *io, void *buf, size_t len, int *fds, unsigned maxfds,
			    unsigned *nfds, bool *ctrunc)
{
	return sock_recvmsg(sock_fd(io), buf, len, fds, maxfds, nfds, ctrunc, MSG_DONTWAIT);
}

static int sock_io_wait(void *io, bool for_write, int timeout_ms)
{
	struct pollfd p = {.fd = sock_fd(io), .events = for_write ? POLLOUT : POLLIN};
	int rc;

	do {
		rc = poll(&p, 1, timeout_ms);
	} while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return -ETIMEDOUT;
	if (!for_write && (p.revents & (POLLIN | POLLHUP | POLLERR)))
		return 0;
	if (for_write && (p.revents & POLLOUT))
		return 0;
	return -EPIPE;
}

const struct vcxl_io_ops vcxl_sock_io_ops = {
    .send = sock_io_send,
    .recv = sock_io_recv,
    .wait = sock_io_wait,
};

/* A socket file at path that nobody accepts on is stale: remove it. */
static int sock_remove_stale(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	if (fill_addr(&sa, path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (rc == 0)
		return -EADDRINUSE;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* A private directory beside path, made by mkdtemp (0700): *dirfd open on
 * it (checked to be ours and 0700, so it is the one mkdtemp made, not one
 * swapped in under its name), its path in tmp. 0 or -errno. */
static int private_dir(const char *path, char *tmp, size_t len, int *dirfd)
{
	const char *slash = strrchr(path, '/');
	struct stat st;
	int fd, n;

	if (slash)
		n = snprintf(tmp, len, "%.*s/.vcxl-bind-XXXXXX", (int)(slash - path), path);
	else
		n = snprintf(tmp, len, ".vcxl-bind-XXXXXX");
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (!mkdtemp(tmp))
		return -errno;
	fd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) != 0700) {
		int e = fd < 0 ? errno : EPERM;

		if (fd >= 0)
			close(fd);
		rmdir(tmp);
		return -e;
	}
	*dirfd = fd;
	return 0;
}

/*
 * Bind fd at path with group gid and mode, never following a path another
 * user could swap. chown/chmod by path (what this did before) follow a
 * symlink: in a directory another user can write, it can replace the fresh
 * socket with a symlink to any file between bind and chown, and root then
 * gives that file the group and mode. fchmod/fchown on an AF_UNIX socket's
 * fd do not help either: they change the socket's own inode, not the file
 * bind made. So the socket is bound inside a private directory we just made
 * (mkdtemp, 0700, our own: nobody else can add, remove or rename its
 * entries), reached through its fd (/proc/self/fd/N/s, so a directory
 * swapped in under its name is never used), given its group and mode there
 * by fchownat/fchmodat on that fd (the name cannot be swapped inside it),
 * and only then renamed into place with RENAME_NOREPLACE: rename moves the
 * directory entry itself (a symlink at path would be replaced, never
 * followed, and with NOREPLACE nothing at path is replaced at all). The
 * socket still refuses connections until the caller listens.
 */
static int bind_private(int fd, const char *path, int mode, gid_t gid)
{
	char tmp[PATH_MAX];
	struct sockaddr_un sa;
	int dfd = -1, rc;

	rc = private_dir(path, tmp, sizeof(tmp), &dfd);
	if (rc)
		return rc;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/s", dfd);
	rc =
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    (gid != (gid_t)-1 && fchownat(dfd, "s", (uid_t)-1, gid, AT_SYMLINK_NOFOLLOW)) ||
		    (mode >= 0 && fchmodat(dfd, "s", (mode_t)mode, 0)) ||
		    renameat2(dfd, "s", AT_FDCWD, path, RENAME_NOREPLACE)
		? -errno
		: 0;
	if (rc)
		unlinkat(dfd, "s", 0);
	close(dfd);
	rmdir(tmp);
	return rc;
}

int vcxl_sock_listen_perm(const char *path, int backlog, int mode, gid_t gid)
{
	struct sockaddr_un sa;
	int fd, rc;

	rc = fill_addr(&sa, path);
	if (rc)
		return rc;
	rc = sock_remove_stale(path);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* without a mode or group there is nothing to set: bind at path (bind
	 * itself never follows a symlink there: EADDRINUSE) */
	if (mode < 0 && gid == (gid_t)-1)
		rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	else
		rc = bind_private(fd, path, mode, gid);
	if (!rc && listen(fd, backlog) < 0)
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

int vcxl_sock_listen(const char *path, int backlog)
{
	return vcxl_sock_listen_perm(path, backlog, -1, (gid_t)-1);
}

int vcxl_sock_accept(int lfd)
{
	int fd;

	do {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	} while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

int vcxl_sock_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd, rc;

	rc = fill_addr(&sa, path);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do {
		rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	} while (rc < 0 && errno == EINTR);
	if (rc < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int vcxl_sock_send_all(int fd, const struct iovec *iov, int iovcnt, const int *fds, unsigned nfds)
{
	struct iovec v[8];
	int cnt = iovcnt;

	if (iovcnt > 8)
		return -EINVAL;
	memcpy(v, iov, sizeof(*iov) * (size_t)iovcnt);
	while (cnt) {
		ssize_t n = sock_sendmsg(fd, v + (iovcnt - cnt), cnt, fds, nfds, 0);

		if (n < 0)
			return (int)n;
		nfds = 0; /* fds went with the first byte */
		while (cnt && (size_t)n >= v[iovcnt - cnt].iov_len) {
			n -= (ssize_t)v[iovcnt - cnt].iov_len;
			cnt--;
		}
		if (cnt) {
			v[iovcnt - cnt].iov_base = (char *)v[iovcnt - cnt].iov_base + n;
			v[iovcnt - cnt].iov_len -= (size_t)n;
		}
	}
	return 0;
}

ssize_t vcxl_sock_recv_some(int fd, void *buf, size_t len, int *fds, unsigned maxfds,
			    unsigned *nfds, bool *ctrunc)
{
	return sock_recvmsg(fd, buf, len, fds, maxfds, nfds, ctrunc, 0);
}

int vcxl_sock_recv_all(int fd, void *buf, size_t len, int *fds, unsigned maxfds, unsigned *nfds,
		       bool *ctrunc)
{
	size_t have = 0;

	while (have < len) {
		ssize_t n =
		    sock_recvmsg(fd, (char *)buf + have, len - have, fds, maxfds, nfds, ctrunc, 0);

		if (n < 0)
			return (int)n;
		if (n == 0)
			return -ECONNRESET;
		have += (size_t)n;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Buffer transport                                                        */
/* ---------------------------------------------------------------------- */

void vcxl_bufio_init(struct vcxl_bufio *b, const void *in, size_t len)
{
	memset(b, 0, sizeof(*b));
	b->in = in;
	b->in_len = len;
}

int vcxl_bufio_add_fd(struct vcxl_bufio *b, size_t at, int fd)
{
	if (b->n_infd >= sizeof(b->infd) / sizeof(b->infd[0]))
		return -ENOSPC;
	if (b->n_infd && b->infd[b->n_infd - 1].at > at)
		return -EINVAL;
	b->infd[b->n_infd].at = at;
	b->infd[b->n_infd].fd = fd;
	b->n_infd++;
	return 0;
}

void vcxl_bufio_fini(struct vcxl_bufio *b)
{
	for (unsigned i = b->infd_next; i < b->n_infd; i++)
		close(b->infd[i].fd);
	b->infd_next = b->n_infd;
	free(b->out);
	b->out = NULL;
	b->out_len = b->out_cap = 0;
}

static ssize_t buf_io_send(void *io, const struct iovec *iov, int iovcnt, const int *fds,
			   unsigned nfds)
{
	struct vcxl_bufio *b = io;
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (b->max_out && b->out_len + total > b->max_out)
		return -EAGAIN;
	if (b->out_len + total > b->out_cap) {
		size_t ncap = (b->out_len + total) * 2;
		uint8_t *n = realloc(b->out, ncap);

		if (!n)
			return -ENOMEM;
		b->out = n;
		b->out_cap = ncap;
	}
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len)
			memcpy(b->out + b->out_len, iov[i].iov_base, iov[i].iov_len);
		b->out_len += iov[i].iov_len;
	}
	b->out_fds += nfds;
	b->sends++;
	for (unsigned i = 0; b->on_fd && i < nfds; i++)
		b->on_fd(b->on_fd_opaque, fds[i]);
	return (ssize_t)total;
}

static ssize_t buf_io_recv(void *io, void *buf, size_t len, int *fds, unsigned maxfds,
			   unsigned *nfds, bool *ctrunc)
{
	struct vcxl_bufio *b = io;
	size_t n = b->in_len - b->in_off;

	if (n == 0)
		return 0;
	if (n > len)
		n = len;
	/* Like a UNIX socket: a read ends right after the segment that carried
	 * fds, the segment being the message whose header starts at the fds'
	 * offset (one sendmsg per message). */
	if (b->infd_next < b->n_infd && b->infd[b->infd_next].at < b->in_off + n) {
		size_t at = b->infd[b->infd_next].at, end = b->in_len;
		if (at >= b->in_off && at + 8 <= b->in_len) {
			uint32_t sz;
			memcpy(&sz, b->in + at + 4, 4);
			if (sz > 0 && sz <= b->in_len - at)
				end = at + sz;
		}
		if (end > b->in_off && end - b->in_off < n)
			n = end - b->in_off;
	}
	while (b->infd_next < b->n_infd && b->infd[b->infd_next].at < b->in_off + n) {
		size_t at = b->infd[b->infd_next].at;

		if (at < b->in_off)
			at = b->in_off;
		if (*nfds < maxfds) {
			fds[(*nfds)++] = b->infd[b->infd_next].fd;
		} else {
			close(b->infd[b->infd_next].fd);
			*ctrunc = true;
		}
		b->infd_next++;
		(void)at;
	}
	memcpy(buf, b->in + b->in_off, n);
	b->in_off += n;
	return (ssize_t)n;
}

static int buf_io_wait(void *io, bool for_write, int timeout_ms)
{
	struct vcxl_bufio *b = io;

	if (for_write)
		return b->max_out && b->out_len >= b->max_out ? -ETIMEDOUT : 0;
	return 0; /* EOF counts as readable */
}

const struct vcxl_io_ops vcxl_buf_io_ops = {
    .send = buf_io_send,
    .recv = buf_io_recv,
    .wait = buf_io_wait,
};
