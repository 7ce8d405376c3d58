-- SPDX-License-Identifier: GPL-2.0
--
-- tshark Lua tap for iwarp_check.py: after Wireshark has dissected each
-- TCP frame, print the fields the checker needs, one per line, in tree
-- order: "FRAME<TAB>FIELD<TAB>DISPLAY". The displayed text is what
-- Wireshark shows, so the verdict of its own CRC check ("Good CRC32" or
-- "Bad CRC32") is kept; PDML would carry it too, but with every payload
-- byte in hex, too much for a capture of megabytes in an emulated VM.

local tcp_fields = {
	["tcp.stream"] = true,
	["tcp.srcport"] = true,
	["tcp.dstport"] = true,
	["tcp.seq"] = true,
	["tcp.len"] = true,
	["tcp.flags.syn"] = true,
	["tcp.flags.ack"] = true,
	["tcp.flags.fin"] = true,
	["tcp.flags.reset"] = true,
	["tcp.options.mss_val"] = true,
	["tcp.option_kind"] = true,
}

local tap = Listener.new("frame", "tcp", true)

function tap.packet(pinfo)
	for _, fi in ipairs({ all_field_infos() }) do
		local name = fi.name
		if tcp_fields[name] or name:find("^iwarp") or name:find("^_ws%.") then
			-- Only the display text: reading the value of some items
			-- of a reassembled PDU trips an assertion in tshark 4.0.
			local shown = tostring(fi.display):gsub("[\t\n]", " ")
			print(pinfo.number .. "\t" .. name .. "\t" .. shown)
		end
	end
end
