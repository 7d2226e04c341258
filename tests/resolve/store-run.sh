# shellcheck shell=bash disable=SC2154
# Sourced by store-clock.sh and store-clock-xfs.sh, after scratch.sh: the
# end both share.  store_resolve takes the "checkpoint" of epoch 3 (image
# c2.img; the change map from c1.img, epoch 2's), runs chj-resolve-test
# since epoch 2 with the state store the first run built (--stats --json,
# then -0: $work/out.json, $work/stats, $work/out0), checks it against the
# ground truth (fstruth.py: every truly changed path listed) and that the
# store was used.  Needs RESOLVE, TRUTH, fail() and $work/before.json.
store_resolve() {
	local env=(CHJ_RESOLVE_EPOCH=3 "CHJ_RESOLVE_EPOCH_IMAGE=$work/c2.img"
		"CHJ_RESOLVE_CHANGES=$work/changes")

	python3 "$TRUTH" snap "$mnt" "$work/after.json"
	fsfreeze -f "$mnt"
	cp --sparse=always "$img" "$work/c2.img"
	fsfreeze -u "$mnt"
	python3 "$TRUTH" diffimg "$work/c1.img" "$work/c2.img" 4096 >"$work/changes"
	env "${env[@]}" "$RESOLVE" --since 2 --stats --json "$loop" >"$work/out.json" 2>"$work/stats"
	env "${env[@]}" "$RESOLVE" --since 2 -0 "$loop" >"$work/out0"
	cat "$work/stats"
	python3 "$TRUTH" check "$work/before.json" "$work/after.json" "$work/out0" "$work/out.json" \
		--mount "$mnt" || fail "a change was missed"
	grep -q "state store: state of epoch 2 used" "$work/stats" || fail "the store was not used"
}

# listed REL: the path REL (under the mount) is in the -0 output.  (Not
# "tr | grep -q" under pipefail: grep stops at the first match, and tr,
# still writing, dies of SIGPIPE and fails the pipeline.)
listed() { grep -qxF "$mnt/$1" <<<"$(tr '\0' '\n' <"$work/out0")"; }
