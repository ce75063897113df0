// SPDX-License-Identifier: BSD-3-Clause
/*
 * Client-triggered warnings are rate-limited (issue 21, item 10e: a client's
 * flood of bad messages wrote 45 MB of log in 5 s, drowning every other
 * device's lines): 5,000 rejected messages on device 0 give at most a few
 * windows' worth of "protocol error" lines and a "suppressed" count, and
 * device 1's own warning still appears. 5,000 DMA windows without an fd are
 * all taken and log nothing at warn: the model reaches such a window with
 * DMA_READ/DMA_WRITE (only hardware, which needs the fd, warns; test_proto).
 */
#include "harness.h"
#include "tap.h"

#define NBAD 5000

/* a REGION_READ without its payload: rejected and logged as a protocol error */
static int bad_messages(const char *sock, int n)
{
	struct vcxl_client *c = NULL;
	int got = 0;

	if (vcxl_client_connect(sock, &c))
		return -1;
	for (int i = 0; i < n; i++) {
		struct vcxl_client_reply rep;

		if (vcxl_client_raw(c, VFIO_USER_REGION_READ, 0, NULL, 0, NULL, 0, &rep))
			break;
		got += (rep.hdr.flags & VFIO_USER_F_ERROR) != 0;
		vcxl_client_reply_free(&rep);
	}
	vcxl_client_close(c);
	return got;
}

/* DMA_MAP of a window without an fd, then its DMA_UNMAP, n times: how many
 * maps were accepted */
static int fdless_maps(const char *sock, int n)
{
	struct vcxl_client *c = NULL;
	int got = 0;

	if (vcxl_client_connect(sock, &c))
		return -1;
	for (int i = 0; i < n; i++) {
		if (vcxl_client_dma_map(c, 0xc0000, 0x20000, VFIO_USER_F_DMA_REGION_READ, -1, 0,
					NULL) ||
		    vcxl_client_dma_unmap(c, 0xc0000, 0x20000, 0))
			break;
		got++;
	}
	vcxl_client_close(c);
	return got;
}

int main(int argc, char **argv)
{
	const char *args[] = {"--devices", "2", NULL};
	struct harness h = {0};
	char s0[160], s1[160];
	int lines, limit;

	if (!ok(h_start(&h, h_server_bin(argc, argv), 0, args) == 0, "server with two devices")) {
		h_dump_log(&h);
		h_cleanup(&h);
		return done();
	}
	h_dev_sock(&h, 0, s0, sizeof(s0));
	h_dev_sock(&h, 1, s1, sizeof(s1));
	is(bad_messages(s0, NBAD), NBAD, "device 0's client: %d rejected messages", NBAD);
	is(bad_messages(s1, 1), 1, "device 1's client: one");
	lines = h_log_count(&h, "dev0: " VCXL_PROTO_ERR_PREFIX);
	/* a window per second the flood lasted, and a slow machine's margin */
	limit = 10 * VCXL_LOG_RATE_BURST;
	ok(lines >= VCXL_LOG_RATE_BURST && lines <= limit,
	   "device 0's protocol errors in the log: %d of %d (at most %d)", lines, NBAD, limit);
	is(h_log_count(&h, "dev1: " VCXL_PROTO_ERR_PREFIX), 1, "device 1's warning is there");
	is(fdless_maps(s0, NBAD), NBAD,
	   "device 0's client: %d DMA windows without an fd, each unmapped", NBAD);
	is(h_log_count(&h, "has no fd"), 0,
	   "... and no warning: the model reaches them by DMA_READ/DMA_WRITE");
	is(h_stop(&h), 0, "server exits cleanly");
	h_cleanup(&h);
	return done();
}
