#!/bin/bash
# Resolver benchmarks (run by scripts/bench resolve, not by make check): a
# tree of N generated files on ext4 and XFS (rmapbt=1) over dm-chj, P % of
# them overwritten in place after a checkpoint, then the changed files found
# by `find -newer` (which stats every file), by a FIEMAP walk of every file
# against `chj changes`, and by chj-resolve when it is built, both on its
# first run (no name cache: chj-resolve-cold) and in steady state
# (chj-resolve: the name cache left by the previous epoch's run, as a backup
# tool running it at every backup has); wall time and peak memory, each from
# a cold page cache (sync, drop_caches).  Results go to $CHJ_OUT/bench for
# `chj-benchdb import`.
#
# Disks: vda holds trees that do not fit a RAM disk, vdb the name cache
# (ext4, so drop_caches empties it too: read from a disk, as it would be
# from /var/cache), vdc a second prebuilt tree.  BENCH_PREBUILT="ext4=vda
# xfs=vdc": the trees were made on the host (scripts/bench tree-image) and
# the VM got copies; otherwise they are made here.
# vm-disks: 12G 2G 12G
# vm-timeout: 14400
# vm-mem: 3072
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"

if [ -z "${BENCH_SET:-}" ] && [ -f "$CHJ_ROOT/build/bench/resolve-params.env" ]; then
	# shellcheck source=/dev/null
	. "$CHJ_ROOT/build/bench/resolve-params.env"
fi
FILES=${BENCH_FILES:-100000}
FSS=${BENCH_FS:-ext4 xfs}
CHANGED=${BENCH_CHANGED:-0.1 1 10}
REPS=${BENCH_REPS:-3}
FILE_SIZE=${BENCH_FILE_SIZE:-4096}
PREBUILT=${BENCH_PREBUILT:-}
FIEMAP_REPS=${BENCH_FIEMAP_REPS:-$REPS}	# the FIEMAP walk costs ~3x find
BRD_MAX_MIB=${BENCH_BRD_MAX_MIB:-1536}	# larger filesystems go on /dev/vda

GUEST=$CHJ_ROOT/scripts/bench-db/chj-benchguest
CHJ=$CHJ_ROOT/userspace/chj
RESOLVE=$CHJ_ROOT/userspace/chj-resolve
[ -x "$GUEST" ] || fail "$GUEST is not built (make)"
[ -x "$CHJ" ] || fail "$CHJ is not built (make)"
METHODS="find-stat fiemap"
if [ -x "$RESOLVE" ]; then
	METHODS="$METHODS chj-resolve-cold chj-resolve"
else
	log "no $RESOLVE: chj-resolve not measured"
fi
if [ -n "$PREBUILT" ] && [ "$(echo "$FILES" | wc -w)" != 1 ]; then
	fail "BENCH_PREBUILT takes one tree size, not '$FILES'"
fi

OUT=$CHJ_OUT/bench
mkdir -p "$OUT/out"
: >"$OUT/manifest.tsv"
: >"$OUT/extra.tsv"
{
	printf 'kind\tresolve\n'
	printf 'kernel\t%s\n' "$(uname -r)"
	printf 'date\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf 'backing\tbrd<=%sMiB,virtio\n' "$BRD_MAX_MIB"
	printf 'params\tfiles=%s fs=%s changed=%s reps=%s file_size=%s methods=%s fiemap_reps=%s tree=%s mount=noatime page_cache=dropped name_cache=virtio\n' \
		"${FILES// /,}" "${FSS// /,}" "${CHANGED// /,}" "$REPS" "$FILE_SIZE" "${METHODS// /,}" \
		"$FIEMAP_REPS" "$([ -n "$PREBUILT" ] && echo host-made || echo guest-made)"
	printf 'guest\t%s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr ' ' _)x$(nproc)"
} >"$OUT/run.tsv"

