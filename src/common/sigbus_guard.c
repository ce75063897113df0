// SPDX-License-Identifier: BSD-3-Clause
/* SIGBUS-guarded accesses (sigbus_guard.h). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "sigbus_guard.h"

/* the innermost guarded access of this thread, NULL outside one */
static __thread sigjmp_buf *volatile guard;
static struct sigaction prev_bus;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	if (guard)
		siglongjmp(*guard, 1);
	/* not ours: behave as before */
	if (prev_bus.sa_flags & SA_SIGINFO)
		prev_bus.sa_sigaction(sig, si, uc);
	else if (prev_bus.sa_handler != SIG_IGN && prev_bus.sa_handler != SIG_DFL)
		prev_bus.sa_handler(sig);
	else {
		signal(SIGBUS, SIG_DFL);
		raise(SIGBUS);
	}
}

static void guard_install(void)
{
	static bool done;
	struct sigaction sa;

	if (done)
		return;
	done = true;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &prev_bus);
}

int vcxl_sigbus_guarded(void (*fn)(void *arg), void *arg)
{
	sigjmp_buf jb;
	sigjmp_buf *volatile prev = guard;

	guard_install();
	/* no signal mask to save: the handler runs with SA_NODEFER and an empty
	 * sa_mask, so the mask at the fault is the mask here (and a guarded
	 * access costs no system call) */
	if (sigsetjmp(jb, 0)) {
		guard = prev;
		return -EFAULT;
	}
	guard = &jb;
	fn(arg);
	guard = prev;
	return 0;
}

struct guarded_op {
	void *dst;
	const void *src;
	size_t n;
	int c;
	enum { OP_CPY, OP_MOVE, OP_SET } op;
};

static void guarded_fn(void *arg)
{
	struct guarded_op *g = arg;

	switch (g->op) {
	case OP_CPY:
		memcpy(g->dst, g->src, g->n);
		break;
	case OP_MOVE:
		memmove(g->dst, g->src, g->n);
		break;
	case OP_SET:
		memset(g->dst, g->c, g->n);
		break;
	}
}

int vcxl_guarded_memcpy(void *dst, const void *src, size_t n)
{
	struct guarded_op g = {.dst = dst, .src = src, .n = n, .op = OP_CPY};

	return vcxl_sigbus_guarded(guarded_fn, &g);
}

int vcxl_guarded_memmove(void *dst, const void *src, size_t n)
{
	struct guarded_op g = {.dst = dst, .src = src, .n = n, .op = OP_MOVE};

	return vcxl_sigbus_guarded(guarded_fn, &g);
}

int vcxl_guarded_memset(void *dst, int c, size_t n)
{
	struct guarded_op g = {.dst = dst, .n = n, .c = c, .op = OP_SET};

	return vcxl_sigbus_guarded(guarded_fn, &g);
}
