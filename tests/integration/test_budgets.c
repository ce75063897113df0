// SPDX-License-Identifier: BSD-3-Clause
/*
 * Per-client budgets (docs/security.md, "Per-client budgets"), against the
 * real server with real fds: device 0's client tries to take what device 1's
 * client and the control socket need, and device 1 is served normally
 * afterwards while the server's CPU time and log stay small.
 *   - address space: DMA windows of a 64 TiB sparse memfd, greedy (before:
 *     70 windows took all 128 TiB, device 1's DMA_MAP and REGION_READ failed with ENOMEM);
 *   - fds: under a 1024 fd limit, 1100 windows of 4 KiB, each with an fd
 *     (before: device 1 and the control socket were never served, and the
 *     loop spun on EMFILE, 0.9 s of CPU per second).
 * Also: the mapped bytes are given back on DMA_UNMAP, and the fd budget
 * counts eventfds.
 *
 * And what a window may be: memory a copy never waits on. A file on disk
 * is refused (ENODEV), /dev/shm is taken; a file on a FUSE mount whose
 * daemon (here: the test's own, as a hostile client's would be) never
 * answers a READ is refused without the server asking the daemon anything
 * (before: the job engine's COPY from it froze every device, and SIGTERM
 * waited for the daemon).
 */
#include <linux/fuse.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "tap.h"
#include "integration/harness.h"
#include "model/model.h"

static const uint32_t RW = VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE;
static const char *const caps_many_maps =
    "{\"capabilities\":{\"max_msg_fds\":16,\"max_data_xfer_size\":1048576,"
    "\"max_dma_maps\":65535}}";

/* utime + stime of pid, in seconds */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(buf, ')');
	/* fields after ") ": state(3) ... utime(14) stime(15) */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long)st.st_size;
}

/* A memfd of size bytes (sparse) or -errno */
static int memfd_of(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* The neighbour is served normally: it connects, maps 64 MiB of its own
 * memfd as a DMA window and reads 1 MiB of its CXL region. */
static void neighbour_served(const char *sock, const char *what)
{
	struct vcxl_client *b = NULL;
	void *buf = malloc(1 << 20);
	int fd = memfd_of("guest-b", 64ull << 20);

	if (!ok(vcxl_client_connect(sock, &b) == 0, "%s: device 1's client connects and negotiates",
		what)) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return;
	}
	is(vcxl_client_dma_map(b, 0x100000000ull, 64ull << 20, RW, fd, 0, NULL), 0,
	   "%s: device 1's 64 MiB DMA_MAP succeeds", what);
	is(buf ? vcxl_client_region_read(b, 9, 0, buf, 1 << 20) : -ENOMEM, 0,
	   "%s: device 1's 1 MiB REGION_READ succeeds", what);
	vcxl_client_close(b);
	if (fd >= 0)
		close(fd);
	free(buf);
}

/* The control socket answers query-status within 5 s: 0 or -errno. */
static int control_answers(const struct harness *h)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	static const char req[] = "{\"execute\":\"query-status\"}\n";
	char out[4096];
	size_t got = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = -EIO;

	if (fd < 0)
		return -errno;
	if (strlen(h->sock) + 5 > sizeof(a.sun_path))
		goto out;
	memcpy(a.sun_path, h->sock, strlen(h->sock));
	memcpy(a.sun_path + strlen(h->sock), ".ctl", 5);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1)
		goto out;
	while (got + 1 < sizeof(out)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&p, 1, 5000) != 1) {
			rc = -ETIMEDOUT;
			goto out;
		}
		r = read(fd, out + got, sizeof(out) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (out[got - 1] == '\n') {
			rc = 0;
			break;
		}
	}
out:
	close(fd);
	return rc;
}

/* Afterwards the server idles: under 0.2 s of CPU in 1 s, and its log grew
 * by less than 64 KiB meanwhile. */
static void server_idles(const struct harness *h, const char *what)
{
	double c0 = proc_cpu_s(h->pid), c1;
	long l0 = file_size(h->log), l1;

	h_sleep_ms(1000);
	c1 = proc_cpu_s(h->pid);
	l1 = file_size(h->log);
	ok(c0 >= 0 && c1 - c0 < 0.2, "%s: the server used %.2f s of CPU in the next second", what,
	   c1 - c0);
	ok(l0 >= 0 && l1 - l0 < 65536, "%s: its log grew by %ld bytes in that second", what,
	   l1 - l0);
}

