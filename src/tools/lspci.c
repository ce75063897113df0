// SPDX-License-Identifier: BSD-3-Clause
/*
 * `vcxl lspci`: decode a 4 KiB PCIe config space the way `lspci -vvv` does,
 * with every field of the CXL DVSECs spelled out.
 */
#include <linux/pci_regs.h>
#include <stdio.h>
#include <string.h>

#include "cxl/cxl_regs.h"
#include "cxl/cxl_spec.h"
#include "lspci.h"

#define FLAG(v, bit) ((v) & (bit) ? '+' : '-')

static uint8_t rd8(const uint8_t *c, unsigned off)
{
	return off < 4096 ? c[off] : 0xff;
}

static uint16_t rd16(const uint8_t *c, unsigned off)
{
	return (uint16_t)(rd8(c, off) | rd8(c, off + 1) << 8);
}

static uint32_t rd32(const uint8_t *c, unsigned off)
{
	return (uint32_t)rd16(c, off) | (uint32_t)rd16(c, off + 2) << 16;
}

static const char *class_name(uint32_t cls)
{
	switch (cls >> 8) {
	case 0x1200:
		return "Processing accelerators";
	case 0x0502:
		return "CXL";
	case 0x0b40:
		return "Co-processor";
	case 0x0380:
		return "Display controller";
	case 0xff00:
		return "Unassigned class";
	default:
		return "Device";
	}
}

static void print_size(FILE *f, uint64_t sz)
{
	static const char *const u[] = {"", "K", "M", "G", "T"};
	unsigned i = 0;

	while (sz >= 1024 && !(sz & 1023) && i < 4) {
		sz >>= 10;
		i++;
	}
	fprintf(f, "%llu%s", (unsigned long long)sz, u[i]);
}

static void decode_header(FILE *f, const uint8_t *c, const struct vcxl_lspci_bar *bars)
{
	uint16_t cmd = rd16(c, PCI_COMMAND), sta = rd16(c, PCI_STATUS);
	uint32_t cls = rd32(c, PCI_CLASS_REVISION) >> 8;

	fprintf(f, "00:00.0 %s [%04x]: Device %04x:%04x (rev %02x) (prog-if %02x)\n",
		class_name(cls), cls >> 8, rd16(c, PCI_VENDOR_ID), rd16(c, PCI_DEVICE_ID),
		rd8(c, PCI_REVISION_ID), cls & 0xff);
	fprintf(f, "\tSubsystem: Device %04x:%04x\n", rd16(c, PCI_SUBSYSTEM_VENDOR_ID),
		rd16(c, PCI_SUBSYSTEM_ID));
	fprintf(f,
		"\tControl: I/O%c Mem%c BusMaster%c SpecCycle%c MemWINV%c VGASnoop%c ParErr%c "
		"Stepping%c SERR%c FastB2B%c DisINTx%c\n",
		FLAG(cmd, PCI_COMMAND_IO), FLAG(cmd, PCI_COMMAND_MEMORY),
		FLAG(cmd, PCI_COMMAND_MASTER), FLAG(cmd, PCI_COMMAND_SPECIAL),
		FLAG(cmd, PCI_COMMAND_INVALIDATE), FLAG(cmd, PCI_COMMAND_VGA_PALETTE),
		FLAG(cmd, PCI_COMMAND_PARITY), FLAG(cmd, PCI_COMMAND_WAIT),
		FLAG(cmd, PCI_COMMAND_SERR), FLAG(cmd, PCI_COMMAND_FAST_BACK),
		FLAG(cmd, PCI_COMMAND_INTX_DISABLE));
	fprintf(f,
		"\tStatus: Cap%c 66MHz%c UDF%c FastB2B%c ParErr%c DEVSEL=%s >TAbort%c <TAbort%c "
		"<MAbort%c >SERR%c <PERR%c INTx%c\n",
		FLAG(sta, PCI_STATUS_CAP_LIST), FLAG(sta, PCI_STATUS_66MHZ),
		FLAG(sta, PCI_STATUS_UDF), FLAG(sta, PCI_STATUS_FAST_BACK),
		FLAG(sta, PCI_STATUS_PARITY),
		(sta & PCI_STATUS_DEVSEL_MASK) == PCI_STATUS_DEVSEL_SLOW     ? "slow"
		: (sta & PCI_STATUS_DEVSEL_MASK) == PCI_STATUS_DEVSEL_MEDIUM ? "medium"
									     : "fast",
		FLAG(sta, PCI_STATUS_SIG_TARGET_ABORT), FLAG(sta, PCI_STATUS_REC_TARGET_ABORT),
		FLAG(sta, PCI_STATUS_REC_MASTER_ABORT), FLAG(sta, PCI_STATUS_SIG_SYSTEM_ERROR),
		FLAG(sta, PCI_STATUS_DETECTED_PARITY), FLAG(sta, PCI_STATUS_INTERRUPT));
	if (rd8(c, PCI_INTERRUPT_PIN))
		fprintf(f, "\tInterrupt: pin %c routed to IRQ %u\n",
			'A' + rd8(c, PCI_INTERRUPT_PIN) - 1, rd8(c, PCI_INTERRUPT_LINE));
	for (unsigned i = 0; i < 6; i++) {
		uint32_t lo = rd32(c, PCI_BASE_ADDRESS_0 + 4 * i);
		uint64_t addr;
		bool is64;

		if (lo & PCI_BASE_ADDRESS_SPACE_IO) {
			if (bars && bars[i].size)
				fprintf(f, "\tRegion %u: I/O ports at %04x [size=%llu]\n", i,
					lo & ~3u, (unsigned long long)bars[i].size);
			continue;
		}
		is64 = (lo & PCI_BASE_ADDRESS_MEM_TYPE_MASK) == PCI_BASE_ADDRESS_MEM_TYPE_64;
		addr = lo & PCI_BASE_ADDRESS_MEM_MASK;
		if (is64 && i < 5)
			addr |= (uint64_t)rd32(c, PCI_BASE_ADDRESS_0 + 4 * (i + 1)) << 32;
		if (bars && bars[i].size) {
			fprintf(f, "\tRegion %u: Memory at %llx (%s, %sprefetchable) [size=", i,
				(unsigned long long)addr, is64 ? "64-bit" : "32-bit",
				lo & PCI_BASE_ADDRESS_MEM_PREFETCH ? "" : "non-");
			print_size(f, bars[i].size);
			fprintf(f, "]%s\n", bars[i].mmap ? " (mmap: sparse)" : " (trapped)");
		}
		if (is64)
			i++;
	}
	if (bars && bars[6].size) {
		fprintf(f, "\tExpansion ROM at %08x [size=", rd32(c, PCI_ROM_ADDRESS) & ~0x7ffu);
		print_size(f, bars[6].size);
		fprintf(f, "]\n");
	}
}

