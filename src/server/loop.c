// SPDX-License-Identifier: BSD-3-Clause
/*
 * The event loop: one epoll set for every device's listening socket, its
 * client connection and a signalfd for SIGTERM/SIGINT. Device timers run
 * between events; the epoll timeout is the nearest device deadline.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/server.h"

#define LOOP_MAX_EVENTS 32
/* A listener whose accept failed for want of fds or memory rests this long:
 * level-triggered, it would wake the loop again at once (a spin). */
#define LOOP_ACCEPT_BACKOFF_MS 100
/* A device that cannot be readied for a client (ops->prepare) is tried again
 * this often; meanwhile its clients are refused. */
#define LOOP_PREPARE_RETRY_MS 200
/* Clients refused (accepted and closed) per device per retry */
#define LOOP_REFUSE_MAX 16

enum tag_kind {
	TAG_SIGNAL,
	TAG_LISTEN,
	TAG_CONN,
	TAG_WATCH,
};

struct loop_tag {
	enum tag_kind kind;
	struct loop_dev *d;
	struct loop_watch *w;
};

/* Another fd the loop watches (vcxl_loop_watch: the control socket). */
struct loop_watch {
	int fd;
	void (*fn)(void *opaque, uint32_t events);
	void *opaque;
	struct loop_tag tag;
	struct loop_watch *next;
};

struct loop_dev {
	char *path;
	char name[64];
	int lfd, cfd;
	uint32_t cev; /* events registered for cfd */
	const struct vcxl_dev_ops *ops;
	void *dev;
	struct vcxl_conn_cfg cfg;
	struct vcxl_conn *conn;
	struct vcxl_conn *closing; /* its client gone, the device being readied */
	bool unready;		   /* ops->prepare has not said ready yet */
	bool refusing;		   /* ... and failed: clients are refused (logged once) */
	int64_t retry_ms;	   /* when refusing: the next ops->prepare */
	struct loop_tag ltag, ctag;
	unsigned clients;
	int pid, uid, gid; /* the client's SO_PEERCRED */
	int64_t since_ms;
	int64_t accept_resume_ms; /* accept backs off until then (0: it does not) */
	/* the device's history (query-stats): the counters of the clients that
	 * left; the device's resets when the current client connected */
	struct vcxl_conn_stats done;
	struct vcxl_dev_counters resets_at_accept;
	struct vcxl_dev_counters resets_seen; /* the last read (a busy device is not read) */
	bool handing_over; /* a client left: the device is being readied for the next */
	uint64_t handovers, handover_failures;
};

struct vcxl_loop {
	int epfd, sfd;
	struct loop_dev **devs;
	unsigned n;
	bool stop;
	struct loop_tag stag;
	void (*on_usr1)(void *opaque); /* fault injection (surprise removal) */
	void *usr1_opaque;
	struct loop_watch *watches, *dead_watches;
	int sock_mode; /* -1: as the umask says */
	gid_t sock_gid;
};

void vcxl_loop_set_socket_perm(struct vcxl_loop *l, int mode, gid_t gid)
{
	l->sock_mode = mode;
	l->sock_gid = gid;
}

int vcxl_loop_listen(struct vcxl_loop *l, const char *path, int backlog)
{
	return vcxl_sock_listen_perm(path, backlog, l->sock_mode, l->sock_gid);
}

void vcxl_loop_on_sigusr1(struct vcxl_loop *l, void (*fn)(void *opaque), void *opaque)
{
	l->on_usr1 = fn;
	l->usr1_opaque = opaque;
}

int vcxl_loop_create(struct vcxl_loop **out)
{
	struct vcxl_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->sfd = -1;
	l->sock_mode = -1;
	l->sock_gid = (gid_t)-1;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int rc = -errno;

		free(l);
		return rc;
	}
	l->stag.kind = TAG_SIGNAL;
	*out = l;
	return 0;
}

static int loop_ctl(struct vcxl_loop *l, int op, int fd, uint32_t events, struct loop_tag *t)
{
	struct epoll_event ev = {.events = events, .data.ptr = t};

	return epoll_ctl(l->epfd, op, fd, &ev) < 0 ? -errno : 0;
}

/* One client per device socket: while it is connected the listener is not
 * polled, so a further client waits in the listen backlog until it leaves. */
