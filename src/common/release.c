// SPDX-License-Identifier: BSD-3-Clause
/* Closing a memory object off the caller's thread (release.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "release.h"

static atomic_int in_flight;

static void *release_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct stat st;

	/* best effort: a file that cannot be punched is only closed */
	if (!fstat(fd, &st) && st.st_size > 0)
		(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size);
	close(fd);
	atomic_fetch_sub(&in_flight, 1);
	return NULL;
}

void vcxl_release_memory(int fd)
{
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	int rc;

	if (fd < 0)
		return;
	if (pthread_attr_init(&a)) {
		atomic_fetch_add(&in_flight, 1);
		release_main((void *)(intptr_t)fd); /* here, then */
		return;
	}
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* the thread takes no signal meant for the server (SIGTERM, SIGUSR1) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_fetch_add(&in_flight, 1);
	rc = pthread_create(&t, &a, release_main, (void *)(intptr_t)fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (rc)
		release_main((void *)(intptr_t)fd); /* here, then */
}

int vcxl_release_wait(int timeout_ms)
{
	const struct timespec tick = {.tv_nsec = 100000}; /* 0.1 ms */

	for (int64_t waited_us = 0; atomic_load(&in_flight) > 0; waited_us += 100) {
		if (waited_us >= (int64_t)timeout_ms * 1000)
			return -ETIMEDOUT;
		nanosleep(&tick, NULL);
	}
	return 0;
}
