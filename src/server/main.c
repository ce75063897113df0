// SPDX-License-Identifier: BSD-3-Clause
/*
 * vcxl-server: serves CXL devices (the built-in device model -- a Type-2
 * accelerator, or with --model type3 a Type-3 memory expander -- behind the
 * vfio-cxl core) to vfio-user clients such as QEMU's vfio-user-pci, one UNIX
 * socket per device, one epoll loop for all.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "budget.h"
#include "config.h"
#include "control.h"
#include "host/host_cxl.h"
#include "hw/hw_vfio.h"
#include "model/model.h"
#include "server/server.h"
#include "vfio-cxl/vfio_cxl.h"

/* meson passes the project version; a build outside meson (tests/e2e/hw links
 * main.c statically) still compiles */
#ifndef VCXL_VERSION
#define VCXL_VERSION "unknown"
#endif

#define MAX_DEVICES 64

/* long options without a short one */
#define OPT_TRUST_CLIENT 0x100
#define OPT_SOCKET_MODE	 0x101
#define OPT_SOCKET_GROUP 0x102
#define OPT_USER	 0x103
/* the control socket's own permissions (control.c) */
#define OPT_CONTROL_MODE  0x120
#define OPT_CONTROL_GROUP 0x121
#define OPT_CONTROL_IDLE  0x122
/* per-client budgets (budget.c) */
#define OPT_MAX_DMA_WINDOWS 0x130
#define OPT_MAX_DMA_MAPPED  0x131
#define OPT_MAX_DMA_PINNED  0x132
#define OPT_MAX_CLIENT_FDS  0x133