static const char *link_speed(unsigned s)
{
	static const char *const sp[] = {"unknown", "2.5GT/s", "5GT/s", "8GT/s",
					 "16GT/s",  "32GT/s",  "64GT/s"};

	return s < 7 ? sp[s] : "unknown";
}

/* PCIe r6 7.5.3 */
static void decode_express(FILE *f, const uint8_t *c, unsigned p)
{
	uint16_t flags = rd16(c, p + PCI_EXP_FLAGS);
	uint32_t devcap = rd32(c, p + PCI_EXP_DEVCAP), lnkcap = rd32(c, p + PCI_EXP_LNKCAP);
	uint16_t devctl = rd16(c, p + PCI_EXP_DEVCTL), devsta = rd16(c, p + PCI_EXP_DEVSTA);
	uint16_t lnkctl = rd16(c, p + PCI_EXP_LNKCTL), lnksta = rd16(c, p + PCI_EXP_LNKSTA);
	unsigned type = (flags & PCI_EXP_FLAGS_TYPE) >> 4;

	fprintf(f, "\tCapabilities: [%02x] Express (v%u) %s, MSI %02x\n", p,
		flags & PCI_EXP_FLAGS_VERS,
		type == PCI_EXP_TYPE_ENDPOINT ? "Endpoint"
		: type == PCI_EXP_TYPE_RC_END ? "Root Complex Integrated Endpoint"
					      : "Port",
		(flags & PCI_EXP_FLAGS_IRQ) >> 9);
	fprintf(f, "\t\tDevCap:\tMaxPayload %u bytes, PhantFunc %u, Latency L0s <%s, L1 <%s\n",
		128u << (devcap & PCI_EXP_DEVCAP_PAYLOAD), (devcap & PCI_EXP_DEVCAP_PHANTOM) >> 3,
		"64ns", "1us");
	fprintf(f, "\t\t\tExtTag%c AttnBtn%c AttnInd%c PwrInd%c RBE%c FLReset%c\n",
		FLAG(devcap, PCI_EXP_DEVCAP_EXT_TAG), FLAG(devcap, PCI_EXP_DEVCAP_ATN_BUT),
		FLAG(devcap, PCI_EXP_DEVCAP_ATN_IND), FLAG(devcap, PCI_EXP_DEVCAP_PWR_IND),
		FLAG(devcap, PCI_EXP_DEVCAP_RBER), FLAG(devcap, PCI_EXP_DEVCAP_FLR));
	fprintf(f, "\t\tDevCtl:\tCorrErr%c NonFatalErr%c FatalErr%c UnsupReq%c\n",
		FLAG(devctl, PCI_EXP_DEVCTL_CERE), FLAG(devctl, PCI_EXP_DEVCTL_NFERE),
		FLAG(devctl, PCI_EXP_DEVCTL_FERE), FLAG(devctl, PCI_EXP_DEVCTL_URRE));
	fprintf(f, "\t\t\tRlxdOrd%c ExtTag%c PhantFunc%c AuxPwr%c NoSnoop%c%s\n",
		FLAG(devctl, PCI_EXP_DEVCTL_RELAX_EN), FLAG(devctl, PCI_EXP_DEVCTL_EXT_TAG),
		FLAG(devctl, PCI_EXP_DEVCTL_PHANTOM), FLAG(devctl, PCI_EXP_DEVCTL_AUX_PME),
		FLAG(devctl, PCI_EXP_DEVCTL_NOSNOOP_EN),
		devctl & PCI_EXP_DEVCTL_BCR_FLR ? " FLReset+" : "");
	fprintf(f, "\t\t\tMaxPayload %u bytes, MaxReadReq %u bytes\n",
		128u << ((devctl & PCI_EXP_DEVCTL_PAYLOAD) >> 5),
		128u << ((devctl & PCI_EXP_DEVCTL_READRQ) >> 12));
	fprintf(f,
		"\t\tDevSta:\tCorrErr%c NonFatalErr%c FatalErr%c UnsupReq%c AuxPwr%c TransPend%c\n",
		FLAG(devsta, PCI_EXP_DEVSTA_CED), FLAG(devsta, PCI_EXP_DEVSTA_NFED),
		FLAG(devsta, PCI_EXP_DEVSTA_FED), FLAG(devsta, PCI_EXP_DEVSTA_URD),
		FLAG(devsta, PCI_EXP_DEVSTA_AUXPD), FLAG(devsta, PCI_EXP_DEVSTA_TRPND));
	fprintf(f, "\t\tLnkCap:\tPort #%u, Speed %s, Width x%u, ASPM %s\n", lnkcap >> 24,
		link_speed(lnkcap & PCI_EXP_LNKCAP_SLS), (lnkcap & PCI_EXP_LNKCAP_MLW) >> 4,
		(lnkcap & PCI_EXP_LNKCAP_ASPMS) ? "L0s L1" : "not supported");
	fprintf(f, "\t\tLnkCtl:\tASPM %s; RCB %u bytes, Disabled%c CommClk%c\n",
		(lnkctl & PCI_EXP_LNKCTL_ASPMC) ? "Enabled" : "Disabled",
		lnkctl & PCI_EXP_LNKCTL_RCB ? 128 : 64, FLAG(lnkctl, PCI_EXP_LNKCTL_LD),
		FLAG(lnkctl, PCI_EXP_LNKCTL_CCC));
	fprintf(f, "\t\tLnkSta:\tSpeed %s, Width x%u\n", link_speed(lnksta & PCI_EXP_LNKSTA_CLS),
		(lnksta & PCI_EXP_LNKSTA_NLW) >> 4);
	if ((flags & PCI_EXP_FLAGS_VERS) >= 2) {
		uint32_t devcap2 = rd32(c, p + PCI_EXP_DEVCAP2);
		uint16_t devctl2 = rd16(c, p + PCI_EXP_DEVCTL2);

		fprintf(f, "\t\tDevCap2: Completion Timeout: %s, TimeoutDis%c 10BitTagComp%c\n",
			devcap2 & PCI_EXP_DEVCAP2_COMP_TMOUT_DIS ? "Range ABCD" : "Not Supported",
			FLAG(devcap2, PCI_EXP_DEVCAP2_COMP_TMOUT_DIS), FLAG(devcap2, 1u << 16));
		fprintf(f, "\t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis%c\n",
			FLAG(devctl2, PCI_EXP_DEVCTL2_COMP_TMOUT_DIS));
	}
}

