// SPDX-License-Identifier: BSD-3-Clause
/*
 * System calls the real server makes per request, counted with ptrace (the
 * test is the server's tracer, every thread followed): a 4-byte REGION_WRITE
 * of config space costs what a 4-byte REGION_READ costs, one recvmsg, one
 * sendmsg and one epoll_wait (issue 21 item 12: config writes run on the
 * connection's coroutine, and glibc's swapcontext/getcontext added three
 * rt_sigprocmask calls to every one, 1.5x a raw socket round trip).
 *
 * Requests a client sends together (one sendmsg of PIPE_K reads, as QEMU's
 * config load sends its writes, its DMA map, SET_IRQS, the state change and
 * the decoders' read before it waits) get their replies in one sendmsg: the
 * client's reader wakes once for them, not once a reply.
 *
 * Each phase is one client process (connect, N requests, close); the counts
 * are those the server made while it ran. No timing is asserted (make bench
 * has the round-trip figures).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <linux/vfio.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "harness.h"
#include "tap.h"
#include "cxl/cxl_regs.h"
#include "vcxl/vfio_user.h"

#define N_REQ  500
#define MAX_NR 512
#define PIPE_K 10 /* requests a pipelined client sends in one sendmsg */

struct trace {
	pid_t server;
	long total;
	long by_nr[MAX_NR];
};

/* The CXL Device DVSEC in the client's config space (0: none) */
static uint32_t find_device_dvsec(struct vcxl_client *c)
{
	for (uint32_t off = PCIE_EXT_CAP_START, hops = 0; off && hops < 64; hops++) {
		uint32_t h = 0, h1 = 0, h2 = 0;

		if (vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, off, &h) ||
		    vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, off + PCIE_DVSEC_HEADER1,
				       &h1) ||
		    vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, off + PCIE_DVSEC_HEADER2,
				       &h2))
			return 0;
		if (VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, h) == PCIE_EXT_CAP_ID_DVSEC &&
		    VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, h1) == CXL_VENDOR_ID &&
		    VCXL_FIELD_GET(PCIE_DVSEC_HDR2_ID, h2) == CXL_DVSEC_ID_DEVICE)
			return off;
		off = (uint32_t)VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, h);
	}
	return 0;
}

enum phase { PH_WARM, PH_READ, PH_WRITE, PH_PIPE };

/* PIPE_K 4-byte reads of the DVSEC's Control register in one sendmsg on the
 * client's socket, then their replies read: 0 when all came, in order, right. */
