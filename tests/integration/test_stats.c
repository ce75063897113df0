// SPDX-License-Identifier: BSD-3-Clause
/*
 * Device counters that outlive connections (query-stats, `vcxl stats`) with
 * the real binaries: a client makes requests, an error (a REGION_READ of a
 * region that does not exist), DMA each way (the accelerator's job engine
 * copying from and to a memfd window), an MSI-X interrupt, a DEVICE_RESET
 * and a guest FLR, and disconnects; the device's totals survive it, the
 * on-disconnect reset and the hand-over are counted, and a second client's
 * share starts from zero next to the totals. `vcxl stats --prometheus` is
 * parsed line by line and agrees with the JSON.
 */
#include <json-c/json.h>
#include <linux/pci_regs.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "cxl/cxl_regs.h"
#include "model/model.h"
#include "tap.h"
#include "integration/harness.h"

#define GUEST_IOVA 0x100000000ull
#define WIN_SIZE   (4u << 20)
#define ACCEL_BAR  2
#define READ_LEN   0x10000
#define WRITE_LEN  0x8000

/* {"execute": "query-stats"} on the control socket: the reply's "return" */
static struct json_object *query_stats(const char *ctl)
{
	static const char req[] = "{\"execute\": \"query-stats\"}\n";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	static char buf[1 << 16];
	struct json_object *r, *ret = NULL;
	size_t got = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ctl);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != sizeof(req) - 1) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 5000) <= 0)
			break;
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	r = json_tokener_parse(buf);
	if (r && json_object_object_get_ex(r, "return", &ret))
		json_object_get(ret);
	json_object_put(r);
	return ret;
}

/* Run one job of the accelerator and wait for DONE/ERROR: STATUS, 0 on timeout */
static uint32_t run_job(struct vcxl_client *c, uint32_t op, uint32_t flags, uint64_t src,
			uint64_t dst, uint64_t len, unsigned vec)
{
	uint32_t st = 0;

	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_STATUS, ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_JOB_OP, op);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_JOB_FLAGS, flags);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_SRC, src);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_DST, dst);
	vcxl_client_write64(c, ACCEL_BAR, ACCEL_REG_JOB_LEN, len);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_JOB_VECTOR, vec);
	vcxl_client_write32(c, ACCEL_BAR, ACCEL_REG_DOORBELL, ACCEL_DOORBELL_GO);
	for (int i = 0; i < 2000; i++) {
		vcxl_client_poll(c, 0);
		if (vcxl_client_read32(c, ACCEL_BAR, ACCEL_REG_STATUS, &st))
			return 0;
		if (st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR))
			return st;
		h_sleep_ms(1);
	}
	return 0;
}

/* The config space offset of capability id, 0 if none */
static unsigned find_cap(const uint8_t *cfg, uint8_t id)
{
	unsigned p = cfg[PCI_CAPABILITY_LIST] & ~3u;

	for (int hops = 0; p && hops < 48; hops++) {
		if (cfg[p] == id)
			return p;
		p = cfg[p + 1] & ~3u;
	}
	return 0;
}