struct opts {
	const char *socket;
	uint64_t mem_size, region_size;
	unsigned decoders, guest_decoders, devices;
	enum vcxl_comp_at comp_at;
	bool firmware_committed;
	const char *backing;
	enum vcxl_log_level log_level;
	enum vcxl_model_kind kind;
	bool vfio;			       /* --backend vfio: a real device bound to vfio-pci */
	const char *bdf;		       /* --device */
	enum vcxl_hw_iommu iommu;	       /* --iommu */
	const char *region_dax;		       /* --region-dax */
	bool trust_client;		       /* --trust-client */
	enum vcxl_on_disconnect on_disconnect; /* --on-disconnect */
	const char *control;		       /* --control (NULL: SOCKET.ctl; "none": off) */
	int socket_mode;		       /* --socket-mode, -1 = umask */
	gid_t socket_gid;		       /* --socket-group, (gid_t)-1 = none */
	const char *user;		       /* --user: drop to it once everything is open */
	int control_mode;		       /* --control-mode (default VCXL_CONTROL_MODE) */
	gid_t control_gid;		       /* --control-group, (gid_t)-1 = none */
	struct vcxl_budget_req budget;	       /* --max-dma-*, --max-client-fds */
	unsigned control_idle_s;	       /* --control-idle-timeout */
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: vcxl-server [OPTIONS]\n"
		"Serve emulated CXL devices over vfio-user: Type-2 accelerators (0x8086:0x0d94)\n"
		"or, with --model type3, Type-3 memory expanders (0x8086:0x0d93).\n"
		"\n"
		"  -B, --backend KIND       model (default): the built-in device model;\n"
		"                           vfio: a real CXL device bound to vfio-pci\n"
		"  -D, --device BDF         with --backend vfio: the device, e.g. 0000:0d:00.0\n"
		"  -I, --iommu MODE         with --backend vfio: auto (default), group or iommufd\n"
		"  -X, --region-dax DEV     with --backend vfio: attach to the region the kernel\n"
		"                           committed, through its device-DAX (/dev/daxX.Y);\n"
		"                           nothing is programmed\n"
		"  -M, --model MODEL        accel (default): Type-2 accelerator 8086:0d94;\n"
		"                           type3: Type-3 memory expander 8086:0d93 (class\n"
		"                           050210, mailbox) for the guest's cxl_pci/cxl_mem;\n"
		"                           its region must cover all device memory\n"
		"  -s, --socket PATH        UNIX socket to listen on (default: vcxl.sock in the\n"
		"                           current directory). With --devices N > 1 the sockets\n"
		"                           are PATH.0 .. PATH.N-1\n"
		"  -m, --mem-size SIZE      device memory per device, a multiple of 256M\n"
		"                           (default 256M; suffixes K, M, G, T)\n"
		"  -r, --region-size SIZE   CXL region to create (default: all device memory)\n"
		"  -d, --decoders N         physical HDM decoders, 1..10 (default 1)\n"
		"  -g, --guest-decoders N   HDM decoders the guest sees (default: as the device)\n"
		"  -c, --comp-at WHERE      component register block in BAR0: start, middle or\n"
		"                           end (default start)\n"
		"  -f, --firmware-committed start with HDM decoder 0 committed by \"firmware\";\n"
		"                           the server attaches to that region, and the\n"
		"                           guest's decoder 0 is preset (locked on commit)\n"
		"                           for the VMM to place in a CXL window and commit\n"
		"  -b, --backing FILE       file backing device memory (default: memfd). With\n"
		"                           --devices N > 1: FILE.0 .. FILE.N-1\n"
		"  -n, --devices N          number of devices to serve (default 1, max %d)\n"
		"      --trust-client       hand the client fds that reach beyond what its guest\n"
		"                           may access: with --backend vfio the VFIO device fd\n"
		"                           for BAR mmaps (all of every BAR, config space and\n"
		"                           device ioctls: reset, IRQs, the host's component\n"
		"                           registers); with --backing the whole file (all\n"
		"                           device memory). RISK: a compromised VMM then\n"
		"                           changes host-owned state. Default: those BARs and\n"
		"                           regions are served by REGION_READ/WRITE only.\n"
		"                           /dev/mem is never handed out (region without\n"
		"                           --region-dax: messages only)\n"
		"  -O, --on-disconnect WHAT what the next client finds when one disconnects\n"
		"                           (after it negotiated): reset (default): a device\n"
		"                           reset, the virtual view as at start and the\n"
		"                           region's memory zeroed (new memory objects, so a\n"
		"                           departed client's mappings reach nothing), so no\n"
		"                           tenant reads the last one's data (memory that\n"
		"                           outlives the server, a --backing file or device\n"
		"                           memory, is also zeroed at start, before the first\n"
		"                           client; a device that cannot get new memory\n"
		"                           objects serves nobody until it can); keep:\n"
		"                           everything as the client left it, for a VMM that\n"
		"                           reconnects (vfio-user's 'retain device state') or a\n"
		"                           --backing file meant to outlive the run\n"
		"      --socket-mode MODE   mode of the sockets, octal (e.g. 0660; default: as\n"
		"                           the umask says); set before the socket listens\n"
		"      --socket-group GROUP group of the sockets (name or number)\n"
		"      --user USER          once every device and socket is open, drop to USER\n"
		"                           (its uid, gid, no supplementary groups); root is\n"
		"                           only needed to open /dev/vfio, sysfs, /dev/mem,\n"
		"                           device-DAX and to lift RLIMIT_MEMLOCK for DMA\n"
		"Per-client budgets (a request over one gets an errno reply):\n"
		"      --max-dma-windows N  DMA windows at once (default 4096): ENOSPC\n"
		"      --max-dma-mapped SIZE  address space of the DMA windows with an fd\n"
		"                           (default: 4T, or 3/4 of the address space shared\n"
		"                           by the devices if less): EDQUOT\n"
		"      --max-dma-pinned SIZE  with --backend vfio: bytes pinned for the\n"
		"                           device's DMA (default: 3/4 of RAM shared by the\n"
		"                           devices): EDQUOT\n"
		"      --max-client-fds N   fds one client holds, DMA windows and eventfds\n"
		"                           (default and maximum: what RLIMIT_NOFILE, raised\n"
		"                           to its hard limit, leaves after 64 + 64 per device\n"
		"                           kept for the server, shared by the devices): EMFILE\n"
		"  -l, --log-level LEVEL    error, warn, info or debug (default info). Rejected\n"
		"                           client messages are logged at warn as\n"
		"                           \"" VCXL_PROTO_ERR_PREFIX "...\", at most 50 a second\n"
		"                           per connection (then a count of those suppressed)\n"
		"  -K, --control PATH       JSON control socket (default SOCKET.ctl, next to the\n"
		"                           device sockets; none: off): vcxl status reads it.\n"
		"                           Root's, mode 0600, whatever --socket-mode says\n"
		"      --control-mode MODE  mode of the control socket, octal (default 0600)\n"
		"      --control-group GROUP group of the control socket (name or number).\n"
		"                           Whoever it lets in besides root and the server's\n"
		"                           uid only observes: query-status without any\n"
		"                           tenant's pid/uid/counters; read-memory and\n"
		"                           set-log-level stay the administrator's\n"
		"      --control-idle-timeout SEC  close a control connection idle that long\n"
		"                           (default 60); with all 8 slots taken, root's\n"
		"                           connection takes the longest-idle one's\n"
		"  -C, --config FILE        options from FILE, one per line without the dashes\n"
		"                           (\"mem-size = 1G\"); the command line's win. A\n"
		"                           key without its value or an unknown key: exit 2\n"
		"  -V, --version            print the version and exit\n"
		"  -h, --help               this text\n"
		"\n"
		"Runs in the foreground, logs to stderr, exits on SIGTERM or SIGINT and removes\n"
		"its sockets. With $NOTIFY_SOCKET set (systemd Type=notify) it sends READY=1\n"
		"once every socket listens and --user is in effect, STOPPING=1 on exit.\n"
		"SIGUSR1 simulates a surprise removal of device 0 (fault testing: reads\n"
		"return all-ones, writes are dropped, the other devices keep serving).\n"
		"Attach to QEMU 10.1+ with:\n"
		"  -object memory-backend-memfd,id=mem,size=2G,share=on\n"
		"  -machine q35,memory-backend=mem\n"
		"  -device '{\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\","
		"\"path\":\"PATH\"}}'\n",
		MAX_DEVICES);
}

static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int die_opt(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "vcxl-server: invalid %s '%s': %s\n", opt, val, why);
	return 2;
}

/* A group by name or number: 0 and *gid set, or -1. */
static int parse_group(const char *s, gid_t *gid)
{
	struct group *g = getgrnam(s);
	char *end;
	unsigned long id = strtoul(s, &end, 10);

	if (g)
		*gid = g->gr_gid;
	else if (end != s && !*end && id < (gid_t)-1)
		*gid = (gid_t)id;
	else
		return -1;
	return 0;
}

/* An octal mode 0..0777: 0 and *mode set, or -1. */
static int parse_mode(const char *s, int *mode)
{
	char *end;
	unsigned long m;

	errno = 0;
	m = strtoul(s, &end, 8);
	if (errno || end == s || *end || m > 0777)
		return -1;
	*mode = (int)m;
	return 0;
}

/* Where parse_args's arguments come from: the command line alone (file NULL:
 * -C/--config, in any spelling getopt accepts, is noted in config), or
 * argv[0], config file's options up to file_end, then the command line. */
struct argsrc {
	const char *file;
	int file_end;
	const char *config; /* the command line's -C FILE */
};

/* The argv index of the option getopt just returned (its value may be the
 * next element), and whether that value is a separate element. */