static int pipelined_reads(struct vcxl_client *c, uint32_t dvsec, uint16_t id0)
{
	struct {
		struct vfio_user_hdr h;
		struct vfio_user_region_access a;
	} __attribute__((packed)) req[PIPE_K];
	uint8_t rep[PIPE_K *
		    (sizeof(struct vfio_user_hdr) + sizeof(struct vfio_user_region_access) + 4)];
	size_t got = 0, want = sizeof(rep);
	int fd = vcxl_client_fd(c);

	for (unsigned i = 0; i < PIPE_K; i++) {
		req[i].h = (struct vfio_user_hdr){.msg_id = (uint16_t)(id0 + i),
						  .command = VFIO_USER_REGION_READ,
						  .msg_size = sizeof(req[i]),
						  .flags = VFIO_USER_F_TYPE_CMD};
		req[i].a = (struct vfio_user_region_access){.offset = dvsec + CXL_DVSEC_CTRL,
							    .region = VFIO_PCI_CONFIG_REGION_INDEX,
							    .count = 4};
	}
	if (send(fd, req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req))
		return -1;
	while (got < want) {
		ssize_t n = recv(fd, rep + got, want - got, 0);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	for (unsigned i = 0; i < PIPE_K; i++) {
		const struct vfio_user_hdr *h = (const void *)(rep + i * (want / PIPE_K));

		if (h->msg_id != id0 + i || h->command != VFIO_USER_REGION_READ ||
		    (h->flags & VFIO_USER_F_ERROR) || h->msg_size != want / PIPE_K)
			return -1;
	}
	return 0;
}

/* The client process: exit 0 when every request was answered. The DVSEC is
 * found in the warm-up phase and passed on. */
static void client(const char *sock, enum phase ph, uint32_t dvsec, int out_fd)
{
	struct vcxl_client *c = NULL;
	uint32_t v = 0;
	int bad = 0;

	for (int i = 0; i < 6000 && vcxl_client_connect(sock, &c); i++)
		h_sleep_ms(10);
	if (!c)
		_exit(2);
	if (ph == PH_WARM) {
		dvsec = find_device_dvsec(c);
		bad |= !dvsec || write(out_fd, &dvsec, sizeof(dvsec)) != sizeof(dvsec);
		bad |= vcxl_client_write32(c, VFIO_PCI_CONFIG_REGION_INDEX, dvsec + CXL_DVSEC_CTRL2,
					   0) != 0;
	}
	for (int i = 0; ph == PH_READ && i < N_REQ; i++)
		bad |= vcxl_client_read32(c, VFIO_PCI_CONFIG_REGION_INDEX, dvsec + CXL_DVSEC_CTRL,
					  &v) != 0;
	for (int i = 0; ph == PH_WRITE && i < N_REQ; i++)
		bad |= vcxl_client_write32(c, VFIO_PCI_CONFIG_REGION_INDEX, dvsec + CXL_DVSEC_CTRL2,
					   0) != 0;
	for (int i = 0; ph == PH_PIPE && i < N_REQ / PIPE_K; i++)
		bad |= pipelined_reads(c, dvsec, (uint16_t)(0x4000 + i * PIPE_K)) != 0;
	vcxl_client_close(c);
	_exit(bad ? 1 : 0);
}

/* Serve the traced server's stops (counting its system calls) until the
 * process until exits: its exit status, -1 if the server went first. */
static int trace_until(struct trace *t, pid_t until)
{
	for (;;) {
		struct __ptrace_syscall_info si;
		int st, sig, inj = 0;
		pid_t p = waitpid(-1, &st, __WALL);

		if (p < 0)
			return -1;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (p == until)
				return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			if (p == t->server)
				return -1;
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		sig = WSTOPSIG(st);
		if (sig == (SIGTRAP | 0x80)) {
			if (ptrace(PTRACE_GET_SYSCALL_INFO, p, (void *)sizeof(si), &si) > 0 &&
			    si.op == PTRACE_SYSCALL_INFO_ENTRY) {
				t->total++;
				if (si.entry.nr < MAX_NR)
					t->by_nr[si.entry.nr]++;
			}
		} else if (sig != SIGTRAP && sig != SIGSTOP) {
			inj = sig; /* SIGTRAP: a clone event; SIGSTOP: a new thread's */
		}
		ptrace(PTRACE_SYSCALL, p, NULL, (void *)(long)inj);
	}
}

/* Run one client phase; the server's system calls meanwhile in *calls and
 * per number in by_nr. */
static int phase(struct trace *t, const char *sock, enum phase ph, uint32_t dvsec, int out_fd,
		 long *calls, long *by_nr)
{
	long before = t->total, nr0[MAX_NR];
	pid_t cl;
	int rc;

	memcpy(nr0, t->by_nr, sizeof(nr0));
	cl = fork();
	if (cl == 0)
		client(sock, ph, dvsec, out_fd);
	if (cl < 0)
		return -1;
	rc = trace_until(t, cl);
	*calls = t->total - before;
	for (int i = 0; by_nr && i < MAX_NR; i++)
		by_nr[i] = t->by_nr[i] - nr0[i];
	return rc;
}

/* The system calls that came once or more per request, as "nr:count/N" */
static void print_per_request(const char *what, const long *by_nr)
{
	char line[256] = "";
	size_t o = 0;

	for (int i = 0; i < MAX_NR; i++)
		if (by_nr[i] >= N_REQ / 2 && o < sizeof(line) - 32)
			o += (size_t)snprintf(line + o, sizeof(line) - o, " nr%d:%.2f", i,
					      (double)by_nr[i] / N_REQ);
	printf("# %s, per request (x86-64 numbers: 14 rt_sigprocmask, 46 sendmsg, 47 recvmsg, "
	       "232 epoll_wait):%s\n",
	       what, line);
}

static void test_syscalls(const char *bin)
{
	struct harness h = {0};
	struct trace t = {0};
	long warm = 0, rd = 0, wr = 0, pp = 0, rd_nr[MAX_NR] = {0}, wr_nr[MAX_NR] = {0};
	long pp_nr[MAX_NR] = {0};
	uint32_t dvsec = 0;
	int pfd[2], rc, st;

	setup_ok(h_prepare(&h, bin, "vcxl-sc"));
	setup_ok(pipe(pfd));
	t.server = fork();
	setup_ok(t.server < 0);
	if (t.server == 0) {
		int fd = open(h.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(99);
		raise(SIGSTOP);
		execl(bin, bin, "--socket", h.sock, "--log-level", "error", "--on-disconnect",
		      "keep", "--control", "none", (char *)NULL);
		_exit(127);
	}
	if (waitpid(t.server, &st, 0) != t.server || !WIFSTOPPED(st)) {
		ok(1, "# SKIP the server cannot be traced (ptrace)");
		h_cleanup(&h);
		return;
	}
	setup_ok(ptrace(
	    PTRACE_SETOPTIONS, t.server, NULL,
	    (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL)));
	setup_ok(ptrace(PTRACE_SYSCALL, t.server, NULL, NULL));

	rc = phase(&t, h.sock, PH_WARM, 0, pfd[1], &warm, NULL);
	if (rc == 0 && read(pfd[0], &dvsec, sizeof(dvsec)) != sizeof(dvsec))
		dvsec = 0;
	if (!ok(rc == 0 && dvsec,
		"a client connects to the traced server and finds the Device DVSEC (%d, 0x%x)", rc,
		dvsec)) {
		kill(t.server, SIGKILL);
		h_dump_log(&h);
		h_cleanup(&h);
		return;
	}
	rc = phase(&t, h.sock, PH_READ, dvsec, -1, &rd, rd_nr);
	ok(rc == 0, "%d config space REGION_READs (4 bytes) answered", N_REQ);
	print_per_request("reads", rd_nr);
	rc = phase(&t, h.sock, PH_WRITE, dvsec, -1, &wr, wr_nr);
	ok(rc == 0, "%d config space REGION_WRITEs (4 bytes) answered", N_REQ);
	print_per_request("writes", wr_nr);
	printf("# server system calls: %ld for a client's %d reads, %ld for %d writes "
	       "(connect and close included)\n",
	       rd, N_REQ, wr, N_REQ);
	/* a tenth of a call per request: room for the connect and the close */
	ok(wr <= rd + N_REQ / 10,
	   "a 4-byte config write costs the system calls of a read: %.2f per write, %.2f per read",
	   (double)wr / N_REQ, (double)rd / N_REQ);
	ok(rd <= 3 * N_REQ + N_REQ / 10,
	   "a read costs at most one recvmsg, one sendmsg and one epoll_wait: %.2f per read",
	   (double)rd / N_REQ);
	rc = phase(&t, h.sock, PH_PIPE, dvsec, -1, &pp, pp_nr);
	ok(rc == 0, "%d REGION_READs sent %d to a sendmsg, every reply right and in order", N_REQ,
	   PIPE_K);
	printf("# pipelined: %ld sendmsg, %ld recvmsg, %ld epoll_wait for %d batches of %d\n",
	       pp_nr[SYS_sendmsg], pp_nr[SYS_recvmsg], pp_nr[SYS_epoll_wait], N_REQ / PIPE_K,
	       PIPE_K);
	/* a tenth of a call per batch: room for the connect's and the close's */
	ok(pp_nr[SYS_sendmsg] <= N_REQ / PIPE_K + N_REQ / PIPE_K / 10,
	   "requests sent together are answered in one sendmsg: %.2f per batch of %d (%ld for %d "
	   "reads one at a time)",
	   (double)pp_nr[SYS_sendmsg] / (N_REQ / PIPE_K), PIPE_K, rd_nr[SYS_sendmsg], N_REQ);
	kill(t.server, SIGTERM);
	trace_until(&t, t.server);
	close(pfd[0]);
	close(pfd[1]);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	test_syscalls(h_server_bin(argc, argv));
	return done();
}