static void msix_enable(struct vcxl_client *c, const uint8_t *cfg, unsigned vec)
{
	unsigned p = find_cap(cfg, PCI_CAP_ID_MSIX);
	uint16_t ctl;

	memcpy(&ctl, cfg + p + PCI_MSIX_FLAGS, 2);
	ctl = (uint16_t)((ctl | PCI_MSIX_FLAGS_ENABLE) & ~PCI_MSIX_FLAGS_MASKALL);
	vcxl_client_region_write(c, VFIO_PCI_CONFIG_REGION_INDEX, p + PCI_MSIX_FLAGS, &ctl, 2);
	vcxl_client_write32(c, ACCEL_BAR,
			    VCXL_MODEL_MSIX_TABLE + vec * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_DATA,
			    0x40 + vec);
	vcxl_client_write32(
	    c, ACCEL_BAR,
	    VCXL_MODEL_MSIX_TABLE + vec * PCI_MSIX_ENTRY_SIZE + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
}

/* The first client: everything the counters count, then it leaves. Its
 * requests as the server counted them while it was attached. */
static int64_t first_client(struct harness *h, const char *ctl)
{
	struct vcxl_client *c;
	struct vcxl_client_info info;
	uint8_t cfg[4096];
	uint32_t v, st;
	int mfd = memfd_create("guest", MFD_CLOEXEC), efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct json_object *j;
	int64_t reqs;
	uint8_t *g;

	setup_ok(ftruncate(mfd, WIN_SIZE));
	g = mmap(NULL, WIN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	memset(g, 0x5a, READ_LEN);
	is(vcxl_client_connect(h->sock, &c), 0, "client A connects");
	is(vcxl_client_get_info(c, &info), 0, "A: GET_INFO");
	is(vcxl_client_region_read(c, VFIO_PCI_CONFIG_REGION_INDEX, 0, cfg, sizeof(cfg)), 0,
	   "A: config space read");
	ok(vcxl_client_read32(c, 99, 0, &v) < 0, "A: a REGION_READ of region 99 is refused");
	is(vcxl_client_dma_map(c, GUEST_IOVA, WIN_SIZE,
			       VFIO_USER_F_DMA_REGION_READ | VFIO_USER_F_DMA_REGION_WRITE, mfd, 0,
			       NULL),
	   0, "A: DMA_MAP a memfd window");
	is(vcxl_client_set_irqs(c, VFIO_PCI_MSIX_IRQ_INDEX,
				VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER, 1, 1, &efd,
				1, NULL),
	   0, "A: an eventfd on MSI-X vector 1");
	msix_enable(c, cfg, 1);
	st = run_job(c, ACCEL_OP_COPY, ACCEL_JOBF_SRC_HOST | ACCEL_JOBF_IRQ, GUEST_IOVA, 0x200000,
		     READ_LEN, 1);
	is(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), ACCEL_STATUS_DONE,
	   "A: the device reads 0x%x bytes of guest memory", READ_LEN);
	ok(h_eventfd_fired(efd, 2000), "A: its completion interrupt is delivered");
	st = run_job(c, ACCEL_OP_COPY, ACCEL_JOBF_DST_HOST, 0x200000, GUEST_IOVA + 0x100000,
		     WRITE_LEN, 0);
	is(st & (ACCEL_STATUS_DONE | ACCEL_STATUS_ERROR), ACCEL_STATUS_DONE,
	   "A: the device writes 0x%x bytes of guest memory", WRITE_LEN);
	is(vcxl_client_reset(c), 0, "A: DEVICE_RESET");
	unsigned px = find_cap(cfg, PCI_CAP_ID_EXP);
	uint16_t flr = PCI_EXP_DEVCTL_BCR_FLR;
	ok(px && !vcxl_client_region_write(c, VFIO_PCI_CONFIG_REGION_INDEX, px + PCI_EXP_DEVCTL,
					   &flr, 2),
	   "A: the guest's FLR (PCIe DevCtl Initiate FLR)");

	j = query_stats(ctl);
	ok(j != NULL, "query-stats answers while A is attached");
	reqs = h_jgeti(j, "devices.0.client.counters.requests");
	ok(reqs > 10, "A's share: %lld requests", (long long)reqs);
	is(h_jgeti(j, "devices.0.total.requests"), reqs,
	   "the device's total is A's while A is the first");
	ok(h_jgeti(j, "devices.0.total.requests_by_command.REGION_READ") >= 2,
	   "requests by command: REGION_READ");
	is(h_jgeti(j, "devices.0.total.requests_by_command.DEVICE_RESET"), 1,
	   "requests by command: one DEVICE_RESET");
	is(h_jgeti(j, "devices.0.total.errors_by_errno.EINVAL"), 1, "errors by errno: one EINVAL");
	is(h_jgeti(j, "devices.0.total.dma_read_bytes"), READ_LEN, "DMA bytes the device read");
	is(h_jgeti(j, "devices.0.total.dma_write_bytes"), WRITE_LEN, "DMA bytes the device wrote");
	is(h_jgeti(j, "devices.0.total.interrupts"), 1, "one interrupt delivered");
	is(h_jgeti(j, "devices.0.client.counters.resets.device_reset"), 1,
	   "A's share of resets: DEVICE_RESET 1");
	is(h_jgeti(j, "devices.0.client.counters.resets.flr"), 1, "A's share of resets: FLR 1");
	is(h_jgeti(j, "devices.0.clients_served"), 1, "clients served: 1");
	is(h_jgeti(j, "devices.0.handovers"), 0, "no hand-over yet");
	ok(json_object_get_boolean(h_jget(j, "devices.0.connected")), "connected");
	json_object_put(j);

	vcxl_client_close(c);
	munmap(g, WIN_SIZE);
	close(mfd);
	close(efd);
	return reqs;
}

/* `vcxl stats --prometheus`: every line a HELP, a TYPE or a sample of a
 * metric typed before it, counters named *_total; returns the value of the
 * sample whose name and labels are want (-1 if none) */
static void check_prometheus(const char *text, int *bad, int *samples)
{
	char typed[64][64];
	unsigned ntyped = 0;

	*bad = *samples = 0;
	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		char line[512];

		if (!nl) {
			(*bad)++; /* the last line too ends with a newline */
			break;
		}
		snprintf(line, sizeof(line), "%.*s", (int)(nl - l), l);
		l = nl + 1;
		if (!strncmp(line, "# HELP ", 7))
			continue;
		if (!strncmp(line, "# TYPE ", 7)) {
			char *t = strchr(line + 7, ' ');

			if (!t || ntyped == 64 ||
			    (strcmp(t + 1, "counter") && strcmp(t + 1, "gauge")))
				(*bad)++;
			else {
				*t = 0;
				if (!strcmp(t + 1, "counter") && !strstr(line + 7, "_total"))
					(*bad)++;
				snprintf(typed[ntyped++], sizeof(typed[0]), "%.63s", line + 7);
			}
			continue;
		}
		size_t n = strcspn(line, "{ ");
		bool known = false;
		char *sp = strrchr(line, ' '), *end = NULL;

		for (unsigned i = 0; i < ntyped; i++)
			known |= strlen(typed[i]) == n && !strncmp(typed[i], line, n);
		if (sp)
			strtod(sp + 1, &end);
		if (!known || !sp || !end || *end || (line[n] == '{' && sp[-1] != '}'))
			(*bad)++;
		(*samples)++;
	}
}

