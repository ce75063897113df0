/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CXL register layouts: every field vcxl emulates or reads, as named constants.
 *
 * Offsets are relative to the structure named in each block (DVSEC start,
 * component block start, CM range start, HDM capability start, ...).
 * Field masks are in-register masks; use VCXL_FIELD_GET/PREP to move values.
 * Items marked [spec] come from the CXL 2.0-3.1 text and were not confirmed
 * from Linux, QEMU or pciutils code.
 */
#ifndef VCXL_CXL_REGS_H
#define VCXL_CXL_REGS_H

#include <stdint.h>

#define VCXL_BIT(n)		 (1u << (n))
#define VCXL_BIT64(n)		 (1ull << (n))
#define VCXL_GENMASK(h, l)	 (((~0u) >> (31 - (h))) & ~((1u << (l)) - 1u))
#define VCXL_GENMASK64(h, l)	 (((~0ull) >> (63 - (h))) & ~((1ull << (l)) - 1ull))
#define VCXL_FIELD_GET(mask, v)	 (((v) & (mask)) >> __builtin_ctzll(mask))
#define VCXL_FIELD_PREP(mask, v) (((uint64_t)(v) << __builtin_ctzll(mask)) & (mask))

#define VCXL_SZ_4K   0x1000ull
#define VCXL_SZ_64K  0x10000ull
#define VCXL_SZ_1M   0x100000ull
#define VCXL_SZ_256M 0x10000000ull

/* ---------------------------------------------------------------------- */
/* PCI capability list (PCI r3.0 6.7): ID byte, next-pointer byte         */
/* ---------------------------------------------------------------------- */
#define PCI_CAP_HDR_ID_MASK   VCXL_GENMASK(7, 0)
#define PCI_CAP_HDR_NEXT_MASK VCXL_GENMASK(15, 8)
#define PCI_CAP_PTR_MASK      0xfcu /* the low two pointer bits are reserved */
#define PCI_CAP_START	      0x40  /* capabilities live after the header */
#define PCI_CAP_END	      0x100 /* and before extended config space */

/* ---------------------------------------------------------------------- */
/* PCIe extended capability header and DVSEC headers (PCIe r6 7.9.6)      */
/* ---------------------------------------------------------------------- */
#define PCIE_EXT_CAP_START     0x100
#define PCIE_EXT_CAP_ID_MASK   VCXL_GENMASK(15, 0)
#define PCIE_EXT_CAP_VER_MASK  VCXL_GENMASK(19, 16)
#define PCIE_EXT_CAP_NEXT_MASK VCXL_GENMASK(31, 20)
#define PCIE_EXT_CAP_ID_DVSEC  0x0023
#define PCIE_EXT_CAP_ID_DOE    0x002e
#define PCIE_EXT_CAP_DVSEC_VER 1
#define PCIE_EXT_CAP_DOE_VER   1

#define PCIE_DVSEC_HEADER1     0x04
#define PCIE_DVSEC_HDR1_VENDOR VCXL_GENMASK(15, 0)
#define PCIE_DVSEC_HDR1_REV    VCXL_GENMASK(19, 16)
#define PCIE_DVSEC_HDR1_LEN    VCXL_GENMASK(31, 20)
#define PCIE_DVSEC_HEADER2     0x08
#define PCIE_DVSEC_HDR2_ID     VCXL_GENMASK(15, 0)
#define PCIE_DVSEC_BODY	       0x0a

#define CXL_VENDOR_ID 0x1e98
/* CXL r3.1 8.1.12.1: class code of a CXL memory device (Type-3): memory
 * controller (05h), CXL (02h), CXL memory device (prog-if 10h) */
#define CXL_PCI_CLASS_MEMDEV 0x050210u

/* CXL DVSEC IDs (CXL r3.1 Table 8-2) */
#define CXL_DVSEC_ID_DEVICE	  0
#define CXL_DVSEC_ID_NON_CXL_FMAP 2
#define CXL_DVSEC_ID_PORT_EXT	  3
#define CXL_DVSEC_ID_GPF_PORT	  4
#define CXL_DVSEC_ID_GPF_DEVICE	  5
#define CXL_DVSEC_ID_FLEXBUS	  7
#define CXL_DVSEC_ID_REG_LOCATOR  8
#define CXL_DVSEC_ID_MLD	  9
#define CXL_DVSEC_ID_TEST	  0xa