/* PCI PM r1.2 */
static void decode_pm(FILE *f, const uint8_t *c, unsigned p)
{
	uint16_t pmc = rd16(c, p + PCI_PM_PMC), ctl = rd16(c, p + PCI_PM_CTRL);

	fprintf(f, "\tCapabilities: [%02x] Power Management version %u\n", p,
		pmc & PCI_PM_CAP_VER_MASK);
	fprintf(f,
		"\t\tFlags: PMEClk%c DSI%c D1%c D2%c AuxCurrent=0mA "
		"PME(D0%c,D1%c,D2%c,D3hot%c,D3cold%c)\n",
		FLAG(pmc, PCI_PM_CAP_PME_CLOCK), FLAG(pmc, PCI_PM_CAP_DSI),
		FLAG(pmc, PCI_PM_CAP_D1), FLAG(pmc, PCI_PM_CAP_D2), FLAG(pmc, PCI_PM_CAP_PME_D0),
		FLAG(pmc, PCI_PM_CAP_PME_D1), FLAG(pmc, PCI_PM_CAP_PME_D2),
		FLAG(pmc, PCI_PM_CAP_PME_D3hot), FLAG(pmc, PCI_PM_CAP_PME_D3cold));
	fprintf(f, "\t\tStatus: D%u NoSoftRst%c PME-Enable%c DSel=0 DScale=0 PME%c\n",
		ctl & PCI_PM_CTRL_STATE_MASK, FLAG(ctl, PCI_PM_CTRL_NO_SOFT_RESET),
		FLAG(ctl, PCI_PM_CTRL_PME_ENABLE), FLAG(ctl, PCI_PM_CTRL_PME_STATUS));
}