static double prom_sample(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, prefix, n) && l[n] == ' ')
			return strtod(l + n + 1, NULL);
	return -1;
}

int main(int argc, char **argv)
{
	struct harness h = {.cli = h_cli_bin(argc, argv)};
	static char out[1 << 16];
	struct json_object *j;
	char ctl[200], args[512];
	struct vcxl_client *b;
	int64_t a_reqs, b_reqs;
	int rc = h_start(&h, h_server_bin(argc, argv), -1, NULL);

	ok(rc == 0, "vcxl-server started");
	if (rc) {
		h_dump_log(&h);
		h_cleanup(&h);
		return done();
	}
	snprintf(ctl, sizeof(ctl), "%s.ctl", h.sock);
	a_reqs = first_client(&h, ctl);

	/* the hand-over: the device is readied for the next client */
	j = NULL;
	for (int t = 0; t < 5000; t += 20) {
		json_object_put(j);
		j = query_stats(ctl);
		if (h_jgeti(j, "devices.0.handovers") == 1)
			break;
		h_sleep_ms(20);
	}
	is(h_jgeti(j, "devices.0.handovers"), 1, "A left: one hand-over");
	ok(!json_object_get_boolean(h_jget(j, "devices.0.connected")) &&
	       h_jget(j, "devices.0.client") == NULL,
	   "no client attached: \"client\": null");
	is(h_jgeti(j, "devices.0.total.requests"), a_reqs,
	   "A's %lld requests outlive its connection", (long long)a_reqs);
	is(h_jgeti(j, "devices.0.total.dma_read_bytes"), READ_LEN, "DMA read bytes outlive it");
	is(h_jgeti(j, "devices.0.total.dma_write_bytes"), WRITE_LEN, "DMA write bytes outlive it");
	is(h_jgeti(j, "devices.0.total.interrupts"), 1, "its interrupt outlives it");
	is(h_jgeti(j, "devices.0.total.errors_by_errno.EINVAL"), 1, "its EINVAL outlives it");
	is(h_jgeti(j, "devices.0.total.resets.device_reset"), 1, "resets: DEVICE_RESET 1");
	is(h_jgeti(j, "devices.0.total.resets.flr"), 1, "resets: FLR 1");
	is(h_jgeti(j, "devices.0.total.resets.disconnect_keep") +
	       h_jgeti(j, "devices.0.total.resets.disconnect_reset"),
	   1, "resets: one on-disconnect reset");
	json_object_put(j);

	is(vcxl_client_connect(h.sock, &b), 0, "client B connects");
	j = query_stats(ctl);
	b_reqs = h_jgeti(j, "devices.0.client.counters.requests");
	ok(b_reqs > 0 && b_reqs < a_reqs, "B's share restarts: %lld requests (A made %lld)",
	   (long long)b_reqs, (long long)a_reqs);
	is(h_jgeti(j, "devices.0.total.requests"), a_reqs + b_reqs,
	   "the device's total: A's and B's requests");
	is(h_jgeti(j, "devices.0.client.counters.dma_read_bytes") +
	       h_jgeti(j, "devices.0.client.counters.dma_write_bytes") +
	       h_jgeti(j, "devices.0.client.counters.interrupts") +
	       h_jgeti(j, "devices.0.client.counters.errors"),
	   0, "B's share: no DMA, interrupt or error");
	is(h_jgeti(j, "devices.0.client.counters.resets.device_reset") +
	       h_jgeti(j, "devices.0.client.counters.resets.flr") +
	       h_jgeti(j, "devices.0.client.counters.resets.disconnect_keep") +
	       h_jgeti(j, "devices.0.client.counters.resets.disconnect_reset"),
	   0, "B's share of resets: none (the totals keep A's)");
	is(h_jgeti(j, "devices.0.clients_served"), 2, "clients served: 2");
	ok(h_jgeti(j, "devices.0.client.pid") == getpid(),
	   "the current client is ours (SO_PEERCRED)");
	json_object_put(j);

	/* the CLI, with B attached */
	snprintf(args, sizeof(args), "stats %s --prometheus", h.sock);
	rc = h_run_cli(h.cli, args, out, sizeof(out));
	is(rc, 0, "vcxl stats --prometheus: exit 0");
	int bad, samples;
	check_prometheus(out, &bad, &samples);
	is(bad, 0, "every line is well-formed (HELP, TYPE, or a sample of a typed metric)");
	ok(samples >= 20, "%d samples", samples);
	ok(prom_sample(out, "vcxl_dma_bytes_total{device=\"0\",direction=\"read\"}") == READ_LEN,
	   "vcxl_dma_bytes_total{device=\"0\",direction=\"read\"} %d", READ_LEN);
	ok(prom_sample(out, "vcxl_resets_total{device=\"0\",kind=\"flr\"}") == 1,
	   "vcxl_resets_total{device=\"0\",kind=\"flr\"} 1");
	ok(prom_sample(out, "vcxl_errors_total{device=\"0\",errno=\"EINVAL\"}") == 1,
	   "vcxl_errors_total{device=\"0\",errno=\"EINVAL\"} 1");
	ok(prom_sample(out, "vcxl_clients_served_total{device=\"0\"}") == 2,
	   "vcxl_clients_served_total 2");
	ok(prom_sample(out, "vcxl_client_requests_total{device=\"0\"}") >= (double)b_reqs,
	   "vcxl_client_requests_total: B's share");
	ok(prom_sample(out, "vcxl_handovers_total{device=\"0\"}") == 1, "vcxl_handovers_total 1");
	snprintf(args, sizeof(args), "stats %s --json", h.sock);
	rc = h_run_cli(h.cli, args, out, sizeof(out));
	j = json_tokener_parse(out);
	ok(rc == 0 && h_jgeti(j, "devices.0.total.resets.flr") == 1,
	   "vcxl stats --json: exit 0, the query-stats object");
	json_object_put(j);
	snprintf(args, sizeof(args), "stats %s", h.sock);
	rc = h_run_cli(h.cli, args, out, sizeof(out));
	ok(rc == 0 && strstr(out, "Clients served: 2, hand-overs 1") &&
	       strstr(out, "This client:    pid"),
	   "vcxl stats: the text names the totals and this client");
	snprintf(args, sizeof(args), "stats %s --json --prometheus", h.sock);
	ok(h_run_cli(h.cli, args, out, sizeof(out)) == 1 && strstr(out, "not both"),
	   "--json and --prometheus together: refused");
	vcxl_client_close(b);

	is(h_log_count(&h, VCXL_PROTO_ERR_PREFIX), 1,
	   "one protocol error in the server log: A's REGION_READ of region 99");
	is(h_stop(&h), 0, "clean exit");
	if (tap_failed)
		h_dump_log(&h);
	h_cleanup(&h);
	return done();
}