static int opt_index(char **argv, bool *separate)
{
	*separate = optarg && optarg == argv[optind - 1];
	return *separate ? optind - 2 : optind - 1;
}

static int parse_args(int argc, char **argv, struct opts *o, struct argsrc *src)
{
	static const struct option lopts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"mem-size", required_argument, NULL, 'm'},
	    {"region-size", required_argument, NULL, 'r'},
	    {"decoders", required_argument, NULL, 'd'},
	    {"guest-decoders", required_argument, NULL, 'g'},
	    {"comp-at", required_argument, NULL, 'c'},
	    {"firmware-committed", no_argument, NULL, 'f'},
	    {"backing", required_argument, NULL, 'b'},
	    {"devices", required_argument, NULL, 'n'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"config", required_argument, NULL, 'C'},
	    {"control", required_argument, NULL, 'K'},
	    {"model", required_argument, NULL, 'M'},
	    {"backend", required_argument, NULL, 'B'},
	    {"device", required_argument, NULL, 'D'},
	    {"iommu", required_argument, NULL, 'I'},
	    {"region-dax", required_argument, NULL, 'X'},
	    {"trust-client", no_argument, NULL, OPT_TRUST_CLIENT},
	    {"on-disconnect", required_argument, NULL, 'O'},
	    {"socket-mode", required_argument, NULL, OPT_SOCKET_MODE},
	    {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
	    {"user", required_argument, NULL, OPT_USER},
	    {"control-mode", required_argument, NULL, OPT_CONTROL_MODE},
	    {"control-group", required_argument, NULL, OPT_CONTROL_GROUP},
	    {"max-dma-windows", required_argument, NULL, OPT_MAX_DMA_WINDOWS},
	    {"max-dma-mapped", required_argument, NULL, OPT_MAX_DMA_MAPPED},
	    {"max-dma-pinned", required_argument, NULL, OPT_MAX_DMA_PINNED},
	    {"max-client-fds", required_argument, NULL, OPT_MAX_CLIENT_FDS},
	    {"control-idle-timeout", required_argument, NULL, OPT_CONTROL_IDLE},
	    {NULL, 0, NULL, 0},
	};
	int ch;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":s:m:r:d:g:c:fb:n:l:hVC:K:M:B:D:I:X:O:", lopts,
				 NULL)) != -1) {
		bool separate;
		bool in_file = src->file && opt_index(argv, &separate) < src->file_end;

		/* a bare key in the file must not take the next option as its value */
		if (in_file && ch != '?' && ch != ':' && separate) {
			fprintf(stderr, "vcxl-server: %s: '%s' needs a value (\"%s = VALUE\")\n",
				src->file, argv[optind - 2] + 2, argv[optind - 2] + 2);
			return 2;
		}
		switch (ch) {
		case 'B':
			if (!strcmp(optarg, "model"))
				o->vfio = false;
			else if (!strcmp(optarg, "vfio"))
				o->vfio = true;
			else
				return die_opt("--backend", optarg, "need model or vfio");
			break;
		case 'D':
			o->bdf = optarg;
			break;
		case 'I':
			if (!strcmp(optarg, "auto"))
				o->iommu = VCXL_HW_IOMMU_AUTO;
			else if (!strcmp(optarg, "group"))
				o->iommu = VCXL_HW_IOMMU_GROUP;
			else if (!strcmp(optarg, "iommufd"))
				o->iommu = VCXL_HW_IOMMU_IOMMUFD;
			else
				return die_opt("--iommu", optarg, "need auto, group or iommufd");
			break;
		case OPT_TRUST_CLIENT:
			o->trust_client = true;
			break;
		case OPT_SOCKET_MODE: {
			char *end;
			errno = 0;
			unsigned long m = strtoul(optarg, &end, 8);
			if (errno || end == optarg || *end || m > 0777)
				return die_opt("--socket-mode", optarg,
					       "need an octal mode, e.g. 0660");
			o->socket_mode = (int)m;
			break;
		}
		case OPT_SOCKET_GROUP: {
			struct group *g = getgrnam(optarg);
			char *end;
			unsigned long id = strtoul(optarg, &end, 10);
			if (g)
				o->socket_gid = g->gr_gid;
			else if (end != optarg && !*end && id < (gid_t)-1)
				o->socket_gid = (gid_t)id;
			else
				return die_opt("--socket-group", optarg, "no such group");
			break;
		}
		case OPT_CONTROL_MODE:
			if (parse_mode(optarg, &o->control_mode))
				return die_opt("--control-mode", optarg,
					       "need an octal mode, e.g. 0600");
			break;
		case OPT_CONTROL_IDLE:
			if (parse_uint(optarg, 1, 86400, &o->control_idle_s))
				return die_opt("--control-idle-timeout", optarg,
					       "need 1..86400 seconds");
			break;
		case OPT_CONTROL_GROUP:
			if (parse_group(optarg, &o->control_gid))
				return die_opt("--control-group", optarg, "no such group");
			break;
		case OPT_USER:
			if (!getpwnam(optarg))
				return die_opt("--user", optarg, "no such user");
			o->user = optarg;
			break;
		case OPT_MAX_DMA_WINDOWS:
			if (parse_uint(optarg, 1, 65536, &o->budget.max_dma_windows))
				return die_opt("--max-dma-windows", optarg, "need 1..65536");
			break;
		case OPT_MAX_DMA_MAPPED:
			if (vcxl_parse_size(optarg, &o->budget.max_dma_mapped) ||
			    o->budget.max_dma_mapped < VCXL_SRV_PGSIZE)
				return die_opt("--max-dma-mapped", optarg,
					       "need a size, at least 4K");
			break;
		case OPT_MAX_DMA_PINNED:
			if (vcxl_parse_size(optarg, &o->budget.max_dma_pinned) ||
			    o->budget.max_dma_pinned < VCXL_SRV_PGSIZE)
				return die_opt("--max-dma-pinned", optarg,
					       "need a size, at least 4K");
			break;
		case OPT_MAX_CLIENT_FDS:
			if (parse_uint(optarg, VCXL_MIN_CLIENT_FDS, 1u << 20,
				       &o->budget.max_client_fds))
				return die_opt("--max-client-fds", optarg, "need 16..1048576");
			break;
		case 'X':
			o->region_dax = optarg;
			break;
		case 'O':
			if (!strcmp(optarg, "reset"))
				o->on_disconnect = VCXL_ON_DISCONNECT_RESET;
			else if (!strcmp(optarg, "keep"))
				o->on_disconnect = VCXL_ON_DISCONNECT_KEEP;
			else
				return die_opt("--on-disconnect", optarg, "need keep or reset");
			break;
		case 's':
			o->socket = optarg;
			break;
		case 'm':
			if (vcxl_parse_size(optarg, &o->mem_size) || !o->mem_size ||
			    o->mem_size % (256ull << 20))
				return die_opt("--mem-size", optarg,
					       "need a non-zero multiple of 256M");
			break;
		case 'r':
			if (vcxl_parse_size(optarg, &o->region_size) ||
			    o->region_size % (256ull << 20))
				return die_opt("--region-size", optarg, "need a multiple of 256M");
			break;
		case 'd':
			if (parse_uint(optarg, 1, 10, &o->decoders))
				return die_opt("--decoders", optarg, "need 1..10");
			break;
		case 'g':
			if (parse_uint(optarg, 1, 10, &o->guest_decoders))
				return die_opt("--guest-decoders", optarg, "need 1..10");
			break;
		case 'c':
			if (!strcmp(optarg, "start"))
				o->comp_at = VCXL_COMP_AT_START;
			else if (!strcmp(optarg, "middle"))
				o->comp_at = VCXL_COMP_AT_MIDDLE;
			else if (!strcmp(optarg, "end"))
				o->comp_at = VCXL_COMP_AT_END;
			else
				return die_opt("--comp-at", optarg, "need start, middle or end");
			break;
		case 'f':
			o->firmware_committed = true;
			break;
		case 'b':
			o->backing = optarg;
			break;
		case 'n':
			if (parse_uint(optarg, 1, MAX_DEVICES, &o->devices))
				return die_opt("--devices", optarg, "need 1..64");
			break;
		case 'l':
			if (vcxl_log_parse_level(optarg, &o->log_level))
				return die_opt("--log-level", optarg,
					       "need error, warn, info or debug");
			break;
		case 'M':
			if (!strcmp(optarg, "accel"))
				o->kind = VCXL_MODEL_ACCEL;
			else if (!strcmp(optarg, "type3"))
				o->kind = VCXL_MODEL_TYPE3;
			else
				return die_opt("--model", optarg, "need accel or type3");
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("vcxl-server %s\n", VCXL_VERSION);
			exit(0);
		case 'C':
			/* read by main between the two passes (config.c) */
			if (in_file) {
				fprintf(stderr,
					"vcxl-server: %s: a config file cannot name another\n",
					src->file);
				return 2;
			}
			if (!src->file && src->config) {
				fprintf(stderr, "vcxl-server: --config given twice\n");
				return 2;
			}
			src->config = optarg;
			break;
		case 'K':
			o->control = optarg;
			break;
		default:
			/* one line, not the usage text (getopt's own message is off) */
			if (ch == ':')
				fprintf(stderr,
					"vcxl-server: option '%s' needs a value (see --help)\n",
					argv[optind - 1]);
			else if (optopt)
				fprintf(stderr, "vcxl-server: unknown option '-%c' (see --help)\n",
					optopt);
			else
				fprintf(stderr,
					"vcxl-server: unknown option '%s'%s%s (see --help)\n",
					argv[optind - 1], in_file ? " in " : "",
					in_file ? src->file : "");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vcxl-server: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (o->vfio) {
		if (!o->bdf)
			return die_opt("--backend", "vfio", "needs --device BDF");
		if (o->devices > 1)
			return die_opt("--devices", "", "one device per --backend vfio server");
		return 0;
	}
	if (o->bdf || o->region_dax)
		return die_opt(o->bdf ? "--device" : "--region-dax",
			       o->bdf ? o->bdf : o->region_dax, "needs --backend vfio");
	if (o->region_size > o->mem_size)
		return die_opt("--region-size", "", "larger than --mem-size");
	return 0;
}

struct served {
	struct vcxl_model *model;
	/* --backend vfio: the device, the host address space and window */
	struct vcxl_hw_vfio *hw;
	struct vcxl_host host;
	bool host_ready;
	struct vcxl_hw_window *win;
	struct vcxl_vdev *vdev;
	char path[PATH_MAX], backing[PATH_MAX];
	unsigned index;
	const struct opts *o;
	/* the guest's committed virtual decoders, for the control socket */
	struct {
		bool on;
		uint64_t gpa, size, region_off;
	} gdec[CXL_HDM_MAX_DECODERS_DEVICE];
};

/* The guest committed or decommitted one of its virtual HDM decoders: log the
 * guest-physical range (tests read it; the vdev needs nothing from us). */
static void log_guest_decoder(void *opaque, unsigned n, bool committed, uint64_t gpa, uint64_t size,
			      uint64_t region_off)
{
	struct served *s = opaque;

	if (n < CXL_HDM_MAX_DECODERS_DEVICE) {
		s->gdec[n].on = committed;
		s->gdec[n].gpa = gpa;
		s->gdec[n].size = size;
		s->gdec[n].region_off = region_off;
	}
	vcxl_log(VCXL_LOG_INFO,
		 "dev%u: guest decoder %u %s base 0x%llx size 0x%llx (region offset 0x%llx)",
		 s->index, n, committed ? "committed" : "decommitted", (unsigned long long)gpa,
		 (unsigned long long)size, (unsigned long long)region_off);
}

/* --backend vfio: open the device, claim a host window (programming the host
 * bridge's decoder when it has one), then the same vfio-cxl core as for the
 * model. docs/hardware.md. */
static int make_hw_device(const struct opts *o, struct served *s)
{
	struct vcxl_hw_vfio_cfg hc = {
	    .bdf = o->bdf, .iommu = o->iommu, .region_dax = o->region_dax};
	char err[256] = "";
	int rc;

	rc = vcxl_hw_vfio_open(&hc, &s->hw, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "vcxl-server: %s: %s\n", o->bdf, err[0] ? err : strerror(-rc));
		return rc;
	}
	vcxl_host_init(&s->host);
	s->host_ready = true;
	if (!o->region_dax) {
		rc = vcxl_hw_window_setup(s->hw, NULL, &s->host, &s->win, err, sizeof(err));
		if (rc) {
			fprintf(stderr, "vcxl-server: %s: %s\n", o->bdf,
				err[0] ? err : strerror(-rc));
			return rc;
		}
	}
	struct vcxl_vdev_cfg vc = {.region_size = o->region_size,
				   .host = &s->host,
				   .prefer_firmware = o->region_dax != NULL,
				   .attach_only = o->region_dax != NULL,
				   .guest_decoders = o->guest_decoders,
				   .trust_client = o->trust_client,
				   .on_disconnect = o->on_disconnect};
	rc = vcxl_vdev_create(vcxl_hw_vfio_backend(s->hw), &vc, &s->vdev, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "vcxl-server: %s: %s\n", o->bdf, err[0] ? err : strerror(-rc));
		return rc;
	}
	vcxl_log(VCXL_LOG_INFO, "dev0: %s opened through VFIO (%s)", o->bdf,
		 vcxl_hw_vfio_iommu_name(s->hw));
	return 0;
}

