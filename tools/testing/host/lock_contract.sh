#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (no VM): the lock contract of kiwi.rst. A function whose
# comment says, under "Context:", that a lock is held ("cep->lock held",
# "RTNL held", "the socket's bh lock held", "holds the socket") asserts it
# in its body (lockdep_assert_held() and kin, ASSERT_RTNL(),
# RCU_LOCKDEP_WARN(), or a kiwi_*assert*() helper that does); one whose
# comment says no such lock is held asserts that with
# lockdep_assert_not_held(). Prints TAP.
root=$(cd "$(dirname "$0")/../../.." && pwd)
source "$root/tools/testing/selftests/drivers/infiniband/kiwi/lib.sh"
tap_begin "lock contract: Context comments and their assertions"

# tap_begin's scratch directory, removed at exit.
tmp=$out

# unasserted FILE...: "FILE:LINE FUNCTION: PHRASE" for each function whose
# Context comment names a held lock (or none held) that its body does not
# assert; the count of functions checked on the last line.
unasserted() {
	python3 - "$@" <<'PY'
import re, sys, os

HELD = re.compile(r'\blockdep_assert\w*\s*\(|\bASSERT_RTNL\s*\(|'
                  r'\bRCU_LOCKDEP_WARN\s*\(|\bkiwi_\w*assert\w*\s*\(')
NOT_HELD = re.compile(r'\blockdep_assert_not_held\s*\(')
checked = 0
for path in sys.argv[1:]:
    src = open(path).read()
    for c in re.finditer(r'/\*((?:(?!\*/).)*?)\*/', src, re.S):
        text = re.sub(r'\n\s*\*', ' ', c.group(1))
        if 'Context:' not in text:
            continue
        ctx = ' '.join(text.split('Context:', 1)[1].split('Return:')[0].split())
        claims = []
        for h in re.finditer(r'\bheld\b|\bholds the\b', ctx):
            before = ctx[:h.start()].split()[-3:]
            negated = any(w in ('no', 'not') for w in before)
            claims.append((negated, ' '.join(before + [h.group(0)])))
        if not claims:
            continue
        fn = re.match(r'\s*[\w\s\*]+?\b(\w+)\s*\([^;{]*\)\s*\{', src[c.end():], re.S)
        if not fn:
            continue
        start = c.end() + fn.end()
        depth, end = 1, start
        while depth and end < len(src):
            depth += (src[end] == '{') - (src[end] == '}')
            end += 1
        body = src[start:end]
        checked += 1
        line = src[:c.start()].count('\n') + 1
        for negated, phrase in claims:
            if not (NOT_HELD if negated else HELD).search(body):
                print(f"{os.path.basename(path)}:{line} {fn.group(1)}: \"{phrase}\"")
print(checked)
PY
}

# The checker itself finds what it is for.
cat >"$tmp/fixture.c" <<'EOF2'
/* Context: foo->lock held. */
static void asserts(struct foo *foo)
{
	lockdep_assert_held(&foo->lock);
}

/*
 * Context: process context, foo->lock
 * held.
 */
static void forgets(struct foo *foo)
{
	foo->n++;
}

/* Context: no foo's lock held; takes it. */
static void takes(struct foo *foo)
{
	mutex_lock(&foo->lock);
	mutex_unlock(&foo->lock);
}
EOF2
# is OUT WANT: OUT is exactly WANT.
is() { [ "$1" = "$2" ] || { echo "# got:  '$1'"; echo "# want: '$2'"; return 1; }; }
check "the check flags a held lock left unasserted and an unasserted 'no lock held', passes an asserted one" \
	is "$(unasserted "$tmp/fixture.c")" \
	   "$(printf '%s\n' 'fixture.c:7 forgets: "process context, foo->lock held"' \
		"fixture.c:16 takes: \"no foo's lock held\"" 3)"

out=$(unasserted "$root"/drivers/infiniband/sw/kiwi/*.c)
n=$(tail -n1 <<<"$out")
missing=$(sed '$d' <<<"$out")
[ -z "$missing" ] || sed 's/^/# unasserted: /' <<<"$missing"
check "each of the module's $n functions whose Context names a lock held (or none) asserts it" \
	test -z "$missing"
tap_end
