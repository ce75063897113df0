// SPDX-License-Identifier: BSD-3-Clause
/*
 * Socket creation in a hostile directory (issue 21, item 10a): root makes
 * sockets with a group and mode (vcxl_sock_listen_perm, what --socket-mode
 * and --socket-group use) in a world-writable directory while a process of
 * uid nobody races to swap the fresh socket for a symlink to a root-owned
 * file, and to swap any private directory the server makes there for its own
 * holding such a symlink. The root-owned file's owner, group and mode must
 * never change. (Before: bind, then chown/chmod by path, which follow the
 * symlink: the target got the group and mode 0666.)
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "server/server.h"

#define PREFIX ".vcxl-bind-"

static char dir[64], vdir[64], victim[128], path[128];

/* The racer: swap the socket, and any private directory, for the attacker's. */
static void race(void)
{
	struct stat st;

	for (;;) {
		DIR *d;
		struct dirent *e;

		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && unlink(path) == 0 &&
		    symlink(victim, path))
			continue;
		d = opendir(dir);
		while (d && (e = readdir(d))) {
			char from[300], to[300], link[320];

			if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) ||
			    strlen(e->d_name) != strlen(PREFIX) + 6)
				continue;
			snprintf(from, sizeof(from), "%s/%s", dir, e->d_name);
			snprintf(to, sizeof(to), "%s/%sx", dir, e->d_name);
			snprintf(link, sizeof(link), "%s/s", from);
			if (rename(from, to) == 0 && mkdir(from, 0777) == 0 &&
			    symlink(victim, link))
				continue;
		}
		if (d)
			closedir(d);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	struct passwd *pw = getpwnam("nobody");
	struct group *gr = getgrnam("users");
	struct stat v0, v;
	int made = 0, changed = 0, tries = 0;
	char cmd[200];
	pid_t pid;

	if (geteuid() != 0 || !pw || !gr) {
		printf("1..0 # SKIP needs root, user nobody and group users\n");
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/vcxl-race-XXXXXX");
	snprintf(vdir, sizeof(vdir), "/tmp/vcxl-victim-XXXXXX");
	if (!mkdtemp(dir) || !mkdtemp(vdir) || chmod(dir, 0777)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	snprintf(victim, sizeof(victim), "%s/root-file", vdir);
	snprintf(path, sizeof(path), "%s/dev.sock", dir);
	FILE *f = fopen(victim, "w");
	if (f)
		fclose(f);
	chmod(victim, 0600);
	int vgot = stat(victim, &v0);
	ok(vgot == 0 && v0.st_uid == 0 && v0.st_gid != gr->gr_gid, "a root-owned file, mode 0%o",
	   (unsigned)(v0.st_mode & 07777));

	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid))
			_exit(1);
		race();
	}
	/* a few seconds of sockets with the group and a wide mode, as
	 * --socket-mode 0666 --socket-group users makes them */
	for (double end = now_s() + 3; now_s() < end && !changed; tries++) {
		int fd;

		unlink(path);
		fd = vcxl_sock_listen_perm(path, 1, 0666, gr->gr_gid);
		if (fd >= 0) {
			made++;
			close(fd);
		}
		if (stat(victim, &v) == 0 &&
		    (v.st_uid != v0.st_uid || v.st_gid != v0.st_gid || v.st_mode != v0.st_mode))
			changed++;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ok(made > 0, "sockets made while nobody raced: %d of %d", made, tries);
	ok(!changed && stat(victim, &v) == 0 && v.st_uid == v0.st_uid && v.st_gid == v0.st_gid &&
	       v.st_mode == v0.st_mode,
	   "the root-owned file's owner, group and mode never changed (uid %u gid %u mode 0%o "
	   "after %d tries)",
	   (unsigned)v.st_uid, (unsigned)v.st_gid, (unsigned)(v.st_mode & 07777), tries);

	/* and a socket made there has what was asked */
	unlink(path);
	int fd = vcxl_sock_listen_perm(path, 1, 0660, gr->gr_gid);
	struct stat s;
	int got = lstat(path, &s);
	ok(fd >= 0 && got == 0 && S_ISSOCK(s.st_mode) && (s.st_mode & 07777) == 0660 &&
	       s.st_gid == gr->gr_gid,
	   "without a racer: a socket at the path, mode 0660, group users");
	int c = vcxl_sock_connect(path);
	ok(c >= 0, "and it accepts connections at its final path");
	if (c >= 0)
		close(c);
	if (fd >= 0)
		close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, vdir);
	if (system(cmd))
		diag("could not remove %s", dir);
	return done();
}