/* Teardown in reverse order of make_hw_device. */
static void free_hw_device(struct served *s)
{
	if (s->vdev)
		vcxl_vdev_destroy(s->vdev);
	s->vdev = NULL;
	vcxl_hw_window_teardown(s->win);
	s->win = NULL;
	if (s->host_ready)
		vcxl_host_fini(&s->host);
	s->host_ready = false;
	if (s->hw)
		vcxl_hw_vfio_close(s->hw);
	s->hw = NULL;
}

static int make_device(const struct opts *o, unsigned i, struct served *s)
{
	struct vcxl_model_cfg mc = {
	    .mem_size = o->mem_size,
	    .decoders = o->decoders,
	    .comp_at = o->comp_at,
	    .firmware_committed = o->firmware_committed,
	    .kind = o->kind,
	};
	struct vcxl_vdev_cfg vc = {
	    .region_size = o->region_size,
	    .prefer_firmware = o->firmware_committed,
	    .guest_decoders = o->guest_decoders,
	    .trust_client = o->trust_client,
	    .on_disconnect = o->on_disconnect,
	};
	char err[256] = "";
	int rc;

	if (o->backing) {
		if (o->devices > 1)
			snprintf(s->backing, sizeof(s->backing), "%s.%u", o->backing, i);
		else
			snprintf(s->backing, sizeof(s->backing), "%s", o->backing);
		mc.backing = s->backing;
	}
	s->index = i;
	s->o = o;
	if (o->vfio) {
		rc = make_hw_device(o, s);
		if (rc) {
			free_hw_device(s);
			return rc;
		}
		goto served;
	}
	rc = vcxl_model_create(&mc, &s->model);
	if (rc) {
		fprintf(stderr, "vcxl-server: device %u: model: %s\n", i, strerror(-rc));
		return rc;
	}
	rc = vcxl_vdev_create(vcxl_model_backend(s->model), &vc, &s->vdev, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "vcxl-server: device %u: %s\n", i, err[0] ? err : strerror(-rc));
		vcxl_model_destroy(s->model);
		s->model = NULL;
		return rc;
	}
