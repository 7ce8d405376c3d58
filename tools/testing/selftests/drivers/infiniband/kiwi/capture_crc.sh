#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# capture.sh with MPA CRC required (crc_required=1) on both kiwi devices:
# the same capture, decode and checks, and Wireshark verifies the CRC32c
# of every FPDU.
KIWI_CAPTURE=crc-required exec "$(dirname "$0")/capture.sh"
