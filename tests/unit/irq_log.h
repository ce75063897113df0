/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helper: a backend IRQ handler that counts MSI-X vectors raised. */
#ifndef VCXL_TESTS_IRQ_LOG_H
#define VCXL_TESTS_IRQ_LOG_H

#include "vfio-cxl/backend.h"

struct irq_log {
	unsigned count, last; /* MSI-X raises seen, the last vector */
};

static inline void on_irq(void *opaque, enum vcxl_irq_type type, unsigned vector)
{
	struct irq_log *l = opaque;

	if (type == VCXL_IRQ_MSIX) {
		l->count++;
		l->last = vector;
	}
}

#endif /* VCXL_TESTS_IRQ_LOG_H */
