#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# storage_nfs.sh's verified data with zero-copy transmit (zcopy_min=4096):
# the ULPs' pages (fast-registered, or behind the DMA MR) and the Read
# Responses go to TCP by reference, each work request completing only once
# TCP let go of them; the data is checked as there, and the port counter
# must show payload sent by reference. The faults run in storage_nfs.sh.
KIWI_STORAGE_PARAMS="zcopy_min=4096" KIWI_STORAGE_FAULTS=0 \
	exec "$(dirname "$0")/storage_nfs.sh"
