#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# capture.sh with the upstream siw as kiwi's peer: the same capture, decode
# and checks, two independent CRC32c implementations, and siw's MPA
# Requests draw the same RFC 6581 warnings from Wireshark 4.0 as kiwi's.
KIWI_CAPTURE=siw exec "$(dirname "$0")/capture.sh"
