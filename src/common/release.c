// SPDX-License-Identifier: BSD-3-Clause
/* Closing a memory object off the caller's thread (release.h). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "release.h"

static void *release_main(void *arg)
{
	close((int)(intptr_t)arg);
	return NULL;
}

void vcxl_release_fd(int fd)
{
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	int rc;

	if (fd < 0)
		return;
	if (pthread_attr_init(&a)) {
		close(fd);
		return;
	}
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* the thread takes no signal meant for the server (SIGTERM, SIGUSR1) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, &a, release_main, (void *)(intptr_t)fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (rc)
		close(fd);
}