seq_no=0
unsupported=
extra() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$OUT/extra.tsv"; }
us_now() { local t=$EPOCHREALTIME; echo "${t/./}"; }
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# measure METHOD JOB REP LIST -- COMMAND...: run COMMAND from a cold cache
# under /usr/bin/time -v, its stdout (one changed path a line) into LIST.
measure() {
	local method=$1 job=$2 rep=$3 list=$4 t0 t1 rc=0 file
	shift 5
	seq_no=$((seq_no + 1))
	file=out/$(printf %04d $seq_no)-$method-$job-$rep.txt
	cold
	t0=$(us_now)
	/usr/bin/time -v -o "$OUT/$file.time" "$@" >"$list" 2>"$OUT/$file.err" || rc=$?
	t1=$(us_now)
	{
		echo "command: $*"
		echo "exit: $rc"
		echo "lines: $(wc -l <"$list")"
		echo "--- stderr"
		head -c 20000 "$OUT/$file.err"
		echo "--- /usr/bin/time -v"
		cat "$OUT/$file.time"
	} >"$OUT/$file"
	rm -f "$OUT/$file.err" "$OUT/$file.time"
	if [ "$method" = chj-resolve ] && [ $rc = 3 ]; then
		# "full scan needed": this filesystem is not supported (yet).
		log "$method $job: exit 3, $(sed -n '/^--- stderr/{n;p}' "$OUT/$file"); not measured"
		rm -f "$OUT/$file"
		seq_no=$((seq_no - 1))
		return 3
	fi
	[ $rc = 0 ] || { cat "$OUT/$file"; fail "$method $job: exit $rc"; }
	printf '%s\t%s\t%s\t%s\ttext\t%s\n' "$seq_no" "$method" "$job" "$rep" "$file" >>"$OUT/manifest.tsv"
	last_file=$file
	last_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e6 }')
	extra "$method" "$job" "$rep" wall_s "$last_wall"
	extra "$method" "$job" "$rep" max_rss_kib "$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$OUT/$file")"
	extra "$method" "$job" "$rep" files_listed "$(wc -l <"$list")"
}