static void decode_msi(FILE *f, const uint8_t *c, unsigned p)
{
	uint16_t fl = rd16(c, p + PCI_MSI_FLAGS);

	fprintf(f, "\tCapabilities: [%02x] MSI: Enable%c Count=%u/%u Maskable%c 64bit%c\n", p,
		FLAG(fl, PCI_MSI_FLAGS_ENABLE), 1u << ((fl & PCI_MSI_FLAGS_QSIZE) >> 4),
		1u << ((fl & PCI_MSI_FLAGS_QMASK) >> 1), FLAG(fl, PCI_MSI_FLAGS_MASKBIT),
		FLAG(fl, PCI_MSI_FLAGS_64BIT));
	fprintf(f, "\t\tAddress: %08x%08x  Data: %04x\n",
		fl & PCI_MSI_FLAGS_64BIT ? rd32(c, p + PCI_MSI_ADDRESS_HI) : 0,
		rd32(c, p + PCI_MSI_ADDRESS_LO),
		rd16(c, p + (fl & PCI_MSI_FLAGS_64BIT ? PCI_MSI_DATA_64 : PCI_MSI_DATA_32)));
}

static void decode_msix(FILE *f, const uint8_t *c, unsigned p)
{
	uint16_t fl = rd16(c, p + PCI_MSIX_FLAGS);
	uint32_t t = rd32(c, p + PCI_MSIX_TABLE), pba = rd32(c, p + PCI_MSIX_PBA);

	fprintf(f, "\tCapabilities: [%02x] MSI-X: Enable%c Count=%u Masked%c\n", p,
		FLAG(fl, PCI_MSIX_FLAGS_ENABLE), (fl & PCI_MSIX_FLAGS_QSIZE) + 1,
		FLAG(fl, PCI_MSIX_FLAGS_MASKALL));
	fprintf(f, "\t\tVector table: BAR=%u offset=%08x\n", t & PCI_MSIX_TABLE_BIR,
		t & PCI_MSIX_TABLE_OFFSET);
	fprintf(f, "\t\tPBA: BAR=%u offset=%08x\n", pba & PCI_MSIX_PBA_BIR,
		pba & PCI_MSIX_PBA_OFFSET);
}

static void decode_caps(FILE *f, const uint8_t *c)
{
	unsigned p, hops = 0;

	if (!(rd16(c, PCI_STATUS) & PCI_STATUS_CAP_LIST))
		return;
	for (p = rd8(c, PCI_CAPABILITY_LIST) & ~3u; p && hops < 48; hops++) {
		uint8_t id = rd8(c, p);

		switch (id) {
		case PCI_CAP_ID_PM:
			decode_pm(f, c, p);
			break;
		case PCI_CAP_ID_MSI:
			decode_msi(f, c, p);
			break;
		case PCI_CAP_ID_EXP:
			decode_express(f, c, p);
			break;
		case PCI_CAP_ID_MSIX:
			decode_msix(f, c, p);
			break;
		case PCI_CAP_ID_VNDR:
			fprintf(f, "\tCapabilities: [%02x] Vendor Specific Information: Len=%02x\n",
				p, rd8(c, p + 2));
			break;
		default:
			fprintf(f, "\tCapabilities: [%02x] #%02x\n", p, id);
			break;
		}
		p = rd8(c, p + 1) & ~3u;
	}
}

static const char *reset_tmo(unsigned e)
{
	static const char *const t[] = {"10ms", "100ms", "1s", "10s", "100s"};

	return e < 5 ? t[e] : "reserved";
}