static void loop_listen_pause(struct vcxl_loop *l, struct loop_dev *d, bool pause)
{
	if (pause)
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, d->lfd, NULL);
	else if (!d->accept_resume_ms) /* a backoff ends in loop_accept_resume */
		loop_ctl(l, EPOLL_CTL_ADD, d->lfd, EPOLLIN, &d->ltag);
}

int vcxl_loop_add_device(struct vcxl_loop *l, const char *path, const struct vcxl_dev_ops *ops,
			 void *dev, const struct vcxl_conn_cfg *cfg)
{
	struct loop_dev *d, **nd;
	int rc;

	d = calloc(1, sizeof(*d));
	nd = realloc(l->devs, sizeof(*nd) * (l->n + 1));
	if (!d || !nd) {
		free(d);
		if (nd)
			l->devs = nd;
		return -ENOMEM;
	}
	l->devs = nd;
	d->path = strdup(path);
	d->cfd = -1;
	d->ops = ops;
	d->dev = dev;
	if (cfg)
		d->cfg = *cfg;
	snprintf(d->name, sizeof(d->name), "dev%u", l->n);
	d->cfg.name = d->name;
	if (!d->cfg.max_batch)
		d->cfg.max_batch = 1; /* epoll is level-triggered: it wakes again for the rest */
	d->ltag = (struct loop_tag){.kind = TAG_LISTEN, .d = d};
	d->ctag = (struct loop_tag){.kind = TAG_CONN, .d = d};
	d->lfd = d->path ? vcxl_loop_listen(l, path, 4) : -ENOMEM;
	if (d->lfd < 0) {
		rc = d->lfd;
		free(d->path);
		free(d);
		return rc;
	}
	rc = loop_ctl(l, EPOLL_CTL_ADD, d->lfd, EPOLLIN, &d->ltag);
	if (rc) {
		close(d->lfd);
		unlink(d->path);
		free(d->path);
		free(d);
		return rc;
	}
	l->devs[l->n++] = d;
	vcxl_log(VCXL_LOG_INFO, "%s: listening on %s", d->name, path);
	if (ops->prepare) { /* the first client waits for it (loop_prepare) */
		d->unready = true;
		loop_listen_pause(l, d, true);
	}
	return 0;
}

/* The device is free again: the listener resumes once the device says it is
 * ready (loop_prepare), at once without ops->prepare. */
static void loop_readied(struct vcxl_loop *l, struct loop_dev *d)
{
	if (d->ops->prepare) {
		d->unready = true;
		return;
	}
	if (d->handing_over)
		d->handovers++;
	d->handing_over = false;
	if (!l->stop)
		loop_listen_pause(l, d, false);
}

/* The client's socket closes at once; the device's reset for the next
 * client (client_gone) may take steps: the listener stays paused until it is
 * done (loop_service), so the next client finds the device ready. */
static void loop_close_conn(struct vcxl_loop *l, struct loop_dev *d, int why)
{
	struct vcxl_conn_stats st;

	if (!d->conn)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, d->cfd, NULL);
	/* its counters become the device's history: nothing more of the
	 * client's is served from here on */
	vcxl_conn_get_stats(d->conn, &st);
	vcxl_stats_add(&d->done, &st);
	d->handing_over = true;
	if (vcxl_conn_close(d->conn))
		vcxl_conn_destroy(d->conn);
	else
		d->closing = d->conn;
	d->conn = NULL;
	close(d->cfd);
	d->cfd = -1;
	if (!d->closing)
		loop_readied(l, d);
	if (why == -ECONNRESET)
		vcxl_log(VCXL_LOG_INFO, "%s: client disconnected", d->name);
	else
		vcxl_log(VCXL_LOG_WARN, "%s: connection closed: %s", d->name, strerror(-why));
}

/* One more step of a closed connection's device reset: -1 when it is done. */
static int loop_closing(struct vcxl_loop *l, struct loop_dev *d)
{
	if (!vcxl_conn_close_step(d->closing))
		return vcxl_conn_timeout(d->closing);
	vcxl_conn_destroy(d->closing);
	d->closing = NULL;
	loop_readied(l, d);
	vcxl_log(VCXL_LOG_DEBUG, "%s: ready for the next client", d->name);
	return -1;
}

