# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# The chj-resolve test workload, shared by the host test (loop devices) and
# the VM tests (the real target).  Source it, then:
#   wl_populate MNT          build the tree (then sync and checkpoint)
#   wl_modify MNT WRITES     change it; WRITES gets "PATH OFFSET LENGTH"
#                            lines for the VM image's writes (--json check)
# WL_SMALL (default 2000) small files; WL_IMAGE_MB (default 256) image size.

wl_rand() { # FILE BYTES: random content
	head -c "$2" /dev/urandom >"$1"
}

wl_xattr() { # set FILE NAME VALUE | remove FILE NAME (python: no attr package)
	python3 -c '
import os, sys
if sys.argv[1] == "set":
    os.setxattr(sys.argv[2], sys.argv[3], sys.argv[4].encode())
else:
    os.removexattr(sys.argv[2], sys.argv[3])' "$@"
}

wl_populate() {
	local m=$1 i
	mkdir -p "$m/d" "$m/e" "$m/small" "$m/deep/a/b/c" "$m/olddir" "$m/keep"
	for f in touchr append trunc-shrink trunc-grow chmod chown xattr-set xattr-rm \
		ren-a mv-src del hl odirect mmap punch zero same; do
		wl_rand "$m/d/$f" $((16384 + RANDOM % 8192))
	done
	wl_xattr set "$m/d/xattr-rm" user.old gone
	wl_rand "$m/d/big" $((4 << 20))
	wl_rand "$m/deep/a/b/c/leaf" 3000
	ln -s "d/same" "$m/d/sym-old"
	for ((i = 0; i < ${WL_SMALL:-2000}; i++)); do
		echo "small file $i" >"$m/small/f$i"
	done
	for ((i = 0; i < 50; i++)); do
		wl_rand "$m/keep/k$i" 5000
	done
	: >"$m/d/empty"
	printf 'x' >"$m/d/tiny"
	printf 'name with newline' >"$m/e/new
line"
	printf 'back\\slash' >"$m/e/back\\slash"
	# A sparse "VM image" with some data already in it.
	truncate -s "${WL_IMAGE_MB:-256}M" "$m/vm.img"
	python3 - "$m/vm.img" <<'EOF'
import os, random, sys
random.seed(1)
fd = os.open(sys.argv[1], os.O_WRONLY)
size = os.fstat(fd).st_size
for i in range(64):
    off = random.randrange(0, size // 65536) * 65536
    os.pwrite(fd, os.urandom(65536), off)
os.pwrite(fd, os.urandom(65536), 64 * 65536)   # punched by wl_modify
os.close(fd)
EOF
}

wl_modify() {
	local m=$1 writes=$2 i
	: >"$writes"
	# Same size, mtime and atime restored: mtime/size tools miss it.
	cp -p "$m/d/touchr" /tmp/wl-ref
	python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY); os.pwrite(fd, os.urandom(100), 5000); os.close(fd)' "$m/d/touchr"
	touch -r /tmp/wl-ref "$m/d/touchr"
	echo appended >>"$m/d/append"
	truncate -s 1000 "$m/d/trunc-shrink"
	truncate -s 100000 "$m/d/trunc-grow"
	chmod 0600 "$m/d/chmod"
	chown 1234:5678 "$m/d/chown"
	wl_xattr set "$m/d/xattr-set" user.new "$(head -c 40 /dev/urandom | base64)"
	wl_xattr remove "$m/d/xattr-rm" user.old
	mv "$m/d/ren-a" "$m/d/ren-b"
	mv "$m/d/mv-src" "$m/e/mv-dst"
	rm "$m/d/del"
	ln "$m/d/hl" "$m/e/hl2"
	ln -s "../d/same" "$m/e/sym-new"
	rm "$m/d/sym-old"
	ln -s "d/other" "$m/d/sym-old"
	mkdir "$m/d/newdir"
	echo inside >"$m/d/newdir/file"
	rmdir "$m/olddir"
	fallocate -l 1M "$m/d/falloc"
	fallocate -p -o 4096 -l 8192 "$m/d/punch"
	fallocate -z -o 0 -l 4096 "$m/d/zero" 2>/dev/null || true
	dd if=/dev/urandom of="$m/d/odirect" bs=4096 count=1 seek=2 oflag=direct conv=notrunc status=none
	python3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 8192)
m[100:110] = b"mmapwrite!"
m.flush(); m.close(); os.close(fd)' "$m/d/mmap"
	dd if=/dev/urandom of="$m/d/sparse" bs=4096 count=1 seek=1000 conv=notrunc status=none
	for ((i = 0; i < ${WL_SMALL:-2000}; i += 100)); do
		echo "changed" >>"$m/small/f$i"
	done
	mv "$m/deep/a/b/c/leaf" "$m/deep/leaf-moved"
	# Names that need escaping in the line output.
	echo more >>"$m/e/new
line"
	echo more >>"$m/e/back\\slash"
	# Scattered 4 KiB writes into the image, and a punched (discarded) range.
	python3 - "$m/vm.img" "$writes" <<'EOF'
import os, random, sys
random.seed(2)
fd = os.open(sys.argv[1], os.O_WRONLY)
size = os.fstat(fd).st_size
with open(sys.argv[2], "a") as w:
    for i in range(200):
        off = random.randrange(0, size // 4096) * 4096
        os.pwrite(fd, os.urandom(4096), off)
        w.write(f"vm.img {off} 4096\n")
    os.fsync(fd)
os.close(fd)
EOF
	# The guest discards a range that held data: a punched hole.
	fallocate -p -o $((64 * 65536)) -l 65536 "$m/vm.img" 2>/dev/null || true
	echo "vm.img $((64 * 65536)) 65536" >>"$writes"
}