/* ---------------------------------------------------------------------- */
/* CXL Device DVSEC (ID 0), CXL r3.1 8.1.3                                */
/* ---------------------------------------------------------------------- */
#define CXL_DVSEC_DEVICE_REV	  3
#define CXL_DVSEC_DEVICE_LEN	  0x3c
#define CXL_DVSEC_DEVICE_LEN_REV1 0x38

#define CXL_DVSEC_CAP		   0x0a
#define CXL_DVSEC_CAP_CACHE	   VCXL_BIT(0)
#define CXL_DVSEC_CAP_IO	   VCXL_BIT(1)
#define CXL_DVSEC_CAP_MEM	   VCXL_BIT(2)
#define CXL_DVSEC_CAP_MEM_HWINIT   VCXL_BIT(3)
#define CXL_DVSEC_CAP_HDM_COUNT	   VCXL_GENMASK(5, 4)
#define CXL_DVSEC_CAP_CACHE_WBI	   VCXL_BIT(6)
#define CXL_DVSEC_CAP_RESET	   VCXL_BIT(7)
#define CXL_DVSEC_CAP_RESET_TMO	   VCXL_GENMASK(10, 8)
#define CXL_DVSEC_CAP_RESET_MEMCLR VCXL_BIT(11)
#define CXL_DVSEC_CAP_TSP	   VCXL_BIT(12) /* [spec] */
#define CXL_DVSEC_CAP_MLD	   VCXL_BIT(13) /* [spec] */
#define CXL_DVSEC_CAP_VIRAL	   VCXL_BIT(14)
#define CXL_DVSEC_CAP_PM_INIT	   VCXL_BIT(15) /* [spec] */

/* CXL Reset Timeout encoding: 0=10ms 1=100ms 2=1s 3=10s 4=100s */
#define CXL_RESET_TMO_MAX_ENC 4

#define CXL_DVSEC_CTRL		   0x0c
#define CXL_DVSEC_CTRL_CACHE_EN	   VCXL_BIT(0)
#define CXL_DVSEC_CTRL_IO_EN	   VCXL_BIT(1)
#define CXL_DVSEC_CTRL_MEM_EN	   VCXL_BIT(2)
#define CXL_DVSEC_CTRL_SF_COVERAGE VCXL_GENMASK(7, 3)
#define CXL_DVSEC_CTRL_SF_GRAN	   VCXL_GENMASK(10, 8)
#define CXL_DVSEC_CTRL_CLEAN_EVICT VCXL_BIT(11)
#define CXL_DVSEC_CTRL_P2P_MEM_EN  VCXL_BIT(12)
#define CXL_DVSEC_CTRL_VIRAL_EN	   VCXL_BIT(14)
/* Control bits that are RWL under CONFIG_LOCK (P2P only when Cap3 says so) */
#define CXL_DVSEC_CTRL_RWL_MASK                                                                    \
	(CXL_DVSEC_CTRL_CACHE_EN | CXL_DVSEC_CTRL_MEM_EN | CXL_DVSEC_CTRL_SF_COVERAGE |            \
	 CXL_DVSEC_CTRL_SF_GRAN | CXL_DVSEC_CTRL_CLEAN_EVICT | CXL_DVSEC_CTRL_VIRAL_EN)

#define CXL_DVSEC_STATUS       0x0e
#define CXL_DVSEC_STATUS_VIRAL VCXL_BIT(14) /* RW1CS */

#define CXL_DVSEC_CTRL2		       0x10
#define CXL_DVSEC_CTRL2_DISABLE_CACHE  VCXL_BIT(0)
#define CXL_DVSEC_CTRL2_INIT_CACHE_WBI VCXL_BIT(1) /* trigger, reads 0 */
#define CXL_DVSEC_CTRL2_INIT_RESET     VCXL_BIT(2) /* trigger, reads 0 */
#define CXL_DVSEC_CTRL2_RESET_MEMCLR   VCXL_BIT(3)
#define CXL_DVSEC_CTRL2_HDM_HOT_STATE  VCXL_BIT(4) /* RW only if Cap3 configurable */
#define CXL_DVSEC_CTRL2_MOD_COMPL_EN   VCXL_BIT(5) /* RW only if Cap2 mod-compl capable */