static void decode_range(FILE *f, const uint8_t *c, unsigned d, unsigned i)
{
	uint32_t szhi = rd32(c, d + CXL_DVSEC_RANGE_SIZE_HI(i));
	uint32_t szlo = rd32(c, d + CXL_DVSEC_RANGE_SIZE_LO(i));
	uint32_t bhi = rd32(c, d + CXL_DVSEC_RANGE_BASE_HI(i));
	uint32_t blo = rd32(c, d + CXL_DVSEC_RANGE_BASE_LO(i));
	uint64_t size = (uint64_t)szhi << 32 | (szlo & CXL_DVSEC_RANGE_SIZE_LO_MASK);
	uint64_t base = (uint64_t)bhi << 32 | (blo & CXL_DVSEC_RANGE_BASE_LO_MASK);
	unsigned tmo = (unsigned)VCXL_FIELD_GET(CXL_DVSEC_RANGE_ACTIVE_TMO, szlo);

	fprintf(f, "\t\tRange%u: Size %016llx Base %016llx\n", i + 1, (unsigned long long)size,
		(unsigned long long)base);
	fprintf(f,
		"\t\t\tMemInfoValid%c MemActive%c MediaType %u%s MemClass %u%s DesiredInterleave "
		"%u MemActiveTimeout %u (%us)\n",
		FLAG(szlo, CXL_DVSEC_RANGE_INFO_VALID), FLAG(szlo, CXL_DVSEC_RANGE_ACTIVE),
		(unsigned)VCXL_FIELD_GET(CXL_DVSEC_RANGE_MEDIA_TYPE, szlo),
		VCXL_FIELD_GET(CXL_DVSEC_RANGE_MEDIA_TYPE, szlo) == CXL_DVSEC_MEDIA_CDAT ? " (CDAT)"
											 : "",
		(unsigned)VCXL_FIELD_GET(CXL_DVSEC_RANGE_MEM_CLASS, szlo),
		VCXL_FIELD_GET(CXL_DVSEC_RANGE_MEM_CLASS, szlo) == CXL_DVSEC_CLASS_CDAT ? " (CDAT)"
											: "",
		(unsigned)VCXL_FIELD_GET(CXL_DVSEC_RANGE_DESIRED_IL, szlo), tmo,
		tmo <= CXL_DVSEC_ACTIVE_TMO_MAX_ENC ? 1u << (2 * tmo) : 0);
}