brd_mib=64
modprobe xfs
modprobe ext4
mkdir -p /tmp/mnt /tmp/cache
# The name cache's filesystem (CHJ_RESOLVE_CACHE_DIR): warm/ is kept from
# run to run as /var/cache/chj-resolve would be; cold/ is emptied before
# every first-run measurement.
[ -b /dev/vdb ] || fail "no /dev/vdb for the name cache"
mkfs.ext4 -q -F /dev/vdb
mount -t ext4 /dev/vdb /tmp/cache
# resolve_stats FILE: chj-resolve's --stats lines worth a look in the log.
resolve_stats() { sed -n 's/^\(name cache: .*\|time: .*\|walk: .*\|listed: .*\)$/  \1/p' "$1"; }
start=$SECONDS
for n in $FILES; do
	# Room for the files, their inodes and directories, and the journal.
	fs_mib=$(((n * (FILE_SIZE + 4096) * 3 / 2 >> 20) + 400))
	if [ $fs_mib -le "$BRD_MAX_MIB" ]; then
		brd_setup 2 $((fs_mib << 10))
		origin=/dev/ram1 meta=/dev/ram0
		backing=brd
	else
		[ -b /dev/vda ] || fail "no /dev/vda for a $fs_mib MiB filesystem"
		[ "$(sectors /dev/vda)" -ge $((fs_mib << 11)) ] || fail "/dev/vda is smaller than $fs_mib MiB"
		brd_setup 1 $((brd_mib << 10))
		origin=/dev/vda meta=/dev/ram0
		backing=virtio
	fi
	for fs in $FSS; do
		job_base=$fs-n$n
		prebuilt=
		if [ -n "$PREBUILT" ]; then
			for p in $PREBUILT; do [ "${p%%=*}" != "$fs" ] || prebuilt=/dev/${p#*=}; done
			[ -n "$prebuilt" ] || fail "BENCH_PREBUILT='$PREBUILT' names no disk for $fs"
			[ "$(blkid -o value -s TYPE "$prebuilt")" = "$fs" ] || fail "$prebuilt holds no $fs"
			origin=$prebuilt backing=virtio
		fi
		log "$job_base: $fs_mib MiB on $backing${prebuilt:+ ($prebuilt, tree made on the host)}"
		dd if=/dev/zero of=$meta bs=1M count=8 oflag=direct status=none
		dm_create r "0 $((fs_mib << 11)) chj $meta $origin 8" >/dev/null
		if [ -z "$prebuilt" ]; then
			case $fs in
			ext4) mkfs.ext4 -q -F -i 8192 -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/r ;;
			xfs) mkfs.xfs -q -f -m rmapbt=1 /dev/mapper/r ;;
			*) fail "unknown fs $fs" ;;
			esac
		fi
		# noatime, as README's quick start mounts a tracked filesystem:
		# with relatime, find's first readdir of each directory would
		# rewrite every directory inode in the measured epoch.
		mount -t "$fs" -o noatime /dev/mapper/r /tmp/mnt
		if [ -z "$prebuilt" ]; then
			t0=$SECONDS
			"$GUEST" tree-create /tmp/mnt/tree "$n" "$FILE_SIZE" 1
			# Mounted again, as after a reboot: nothing of the tree's
			# creation is left to write back into the measured epochs
			# (as with a tree made on the host).
			umount /tmp/mnt
			mount -t "$fs" -o noatime /dev/mapper/r /tmp/mnt
			log "$job_base: tree of $n files in $((SECONDS - t0))s"
		else
			last=$((n - 1))
			[ -f "/tmp/mnt/tree/d$(printf %05d $((last / 1000)))/f$(printf %07d $last)" ] ||
				fail "$prebuilt: not a tree of $n files"
			[ ! -e "/tmp/mnt/tree/d$(printf %05d $((n / 1000)))/f$(printf %07d "$n")" ] ||
				fail "$prebuilt: more than $n files"
		fi
		# The epoch before the first measured one: what the previous
		# backup asked about.
		prev=$("$GUEST" msg r checkpoint 2>/dev/null)
		rm -rf /tmp/cache/warm
		mkdir -m 700 /tmp/cache/warm
		i=0
		for pct in $CHANGED; do
			i=$((i + 1))
			job=$job_base-c$pct
			epoch=$("$GUEST" msg r checkpoint 2>/dev/null)
			if [ -x "$RESOLVE" ] && [ "chj-resolve:$fs" != "$unsupported" ]; then
				# The previous backup: checkpoint, then chj-resolve
				# since the epoch before; it leaves the name cache
				# (tagged with the current epoch) for the timed run.
				t0=$(us_now)
				wrc=0
				CHJ_RESOLVE_CACHE_DIR=/tmp/cache/warm "$RESOLVE" --stats --since "$prev" /dev/mapper/r \
					>/dev/null 2>/tmp/warmup.err || wrc=$?
				log "$job: warm-up chj-resolve --since $prev (exit $wrc, $(awk -v a="$t0" -v b="$(us_now)" \
					'BEGIN { printf "%.2f", (b - a) / 1e6 }')s)"
				resolve_stats /tmp/warmup.err
				[ $wrc = 0 ] || [ $wrc = 3 ] || { cat /tmp/warmup.err; fail "warm-up chj-resolve: exit $wrc"; }
			fi
			prev=$epoch
			touch /tmp/ref
			sleep 0.1
			"$GUEST" tree-change /tmp/mnt/tree "$n" "$pct" "$i" /tmp/changed.txt
			sync
			k=$(wc -l </tmp/changed.txt)
			sort /tmp/changed.txt >/tmp/changed.sorted
			for rep in $(seq "$REPS"); do
				for method in $METHODS; do
					[ "${method%-cold}:$fs" != "$unsupported" ] || continue
					[ "$method" != fiemap ] || [ "$rep" -le "$FIEMAP_REPS" ] || continue
					rc=0
					case $method in
					find-stat)
						measure "$method" "$job" "$rep" /tmp/list -- \
							find /tmp/mnt/tree -type f -newer /tmp/ref
						;;
					fiemap)
						# shellcheck disable=SC2016 # sh -c gets its own $1..$3
						measure "$method" "$job" "$rep" /tmp/list -- sh -c \
							'"$1" changes --since "$2" r --bytes >/tmp/changes && "$3" fiemap-walk /tmp/mnt/tree /tmp/changes' \
							sh "$CHJ" "$epoch" "$GUEST"
						;;
					chj-resolve-cold | chj-resolve)
						cdir=/tmp/cache/warm
						if [ "$method" = chj-resolve-cold ]; then
							# The first run: no name cache.
							cdir=/tmp/cache/cold
							rm -rf $cdir
							mkdir -m 700 $cdir
						fi
						measure "$method" "$job" "$rep" /tmp/list -- env CHJ_RESOLVE_CACHE_DIR=$cdir \
							"$RESOLVE" --stats --since "$epoch" /dev/mapper/r || rc=$?
						if [ $rc = 3 ]; then
							unsupported=chj-resolve:$fs
							continue
						fi
						log "$method $job rep $rep: ${last_wall}s, $(wc -l </tmp/list) lines"
						resolve_stats "$OUT/$last_file"
						;;
					esac
					extra "$method" "$job" "$rep" files_changed "$k"
					# Every method must list every changed file.
					missing=$(sort /tmp/list | comm -13 - /tmp/changed.sorted | wc -l)
					[ "$missing" = 0 ] || fail "$method $job: $missing changed files not listed"
				done
			done
			log "$job: $k files changed, measured ($((SECONDS - start))s)"
		done
		umount /tmp/mnt
		dmsetup remove r
	done
done
umount /tmp/cache
log "resolve bench: $seq_no measurements in $((SECONDS - start))s"