static int start_two(struct harness *h, const char *bin, void (*setup)(void),
		     const char *const *extra)
{
	const char *argv[24];
	int n = 0, rc = h_prepare(h, bin, "vcxl-budget");

	if (rc)
		return rc;
	argv[n++] = bin;
	argv[n++] = "--socket";
	argv[n++] = h->sock;
	argv[n++] = "--devices";
	argv[n++] = "2";
	for (int i = 0; extra && extra[i] && n < 22; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	return h_launch(h, argv, setup, H_READY_MS);
}

/* The issue's attack: windows of a 64 TiB sparse memfd, as many as fit. */
static void test_address_space(const char *bin)
{
	const uint64_t huge = 64ull << 40;
	struct harness h = {0};
	struct vcxl_client *a = NULL;
	char s0[160], s1[160];
	unsigned tries = 0, edquot = 0;
	uint64_t total = 0;
	int fd;

	if (!ok(start_two(&h, bin, NULL, NULL) == 0, "server --devices 2 started")) {
		h_cleanup(&h);
		return;
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	h_dev_sock(&h, 1, s1, sizeof(s1));
	fd = memfd_of("guest-a", huge);
	ok(fd >= 0, "a 64 TiB sparse memfd (%d)", fd);
	if (vcxl_client_connect_raw(s0, &a) || vcxl_client_negotiate(a, caps_many_maps)) {
		ok(0, "device 0's client connects");
		goto out;
	}
	/* the issue's attack, greedy: windows of 64 TiB, then of half that size
	 * whenever one is refused, down to 4 KiB (about 70 windows in all
	 * before the budget: 128 TiB, the whole address space) */
	for (uint64_t size = huge, iova = 0; size >= 4096 && fd >= 0 && tries < 400; tries++) {
		int rc = vcxl_client_dma_map(a, iova, size, RW, fd, 0, NULL);

		if (!rc) {
			total += size;
			iova += size;
			continue;
		}
		edquot += rc == -EDQUOT;
		size /= 2;
	}
	ok(total <= 4ull << 40, "device 0: %llu GiB mapped in %u tries (at most its 4 TiB)",
	   (unsigned long long)(total >> 30), tries);
	is(edquot, tries - (total ? __builtin_popcountll(total >> 12) : 0),
	   "device 0: every window refused with EDQUOT (over its mapped budget)");
	ok(h_log_count(&h, "per-client budgets: 4096 DMA windows, 4194304 MiB mapped") == 1,
	   "the start-up log names the budgets (4 TiB mapped per client)");
	neighbour_served(s1, "64 TiB windows");
	ok(control_answers(&h) == 0, "64 TiB windows: the control socket answers");
	server_idles(&h, "64 TiB windows");
	vcxl_client_close(a);
	is(h_stop(&h), 0, "64 TiB windows: SIGTERM, exit 0");
out:
	if (fd >= 0)
		close(fd);
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
}

/* --max-dma-mapped: windows up to the budget are mapped, one byte page more
 * is refused, and DMA_UNMAP gives the bytes back. */
static void test_mapped_accounting(const char *bin)
{
	const char *const extra[] = {"--max-dma-mapped", "1G", NULL};
	struct harness h = {0};
	struct vcxl_client *a = NULL;
	char s0[160];
	int fd = memfd_of("guest-a", 1ull << 30);

	if (!ok(start_two(&h, bin, NULL, extra) == 0, "server --max-dma-mapped 1G started")) {
		h_cleanup(&h);
		goto out;
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	if (!ok(vcxl_client_connect(s0, &a) == 0, "device 0's client connects"))
		goto stop;
	is(vcxl_client_dma_map(a, 0, 512ull << 20, RW, fd, 0, NULL), 0, "512 MiB window mapped");
	is(vcxl_client_dma_map(a, 1ull << 30, 512ull << 20, RW, fd, 512ull << 20, NULL), 0,
	   "a second 512 MiB window mapped (1 GiB: the budget)");
	is(vcxl_client_dma_map(a, 2ull << 30, 4096, RW, fd, 0, NULL), -EDQUOT,
	   "4 KiB more: EDQUOT");
	is(vcxl_client_dma_map(a, 3ull << 30, 4096, RW, -1, 0, NULL), 0,
	   "a window without an fd maps nothing: accepted");
	is(vcxl_client_dma_unmap(a, 0, 512ull << 20, 0), 0, "the first window unmapped");
	is(vcxl_client_dma_map(a, 2ull << 30, 512ull << 20, RW, fd, 0, NULL), 0,
	   "its 512 MiB are given back: mapped again");
	vcxl_client_close(a);
stop:
	is(h_stop(&h), 0, "--max-dma-mapped: SIGTERM, exit 0");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
out:
	if (fd >= 0)
		close(fd);
}

/* systemd's default: 1024 fds, soft and hard */
static void nofile_1024(void)
{
	struct rlimit rl = {1024, 1024};

	setrlimit(RLIMIT_NOFILE, &rl);
}

/* The issue's attack: under a 1024 fd limit, device 0's client maps 4 KiB
 * windows, each with an fd, until it is refused. */
static void test_fds(const char *bin)
{
	struct harness h = {0};
	struct vcxl_client *a = NULL;
	char s0[160], s1[160];
	unsigned mapped = 0, emfile = 0, other = 0;
	int fd = memfd_of("guest-a", 4096), efd = eventfd(0, EFD_CLOEXEC);

	if (!ok(start_two(&h, bin, nofile_1024, NULL) == 0,
		"server --devices 2 started with RLIMIT_NOFILE 1024")) {
		h_cleanup(&h);
		goto out;
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	h_dev_sock(&h, 1, s1, sizeof(s1));
	if (vcxl_client_connect_raw(s0, &a) || vcxl_client_negotiate(a, caps_many_maps)) {
		ok(0, "device 0's client connects");
		goto stop;
	}
	for (unsigned i = 0; i < 1100; i++) {
		int rc = vcxl_client_dma_map(a, (uint64_t)i << 12, 4096, RW, fd, 0, NULL);

		mapped += rc == 0;
		emfile += rc == -EMFILE;
		other += rc && rc != -EMFILE;
		if (rc && rc != -EMFILE)
			break;
	}
	ok(mapped >= 100 && mapped < 1009 - 48, "device 0: %u windows with an fd mapped", mapped);
	ok(emfile == 1100 - mapped && !other, "the other %u refused with EMFILE (%u otherwise)",
	   emfile, other);
	is(vcxl_client_set_irqs(a, VFIO_PCI_MSIX_IRQ_INDEX,
				VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 1, &efd,
				1, NULL),
	   -EMFILE, "an eventfd counts too: SET_IRQS over the budget, EMFILE");
	neighbour_served(s1, "1100 fd windows");
	ok(control_answers(&h) == 0, "1100 fd windows: the control socket answers");
	server_idles(&h, "1100 fd windows");
	/* the budget is given back: unmap everything, an eventfd is taken */
	is(vcxl_client_dma_unmap(a, 0, 1100ull << 12, 0), 0, "device 0 unmaps its windows");
	is(vcxl_client_set_irqs(a, VFIO_PCI_MSIX_IRQ_INDEX,
				VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 0, 1, &efd,
				1, NULL),
	   0, "then its eventfd is taken");
	vcxl_client_close(a);
stop:
	is(h_stop(&h), 0, "RLIMIT_NOFILE 1024: SIGTERM, exit 0");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
out:
	if (fd >= 0)
		close(fd);
	if (efd >= 0)
		close(efd);
}

/* A window on a plain file (ext4 or whatever the test's directory is on) is
 * refused; one on /dev/shm (tmpfs) is taken. */
static void test_window_files(const char *bin)
{
	struct harness h = {0};
	struct vcxl_client *a = NULL;
	char s0[160], disk[200], shm[96];
	int dfd = -1, sfd = -1;

	if (!ok(start_two(&h, bin, NULL, NULL) == 0, "window files: server started")) {
		h_cleanup(&h);
		return;
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	snprintf(disk, sizeof(disk), "%s/guest-ram", h.dir);
	snprintf(shm, sizeof(shm), "/dev/shm/vcxl-budgets-%d", (int)getpid());
	dfd = open(disk, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	sfd = open(shm, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (!ok(dfd >= 0 && sfd >= 0 && !ftruncate(dfd, 1 << 20) && !ftruncate(sfd, 1 << 20) &&
		    vcxl_client_connect(s0, &a) == 0,
		"window files: a 1 MiB file in %s and in /dev/shm, device 0 connected", h.dir))
		goto out;
	is(vcxl_client_dma_map(a, 0x100000, 1 << 20, RW, dfd, 0, NULL), -ENODEV,
	   "a window on a file on disk: ENODEV");
	ok(h_log_count(&h, "neither shared memory") == 1, "one log line says why");
	is(vcxl_client_dma_map(a, 0x200000, 1 << 20, RW, sfd, 0, NULL), 0,
	   "a window on a file in /dev/shm (tmpfs): mapped");
	vcxl_client_close(a);
out:
	is(h_stop(&h), 0, "window files: SIGTERM, exit 0");
	if (dfd >= 0)
		close(dfd);
	if (sfd >= 0)
		close(sfd);
	unlink(shm);
	if (tap_failed)
		h_dump_log(&h);
	unlink(disk);
	h_cleanup(&h);
}

#define FUSE_FILE_SIZE (1u << 20)

static void fuse_reply(int fd, uint64_t unique, int err, const void *body, size_t len)
{
	struct fuse_out_header oh = {
	    .len = (uint32_t)(sizeof(oh) + len), .error = -err, .unique = unique};
	struct iovec iov[2] = {{&oh, sizeof(oh)}, {(void *)body, len}};

	if (writev(fd, iov, len ? 2 : 1) < 0)
		_exit(0); /* unmounted */
}

static void fuse_attr_of(uint64_t node, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->nlink = 1;
	a->blksize = 4096;
	if (node == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
	} else {
		a->mode = S_IFREG | 0600;
		a->size = FUSE_FILE_SIZE;
		a->blocks = FUSE_FILE_SIZE / 512;
	}
}

/* The hostile daemon: it answers what opening its one file "f" takes
 * (INIT, LOOKUP, GETATTR, OPEN, FLUSH, RELEASE) and never anything else: a
 * READ, a STATFS wait for ever. Each READ is reported on note. */
static void fuse_daemon(int fd, int note)
{
	static uint8_t buf[FUSE_MIN_READ_BUFFER + (1 << 20)];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		struct fuse_in_header *ih = (struct fuse_in_header *)buf;
		const void *arg = buf + sizeof(*ih);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(*ih))
			_exit(0);
		switch (ih->opcode) {
		case FUSE_INIT: {
			const struct fuse_init_in *in = arg;
			struct fuse_init_out out = {.major = FUSE_KERNEL_VERSION,
						    .minor = FUSE_KERNEL_MINOR_VERSION,
						    .max_readahead = in->max_readahead,
						    .max_write = 4096};
			fuse_reply(fd, ih->unique, 0, &out, sizeof(out));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out out = {
			    .nodeid = 2, .entry_valid = 3600, .attr_valid = 3600};

			if (strcmp(arg, "f")) {
				fuse_reply(fd, ih->unique, -ENOENT, NULL, 0);
				break;
			}
			fuse_attr_of(2, &out.attr);
			fuse_reply(fd, ih->unique, 0, &out, sizeof(out));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out out = {.attr_valid = 3600};

			fuse_attr_of(ih->nodeid, &out.attr);
			fuse_reply(fd, ih->unique, 0, &out, sizeof(out));
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_out out = {.fh = 1};

			fuse_reply(fd, ih->unique, 0, &out, sizeof(out));
			break;
		}
		case FUSE_FLUSH:
		case FUSE_RELEASE:
			fuse_reply(fd, ih->unique, 0, NULL, 0);
			break;
		case FUSE_READ:
			if (write(note, "R", 1) < 0)
				_exit(0);
			break; /* never answered */
		case FUSE_STATFS:
		case FUSE_INTERRUPT:
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
			break; /* never answered (FORGET takes none) */
		default:
			fuse_reply(fd, ih->unique, -ENOSYS, NULL, 0);
			break;
		}
	}
}

struct fuse_mnt {
	char dir[64];
	pid_t pid;
	int note; /* the daemon writes "R" per READ */
};

/* Mount the hostile FUSE file system (root and /dev/fuse needed): 0, or
 * -errno to skip. */
static int fuse_start(struct fuse_mnt *f)
{
	char opts[128];
	int p[2], fd;

	snprintf(f->dir, sizeof(f->dir), "/tmp/vcxl-fuse-XXXXXX");
	if (!mkdtemp(f->dir))
		return -errno;
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0 || pipe2(p, O_CLOEXEC | O_NONBLOCK)) {
		int e = -errno;

		rmdir(f->dir);
		return e;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("vcxl-hostile", f->dir, "fuse", MS_NOSUID | MS_NODEV, opts)) {
		int e = -errno;

		close(fd);
		close(p[0]);
		close(p[1]);
		rmdir(f->dir);
		return e;
	}
	f->pid = fork();
	if (f->pid == 0) {
		close(p[0]);
		fuse_daemon(fd, p[1]);
		_exit(0);
	}
	close(fd);
	close(p[1]);
	f->note = p[0];
	return f->pid < 0 ? -errno : 0;
}

/* Pending READs fail (the connection is aborted), the mount goes. */
static void fuse_stop(struct fuse_mnt *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
	}
	f->pid = -1;
	umount2(f->dir, MNT_DETACH);
	rmdir(f->dir);
	if (f->note >= 0)
		close(f->note);
	f->note = -1;
}

/* SIGTERM and up to ms for the exit: its status, or -1 (still running; a
 * server held by a FUSE daemon would not even die of SIGKILL before it
 * answers). */
static int term_wait(struct harness *h, int ms)
{
	int st = 0;

	if (h->pid <= 0)
		return -1;
	kill(h->pid, SIGTERM);
	for (int t = 0; t < ms; t += 10) {
		if (waitpid(h->pid, &st, WNOHANG) == h->pid) {
			h->pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		}
		h_sleep_ms(10);
	}
	return -1;
}

/* The engine's COPY of 64 KiB from guest RAM at src into device memory; the
 * doorbell goes out without waiting for its reply. */
static int start_copy_from(struct vcxl_client *a, uint64_t src)
{
	uint8_t msg[sizeof(struct vfio_user_hdr) + sizeof(struct vfio_user_region_access) + 4];
	struct vfio_user_hdr hh = {
	    .msg_id = 0x7b, .command = VFIO_USER_REGION_WRITE, .msg_size = sizeof(msg)};
	struct vfio_user_region_access ra = {.offset = ACCEL_REG_DOORBELL, .region = 2, .count = 4};
	uint32_t go = ACCEL_DOORBELL_GO;

	if (vcxl_client_write32(a, 2, ACCEL_REG_JOB_OP, ACCEL_OP_COPY) ||
	    vcxl_client_write32(a, 2, ACCEL_REG_JOB_FLAGS, ACCEL_JOBF_SRC_HOST) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_SRC, src) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_DST, 0) ||
	    vcxl_client_write64(a, 2, ACCEL_REG_JOB_LEN, 65536))
		return -EIO;
	memcpy(msg, &hh, sizeof(hh));
	memcpy(msg + sizeof(hh), &ra, sizeof(ra));
	memcpy(msg + sizeof(hh) + sizeof(ra), &go, 4);
	return vcxl_client_send_bytes(a, msg, sizeof(msg), NULL, 0);
}

/* The issue's attack: device 0's client maps a window on a file its own
 * FUSE daemon serves and starts a COPY from it; the daemon never answers. */
static void test_window_fuse(const char *bin)
{
	struct harness h = {0};
	struct fuse_mnt f = {.pid = -1, .note = -1};
	struct vcxl_client *a = NULL, *b = NULL;
	char s0[160], s1[160], path[96], r;
	int fd = -1, rc = geteuid() ? -EPERM : fuse_start(&f);
	double w;

	if (rc) {
		ok(1, "# SKIP a FUSE mount: %s", strerror(-rc));
		return;
	}
	snprintf(path, sizeof(path), "%s/f", f.dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (!ok(fd >= 0, "the hostile FUSE daemon serves %s", path) ||
	    !ok(start_two(&h, bin, NULL, NULL) == 0, "fuse: server started")) {
		h_cleanup(&h);
		goto out;
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	h_dev_sock(&h, 1, s1, sizeof(s1));
	if (vcxl_client_connect(s0, &a) || vcxl_client_connect(s1, &b)) {
		ok(0, "fuse: both devices' clients connected");
		goto stop;
	}
	is(vcxl_client_dma_map(a, 0x100000, FUSE_FILE_SIZE, RW, fd, 0, NULL), -ENODEV,
	   "a window on the FUSE file: ENODEV");
	is(start_copy_from(a, 0x100000), 0, "device 0: a COPY from it started anyway");
	w = h_neighbour_worst_ms(b, 300);
	ok(w >= 0 && w < 200, "device 1 served meanwhile: worst %.1f ms", w);
	ok(read(f.note, &r, 1) != 1, "the server never read the FUSE file");
stop:
	is(term_wait(&h, 3000), 0,
	   "fuse: SIGTERM obeyed within 3 s, exit 0, the daemon still silent");
	fuse_stop(&f); /* a server held by the daemon is let go: h_cleanup can end it */
	if (a)
		vcxl_client_close(a);
	if (b)
		vcxl_client_close(b);
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
out:
	if (fd >= 0)
		close(fd);
	if (f.pid > 0)
		fuse_stop(&f);
}

int main(int argc, char **argv)
{
	const char *bin = h_server_bin(argc, argv);

	test_address_space(bin);
	test_mapped_accounting(bin);
	test_fds(bin);
	test_window_files(bin);
	test_window_fuse(bin);
	return tap_done();
}