served:
	vcxl_vdev_set_hdm_notify(s->vdev, log_guest_decoder, s);
	const struct vcxl_region *r = vcxl_vdev_region(s->vdev);
	vcxl_log(
	    VCXL_LOG_INFO, "dev%u: host region: decoder %u HPA [0x%llx, +0x%llx) DPA 0x%llx (%s)",
	    i, r->decoder, (unsigned long long)r->hpa, (unsigned long long)r->size,
	    (unsigned long long)r->dpa, r->firmware ? "firmware-committed, attached" : "created");
	return 0;
}

/* Fault injection: SIGUSR1 pulls device 0 out, as a surprise removal would
 * (reads all-ones, writes dropped); the other devices keep being served. */
static void surprise_remove(void *opaque)
{
	struct served *s = opaque;

	if (!s->model)
		return;
	vcxl_model_remove(s->model);
	vcxl_log(VCXL_LOG_WARN,
		 "dev%u: device removed (surprise removal, SIGUSR1): reads return "
		 "all-ones, writes are dropped",
		 s->index);
}

/* At exit: the host's physical decoder must still decode the region as the
 * host programmed it, whatever the guest did. */
static void check_host_region(const struct served *s)
{
	const struct vcxl_region *r = vcxl_vdev_region(s->vdev);
	int rc = vcxl_region_verify(r);

	vcxl_log(rc ? VCXL_LOG_ERROR : VCXL_LOG_INFO, "dev%u: host decoder %u %s", s->index,
		 r->decoder, rc ? "CHANGED behind the host's back" : "verified unchanged");
}

