#!/bin/bash
# chj command against the real target: create (idempotent, signature
# refusal), status (table and --json, the warning about another device
# bypassing the tracker), checkpoint, changes (live, offline on
# the metadata device, agreeing), remove/create persistence, dump, check,
# exit 3 for an epoch no longer retained or newer than the current one,
# --mark-ahead (the table's feature, status, idempotent create), --chunk-size
# (chunk_sectors in the table, status and dump, idempotent create, a size
# refused), and changes
# after a guest crash.
# vm-disks: 64M 256M 64M
# vm-timeout: 240
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"

CHJ=$CHJ_ROOT/userspace/chj
META=/dev/vda ORIGIN=/dev/vdb SPARE=/dev/vdc
[ -x "$CHJ" ] || fail "$CHJ not built (make userspace)"

# expect_exit CODE CMD...: run CMD, require exit status CODE.
expect_exit() {
	local want=$1 rc=0
	shift
	"$@" >"$CHJ_OUT/last.out" 2>"$CHJ_OUT/last.err" || rc=$?
	[ "$rc" = "$want" ] || { cat "$CHJ_OUT/last.err"; fail "$* exited $rc, expected $want"; }
}

boot1() {
	log "create refuses a metadata device holding a file system"
	mkfs.ext4 -q "$SPARE"
	expect_exit 1 "$CHJ" create s "$SPARE" "$ORIGIN"
	grep -q "ext4" "$CHJ_OUT/last.err" || fail "refusal does not name ext4"
	[ ! -e /dev/mapper/s ] || fail "refused device exists"

	log "create makes /dev/mapper/t without udev"
	"$CHJ" create t "$META" "$ORIGIN"
	[ -b /dev/mapper/t ] || fail "/dev/mapper/t missing"
	assert_eq "1 1 ok" "$(st t cur) $(st t old) $(st t mode)" "fresh status"

	log "create again with the same table: quiet success; another table: error"
	out=$("$CHJ" create t "$META" "$ORIGIN" 2>&1)
	assert_eq "" "$out" "second create output"
	expect_exit 1 "$CHJ" create t "$META" "$ORIGIN" --region-size 64K
	grep -q "different table" "$CHJ_OUT/last.err" || fail "no 'different table' message"

	log "status table and --json"
	"$CHJ" status | tee "$CHJ_OUT/status.txt"
	grep -q '^t ' "$CHJ_OUT/status.txt" || fail "status lacks t"
	"$CHJ" status --json t >"$CHJ_OUT/status.json"
	python3 "$CHJ_ROOT/tests/tools/json-vocab.py" "$CHJ_ROOT/docs/json.md" status --all <"$CHJ_OUT/status.json" ||
		fail "status --json: keys not as docs/json.md says"
	python3 -c '
import json, sys
d = json.load(sys.stdin)["chj"][0]
assert d["name"] == "t", d
assert d["current_epoch"] == 1 and d["oldest_epoch"] == 1 and d["mode"] == "ok", d
assert d["region_size_bytes"] == 4096 and d["nr_regions"] > 0, d
assert d["journal_blocks"] > 0 and d["journal_used_blocks"] >= 0, d
# The keys of release 1.0.0, kept for one release (docs/json.md).
assert d["epoch"] == 1 and d["oldest"] == 1 and d["region-size"] == 4096, d
assert d["regions"] == d["nr_regions"] and d["marked"] == d["marked_regions"], d
' <"$CHJ_OUT/status.json"

	log "status warns when writes can bypass the tracker"
	"$CHJ" status t >/dev/null 2>"$CHJ_OUT/last.err"
	[ ! -s "$CHJ_OUT/last.err" ] || { cat "$CHJ_OUT/last.err"; fail "status warns with nothing bypassing"; }
	# The origin itself cannot be mounted while dm-chj claims it
	# (boot-activation, readme-quickstart), but device-mapper devices share
	# one claim: a dm-linear over the origin is allowed, and writes past it.
	dm_create bypass "0 65536 linear $ORIGIN 131072" >/dev/null
	mkfs.ext4 -q /dev/mapper/bypass
	# A mount point with a space: mountinfo has it as \040 (libmount undoes it).
	mkdir -p "/tmp/by pass"
	mount /dev/mapper/bypass "/tmp/by pass"
	assert_eq "" "$("$CHJ" changes --since 1 t)" "changes after writes through the bypass"
	"$CHJ" status t >/dev/null 2>"$CHJ_OUT/last.err"
	cat "$CHJ_OUT/last.err"
	assert_eq "chj: warning: t: /dev/mapper/bypass also uses its origin and is mounted at /tmp/by pass; writes through it are not tracked" \
		"$(cat "$CHJ_OUT/last.err")" "status warning, bypass mounted"
	umount "/tmp/by pass"
	"$CHJ" status >/dev/null 2>"$CHJ_OUT/last.err"
	assert_eq "chj: warning: t: /dev/mapper/bypass also uses its origin; writes through it are not tracked" \
		"$(cat "$CHJ_OUT/last.err")" "status warning (all devices), bypass not mounted"
	dmsetup remove bypass
	"$CHJ" status t >/dev/null 2>"$CHJ_OUT/last.err"
	[ ! -s "$CHJ_OUT/last.err" ] || { cat "$CHJ_OUT/last.err"; fail "status still warns after the bypass is gone"; }

	log "writes show up in chj changes"
	dev=/dev/mapper/t
	wr "$dev" 0 4
	wr "$dev" 1024 64
	assert_eq "0 8
2048 128" "$("$CHJ" changes --since 1 t)" "changes since 1"
	assert_eq 2 "$("$CHJ" checkpoint t)" "checkpoint prints the new epoch"
	wr "$dev" 4096 4
	assert_eq "8192 8" "$("$CHJ" changes --since 2 t)" "changes since 2"
	assert_eq "0 8
2048 128
8192 8" "$("$CHJ" changes --since 1 t)" "changes since 1 after checkpoint"
	assert_eq "4194304 4096" "$("$CHJ" changes --since 2 --bytes t)" "--bytes"
	"$CHJ" changes --since 1 --json t | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["since"] == 1 and d["current_epoch"] == 2, d
assert d["ranges"][2] == {"start": 8192, "length": 8}, d
'
	expect_exit 3 "$CHJ" changes --since 3 t
	grep -q "newer than the current epoch" "$CHJ_OUT/last.err" || fail "no 'newer' message"
	[ ! -s "$CHJ_OUT/last.out" ] || fail "exit 3 printed ranges"
	expect_exit 0 "$CHJ" changes --since 2 t

	log "offline read of the live metadata device agrees (O_DIRECT)"
	# An offline reader counts chunks still marked whole (it cannot ask the
	# target to write its exact map); a suspend retires them all.
	dmsetup suspend t
	dmsetup resume t
	assert_eq "$("$CHJ" changes --since 1 t)" \
		"$("$CHJ" changes --since 1 --metadata "$META")" "live vs offline"

	log "remove, then the inactive metadata answers the same"
	"$CHJ" changes --since 1 t >"$CHJ_OUT/before-remove.txt"
	"$CHJ" remove t
	[ ! -e /dev/mapper/t ] || fail "/dev/mapper/t still there"
	expect_exit 1 "$CHJ" checkpoint t
	assert_eq "$(cat "$CHJ_OUT/before-remove.txt")" \
		"$("$CHJ" changes --since 1 --metadata "$META")" "offline after remove"
	dd if="$META" of=/tmp/meta.img bs=1M iflag=direct status=none
	assert_eq "$(cat "$CHJ_OUT/before-remove.txt")" \
		"$("$CHJ" changes --since 1 --metadata /tmp/meta.img)" "offline on an image file"
	"$CHJ" dump "$META"
	"$CHJ" dump --json "$META" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["current_epoch"] == 2 and d["region_size_bytes"] == 512 * d["region_sectors"], d
assert d["journal_start_block"] == d["journal_start"] and d["journal_tail_seq"] == d["journal_tail"], d
assert d["current_marked_regions"] == d["current_marked"], d
'
	expect_exit 0 "$CHJ" check "$META"

	log "create again: marks and epochs persist"
	"$CHJ" create t "$META" "$ORIGIN"
	assert_eq "$(cat "$CHJ_OUT/before-remove.txt")" "$("$CHJ" changes --since 1 t)" "after re-create"
	assert_eq 2 "$(st t cur)" "epoch after re-create"

	log "a full journal drops old epochs: exit 3, full backup needed"
	# A 16-block metadata slice (13 journal blocks) on the ext4-formatted
	# spare needs --force; each epoch below records one journal block.
	dm_create smeta "0 128 linear $SPARE 0" >/dev/null
	dm_create sorig "0 65536 linear $SPARE 2048" >/dev/null
	expect_exit 1 "$CHJ" create s /dev/mapper/smeta /dev/mapper/sorig
	"$CHJ" create s /dev/mapper/smeta /dev/mapper/sorig --force
	assert_eq 13 "$(st s jblocks)" "small journal"
	for _ in $(seq 15); do
		wr /dev/mapper/s 40 4
		"$CHJ" checkpoint s >/dev/null
	done
	expect_exit 3 "$CHJ" changes --since 1 s
	grep -q "full backup" "$CHJ_OUT/last.err" || fail "exit 3 without 'full backup'"
	[ ! -s "$CHJ_OUT/last.out" ] || fail "exit 3 printed ranges"
	old=$(st s old)
	[ "$old" -gt 1 ] || fail "oldest epoch did not advance"
	assert_eq "80 8" "$("$CHJ" changes --since "$old" s)" "oldest retained epoch answers"
	"$CHJ" remove s
	dmsetup remove smeta sorig

	log "a table the kernel refuses: chj says the kernel's reason"
	# 11 blocks fit a 32 MiB origin (1 bitmap block) but not 256 MiB (3).
	dm_create tiny "0 88 linear $SPARE 0" >/dev/null
	"$CHJ" format /dev/mapper/tiny --origin-size 32M --force
	expect_exit 1 "$CHJ" create g /dev/mapper/tiny "$ORIGIN"
	cat "$CHJ_OUT/last.err"
	grep -q "^chj: g: the kernel refused the table: ." "$CHJ_OUT/last.err" ||
		fail "no kernel reason in the error"
	[ ! -e /dev/mapper/g ] || fail "refused device left behind"
	dmsetup remove tiny

	log "--mark-ahead: the table's feature, shown by status, part of the table"
	dm_create smeta "0 128 linear $SPARE 0" >/dev/null
	dm_create sorig "0 65536 linear $SPARE 2048" >/dev/null
	"$CHJ" create m /dev/mapper/smeta /dev/mapper/sorig --mark-ahead 16 --force
	grep -q " 2 mark_ahead 16$" <<<"$(dmsetup table m)" || { dmsetup table m; fail "no mark_ahead in the table"; }
	"$CHJ" status --json m | python3 -c '
import json, sys
d = json.load(sys.stdin)["chj"][0]
assert d["mark_ahead_regions"] == 16 and d["mark-ahead"] == 16 and d["features"] in ("", None), d
'
	"$CHJ" create m /dev/mapper/smeta /dev/mapper/sorig --mark-ahead 16
	expect_exit 1 "$CHJ" create m /dev/mapper/smeta /dev/mapper/sorig
	grep -q "different table" "$CHJ_OUT/last.err" || fail "mark-ahead not part of the table"
	# Format 2: mark_ahead has no effect (a chunk mark covers the stream),
	# and a live device's answer is exact: the two regions written.
	"$CHJ" checkpoint m >/dev/null
	wr /dev/mapper/m 0 4
	wr /dev/mapper/m 4 4
	assert_eq "0 16" "$("$CHJ" changes --since 2 m)" "a stream's regions, exactly"
	"$CHJ" remove m

	log "--chunk-size: the table's chunk_sectors, shown by status and dump, part of the table"
	"$CHJ" create m /dev/mapper/smeta /dev/mapper/sorig --chunk-size 8M --force
	grep -q "chunk_sectors 16384" <<<"$(dmsetup table m)" || { dmsetup table m; fail "no chunk_sectors in the table"; }
	"$CHJ" status --json m | python3 -c '
import json, sys
d = json.load(sys.stdin)["chj"][0]
assert d["chunk_size_bytes"] == 8 << 20, d
'
	"$CHJ" create m /dev/mapper/smeta /dev/mapper/sorig --chunk-size 8M
	expect_exit 1 "$CHJ" create m /dev/mapper/smeta /dev/mapper/sorig
	grep -q "different table" "$CHJ_OUT/last.err" || fail "chunk size not part of the table"
	expect_exit 2 "$CHJ" create m /dev/mapper/smeta /dev/mapper/sorig --chunk-size 3M
	"$CHJ" remove m
	"$CHJ" dump --json /dev/mapper/smeta | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = json.dumps(d)
assert "chunk_size_bytes" in s and str(8 << 20) in s, s[:400]
'
	dmsetup remove smeta sorig

	log "crash right after writes: the marks must survive"
	cur=$(st t cur)
	wr /dev/mapper/t 8192 8
	echo "$cur" >"$CHJ_OUT/crash-epoch"
	"$CHJ" changes --since "$cur" t >"$CHJ_OUT/before-crash.txt"
	vm_crash
}

boot2() {
	local cur
	cur=$(cat "$CHJ_OUT/crash-epoch")
	log "after the crash, offline changes cover what was written"
	"$CHJ" changes --since "$cur" --metadata "$META" >"$CHJ_OUT/after-crash.txt"
	# Covered (format 2: the chunk marked at the crash counts whole).
	awk '$1 <= 16384 && $1 + $2 >= 16400 { ok = 1 } END { exit !ok }' "$CHJ_OUT/after-crash.txt" || {
		cat "$CHJ_OUT/after-crash.txt"
		fail "write at 8 MiB missing after the crash"
	}
	"$CHJ" create t "$META" "$ORIGIN"
	assert_eq "$(cat "$CHJ_OUT/after-crash.txt")" "$("$CHJ" changes --since "$cur" t)" "live after crash"
	"$CHJ" remove t
	log "ok"
}

case $CHJ_BOOT in
1) boot1 ;;
2) boot2 ;;
esac
