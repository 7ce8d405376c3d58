#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the kernel's SMB3 server (ksmbd) and client (cifs) with SMB Direct,
# out of tree, from the linux-source tarball of the kernel they are for:
# Debian 12's kernel is configured without CONFIG_SMB_SERVER_SMBDIRECT and
# CONFIG_CIFS_SMB_DIRECT, so its own modules cannot run SMB3 over RDMA.
# The source is unpacked at build time, never kept in this tree.
#
#   scripts/build-smbdirect.sh            (KDIR=... for another kernel)
#
# The kernel is the one the module is built for (make print-kdir);
# build/smbdirect/ksmbd.ko and cifs.ko are the results.
# They replace the distribution's modules of the same name (storage_smb.sh
# loads them with insmod after modprobe has loaded what they depend on).
#
# KIWI_LINUX_SOURCE names the source tarball (default: the newest
# /usr/src/linux-source-*.tar.xz); scripts/test-debian13.sh gives Debian
# 13's.
#
# Eight fixes go in where the source lacks them (6.12.117 has the first
# three and the fifth; 6.1.192 has the last two), each checked to have
# applied:
# - cifs sends a compound request's padding (up to 7 zero bytes) from
#   smb2_padding, an array in the module's own data, which 6.1.192's SMB
#   Direct turns into a DMA address by virt_to_page(): wrong outside the
#   kernel's direct map, so an RNIC would send bytes of some other page
#   and a software device may find no memory there (kiwi: "transmit
#   failed (-14)" and a new connection, seen on the debug kernel at every
#   rename). The padding is sent from the zero page instead.
# - opinfo_put() takes NULL: smb2_open() passes it the result of
#   opinfo_get(), NULL for a file opened without an oplock, and 6.1.192
#   dereferences it on a client's first open (over TCP as well).
# - A share configuration response with payload_sz 0 is sized from the
#   message: ksmbd-tools before 3.5.2 (Debian 12 has 3.4.7) leave that
#   field, which later kernels added and check, zero; 6.1.192 then
#   refuses every share (BAD_NETWORK_NAME). The size taken is the one the
#   message really has, so the later bounds checks still hold.
# - ksmbd's RDMA CM handler no longer drains the QP on DEVICE_REMOVAL (it
#   still does on DISCONNECTED). A device goes away after its connections
#   closed: the connection's thread, woken by their DISCONNECTED, drains
#   and destroys the QP in free_transport() (t->qp set to NULL) while the
#   removal's handler may be draining it too: a use-after-free (KASAN, on
#   the debug kernel) or an oops that dies holding the cm_id's handler
#   mutex, so that free_transport()'s rdma_destroy_id() waits for ever,
#   the device's removal with it, and "ip link del" of its netdev hangs
#   (2 in 13 runs of storage_smb.sh). free_transport() drains the QP
#   anyway.
# - ksmbd's stop_sessions() (the server stopped) shuts each connection
#   down with conn_list_lock held, not dropped: dropped, the connection
#   could leave the list and be freed meanwhile, and the walk went on
#   from its poisoned link (a general protection fault in
#   ksmbd_conn_transport_destroy(), 2 in 19 runs of storage_smb.sh). The
#   shutdown only queues the disconnect; a connection's thread takes the
#   lock, for writing, only to leave the list, after which its transport
#   is freed, so the lock held keeps that transport alive for the call.
# - cifs initialises its connection's wait_send_queue before rdma_connect(),
#   not after the connection is up: a server that accepts and disconnects
#   at once (ksmbd stopping) delivers DISCONNECTED, whose handler wakes that
#   queue, while the connecting thread has not reached it yet. The handler
#   dereferenced the zeroed queue (an oops in __wake_up_common() from
#   smbd_conn_upcall(), in CI's run) and died holding the cm_id's handler
#   mutex; the thread's rdma_destroy_id() then waited for ever, and the
#   writer with it.
# - cifs 6.12's asynchronous write deregisters its SMB Direct MR when the
#   request fails to go out, not only in the reply's callback: with netfs
#   (6.12) a write subrequest's MR is freed by that callback alone, so a
#   send that failed as the connection went down left the MR counted in
#   use, and the reconnect's smbd_destroy() waited for that count to fall
#   for ever, the writer behind it (Debian 13, 1 run of storage_smb.sh in
#   7, at the fault "ksmbd stopped"). 6.1's wdata release frees it.
# - cifs 6.12's smbd_send() no longer reports a request whose sends were
#   all posted as failed (-EAGAIN) because the connection went down while
#   it waited for them to complete: the request may have reached the
#   server, its reply's callback may have completed it and freed its mid,
#   and cifs_call_async() then freed the mid again (delete_mid()) and its
#   caller ended the write a second time. Slab corruption and oopses in
#   delete_mid() and netfs_alloc_subrequest() followed when the device
#   went under a write (Debian 13; 6.1 returns what the posts returned).
#   A posted request is in flight like one queued on a socket; if the
#   connection dies, the reconnect's callbacks retry it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kdir=$(make -s -C "$root" --no-print-directory print-kdir)
out=$root/build/smbdirect
tarball=${KIWI_LINUX_SOURCE:-$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n1)}
[ -n "$tarball" ] || { echo "build-smbdirect: no linux-source tarball; run scripts/setup.sh" >&2; exit 1; }