/* The control socket's read-memory: the device's CXL region as the guest maps it */
static int read_device_memory(void *opaque, unsigned i, uint64_t off, void *buf, size_t len)
{
	const struct served *s = &((const struct served *)opaque)[i];

	if (!s->vdev)
		return -ENODEV;
	return vcxl_vdev_ops.region_read(s->vdev, VCXL_VDEV_CXL_REGION, off, buf, len);
}

static struct json_object *j_u64(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
}

/* The host-owned registers as the device holds them now, read through the
 * backend (the oracle of tests/integration/test_hostile.c); null if a read
 * failed. */
static struct json_object *host_registers(const struct served *s, const struct vcxl_region *r)
{
	struct json_object *o, *dec, *ranges;
	struct vcxl_host_regs hr;

	if (vcxl_region_read_host_regs(r, &hr))
		return NULL;
	o = json_object_new_object();
	dec = json_object_new_object();
	json_object_object_add(dec, "committed", json_object_new_boolean(hr.dec.committed));
	json_object_object_add(dec, "locked", json_object_new_boolean(hr.dec.locked));
	json_object_object_add(dec, "base", j_u64(hr.dec.base));
	json_object_object_add(dec, "size", j_u64(hr.dec.size));
	json_object_object_add(dec, "skip", j_u64(hr.dec.skip));
	json_object_object_add(dec, "ctrl", j_u64(hr.dec.ctrl));
	json_object_object_add(o, "decoder", dec);
	json_object_object_add(o, "hdm_global_ctrl", j_u64(hr.hdm_global_ctrl));
	json_object_object_add(o, "dvsec_ctrl", j_u64(hr.dvsec_ctrl));
	json_object_object_add(o, "dvsec_lock", j_u64(hr.dvsec_lock));
	ranges = json_object_new_array();
	for (unsigned i = 0; i < CXL_DVSEC_RANGE_MAX; i++) {
		struct json_object *a = json_object_new_array();
		for (unsigned k = 0; k < 4; k++)
			json_object_array_add(a, j_u64(hr.range[i][k]));
		json_object_array_add(ranges, a);
	}
	json_object_object_add(o, "dvsec_ranges", ranges);
	/* the model's job engine: its host-owned DPA window */
	if (!s->hw && s->o->kind != VCXL_MODEL_TYPE3) {
		struct vcxl_backend *be = vcxl_vdev_backend(s->vdev);
		uint64_t base = 0, size = 0;
		if (!be->ops->bar_read(be->dev, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DPA_WIN_BASE, 8,
				       &base) &&
		    !be->ops->bar_read(be->dev, VCXL_MODEL_CTRL_BAR, ACCEL_REG_DPA_WIN_SIZE, 8,
				       &size)) {
			struct json_object *w = json_object_new_object();
			json_object_object_add(w, "base", j_u64(base));
			json_object_object_add(w, "size", j_u64(size));
			json_object_object_add(o, "engine_dpa_window", w);
		}
	}
	return o;
}

/* The control socket's view of device i: what it is, the host region, the
 * guest's committed decoders (GPA range -> region offset), resets; for an
 * observer (!admin) only what it is. */
static void describe_device(void *opaque, unsigned i, bool admin, struct json_object *d)
{
	const struct served *s = &((const struct served *)opaque)[i];
	struct json_object *h, *g = json_object_new_array(), *rs = json_object_new_object();
	const struct vcxl_region *r = s->vdev ? vcxl_vdev_region(s->vdev) : NULL;
	struct vcxl_vdev_stats vs = {0};
	char id[16];

	json_object_object_add(d, "backend", json_object_new_string(s->hw ? "vfio" : "model"));
	if (s->hw) {
		json_object_object_add(d, "device", json_object_new_string(s->o->bdf));
	} else {
		snprintf(id, sizeof(id), "%04x:%04x", VCXL_MODEL_VENDOR,
			 s->o->kind == VCXL_MODEL_TYPE3 ? VCXL_MODEL_TYPE3_DEVICE
							: VCXL_MODEL_DEVICE);
		json_object_object_add(
		    d, "model",
		    json_object_new_string(s->o->kind == VCXL_MODEL_TYPE3 ? "type3" : "accel"));
		json_object_object_add(d, "id", json_object_new_string(id));
		json_object_object_add(d, "mem_size",
				       json_object_new_int64((int64_t)s->o->mem_size));
	}
	if (!admin) {
		json_object_put(g);
		json_object_put(rs);
		return;
	}
	if (r) {
		h = json_object_new_object();
		json_object_object_add(h, "decoder", json_object_new_int((int)r->decoder));
		json_object_object_add(h, "hpa", json_object_new_int64((int64_t)r->hpa));
		json_object_object_add(h, "size", json_object_new_int64((int64_t)r->size));
		json_object_object_add(h, "dpa", json_object_new_int64((int64_t)r->dpa));
		json_object_object_add(h, "firmware", json_object_new_boolean(r->firmware));
		json_object_object_add(h, "registers", host_registers(s, r));
		json_object_object_add(d, "host_region", h);
	}
	for (unsigned n = 0; n < CXL_HDM_MAX_DECODERS_DEVICE; n++) {
		struct json_object *e;

		if (!s->gdec[n].on)
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "decoder", json_object_new_int((int)n));
		json_object_object_add(e, "gpa", json_object_new_int64((int64_t)s->gdec[n].gpa));
		json_object_object_add(e, "size", json_object_new_int64((int64_t)s->gdec[n].size));
		json_object_object_add(e, "region_offset",
				       json_object_new_int64((int64_t)s->gdec[n].region_off));
		json_object_array_add(g, e);
	}
	json_object_object_add(d, "guest_decoders", g);
	if (s->vdev)
		vcxl_vdev_get_stats(s->vdev, &vs);
	json_object_object_add(rs, "flr", json_object_new_int64((int64_t)vs.flr));
	json_object_object_add(rs, "cxl_reset", json_object_new_int64((int64_t)vs.cxl_reset));
	json_object_object_add(rs, "device_reset", json_object_new_int64((int64_t)vs.device_reset));
	json_object_object_add(rs, "disconnect", json_object_new_int64((int64_t)vs.disconnect));
	json_object_object_add(rs, "device", json_object_new_int64((int64_t)vs.resets));
	json_object_object_add(rs, "region_restores",
			       json_object_new_int64((int64_t)vs.region_restores));
	json_object_object_add(d, "resets", rs);
}