#define CXL_DVSEC_STATUS2	       0x12
#define CXL_DVSEC_STATUS2_CACHE_INV    VCXL_BIT(0)
#define CXL_DVSEC_STATUS2_RESET_DONE   VCXL_BIT(1)
#define CXL_DVSEC_STATUS2_RESET_ERR    VCXL_BIT(2)
#define CXL_DVSEC_STATUS2_HDM_PRES_ERR VCXL_BIT(3) /* RW1CS */
#define CXL_DVSEC_STATUS2_PM_INIT_DONE VCXL_BIT(15)

#define CXL_DVSEC_LOCK	      0x14
#define CXL_DVSEC_LOCK_CONFIG VCXL_BIT(0) /* RWO */

#define CXL_DVSEC_CAP2		  0x16
#define CXL_DVSEC_CAP2_CACHE_UNIT VCXL_GENMASK(3, 0)
#define CXL_DVSEC_CAP2_FALLBACK	  VCXL_GENMASK(5, 4) /* [spec] */
#define CXL_DVSEC_CAP2_MOD_COMPL  VCXL_BIT(6)
#define CXL_DVSEC_CAP2_CACHE_SIZE VCXL_GENMASK(15, 8)

#define CXL_DVSEC_RANGE_MAX	     2
#define CXL_DVSEC_RANGE_SIZE_HI(i)   (0x18 + (i)*0x10)
#define CXL_DVSEC_RANGE_SIZE_LO(i)   (0x1c + (i)*0x10)
#define CXL_DVSEC_RANGE_BASE_HI(i)   (0x20 + (i)*0x10)
#define CXL_DVSEC_RANGE_BASE_LO(i)   (0x24 + (i)*0x10)
#define CXL_DVSEC_RANGE_INFO_VALID   VCXL_BIT(0)
#define CXL_DVSEC_RANGE_ACTIVE	     VCXL_BIT(1)
#define CXL_DVSEC_RANGE_MEDIA_TYPE   VCXL_GENMASK(4, 2)
#define CXL_DVSEC_RANGE_MEM_CLASS    VCXL_GENMASK(7, 5)
#define CXL_DVSEC_RANGE_DESIRED_IL   VCXL_GENMASK(12, 8)
#define CXL_DVSEC_RANGE_ACTIVE_TMO   VCXL_GENMASK(15, 13)
#define CXL_DVSEC_RANGE_SIZE_LO_MASK VCXL_GENMASK(31, 28)
#define CXL_DVSEC_RANGE_BASE_LO_MASK VCXL_GENMASK(31, 28)
/* Media_Type / Memory_Class value 2: "described by CDAT" */
#define CXL_DVSEC_MEDIA_CDAT 2
#define CXL_DVSEC_CLASS_CDAT 2
/* Memory_Active_Timeout encoding n means 1 << (2n) seconds, n = 0..4 */
#define CXL_DVSEC_ACTIVE_TMO_MAX_ENC 4

#define CXL_DVSEC_CAP3		  0x38
#define CXL_DVSEC_CAP3_COLD_HDM	  VCXL_BIT(0)
#define CXL_DVSEC_CAP3_WARM_HDM	  VCXL_BIT(1)
#define CXL_DVSEC_CAP3_HOT_HDM	  VCXL_BIT(2)
#define CXL_DVSEC_CAP3_HOT_CONFIG VCXL_BIT(3)
#define CXL_DVSEC_CAP3_P2P_MEM	  VCXL_BIT(4)

/* ---------------------------------------------------------------------- */
/* Register Locator DVSEC (ID 8), CXL r3.1 8.1.9                          */
/* ---------------------------------------------------------------------- */
#define CXL_REGLOC_REV		 0
#define CXL_REGLOC_BLOCK_LO(k)	 (0x0c + (k)*8)
#define CXL_REGLOC_BLOCK_HI(k)	 (0x10 + (k)*8)
#define CXL_REGLOC_ENTRY_SIZE	 8
#define CXL_REGLOC_FIRST_ENTRY	 0x0c
#define CXL_REGLOC_BIR		 VCXL_GENMASK(2, 0)
#define CXL_REGLOC_BLOCK_ID	 VCXL_GENMASK(15, 8)
#define CXL_REGLOC_OFFSET_LO	 VCXL_GENMASK(31, 16)
#define CXL_REGLOC_RBI_EMPTY	 0
#define CXL_REGLOC_RBI_COMPONENT 1
#define CXL_REGLOC_RBI_VIRT	 2
#define CXL_REGLOC_RBI_MEMDEV	 3
#define CXL_REGLOC_RBI_PMU	 4
#define CXL_REGLOC_RBI_VENDOR	 0xff

