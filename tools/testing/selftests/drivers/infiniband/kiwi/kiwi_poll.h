/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Polling a CQ with a deadline, for the user-space verbs tests: each
 * program picks how long a missing completion may take to count as one.
 */
#ifndef KIWI_POLL_H
#define KIWI_POLL_H

#include <poll.h>

#include <infiniband/verbs.h>

/*
 * Poll up to @want completions of @cq into @wc, sleeping 1 ms between
 * empty polls, for about @ms milliseconds at most. Return: how many came,
 * or the negative value of a failed ibv_poll_cq().
 */
static inline int poll_cq_wait(struct ibv_cq *cq, struct ibv_wc *wc, int want,
			       int ms)
{
	int got = 0;

	for (int spin = 0; spin < ms && got < want; spin++) {
		int r = ibv_poll_cq(cq, want - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < want)
			poll(NULL, 0, 1);
	}
	return got;
}

#endif /* KIWI_POLL_H */