/* Before anything is made: a socket path must be free or a socket (a stale
 * one is replaced later); anything else there is refused in one line. */
static int check_socket_path(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0 || S_ISSOCK(st.st_mode))
		return 0;
	fprintf(stderr, "vcxl-server: %s exists and is not a socket (not replacing it)\n", path);
	return 2;
}

static int check_socket_paths(const struct opts *o)
{
	char path[PATH_MAX];
	int rc = 0;

	for (unsigned i = 0; i < o->devices && !rc; i++) {
		if (o->devices > 1)
			snprintf(path, sizeof(path), "%s.%u", o->socket, i);
		else
			snprintf(path, sizeof(path), "%s", o->socket);
		rc = check_socket_path(path);
	}
	return rc ? rc : o->control ? check_socket_path(o->control) : 0;
}

/*
 * --user: everything that needs root is open (VFIO group/device or cdev,
 * sysfs config, /dev/mem, device-DAX, the sockets), so become USER for good:
 * no supplementary groups, its gid, its uid. With --backend vfio the pinned
 * DMA windows count against RLIMIT_MEMLOCK, which only root can lift: it is
 * lifted first (docs/security.md).
 */
static int drop_privileges(const struct opts *o)
{
	struct passwd *pw = getpwnam(o->user);

	if (!pw) {
		fprintf(stderr, "vcxl-server: --user %s: no such user\n", o->user);
		return 2;
	}
	if (o->vfio) {
		struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			vcxl_log(VCXL_LOG_WARN,
				 "RLIMIT_MEMLOCK not lifted (%s): large DMA windows "
				 "may fail as %s",
				 strerror(errno), o->user);
	}
	if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid)) {
		fprintf(stderr, "vcxl-server: --user %s: %s\n", o->user, strerror(errno));
		return 1;
	}
	if (pw->pw_uid != 0 && setuid(0) == 0) {
		fprintf(stderr, "vcxl-server: --user %s: could regain root\n", o->user);
		return 1;
	}
	vcxl_log(VCXL_LOG_INFO, "running as %s (uid %u, gid %u)", o->user, (unsigned)pw->pw_uid,
		 (unsigned)pw->pw_gid);
	return 0;
}

/*
 * $NOTIFY_SOCKET (systemd's Type=notify, or any supervisor speaking its
 * protocol): the socket to announce readiness on, -1 when unset. A socket
 * that cannot be reached is logged and start-up goes on: the supervisor then
 * sees no readiness and decides.
 */
static int open_notify(void)
{
	const char *addr = getenv(VCXL_NOTIFY_ENV);
	int fd;

	if (!addr || !*addr)
		return -1;
	fd = vcxl_notify_open(addr);
	if (fd < 0)
		vcxl_log(VCXL_LOG_WARN, "%s=%s: %s: readiness is not announced", VCXL_NOTIFY_ENV,
			 addr, strerror(-fd));
	return fd;
}

static void notify(int fd, const char *state)
{
	int rc;

	if (fd < 0)
		return;
	rc = vcxl_notify_send(fd, state);
	if (rc)
		vcxl_log(VCXL_LOG_WARN, "%s: %s not sent: %s", VCXL_NOTIFY_ENV, state,
			 strerror(-rc));
	else
		vcxl_log(VCXL_LOG_DEBUG, "%s: %s sent", VCXL_NOTIFY_ENV, state);
}

/*
 * Two passes: the command line alone (it finds -C/--config in every spelling
 * getopt_long accepts: -C FILE, -CFILE, --config FILE, --config=FILE, --conf=FILE
 * and other unique prefixes; and refuses its errors), then, with a config file,
 * its options followed by the command line's into fresh defaults, so that the
 * command line's win. 0, or the exit status after a one-line message.
 */
static int parse_config_and_args(int argc, char **argv, struct opts *o, char ***args, char *err,
				 size_t errlen)
{
	struct opts cmdline = *o;
	struct argsrc src = {0};
	char **copy = malloc(sizeof(*copy) * ((size_t)argc + 1));
	int rc, nargs;

	if (!copy)
		return 1;
	memcpy(copy, argv, sizeof(*copy) * ((size_t)argc + 1));
	optind = 0; /* getopt's full re-initialisation (glibc) */
	rc = parse_args(argc, copy, &cmdline, &src);
	free(copy);
	if (rc || !src.config) {
		*o = cmdline;
		return rc;
	}
	src.file = src.config;
	if (vcxl_config_expand(argc, argv, src.config, &nargs, args, &src.file_end, err, errlen)) {
		fprintf(stderr, "vcxl-server: %s\n", err);
		return 2;
	}
	optind = 0;
	return parse_args(nargs, *args, o, &src);
}