/* ---------------------------------------------------------------------- */
/* GPF DVSEC for CXL devices (ID 5), CXL r3.1 8.1.7 [spec]                */
/* ---------------------------------------------------------------------- */
#define CXL_GPF_DEV_REV		 0
#define CXL_GPF_DEV_LEN		 0x10
#define CXL_GPF_DEV_PHASE2_DUR	 0x0a
#define CXL_GPF_DEV_PHASE2_BASE	 VCXL_GENMASK(3, 0)
#define CXL_GPF_DEV_PHASE2_SCALE VCXL_GENMASK(11, 8)
#define CXL_GPF_DEV_PHASE2_POWER 0x0c

/* ---------------------------------------------------------------------- */
/* Flex Bus Port DVSEC (ID 7), CXL r3.1 8.2.1.3 [spec]                    */
/* ---------------------------------------------------------------------- */
#define CXL_FLEXBUS_REV		  2
#define CXL_FLEXBUS_LEN		  0x20
#define CXL_FLEXBUS_CAP		  0x0a
#define CXL_FLEXBUS_CTRL	  0x0c
#define CXL_FLEXBUS_STATUS	  0x0e
#define CXL_FLEXBUS_CACHE	  VCXL_BIT(0)
#define CXL_FLEXBUS_IO		  VCXL_BIT(1)
#define CXL_FLEXBUS_MEM		  VCXL_BIT(2)
#define CXL_FLEXBUS_68B_FLIT_VH	  VCXL_BIT(5)
#define CXL_FLEXBUS_MLD		  VCXL_BIT(6)  /* [spec] */
#define CXL_FLEXBUS_256B_FLIT	  VCXL_BIT(13) /* [spec] */
#define CXL_FLEXBUS_RCVD_MOD_TS_1 0x10
#define CXL_FLEXBUS_CAP2	  0x14
#define CXL_FLEXBUS_CTRL2	  0x18
#define CXL_FLEXBUS_STATUS2	  0x1c

/* ---------------------------------------------------------------------- */
/* Component register block, CXL r3.1 8.2.3                               */
/* ---------------------------------------------------------------------- */
/* CXL r3.1 8.2.2: a 32-bit register is accessed as one 4-byte quantity, a
 * 64-bit one as one 8-byte quantity, naturally aligned, no partial reads */
#define CXL_COMP_REG32_BYTES	    4
#define CXL_COMP_REG64_BYTES	    8
#define CXL_COMPONENT_BLOCK_SIZE    0x10000
#define CXL_COMPONENT_IO_OFFSET	    0x0000
#define CXL_CM_OFFSET		    0x1000
#define CXL_CM_SIZE		    0x1000
#define CXL_COMPONENT_ARBMUX_OFFSET 0xe000

/* CXL capability header / element at CM + 4k, CXL r3.1 8.2.4.1 */
#define CXL_CM_CAP_HDR_ID	   VCXL_GENMASK(15, 0)
#define CXL_CM_CAP_HDR_VERSION	   VCXL_GENMASK(19, 16)
#define CXL_CM_CAP_HDR_CM_VERSION  VCXL_GENMASK(23, 20)
#define CXL_CM_CAP_HDR_ARRAY_SIZE  VCXL_GENMASK(31, 24)
#define CXL_CM_CAP_PTR		   VCXL_GENMASK(31, 20)
#define CXL_CM_CAP_ID_ARRAY	   1
#define CXL_CM_CAP_ID_RAS	   2
#define CXL_CM_CAP_ID_SECURITY	   3
#define CXL_CM_CAP_ID_LINK	   4
#define CXL_CM_CAP_ID_HDM	   5
#define CXL_CM_CAP_ID_EXT_SECURITY 6
#define CXL_CM_CAP_ID_IDE	   7
#define CXL_CM_CAP_ID_SNOOP	   8
#define CXL_CM_CAP_VERSION	   1
#define CXL_CM_VERSION		   1
#define CXL_RAS_CAP_VERSION	   2
#define CXL_LINK_CAP_VERSION	   2
#define CXL_HDM_CAP_VERSION	   3