/* CXL r3.1 8.1.3 */
static void decode_cxl_device(FILE *f, const uint8_t *c, unsigned d, unsigned len)
{
	uint16_t cap = rd16(c, d + CXL_DVSEC_CAP), ctl = rd16(c, d + CXL_DVSEC_CTRL);
	uint16_t sta = rd16(c, d + CXL_DVSEC_STATUS), ctl2 = rd16(c, d + CXL_DVSEC_CTRL2);
	uint16_t sta2 = rd16(c, d + CXL_DVSEC_STATUS2), lock = rd16(c, d + CXL_DVSEC_LOCK);
	uint16_t cap2 = rd16(c, d + CXL_DVSEC_CAP2);

	fprintf(f,
		"\t\tCXLCap:\tCache%c IO%c Mem%c MemHWInit%c HDMCount %u CacheWBI%c CXLReset%c "
		"CXLResetTimeout %s CXLResetMemClr%c TSP%c MLD%c Viral%c PMInit%c\n",
		FLAG(cap, CXL_DVSEC_CAP_CACHE), FLAG(cap, CXL_DVSEC_CAP_IO),
		FLAG(cap, CXL_DVSEC_CAP_MEM), FLAG(cap, CXL_DVSEC_CAP_MEM_HWINIT),
		(unsigned)VCXL_FIELD_GET(CXL_DVSEC_CAP_HDM_COUNT, cap),
		FLAG(cap, CXL_DVSEC_CAP_CACHE_WBI), FLAG(cap, CXL_DVSEC_CAP_RESET),
		reset_tmo((unsigned)VCXL_FIELD_GET(CXL_DVSEC_CAP_RESET_TMO, cap)),
		FLAG(cap, CXL_DVSEC_CAP_RESET_MEMCLR), FLAG(cap, CXL_DVSEC_CAP_TSP),
		FLAG(cap, CXL_DVSEC_CAP_MLD), FLAG(cap, CXL_DVSEC_CAP_VIRAL),
		FLAG(cap, CXL_DVSEC_CAP_PM_INIT));
	fprintf(f,
		"\t\tCXLCtl:\tCache%c IO%c Mem%c CacheSFCov %u CacheSFGran %u CacheClean%c "
		"P2PMem%c Viral%c\n",
		FLAG(ctl, CXL_DVSEC_CTRL_CACHE_EN), FLAG(ctl, CXL_DVSEC_CTRL_IO_EN),
		FLAG(ctl, CXL_DVSEC_CTRL_MEM_EN),
		(unsigned)VCXL_FIELD_GET(CXL_DVSEC_CTRL_SF_COVERAGE, ctl),
		(unsigned)VCXL_FIELD_GET(CXL_DVSEC_CTRL_SF_GRAN, ctl),
		FLAG(ctl, CXL_DVSEC_CTRL_CLEAN_EVICT), FLAG(ctl, CXL_DVSEC_CTRL_P2P_MEM_EN),
		FLAG(ctl, CXL_DVSEC_CTRL_VIRAL_EN));
	fprintf(f, "\t\tCXLSta:\tViral%c\n", FLAG(sta, CXL_DVSEC_STATUS_VIRAL));
	fprintf(f,
		"\t\tCXLCtl2:\tDisableCaching%c InitCacheWB&Inval%c InitCXLReset%c "
		"CXLResetMemClr%c DesiredVolatileHDMStateAfterHotReset%c "
		"ModifiedCompletionEnable%c\n",
		FLAG(ctl2, CXL_DVSEC_CTRL2_DISABLE_CACHE),
		FLAG(ctl2, CXL_DVSEC_CTRL2_INIT_CACHE_WBI), FLAG(ctl2, CXL_DVSEC_CTRL2_INIT_RESET),
		FLAG(ctl2, CXL_DVSEC_CTRL2_RESET_MEMCLR), FLAG(ctl2, CXL_DVSEC_CTRL2_HDM_HOT_STATE),
		FLAG(ctl2, CXL_DVSEC_CTRL2_MOD_COMPL_EN));
	fprintf(f,
		"\t\tCXLSta2:\tCacheInvalid%c CXLResetComplete%c CXLResetError%c "
		"VolatileHDMPreservationError%c PMInitComplete%c\n",
		FLAG(sta2, CXL_DVSEC_STATUS2_CACHE_INV), FLAG(sta2, CXL_DVSEC_STATUS2_RESET_DONE),
		FLAG(sta2, CXL_DVSEC_STATUS2_RESET_ERR), FLAG(sta2, CXL_DVSEC_STATUS2_HDM_PRES_ERR),
		FLAG(sta2, CXL_DVSEC_STATUS2_PM_INIT_DONE));
	fprintf(f, "\t\tCXLLock:\tConfigLock%c\n", FLAG(lock, CXL_DVSEC_LOCK_CONFIG));
	fprintf(f,
		"\t\tCXLCap2:\tCacheUnit %u CacheSize %u FallbackCapability %u "
		"ModifiedCompletion%c\n",
		(unsigned)VCXL_FIELD_GET(CXL_DVSEC_CAP2_CACHE_UNIT, cap2),
		(unsigned)VCXL_FIELD_GET(CXL_DVSEC_CAP2_CACHE_SIZE, cap2),
		(unsigned)VCXL_FIELD_GET(CXL_DVSEC_CAP2_FALLBACK, cap2),
		FLAG(cap2, CXL_DVSEC_CAP2_MOD_COMPL));
	for (unsigned i = 0; i < CXL_DVSEC_RANGE_MAX; i++)
		decode_range(f, c, d, i);
	if (len >= CXL_DVSEC_DEVICE_LEN) {
		uint16_t cap3 = rd16(c, d + CXL_DVSEC_CAP3);

		fprintf(f,
			"\t\tCXLCap3:\tDefaultVolatileHDMStateAfterColdReset%c "
			"...WarmReset%c ...HotReset%c HotResetConfigurable%c "
			"DirectP2PMem%c\n",
			FLAG(cap3, CXL_DVSEC_CAP3_COLD_HDM), FLAG(cap3, CXL_DVSEC_CAP3_WARM_HDM),
			FLAG(cap3, CXL_DVSEC_CAP3_HOT_HDM), FLAG(cap3, CXL_DVSEC_CAP3_HOT_CONFIG),
			FLAG(cap3, CXL_DVSEC_CAP3_P2P_MEM));
	}
}

static const char *regloc_name(unsigned id)
{
	switch (id) {
	case CXL_REGLOC_RBI_EMPTY:
		return "empty";
	case CXL_REGLOC_RBI_COMPONENT:
		return "component registers";
	case CXL_REGLOC_RBI_VIRT:
		return "BAR virtualization ACL registers";
	case CXL_REGLOC_RBI_MEMDEV:
		return "CXL Memory Device registers";
	case CXL_REGLOC_RBI_PMU:
		return "CPMU registers";
	case CXL_REGLOC_RBI_VENDOR:
		return "vendor specific registers";
	default:
		return "reserved";
	}
}

