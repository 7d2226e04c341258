# shellcheck shell=bash
# Where the VM scripts are, for scripts/vm-test (which boots a guest on one)
# and scripts/run-checks (which reads their headers).  A script is named by
# its file name without .sh, and the name is unique across these directories:
#   tests/vm/           the tests make check runs, every .sh there
#   tests/vm/selftest/  the harness's self-tests (make check runs them last)
#   tests/vm/manual/    reproducers and manual checks, not in make check
#   bench/vm/           the benchmarks' guest scripts (scripts/bench)
# The helpers they source are in tests/vm/lib/, and are not scripts to boot.
VM_SCRIPT_DIRS=(tests/vm tests/vm/selftest tests/vm/manual bench/vm)

# vm_script ROOT NAME: print NAME's script, relative to ROOT (the tree);
# without one, or with several, say so on stderr and return 1.
vm_script() {
	local vs_dir vs_found=()
	for vs_dir in "${VM_SCRIPT_DIRS[@]}"; do
		[ ! -f "$1/$vs_dir/$2.sh" ] || vs_found+=("$vs_dir/$2.sh")
	done
	case ${#vs_found[@]} in
	1) echo "${vs_found[0]}" ;;
	0) echo "no VM script $2.sh in ${VM_SCRIPT_DIRS[*]}" >&2; return 1 ;;
	*) echo "VM script name $2 is not unique: ${vs_found[*]}" >&2; return 1 ;;
	esac
}