# Built already, for this kernel, by this version of the script?
key=$({ cat "$0" "$kdir/Module.symvers"; echo "$tarball"; } | sha256sum | cut -c1-16)
[ -f "$out/ksmbd.ko" ] && [ -f "$out/cifs.ko" ] && [ "$(cat "$out/key" 2>/dev/null)" = "$key" ] &&
	exit 0

top=$(basename "$tarball" .tar.xz)
src=$out/src
rm -rf "$out"
mkdir -p "$src"
# fs/internal.h: ksmbd looks paths up with vfs_path_lookup(); fs/nls: 6.12
# shares its UCS-2 helpers there with the NLS code. The ASN.1
# compiler, which the kernel's headers package lacks, turns both modules'
# SPNEGO grammars into C.
tar -C "$src" --strip-components=1 -xf "$tarball" "$top/fs/smb" "$top/fs/internal.h" "$top/fs/nls" \
	"$top/scripts/asn1_compiler.c" "$top/include/linux/asn1_ber_bytecode.h" \
	"$top/include/linux/asn1.h"
gcc -O2 -I"$src/include" -o "$src/asn1_compiler" "$src/scripts/asn1_compiler.c"
for g in "$src"/fs/smb/*/*.asn1; do
	"$src/asn1_compiler" "$g" "$g.c" "$g.h"
done

srv=$src/fs/smb/server
if ! perl -0ne 'exit(/\nvoid opinfo_put\(struct oplock_info \*opinfo\)\n\{\n\tif \(!opinfo\)\n/ ? 0 : 1)' \
	"$srv/oplock.c"; then
	sed -i 's/^\tif (!atomic_dec_and_test(&opinfo->refcount))$/\tif (!opinfo || !atomic_dec_and_test(\&opinfo->refcount))/' \
		"$srv/oplock.c"
	grep -qF 'if (!opinfo || !atomic_dec_and_test(&opinfo->refcount))' "$srv/oplock.c" ||
		{ echo "build-smbdirect: opinfo_put() in oplock.c not as expected" >&2; exit 1; }
fi
if ! grep -q 'resp->payload_sz = entry->msg_sz -' "$srv/transport_ipc.c"; then
	perl -0pi -e 's/(\n(\t\t)if \(resp->veto_list_sz > resp->payload_sz\)\n)/\n$2if (!resp->payload_sz)\n$2\tresp->payload_sz = entry->msg_sz -\n$2\t\tsizeof(struct ksmbd_share_config_response);\n$1/' \
		"$srv/transport_ipc.c"
	[ "$(grep -c 'resp->payload_sz = entry->msg_sz -' "$srv/transport_ipc.c")" = 1 ] ||
		{ echo "build-smbdirect: ipc_validate_msg() in transport_ipc.c not as expected" >&2; exit 1; }
fi
if perl -0ne 'exit(/\n\tcase RDMA_CM_EVENT_DEVICE_REMOVAL:\n\tcase RDMA_CM_EVENT_DISCONNECTED: \{\n\t\tib_drain_qp\(t->qp\);\n/ ? 0 : 1)' \
	"$srv/transport_rdma.c"; then
	perl -0pi -e 's/\n\tcase RDMA_CM_EVENT_DEVICE_REMOVAL:\n(\tcase RDMA_CM_EVENT_DISCONNECTED: \{\n)(\t\tib_drain_qp\(t->qp\);\n\n)((?:\t\t.*\n)+?)(\t\tbreak;\n\t\}\n)/\n\tcase RDMA_CM_EVENT_DEVICE_REMOVAL: {\n$3$4$1$2$3$4/' \
		"$srv/transport_rdma.c"
	perl -0ne 'exit(/\n\tcase RDMA_CM_EVENT_DEVICE_REMOVAL: \{\n\t\tt->status = SMB_DIRECT_CS_DISCONNECTED;\n(?:\t\t.*\n)+?\t\tbreak;\n\t\}\n\tcase RDMA_CM_EVENT_DISCONNECTED: \{\n\t\tib_drain_qp\(t->qp\);\n/ ? 0 : 1)' \
		"$srv/transport_rdma.c" ||
		{ echo "build-smbdirect: smb_direct_cm_handler() in transport_rdma.c not as expected" >&2; exit 1; }
fi
if grep -qP '^\t\t\tup_read\(&conn_list_lock\);$' "$srv/connection.c"; then
	perl -0pi -e 's/\n\t\tif \(t->ops->shutdown\) \{\n\t\t\tup_read\(&conn_list_lock\);\n\t\t\tt->ops->shutdown\(t\);\n\t\t\tdown_read\(&conn_list_lock\);\n\t\t\}\n/\n\t\tif (t->ops->shutdown)\n\t\t\tt->ops->shutdown(t);\n/' \
		"$srv/connection.c"
	! grep -qP '^\t\t\tup_read\(&conn_list_lock\);$' "$srv/connection.c" &&
		perl -0ne 'exit(/\n\t\tksmbd_conn_set_exiting\(conn\);\n\t\tif \(t->ops->shutdown\)\n\t\t\tt->ops->shutdown\(t\);\n\t\}\n\tup_read\(&conn_list_lock\);\n/ ? 0 : 1)' \
			"$srv/connection.c" ||
		{ echo "build-smbdirect: stop_sessions() in connection.c not as expected" >&2; exit 1; }
fi

cli=$src/fs/smb/client
if grep -qF 'sg_set_buf(&sgl[i], iov[i].iov_base, iov[i].iov_len);' "$cli/smbdirect.c"; then
	perl -0pi -e 's/\n(\t\t)(sg_set_buf\(&sgl\[i\], iov\[i\]\.iov_base, iov\[i\]\.iov_len\);)\n/\n$1if (iov[i].iov_base == smb2_padding)\n$1\tsg_set_page(&sgl[i], ZERO_PAGE(0), iov[i].iov_len, 0);\n$1else\n$1\t$2\n/' \
		"$cli/smbdirect.c"
	[ "$(grep -cF 'sg_set_page(&sgl[i], ZERO_PAGE(0), iov[i].iov_len, 0);' "$cli/smbdirect.c")" = 1 ] &&
		grep -q '^#include "smb2proto.h"' "$cli/smbdirect.c" ||
		{ echo "build-smbdirect: smbd_post_send_data() in smbdirect.c not as expected" >&2; exit 1; }
fi
if ! perl -0ne 'exit(/\n\tinit_waitqueue_head\(&info->wait_send_queue\);\n\trc = rdma_connect\(/ ? 0 : 1)' \
	"$cli/smbdirect.c"; then
	perl -0pi -e 's/\n\tinit_waitqueue_head\(&info->wait_send_queue\);\n(\tINIT_DELAYED_WORK\(&info->idle_timer_work)/\n$1/; s/\n(\trc = rdma_connect\()/\n\tinit_waitqueue_head(&info->wait_send_queue);\n$1/' \
		"$cli/smbdirect.c"
	[ "$(grep -cF 'init_waitqueue_head(&info->wait_send_queue);' "$cli/smbdirect.c")" = 1 ] &&
		perl -0ne 'exit(/\n\tinit_waitqueue_head\(&info->wait_send_queue\);\n\trc = rdma_connect\(/ ? 0 : 1)' \
			"$cli/smbdirect.c" ||
		{ echo "build-smbdirect: _smbd_get_connection() in smbdirect.c not as expected" >&2; exit 1; }
fi
if grep -q 'cifs_write_subrequest_terminated(wdata, rc, true);' "$cli/smb2pdu.c" &&
	! grep -q 'kiwi: the failed send' "$cli/smb2pdu.c"; then
	perl -0pi -e 's/(\nout:\n\tif \(rc\) \{\n)(\t\ttrace_smb3_rw_credits\(wdata->rreq->debug_id,\n)/$1#ifdef CONFIG_CIFS_SMB_DIRECT\n\t\t\/\* kiwi: the failed send leaves no callback to free it \*\/\n\t\tif (wdata->mr) {\n\t\t\tsmbd_deregister_mr(wdata->mr);\n\t\t\twdata->mr = NULL;\n\t\t}\n#endif\n$2/' \
		"$cli/smb2pdu.c"
	grep -q 'kiwi: the failed send' "$cli/smb2pdu.c" ||
		{ echo "build-smbdirect: smb2_async_writev() in smb2pdu.c not as expected" >&2; exit 1; }
fi
if grep -q 'if (sc->status != SMBDIRECT_SOCKET_CONNECTED && rc == 0)' "$cli/smbdirect.c"; then
	perl -0pi -e 's/\n\tif \(sc->status != SMBDIRECT_SOCKET_CONNECTED && rc == 0\)\n\t\trc = -EAGAIN;\n//' \
		"$cli/smbdirect.c"
	! grep -q 'SMBDIRECT_SOCKET_CONNECTED && rc == 0' "$cli/smbdirect.c" ||
		{ echo "build-smbdirect: smbd_send() in smbdirect.c not as expected" >&2; exit 1; }
fi

# The C code tests the options with #ifdef; the Makefiles read them too.
build() { # DIR MODULE MAKE-ARGS...
	local dir=$1 mod=$2
	shift 2
	make -s -C "$kdir" M="$dir" "$@" modules >"$out/$mod.log" 2>&1 ||
		{ cat "$out/$mod.log" >&2; exit 1; }
	cp "$dir/$mod.ko" "$out/"
}
build "$srv" ksmbd CONFIG_SMB_SERVER=m CONFIG_SMB_SERVER_SMBDIRECT=y \
	KCFLAGS=-DCONFIG_SMB_SERVER_SMBDIRECT=1
build "$src/fs/smb/client" cifs CONFIG_CIFS=m CONFIG_CIFS_SMB_DIRECT=y \
	KCFLAGS=-DCONFIG_CIFS_SMB_DIRECT=1
echo "$key" >"$out/key"
