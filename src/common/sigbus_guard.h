/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory that can fault under a mapping: a client's DMA window whose file the
 * client truncated, a device BAR that vfio-pci revoked (reset, removal,
 * memory decode off). Touching it raises SIGBUS; an access run through
 * vcxl_sigbus_guarded() gets -EFAULT instead, and the process lives on.
 * SIGBUS from anywhere else keeps its previous disposition.
 */
#ifndef VCXL_SIGBUS_GUARD_H
#define VCXL_SIGBUS_GUARD_H

/* Run fn(arg) with SIGBUS turned into a return of -EFAULT; 0 otherwise. */
int vcxl_sigbus_guarded(void (*fn)(void *arg), void *arg);

#include <stddef.h>

/* memcpy / memmove / memset run under the guard: 0, or -EFAULT if the memory
 * faulted (a client truncated a file the server maps); then the destination
 * holds an unspecified part of the data. */
int vcxl_guarded_memcpy(void *dst, const void *src, size_t n);
int vcxl_guarded_memmove(void *dst, const void *src, size_t n);
int vcxl_guarded_memset(void *dst, int c, size_t n);

#endif /* VCXL_SIGBUS_GUARD_H */