/* RAS capability, CXL r3.1 8.2.4.17 */
#define CXL_RAS_CAP_SIZE	0x58
#define CXL_RAS_UNCORR_STATUS	0x00 /* RW1CS */
#define CXL_RAS_UNCORR_MASK	0x04 /* RWS */
#define CXL_RAS_UNCORR_SEVERITY 0x08 /* RWS */
#define CXL_RAS_CORR_STATUS	0x0c /* RW1CS */
#define CXL_RAS_CORR_MASK	0x10 /* RWS */
#define CXL_RAS_CAP_CTRL	0x14
#define CXL_RAS_HEADER_LOG	0x18
#define CXL_RAS_UNCORR_MASK_ALL VCXL_GENMASK(26, 0) /* [spec] defined bits */
#define CXL_RAS_CORR_MASK_ALL	VCXL_GENMASK(6, 0)  /* [spec] defined bits */
#define CXL_RAS_CAP_CTRL_FE_PTR VCXL_GENMASK(5, 0)

/* Link capability, CXL r3.1 8.2.4.19: its registers are 64-bit (8.2.4.19.1-7) [spec] */
#define CXL_LINK_CAP_SIZE	      0x50
#define CXL_LINK_LL_CAP		      0x00 /* Link Layer Capability */
#define CXL_LINK_CTRL_STATUS	      0x08 /* Link Control and Status */
#define CXL_LINK_RX_CREDIT_CTRL	      0x10 /* Link Rx Credit Control */
#define CXL_LINK_RX_CREDIT_RET_STATUS 0x18 /* Link Rx Credit Return Status */
#define CXL_LINK_TX_CREDIT_STATUS     0x20 /* Link Tx Credit Status */
#define CXL_LINK_ACK_TIMER_CTRL	      0x28 /* Link Ack Timer Control */
#define CXL_LINK_DEFEATURE	      0x30 /* Link Defeature */

/* HDM decoder capability, CXL r3.1 8.2.4.20 */
#define CXL_HDM_CAP		  0x00
#define CXL_HDM_CAP_DECODER_COUNT VCXL_GENMASK(3, 0)
#define CXL_HDM_CAP_TARGET_COUNT  VCXL_GENMASK(7, 4)
#define CXL_HDM_CAP_IL_11_8	  VCXL_BIT(8)
#define CXL_HDM_CAP_IL_14_12	  VCXL_BIT(9)
#define CXL_HDM_CAP_POISON	  VCXL_BIT(10)
#define CXL_HDM_CAP_IW_3_6_12	  VCXL_BIT(11)
#define CXL_HDM_CAP_IW_16	  VCXL_BIT(12)
#define CXL_HDM_CAP_UIO		  VCXL_BIT(13)
#define CXL_HDM_CAP_UIO_COUNT	  VCXL_GENMASK(19, 16)
#define CXL_HDM_CAP_MEMDATA_NXM	  VCXL_BIT(20)
#define CXL_HDM_CAP_COHERENCY	  VCXL_GENMASK(22, 21)
#define CXL_HDM_GLOBAL_CTRL	  0x04
#define CXL_HDM_GCTRL_POISON_EN	  VCXL_BIT(0)
#define CXL_HDM_GCTRL_ENABLE	  VCXL_BIT(1)
#define CXL_HDM_DECODER_FIRST	  0x10
#define CXL_HDM_DECODER_STRIDE	  0x20
#define CXL_HDM_DEC_BASE_LO(n)	  (0x10 + (n)*0x20)
#define CXL_HDM_DEC_BASE_HI(n)	  (0x14 + (n)*0x20)
#define CXL_HDM_DEC_SIZE_LO(n)	  (0x18 + (n)*0x20)
#define CXL_HDM_DEC_SIZE_HI(n)	  (0x1c + (n)*0x20)
#define CXL_HDM_DEC_CTRL(n)	  (0x20 + (n)*0x20)
#define CXL_HDM_DEC_TL_LO(n)	  (0x24 + (n)*0x20)
#define CXL_HDM_DEC_TL_HI(n)	  (0x28 + (n)*0x20)
/* Target List Low (port decoders, 8.2.4.20.10): Target Port Identifier of way 0 */
#define CXL_HDM_DEC_TL_PORT0		VCXL_GENMASK(7, 0)
#define CXL_HDM_DEC_SKIP_LO(n)		CXL_HDM_DEC_TL_LO(n)
#define CXL_HDM_DEC_SKIP_HI(n)		CXL_HDM_DEC_TL_HI(n)
#define CXL_HDM_CAP_SIZE(count)		(0x10 + (count)*0x20)
#define CXL_HDM_DEC_LO_MASK		VCXL_GENMASK(31, 28) /* base/size/skip low */
#define CXL_HDM_DEC_CTRL_IG		VCXL_GENMASK(3, 0)
#define CXL_HDM_DEC_CTRL_IW		VCXL_GENMASK(7, 4)
#define CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT VCXL_BIT(8)
#define CXL_HDM_DEC_CTRL_COMMIT		VCXL_BIT(9)
#define CXL_HDM_DEC_CTRL_COMMITTED	VCXL_BIT(10)
#define CXL_HDM_DEC_CTRL_COMMIT_ERR	VCXL_BIT(11)
#define CXL_HDM_DEC_CTRL_HOSTONLY	VCXL_BIT(12)
#define CXL_HDM_DEC_CTRL_BI		VCXL_BIT(13)
#define CXL_HDM_DEC_CTRL_UIO		VCXL_BIT(14)
#define CXL_HDM_DEC_CTRL_UIG		VCXL_GENMASK(19, 16)
#define CXL_HDM_DEC_CTRL_UIW		VCXL_GENMASK(23, 20)
#define CXL_HDM_DEC_CTRL_ISP		VCXL_GENMASK(27, 24)
/* Control fields a device decoder lets software write (UIO fields excluded) */
#define CXL_HDM_DEC_CTRL_RWL_MASK                                                                  \
	(CXL_HDM_DEC_CTRL_IG | CXL_HDM_DEC_CTRL_IW | CXL_HDM_DEC_CTRL_LOCK_ON_COMMIT |             \
	 CXL_HDM_DEC_CTRL_COMMIT | CXL_HDM_DEC_CTRL_HOSTONLY)