/* CXL r3.1 8.1.9 */
static void decode_regloc(FILE *f, const uint8_t *c, unsigned d, unsigned len)
{
	unsigned n = len > CXL_REGLOC_FIRST_ENTRY
			 ? (len - CXL_REGLOC_FIRST_ENTRY) / CXL_REGLOC_ENTRY_SIZE
			 : 0;

	for (unsigned k = 0; k < n; k++) {
		struct vcxl_regloc_entry e;

		vcxl_regloc_decode(rd32(c, d + CXL_REGLOC_BLOCK_LO(k)),
				   rd32(c, d + CXL_REGLOC_BLOCK_HI(k)), &e);
		fprintf(f, "\t\tBlock%u: BIR: bar%u, ID: %s (%u), offset: %016llx\n", k + 1, e.bir,
			regloc_name(e.id), e.id, (unsigned long long)e.offset);
	}
}

static const char *const gpf_scale[] = {"1us",	"10us",	 "100us", "1ms",
					"10ms", "100ms", "1s",	  "10s"};

/* CXL r3.1 8.1.7 [spec] */
static void decode_gpf(FILE *f, const uint8_t *c, unsigned d)
{
	uint16_t dur = rd16(c, d + CXL_GPF_DEV_PHASE2_DUR);
	unsigned scale = (unsigned)VCXL_FIELD_GET(CXL_GPF_DEV_PHASE2_SCALE, dur);

	fprintf(f, "\t\tGPF Phase 2 Duration: %u x %s\n",
		(unsigned)VCXL_FIELD_GET(CXL_GPF_DEV_PHASE2_BASE, dur),
		scale < 8 ? gpf_scale[scale] : "reserved");
	fprintf(f, "\t\tGPF Phase 2 Power: %umW\n", rd32(c, d + CXL_GPF_DEV_PHASE2_POWER));
}

static void flexbus_bits(FILE *f, const char *name, uint16_t v)
{
	fprintf(f, "\t\t%s:\tCache%c IO%c Mem%c 68BFlitVH%c MLD%c 256BFlit%c\n", name,
		FLAG(v, CXL_FLEXBUS_CACHE), FLAG(v, CXL_FLEXBUS_IO), FLAG(v, CXL_FLEXBUS_MEM),
		FLAG(v, CXL_FLEXBUS_68B_FLIT_VH), FLAG(v, CXL_FLEXBUS_MLD),
		FLAG(v, CXL_FLEXBUS_256B_FLIT));
}

/* CXL r3.1 8.2.1.3 [spec] */
static void decode_flexbus(FILE *f, const uint8_t *c, unsigned d, unsigned len)
{
	flexbus_bits(f, "FBCap", rd16(c, d + CXL_FLEXBUS_CAP));
	flexbus_bits(f, "FBCtl", rd16(c, d + CXL_FLEXBUS_CTRL));
	flexbus_bits(f, "FBSta", rd16(c, d + CXL_FLEXBUS_STATUS));
	fprintf(f, "\t\tFBModTS:\tReceived Flex Bus Data Phase1 %06x\n",
		rd32(c, d + CXL_FLEXBUS_RCVD_MOD_TS_1) & 0xffffff);
	if (len >= CXL_FLEXBUS_LEN)
		fprintf(f, "\t\tFBCap2: %08x FBCtl2: %08x FBSta2: %08x\n",
			rd32(c, d + CXL_FLEXBUS_CAP2), rd32(c, d + CXL_FLEXBUS_CTRL2),
			rd32(c, d + CXL_FLEXBUS_STATUS2));
}

static const char *dvsec_name(unsigned id)
{
	switch (id) {
	case CXL_DVSEC_ID_DEVICE:
		return "CXL Device";
	case CXL_DVSEC_ID_NON_CXL_FMAP:
		return "Non-CXL Function Map";
	case CXL_DVSEC_ID_PORT_EXT:
		return "CXL Extensions for Ports";
	case CXL_DVSEC_ID_GPF_PORT:
		return "GPF for Ports";
	case CXL_DVSEC_ID_GPF_DEVICE:
		return "GPF for Device";
	case CXL_DVSEC_ID_FLEXBUS:
		return "Flex Bus Port";
	case CXL_DVSEC_ID_REG_LOCATOR:
		return "Register Locator";
	case CXL_DVSEC_ID_MLD:
		return "MLD";
	case CXL_DVSEC_ID_TEST:
		return "Test Capability";
	default:
		return "Unknown";
	}
}