static int64_t loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Clients that came while the device cannot be readied: accepted and closed
 * (they see the connection end at once), as many as fds allow. */
static void loop_refuse_waiting(struct loop_dev *d)
{
	for (int i = 0; i < LOOP_REFUSE_MAX; i++) {
		int fd = vcxl_sock_accept(d->lfd);

		if (fd < 0)
			return;
		close(fd);
	}
}

/*
 * The device's own readiness for a new client (ops->prepare: what the last
 * hand-over still owes, a scrub at start), a step per turn, the listener
 * paused meanwhile. A device that cannot be readied (no fd for a fresh
 * memory object) is never given to a client with the old state: clients are
 * refused, one log line says so, and it is tried again every
 * LOOP_PREPARE_RETRY_MS. The next timeout, -1 once ready.
 */
static int loop_prepare(struct vcxl_loop *l, struct loop_dev *d)
{
	int64_t now = loop_now_ms();
	int rc;

	if (d->refusing && now < d->retry_ms)
		return (int)(d->retry_ms - now);
	rc = d->ops->prepare(d->dev);
	if (rc == -EINPROGRESS)
		return 0;
	if (rc) {
		if (!d->refusing && d->handing_over)
			d->handover_failures++;
		if (!d->refusing)
			vcxl_log(VCXL_LOG_ERROR,
				 "%s: refusing clients: the device cannot be readied for the next "
				 "one (%s); trying again every %d ms",
				 d->name, strerror(-rc), LOOP_PREPARE_RETRY_MS);
		d->refusing = true;
		d->retry_ms = now + LOOP_PREPARE_RETRY_MS;
		loop_refuse_waiting(d);
		return LOOP_PREPARE_RETRY_MS;
	}
	if (d->refusing)
		vcxl_log(VCXL_LOG_WARN, "%s: ready again: clients are served", d->name);
	d->refusing = d->unready = false;
	if (d->handing_over)
		d->handovers++;
	d->handing_over = false;
	if (!l->stop)
		loop_listen_pause(l, d, false);
	return -1;
}