#define CXL_HDM_MAX_DECODERS_DEVICE 10
#define CXL_HDM_MAX_DECODERS	    32
#define CXL_HDM_GRANULE		    VCXL_SZ_256M
/* Interleave granularity encoding: 256 B << IG, IG 0..6 */
#define CXL_HDM_IG_MAX_ENC 6
/* Interleave ways encodings */
#define CXL_HDM_IW_1  0
#define CXL_HDM_IW_2  1
#define CXL_HDM_IW_4  2
#define CXL_HDM_IW_8  3
#define CXL_HDM_IW_16 4
#define CXL_HDM_IW_3  8
#define CXL_HDM_IW_6  9
#define CXL_HDM_IW_12 0xa

/* ---------------------------------------------------------------------- */
/* DOE extended capability (PCIe r6 7.9.24) and its protocols             */
/* ---------------------------------------------------------------------- */
#define PCI_DOE_CAP		  0x04
#define PCI_DOE_CAP_INT_SUPPORT	  VCXL_BIT(0)
#define PCI_DOE_CAP_INT_MSG_NUM	  0x00000ffe /* spelled as <linux/pci_regs.h> */
#define PCI_DOE_CTRL		  0x08
#define PCI_DOE_CTRL_ABORT	  0x00000001
#define PCI_DOE_CTRL_INT_EN	  0x00000002
#define PCI_DOE_CTRL_GO		  0x80000000
#define PCI_DOE_STATUS		  0x0c
#define PCI_DOE_STATUS_BUSY	  0x00000001
#define PCI_DOE_STATUS_INT_STATUS 0x00000002
#define PCI_DOE_STATUS_ERROR	  0x00000004
#define PCI_DOE_STATUS_DATA_READY VCXL_BIT(31)
#define PCI_DOE_WRITE		  0x10
#define PCI_DOE_READ		  0x14
#define PCI_DOE_CAP_SIZE	  0x18
#define PCI_DOE_HDR1_VENDOR	  VCXL_GENMASK(15, 0)
#define PCI_DOE_HDR1_TYPE	  VCXL_GENMASK(23, 16)
#define PCI_DOE_HDR2_LENGTH	  VCXL_GENMASK(17, 0)
#define PCI_DOE_MAX_LENGTH_DW	  (1u << 18)
#define PCI_DOE_VENDOR_PCISIG	  0x0001
#define PCI_DOE_TYPE_DISCOVERY	  0
#define PCI_DOE_DISC_REQ_INDEX	  VCXL_GENMASK(7, 0)
#define PCI_DOE_DISC_RSP_VENDOR	  VCXL_GENMASK(15, 0)
#define PCI_DOE_DISC_RSP_PROTOCOL VCXL_GENMASK(23, 16)
#define PCI_DOE_DISC_RSP_NEXT	  VCXL_GENMASK(31, 24)

