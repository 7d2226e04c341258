#!/bin/sh
# chj-generator on the host, no systemd needed: units for a chjtab (options,
# nofail, bad lines), the chj path make install writes in (PREFIX), and the
# unit names it escapes without systemd-escape equal systemd-escape's.
# Run by make check-unit (from userspace/).
set -eu
gen=${1:-systemd/chj-generator}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "chj-generator.sh: FAIL: $*" >&2; exit 1; }

cat >"$t/chjtab" <<'TAB'
# NAME METADATA ORIGIN OPTIONS
data    /dev/vda   /dev/vdb   region-size=4K,mark-ahead=256
img.x   LABEL=my-meta   PARTUUID=6c1f0e4a-01   nofail,force
broken  /dev/vda
bad/n   /dev/vda /dev/vdb
odd     /dev/vda /dev/vdb frob
TAB

# 1. As installed: make install's substitution, default PREFIX.
sed 's|@SBINDIR@|/usr/local/sbin|' "$gen" >"$t/gen"
mkdir "$t/full" "$t/bare" "$t/bin"
CHJTAB=$t/chjtab sh "$t/gen" "$t/full" 2>"$t/err"
u=$t/full/chj-data.service
grep -qx 'ExecStart=/usr/local/sbin/chj create data /dev/vda /dev/vdb --region-size 4K --mark-ahead 256' "$u" ||
	fail "ExecStart: $(grep ExecStart "$u")"
[ -L "$t/full/local-fs.target.requires/chj-data.service" ] || fail "data not required by local-fs.target"
[ -L "$t/full/local-fs.target.wants/chj-img.x.service" ] || fail "nofail unit not just wanted"
grep -q "chjtab:4: expected NAME" "$t/err" || fail "short line not reported"
grep -q "chjtab:5: bad device name" "$t/err" || fail "bad name not reported"
grep -q "chjtab:6: unknown option 'frob'" "$t/err" || fail "unknown option not reported"
[ "$(ls "$t/full" | grep -c service)" = 2 ] || fail "bad lines made units: $(ls "$t/full")"

# 2. Without systemd-escape on PATH: the same units, byte for byte.
for tool in od tr cat mkdir ln sed; do ln -s "$(command -v $tool)" "$t/bin/$tool"; done
CHJTAB=$t/chjtab PATH=$t/bin /bin/sh "$t/gen" "$t/bare" 2>/dev/null
if command -v systemd-escape >/dev/null; then
	diff -r "$t/full" "$t/bare" >&2 || fail "units differ without systemd-escape"
	want=$(systemd-escape --path --suffix=device /dev/disk/by-label/my-meta)
	grep -q "^BindsTo=$(printf '%s' "$want" | sed 's/\\/\\\\/g') " "$t/full/chj-img.x.service" ||
		fail "BindsTo: $(grep BindsTo "$t/full/chj-img.x.service")"
	# The fallback itself, on names systemd-escape treats specially.
	sed -n '/^escape()/,/^}/p' "$gen" >"$t/esc.sh"
	for s in "/" "//dev//sda/" "/dev/disk/by-label/a b" ".hidden/x" "/dev/mapper/x-y" "ü:_." ; do
		for mode in --path ""; do
			[ -z "$mode" ] && [ "$s" = "/" ] && continue
			got=$(PATH=$t/bin /bin/sh -c ". '$t/esc.sh'; escape $mode \"\$1\"" sh "$s")
			want=$(systemd-escape $mode -- "$s" 2>/dev/null)
			[ "$got" = "$want" ] || fail "escape $mode '$s': '$got', systemd-escape says '$want'"
		done
	done
else
	echo "chj-generator.sh: systemd-escape absent: fallback not compared" >&2
	grep -q '^BindsTo=dev-disk-by\\x2dlabel-my\\x2dmeta.device ' "$t/bare/chj-img.x.service" ||
		fail "BindsTo: $(grep BindsTo "$t/bare/chj-img.x.service")"
fi

# 3. From the source tree, unsubstituted: chj from PATH, or a clear error.
mkdir "$t/src"
if CHJTAB=$t/chjtab PATH=$t/bin /bin/sh "$gen" "$t/src" 2>"$t/err"; then
	fail "no chj on PATH, yet units were written"
fi
grep -q "chj not found" "$t/err" || fail "no clear message: $(cat "$t/err")"
echo "chj-generator.sh: ok"