/* Who connected (SO_PEERCRED) and when, for the control socket. */
static void loop_peer(struct loop_dev *d, int fd)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	struct timespec ts;

	d->pid = d->uid = d->gid = -1;
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) && len == sizeof(uc)) {
		d->pid = (int)uc.pid;
		d->uid = (int)uc.uid;
		d->gid = (int)uc.gid;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	d->since_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Out of fds or memory: the connection waits in the backlog while the
 * listener rests (one log line per rest, no spin). */
static void loop_accept_backoff(struct vcxl_loop *l, struct loop_dev *d, int err)
{
	vcxl_log(VCXL_LOG_WARN, "%s: accept: %s: not accepting for %d ms", d->name, strerror(-err),
		 LOOP_ACCEPT_BACKOFF_MS);
	loop_listen_pause(l, d, true);
	d->accept_resume_ms = loop_now_ms() + LOOP_ACCEPT_BACKOFF_MS;
}

/* The listener's rest is over: poll it again (unless a client is served).
 * The time left of it otherwise, -1 when it does not rest. */
static int loop_accept_resume(struct vcxl_loop *l, struct loop_dev *d)
{
	int64_t left;

	if (!d->accept_resume_ms)
		return -1;
	left = d->accept_resume_ms - loop_now_ms();
	if (left > 0)
		return left > INT32_MAX ? INT32_MAX : (int)left;
	d->accept_resume_ms = 0;
	if (!d->conn && !d->closing && !d->unready && !l->stop)
		loop_listen_pause(l, d, false);
	return -1;
}

static void loop_accept(struct vcxl_loop *l, struct loop_dev *d)
{
	int fd;

	if (d->conn || d->closing || d->unready || d->accept_resume_ms)
		return;
	fd = vcxl_sock_accept(d->lfd);
	if (fd == -EMFILE || fd == -ENFILE || fd == -ENOBUFS || fd == -ENOMEM) {
		loop_accept_backoff(l, d, fd);
		return;
	}
	if (fd < 0) {
		if (fd != -EAGAIN)
			vcxl_log(VCXL_LOG_WARN, "%s: accept: %s", d->name, strerror(-fd));
		return;
	}
	d->conn = vcxl_conn_create(&d->cfg, d->ops, d->dev, &vcxl_sock_io_ops, vcxl_sock_io(fd));
	if (!d->conn) {
		close(fd);
		return;
	}
	d->cfd = fd;
	d->cev = EPOLLIN;
	if (loop_ctl(l, EPOLL_CTL_ADD, fd, d->cev, &d->ctag)) {
		vcxl_conn_destroy(d->conn);
		d->conn = NULL;
		close(fd);
		d->cfd = -1;
		return;
	}
	loop_listen_pause(l, d, true);
	d->clients++;
	loop_peer(d, fd);
	memset(&d->resets_at_accept, 0, sizeof(d->resets_at_accept));
	if (d->ops->counters)
		d->ops->counters(d->dev, &d->resets_at_accept);
	vcxl_log(VCXL_LOG_INFO, "%s: client connected", d->name);
}

/* Read while there is room to write; write only while output is queued. */
static void loop_update_events(struct vcxl_loop *l, struct loop_dev *d)
{
	uint32_t want;

	if (!d->conn)
		return;
	if (vcxl_conn_dead(d->conn)) {
		loop_close_conn(l, d, -EPROTO);
		return;
	}
	want = vcxl_conn_wants_write(d->conn) ? EPOLLOUT : EPOLLIN;
	if (want != d->cev && !loop_ctl(l, EPOLL_CTL_MOD, d->cfd, want, &d->ctag))
		d->cev = want;
}

static void loop_conn_event(struct vcxl_loop *l, struct loop_dev *d, uint32_t ev)
{
	int rc = 0;

	if (!d->conn)
		return;
	if (ev & EPOLLOUT)
		rc = vcxl_conn_on_writable(d->conn);
	if (!rc && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		rc = vcxl_conn_on_readable(d->conn);
	if (rc) {
		loop_close_conn(l, d, rc);
		return;
	}
	loop_update_events(l, d);
}

/* Device timers, then requests already received (one batch per connection
 * per turn, so every device is served in turn): the next timeout. */
static int loop_service(struct vcxl_loop *l)
{
	int timeout = -1;

	for (unsigned i = 0; i < l->n; i++) {
		struct loop_dev *d = l->devs[i];

		timeout = vcxl_min_timeout(timeout, loop_accept_resume(l, d));
		if (d->closing) {
			/* its reset for the next client goes first, one step per turn */
			int t = loop_closing(l, d);

			timeout = vcxl_min_timeout(timeout, t);
			if (d->closing)
				continue;
		}
		if (d->unready && !d->conn) {
			int t = loop_prepare(l, d);

			timeout = vcxl_min_timeout(timeout, t);
		}
		/* device timers and a bounded step of its background work; a
		 * device whose operation waits for its client is left alone */
		int t = d->conn	       ? vcxl_conn_poll(d->conn)
			: d->ops->poll ? d->ops->poll(d->dev)
				       : -1;

		timeout = vcxl_min_timeout(timeout, t);
		if (d->conn) {
			int rc = vcxl_conn_drain(d->conn);

			if (rc < 0) {
				loop_close_conn(l, d, rc);
				continue;
			}
			if (rc > 0)
				timeout = 0;
			timeout = vcxl_min_timeout(timeout, vcxl_conn_timeout(d->conn));
			loop_update_events(l, d);
		}
	}
	return timeout;
}

static int loop_signals(struct vcxl_loop *l)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	l->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (l->sfd < 0)
		return -errno;
	return loop_ctl(l, EPOLL_CTL_ADD, l->sfd, EPOLLIN, &l->stag);
}

static void loop_signal_event(struct vcxl_loop *l)
{
	struct signalfd_siginfo si;

	while (read(l->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1) {
			if (l->on_usr1)
				l->on_usr1(l->usr1_opaque);
			continue;
		}
		vcxl_log(VCXL_LOG_INFO, "signal %u: shutting down", si.ssi_signo);
		l->stop = true;
	}
}

static void loop_free_dead_watches(struct vcxl_loop *l)
{
	while (l->dead_watches) {
		struct loop_watch *w = l->dead_watches;

		l->dead_watches = w->next;
		free(w);
	}
}

int vcxl_loop_run(struct vcxl_loop *l)
{
	struct epoll_event evs[LOOP_MAX_EVENTS];
	int rc;

	if (l->sfd < 0) {
		rc = loop_signals(l);
		if (rc)
			return rc;
	}
	while (!l->stop) {
		int timeout = loop_service(l);
		int n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS, timeout);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		loop_free_dead_watches(l);
		for (int i = 0; i < n && !l->stop; i++) {
			struct loop_tag *t = evs[i].data.ptr;

			switch (t->kind) {
			case TAG_SIGNAL:
				loop_signal_event(l);
				break;
			case TAG_LISTEN:
				loop_accept(l, t->d);
				break;
			case TAG_CONN:
				loop_conn_event(l, t->d, evs[i].events);
				break;
			case TAG_WATCH:
				if (t->w->fn)
					t->w->fn(t->w->opaque, evs[i].events);
				break;
			}
		}
	}
	return 0;
}

