# shellcheck shell=bash
# TLS credentials and refusals for tests/vm/nbd-export.sh (sourced).

# tls_make_pki DIR SERVER_IP: a CA and, signed by it, the server's x509
# directory DIR/server (qemu's tls-creds-x509 layout, the certificate for
# localhost, 127.0.0.1 and SERVER_IP), libnbd client directories
# DIR/backup1 (O=chj,CN=backup1), DIR/intruder (O=chj,CN=intruder) and
# DIR/nocert (the CA only); PSK files DIR/psk/keys.psk (backup1's key, the
# server's), DIR/wrong.psk (backup1, another key) and DIR/nobody.psk (the
# right key, readable by anyone).  EC keys: RSA generation is slow under TCG.
tls_make_pki() {
	local d=$1 ip=$2 n
	mkdir -p "$d/psk" "$d/nocert"
	tls_key "$d/ca-key.pem"
	openssl req -x509 -new -key "$d/ca-key.pem" -out "$d/ca-cert.pem" -days 2 \
		-subj "/CN=chj test CA" 2>/dev/null || fail "openssl: no CA"
	cp "$d/ca-cert.pem" "$d/nocert/"
	tls_cert "$d" server server "/O=chj/CN=localhost" \
		"subjectAltName=DNS:localhost,IP:127.0.0.1,IP:$ip"
	for n in backup1 intruder; do
		tls_cert "$d" "$n" client "/O=chj/CN=$n" "extendedKeyUsage=clientAuth"
	done
	echo "backup1:$(openssl rand -hex 32)" >"$d/psk/keys.psk"
	echo "backup1:$(openssl rand -hex 32)" >"$d/wrong.psk"
	cp "$d/psk/keys.psk" "$d/nobody.psk"
	chmod 644 "$d/nobody.psk"
	chmod 711 "$d"
}

tls_key() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null ||
		fail "openssl: no key $1"
}

# tls_cert DIR NAME ROLE SUBJECT EXTENSION: DIR/NAME/{ca-cert,ROLE-cert,ROLE-key}.pem
tls_cert() {
	local d=$1 o=$1/$2 role=$3
	mkdir -p "$o"
	cp "$d/ca-cert.pem" "$o/"
	tls_key "$o/$role-key.pem"
	openssl req -new -key "$o/$role-key.pem" -subj "$4" 2>/dev/null |
		openssl x509 -req -CA "$d/ca-cert.pem" -CAkey "$d/ca-key.pem" -CAcreateserial \
			-days 2 -out "$o/$role-cert.pem" -extfile <(echo "$5") 2>/dev/null ||
		fail "openssl: no certificate for $4"
}

# refused WHAT PATTERN CMD...: CMD (a client) fails, saying PATTERN (an
# extended regular expression).
refused() {
	local what=$1 pat=$2 rc=0
	shift 2
	"$@" >/tmp/ref.out 2>/tmp/ref.err || rc=$?
	[ "$rc" != 0 ] || fail "$what: connected ($(cat /tmp/ref.out))"
	grep -qE -- "$pat" /tmp/ref.err || fail "$what: said '$(cat /tmp/ref.err)', not '$pat'"
	log "refused, $what: $(head -n 1 /tmp/ref.err)"
}