/* CXL table access protocol over DOE (CXL r3.1 8.1.11) */
#define CXL_DOE_TYPE_TABLE_ACCESS 2
#define CXL_DOE_TABLE_REQ_CODE	  VCXL_GENMASK(7, 0)
#define CXL_DOE_TABLE_TYPE	  VCXL_GENMASK(15, 8)
#define CXL_DOE_TABLE_HANDLE	  VCXL_GENMASK(31, 16)
#define CXL_DOE_TABLE_READ_ENTRY  0
#define CXL_DOE_TABLE_TYPE_CDAT	  0
#define CXL_DOE_TABLE_LAST_HANDLE 0xffff

/* CDAT (Coherent Device Attribute Table) */
#define CDAT_HEADER_SIZE	    16
#define CDAT_REVISION		    2
#define CDAT_TYPE_DSMAS		    0
#define CDAT_TYPE_DSLBIS	    1
#define CDAT_TYPE_DSMSCIS	    2
#define CDAT_TYPE_DSIS		    3
#define CDAT_TYPE_DSEMTS	    4
#define CDAT_TYPE_SSLBIS	    5
#define CDAT_DSMAS_SIZE		    24
#define CDAT_DSLBIS_SIZE	    24
#define CDAT_DSEMTS_SIZE	    24
#define CDAT_DSMAS_FLAG_NV	    VCXL_BIT(2)
#define CDAT_DSMAS_FLAG_SHAREABLE   VCXL_BIT(3)
#define CDAT_DSMAS_FLAG_HW_COHERENT VCXL_BIT(4)
#define CDAT_DSMAS_FLAG_DYNCAP	    VCXL_BIT(5)
/* HMAT data types used by DSLBIS */
#define HMAT_LB_MEM_MEMORY	     0
#define HMAT_LB_DATA_READ_LATENCY    1
#define HMAT_LB_DATA_WRITE_LATENCY   2
#define HMAT_LB_DATA_READ_BANDWIDTH  4
#define HMAT_LB_DATA_WRITE_BANDWIDTH 5
/* DSEMTS EFI memory type and attribute [spec] (CDAT 1.03 Table 10) */
#define CDAT_DSEMTS_EFI_CONVENTIONAL 0
#define CDAT_DSEMTS_EFI_CONV_SP	     1
#define CDAT_DSEMTS_EFI_RESERVED     2