int main(int argc, char **argv)
{
	struct opts o = {.socket = "vcxl.sock",
			 .mem_size = 256ull << 20,
			 .devices = 1,
			 .log_level = VCXL_LOG_INFO,
			 .socket_mode = -1,
			 .socket_gid = (gid_t)-1,
			 .control_mode = VCXL_CONTROL_MODE,
			 .control_gid = (gid_t)-1,
			 .control_idle_s = VCXL_CONTROL_IDLE_MS / 1000};
	struct served *devs;
	struct vcxl_loop *loop = NULL;
	struct vcxl_conn_cfg conn_cfg;
	sigset_t set;
	int rc, notify_fd = -1;
	unsigned made = 0;

	/* Messages are bounded (max_data_xfer_size + header), so let glibc keep
	 * their buffers on the heap: a 1 MiB REGION_READ/WRITE then costs no
	 * mmap/munmap and no page faults per message. */
	mallopt(M_MMAP_THRESHOLD, 16 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);

	char cfg_err[VCXL_CONFIG_LINE_MAX + 128], ctl_path[PATH_MAX];
	struct vcxl_control *ctl = NULL;
	char **args = argv;

	rc = parse_config_and_args(argc, argv, &o, &args, cfg_err, sizeof(cfg_err));
	if (!rc && !o.control) {
		snprintf(ctl_path, sizeof(ctl_path), "%s.ctl", o.socket);
		o.control = ctl_path;
	} else if (!rc && !strcmp(o.control, "none")) {
		o.control = NULL;
	}
	if (!rc)
		rc = check_socket_paths(&o);
	if (rc) {
		vcxl_config_free(argv, args);
		return rc;
	}
	vcxl_log_set_level(o.log_level);
	/* until every socket listens: a refused start prints only its error */
	vcxl_log_hold();
	/* Block the exit signals now: they are read from a signalfd by the loop,
	 * so the sockets are always removed on the way out. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	o.budget.devices = o.devices;
	o.budget.pins = o.vfio;
	if (vcxl_budget_plan(&o.budget, &conn_cfg)) {
		vcxl_config_free(argv, args);
		return 1;
	}
	devs = calloc(o.devices, sizeof(*devs));
	if (!devs || vcxl_loop_create(&loop)) {
		fprintf(stderr, "vcxl-server: out of memory\n");
		return 1;
	}
	vcxl_loop_set_socket_perm(loop, o.socket_mode, o.socket_gid);
	/* The control socket first, with its own mode and group (root's, 0600 by
	 * default: never the device sockets'): once a device socket exists, so
	 * does it (scripts wait for the device socket). */
	if (o.control) {
		rc = vcxl_control_create(loop, o.control, o.control_mode, o.control_gid,
					 describe_device, devs, &ctl);
		if (rc) {
			fprintf(stderr, "vcxl-server: control socket %s: %s\n", o.control,
				rc == -EADDRINUSE ? "another server is listening there"
						  : strerror(-rc));
			goto out;
		}
		vcxl_control_set_reader(ctl, read_device_memory);
		vcxl_control_set_idle_timeout(ctl, (int64_t)o.control_idle_s * 1000);
	}
	for (; made < o.devices; made++) {
		struct served *s = &devs[made];

		if (o.devices > 1)
			snprintf(s->path, sizeof(s->path), "%s.%u", o.socket, made);
		else
			snprintf(s->path, sizeof(s->path), "%s", o.socket);
		rc = make_device(&o, made, s);
		if (rc)
			goto out;
		rc = vcxl_loop_add_device(loop, s->path, &vcxl_vdev_ops, s->vdev, &conn_cfg);
		if (rc) {
			fprintf(stderr, "vcxl-server: %s: %s\n", s->path,
				rc == -EADDRINUSE ? "another server is listening there"
						  : strerror(-rc));
			made++;
			goto out;
		}
		if (o.vfio)
			vcxl_log(VCXL_LOG_INFO, "serving device %u (%s through VFIO) on %s", made,
				 o.bdf, s->path);
		else
			vcxl_log(VCXL_LOG_INFO, "serving device %u (%04x:%04x, %llu MiB) on %s",
				 made, VCXL_MODEL_VENDOR,
				 o.kind == VCXL_MODEL_TYPE3 ? VCXL_MODEL_TYPE3_DEVICE
							    : VCXL_MODEL_DEVICE,
				 (unsigned long long)(o.mem_size >> 20), s->path);
	}
	if (made)
		vcxl_loop_on_sigusr1(loop, surprise_remove, &devs[0]);
	/* connected while still privileged: the service manager's socket may not
	 * be reachable by --user */
	notify_fd = open_notify();
	if (o.user && (rc = drop_privileges(&o)))
		goto out;
	vcxl_irq_init();
	/* every socket listens, the log says so, privileges are dropped: ready */
	vcxl_log_release(true);
	notify(notify_fd, VCXL_NOTIFY_READY);
	rc = vcxl_loop_run(loop);
	if (rc)
		fprintf(stderr, "vcxl-server: event loop: %s\n", strerror(-rc));
	notify(notify_fd, VCXL_NOTIFY_STOPPING);
out:
	if (notify_fd >= 0)
		close(notify_fd);
	vcxl_control_destroy(ctl);
	vcxl_loop_destroy(loop);
	for (unsigned i = 0; i < made; i++) {
		if (devs[i].vdev)
			check_host_region(&devs[i]);
		if (devs[i].hw) {
			free_hw_device(&devs[i]);
			continue;
		}
		if (devs[i].vdev)
			vcxl_vdev_destroy(devs[i].vdev);
		if (devs[i].model)
			vcxl_model_destroy(devs[i].model);
	}
	free(devs);
	vcxl_config_free(argv, args);
	if (vcxl_log_held()) {
		vcxl_log_release(false); /* refused: its error was the line */
		return 1;
	}
	vcxl_log(VCXL_LOG_INFO, "exited");
	return rc ? 1 : 0;
}