int vcxl_loop_watch(struct vcxl_loop *l, int fd, uint32_t events,
		    void (*fn)(void *opaque, uint32_t events), void *opaque)
{
	struct loop_watch *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	*w = (struct loop_watch){.fd = fd, .fn = fn, .opaque = opaque, .next = l->watches};
	w->tag = (struct loop_tag){.kind = TAG_WATCH, .w = w};
	rc = loop_ctl(l, EPOLL_CTL_ADD, fd, events, &w->tag);
	if (rc) {
		free(w);
		return rc;
	}
	l->watches = w;
	return 0;
}

/* Unwatching from inside a callback is safe for other fds: events of this
 * epoll_wait batch for an unwatched fd are not delivered (the tag stays
 * valid until the batch ends). */
void vcxl_loop_unwatch(struct vcxl_loop *l, int fd)
{
	for (struct loop_watch **p = &l->watches; *p; p = &(*p)->next) {
		struct loop_watch *w = *p;

		if (w->fd != fd)
			continue;
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
		*p = w->next;
		w->next = l->dead_watches;
		l->dead_watches = w;
		w->fn = NULL;
		return;
	}
}

unsigned vcxl_loop_devices(const struct vcxl_loop *l)
{
	return l->n;
}

int vcxl_loop_device_info(const struct vcxl_loop *l, unsigned i, struct vcxl_loop_dev_info *info)
{
	struct loop_dev *d;

	if (i >= l->n)
		return -ENOENT;
	d = l->devs[i];
	memset(info, 0, sizeof(*info));
	info->path = d->path;
	info->name = d->name;
	info->clients = d->clients;
	info->connected = d->conn != NULL;
	info->busy = (d->conn && vcxl_conn_blocked(d->conn)) ||
		     (d->closing && vcxl_conn_blocked(d->closing));
	info->pid = info->uid = info->gid = -1;
	if (d->conn) {
		info->pid = d->pid;
		info->uid = d->uid;
		info->gid = d->gid;
		info->since_ms = d->since_ms;
		vcxl_conn_get_stats(d->conn, &info->st);
	}
	info->total = d->done;
	if (d->conn)
		vcxl_stats_add(&info->total, &info->st);
	if (d->ops->counters && !info->busy) /* a busy device is the worker's */
		d->ops->counters(d->dev, &d->resets_seen);
	info->resets = d->resets_seen;
	if (d->conn)
		vcxl_dev_counters_sub(&info->client_resets, &info->resets, &d->resets_at_accept);
	info->handovers = d->handovers;
	info->handover_failures = d->handover_failures;
	return 0;
}

void vcxl_loop_stop(struct vcxl_loop *l)
{
	l->stop = true;
}

void vcxl_loop_destroy(struct vcxl_loop *l)
{
	if (!l)
		return;
	l->stop = true;
	for (unsigned i = 0; i < l->n; i++) {
		struct loop_dev *d = l->devs[i];

		loop_close_conn(l, d, -ECONNRESET);
		vcxl_conn_destroy(d->closing); /* what is left of it, in place */
		close(d->lfd);
		unlink(d->path);
		free(d->path);
		free(d);
	}
	free(l->devs);
	while (l->watches) {
		struct loop_watch *w = l->watches;

		l->watches = w->next;
		free(w);
	}
	loop_free_dead_watches(l);
	if (l->sfd >= 0)
		close(l->sfd);
	close(l->epfd);
	free(l);
}