/* PCIe r6 7.9.6 */
static void decode_dvsec(FILE *f, const uint8_t *c, unsigned p, unsigned ver)
{
	uint32_t h1 = rd32(c, p + PCIE_DVSEC_HEADER1);
	uint16_t vendor = (uint16_t)VCXL_FIELD_GET(PCIE_DVSEC_HDR1_VENDOR, h1);
	unsigned rev = (unsigned)VCXL_FIELD_GET(PCIE_DVSEC_HDR1_REV, h1);
	unsigned len = (unsigned)VCXL_FIELD_GET(PCIE_DVSEC_HDR1_LEN, h1);
	unsigned id = rd16(c, p + PCIE_DVSEC_HEADER2);

	fprintf(f,
		"\tCapabilities: [%03x v%u] Designated Vendor-Specific: Vendor=%04x ID=%04x "
		"Rev=%u Len=%u: %s\n",
		p, ver, vendor, id, rev, len, vendor == CXL_VENDOR_ID ? dvsec_name(id) : "Unknown");
	if (vendor != CXL_VENDOR_ID)
		return;
	switch (id) {
	case CXL_DVSEC_ID_DEVICE:
		decode_cxl_device(f, c, p, len);
		break;
	case CXL_DVSEC_ID_REG_LOCATOR:
		decode_regloc(f, c, p, len);
		break;
	case CXL_DVSEC_ID_GPF_DEVICE:
		decode_gpf(f, c, p);
		break;
	case CXL_DVSEC_ID_FLEXBUS:
		decode_flexbus(f, c, p, len);
		break;
	default:
		break;
	}
}

/* PCIe r6 7.9.24 */
static void decode_doe(FILE *f, const uint8_t *c, unsigned p, unsigned ver)
{
	uint32_t cap = rd32(c, p + PCI_DOE_CAP), ctl = rd32(c, p + PCI_DOE_CTRL);
	uint32_t sta = rd32(c, p + PCI_DOE_STATUS);

	fprintf(f, "\tCapabilities: [%03x v%u] Data Object Exchange\n", p, ver);
	fprintf(f, "\t\tDOECap: IntSup%c IntMsgNum %u\n", FLAG(cap, PCI_DOE_CAP_INT_SUPPORT),
		(unsigned)VCXL_FIELD_GET(PCI_DOE_CAP_INT_MSG_NUM, cap));
	fprintf(f, "\t\tDOECtl: Abort%c IntEn%c Go%c\n", FLAG(ctl, PCI_DOE_CTRL_ABORT),
		FLAG(ctl, PCI_DOE_CTRL_INT_EN), FLAG(ctl, PCI_DOE_CTRL_GO));
	fprintf(f, "\t\tDOESta: Busy%c IntSta%c Error%c ObjectReady%c\n",
		FLAG(sta, PCI_DOE_STATUS_BUSY), FLAG(sta, PCI_DOE_STATUS_INT_STATUS),
		FLAG(sta, PCI_DOE_STATUS_ERROR), FLAG(sta, PCI_DOE_STATUS_DATA_READY));
}

static void decode_ext_caps(FILE *f, const uint8_t *c)
{
	unsigned p = PCIE_EXT_CAP_START, hops = 0;

	while (p >= PCIE_EXT_CAP_START && p < 4096 && hops++ < 96) {
		uint32_t h = rd32(c, p);
		unsigned id = (unsigned)VCXL_FIELD_GET(PCIE_EXT_CAP_ID_MASK, h);
		unsigned ver = (unsigned)VCXL_FIELD_GET(PCIE_EXT_CAP_VER_MASK, h);

		if (h == 0 || h == 0xffffffff)
			break;
		switch (id) {
		case PCIE_EXT_CAP_ID_DVSEC:
			decode_dvsec(f, c, p, ver);
			break;
		case PCIE_EXT_CAP_ID_DOE:
			decode_doe(f, c, p, ver);
			break;
		case PCI_EXT_CAP_ID_ERR:
			fprintf(f, "\tCapabilities: [%03x v%u] Advanced Error Reporting\n", p, ver);
			fprintf(
			    f, "\t\tUESta: %08x UEMsk: %08x UESvrt: %08x CESta: %08x CEMsk: %08x\n",
			    rd32(c, p + PCI_ERR_UNCOR_STATUS), rd32(c, p + PCI_ERR_UNCOR_MASK),
			    rd32(c, p + PCI_ERR_UNCOR_SEVER), rd32(c, p + PCI_ERR_COR_STATUS),
			    rd32(c, p + PCI_ERR_COR_MASK));
			break;
		case PCI_EXT_CAP_ID_DSN:
			fprintf(f, "\tCapabilities: [%03x v%u] Device Serial Number %08x%08x\n", p,
				ver, rd32(c, p + 8), rd32(c, p + 4));
			break;
		default:
			fprintf(f, "\tCapabilities: [%03x v%u] Extended Capability ID %#x\n", p,
				ver, id);
			break;
		}
		p = (unsigned)VCXL_FIELD_GET(PCIE_EXT_CAP_NEXT_MASK, h) & ~3u;
	}
}

void vcxl_lspci_decode(FILE *f, const uint8_t cfg[4096], const struct vcxl_lspci_bar *bars)
{
	decode_header(f, cfg, bars);
	decode_caps(f, cfg);
	decode_ext_caps(f, cfg);
}