/* ---------------------------------------------------------------------- */
/* CXL device register block (Register Locator RBI 3), CXL r3.1 8.2.8     */
/* ---------------------------------------------------------------------- */
/* Device Capabilities Array Register (8.2.8.1), 64-bit at block + 0 */
#define CXLDEV_CAP_ARRAY_ID	VCXL_GENMASK64(15, 0)
#define CXLDEV_CAP_ARRAY_COUNT	VCXL_GENMASK64(47, 32)
#define CXLDEV_CAP_ARRAY_CAP_ID 0
/* Capability headers (8.2.8.2): 16 bytes each from block + 0x10 */
#define CXLDEV_CAP_HDR_FIRST	    0x10
#define CXLDEV_CAP_HDR_STRIDE	    0x10
#define CXLDEV_CAP_HDR_ID	    VCXL_GENMASK(15, 0)
#define CXLDEV_CAP_HDR_OFFSET	    0x04 /* from the block start */
#define CXLDEV_CAP_HDR_LENGTH	    0x08
#define CXLDEV_CAP_ID_DEVICE_STATUS 0x0001
#define CXLDEV_CAP_ID_PRIMARY_MBOX  0x0002
#define CXLDEV_CAP_ID_MEMDEV	    0x4000
/* Memory Device Status Register (8.2.8.5.1.1) at the MEMDEV capability */
#define CXLMDEV_STATUS		    0x00
#define CXLMDEV_STATUS_FATAL	    VCXL_BIT(0)
#define CXLMDEV_STATUS_FW_HALT	    VCXL_BIT(1)
#define CXLMDEV_STATUS_MEDIA	    VCXL_GENMASK(3, 2)
#define CXLMDEV_MEDIA_NOT_READY	    0
#define CXLMDEV_MEDIA_READY	    1
#define CXLMDEV_MEDIA_ERROR	    2
#define CXLMDEV_MEDIA_DISABLED	    3
#define CXLMDEV_STATUS_MBOX_READY   VCXL_BIT(4)
#define CXLMDEV_STATUS_RESET_NEEDED VCXL_GENMASK(7, 5)
#define CXLMDEV_STATUS_SIZE	    0x08
/* Capabilities Array Register: version and type fields (8.2.8.1) [spec] */
#define CXLDEV_CAP_ARRAY_VERSION     VCXL_GENMASK64(23, 16)
#define CXLDEV_CAP_ARRAY_TYPE	     VCXL_GENMASK64(27, 24)
#define CXLDEV_CAP_ARRAY_TYPE_MEMDEV 1
#define CXLDEV_CAP_ARRAY_VER	     1
#define CXLDEV_CAP_HDR_VERSION	     VCXL_GENMASK(23, 16)
#define CXLDEV_CAP_ID_SECONDARY_MBOX 0x0003
/* Device Status Registers (8.2.8.3): Event Status, 64-bit at the capability */
#define CXLDEV_EVENT_STATUS	  0x00
#define CXLDEV_EVENT_STATUS_INFO  VCXL_BIT(0)
#define CXLDEV_EVENT_STATUS_WARN  VCXL_BIT(1)
#define CXLDEV_EVENT_STATUS_FAIL  VCXL_BIT(2)
#define CXLDEV_EVENT_STATUS_FATAL VCXL_BIT(3)
#define CXLDEV_EVENT_STATUS_DCD	  VCXL_BIT(4)
#define CXLDEV_EVENT_STATUS_SIZE  0x08
/* Mailbox Registers (8.2.8.4), offsets from the mailbox capability */
#define CXLDEV_MBOX_CAPS	      0x00
#define CXLDEV_MBOX_CAP_PAYLOAD_SIZE  VCXL_GENMASK(4, 0) /* log2 of bytes */
#define CXLDEV_MBOX_CAP_DB_IRQ	      VCXL_BIT(5)	 /* [spec] */
#define CXLDEV_MBOX_CAP_BG_CMD_IRQ    VCXL_BIT(6)
#define CXLDEV_MBOX_CAP_IRQ_MSGNUM    VCXL_GENMASK(10, 7)
#define CXLDEV_MBOX_CTRL	      0x04
#define CXLDEV_MBOX_CTRL_DOORBELL     VCXL_BIT(0)
#define CXLDEV_MBOX_CTRL_DB_IRQ	      VCXL_BIT(1) /* [spec] */
#define CXLDEV_MBOX_CTRL_BG_CMD_IRQ   VCXL_BIT(2)
#define CXLDEV_MBOX_CMD		      0x08 /* 64-bit */
#define CXLDEV_MBOX_CMD_OPCODE	      VCXL_GENMASK64(15, 0)
#define CXLDEV_MBOX_CMD_PAYLOAD_LEN   VCXL_GENMASK64(36, 16)
#define CXLDEV_MBOX_STATUS	      0x10 /* 64-bit */
#define CXLDEV_MBOX_STATUS_BG_OP      VCXL_BIT64(0)
#define CXLDEV_MBOX_STATUS_RC	      VCXL_GENMASK64(47, 32)
#define CXLDEV_MBOX_STATUS_VENDOR     VCXL_GENMASK64(63, 48)
#define CXLDEV_MBOX_BG_STATUS	      0x18 /* 64-bit */
#define CXLDEV_MBOX_BG_OPCODE	      VCXL_GENMASK64(15, 0)
#define CXLDEV_MBOX_BG_PCT	      VCXL_GENMASK64(22, 16)
#define CXLDEV_MBOX_BG_RC	      VCXL_GENMASK64(47, 32)
#define CXLDEV_MBOX_BG_VENDOR	      VCXL_GENMASK64(63, 48)
#define CXLDEV_MBOX_PAYLOAD	      0x20
#define CXLDEV_MBOX_PAYLOAD_MIN_SHIFT 8	 /* 256 B: Linux refuses less */
#define CXLDEV_MBOX_PAYLOAD_MAX_SHIFT 20 /* 1 MiB */

#endif /* VCXL_CXL_REGS_H */
