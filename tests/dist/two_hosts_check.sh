#!/bin/sh
# ctest's test_dist_two_hosts: ember::dist across two hosts, on one machine. Two network
# namespaces, each with its own host name and its own address on a virtual Ethernet pair
# (10.77.0.1 and 10.77.0.2), stand for two hosts; mpirun starts in the first and reaches the
# second through an rsh agent that enters its namespace (where ssh would log in to a real host),
# and the ranks talk over OpenMPI's TCP transport only (no shared memory between them), as
# `mpirun -H host1,host2` on two machines does. Each test executable given ($2...) runs with one
# rank per host; first the ranks must see two hosts with local rank 0 on each.
#   two_hosts_check.sh MPIEXEC TEST_EXECUTABLE...
# Needs root (network namespaces, host names): otherwise, or where the kernel refuses, it prints
# SKIPPED and exits 77.
set -eu
mpiexec=$1
shift
tag=$$
ns0=ember$tag-h0 ns1=ember$tag-h1
work=$(mktemp -d)
cleanup() {
  ip netns del "$ns0" 2>/dev/null || true
  ip netns del "$ns1" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
skip() {
  echo "SKIPPED: $*"
  exit 77
}

[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null && command -v unshare >/dev/null || skip "needs ip (iproute2) and unshare"
ip netns add "$ns0" 2>/dev/null || skip "this kernel or container refuses network namespaces"
ip netns add "$ns1"
ip link add "emv${tag}a" type veth peer name "emv${tag}b"
ip link set "emv${tag}a" netns "$ns0"
ip link set "emv${tag}b" netns "$ns1"
ip -n "$ns0" addr add 10.77.0.1/24 dev "emv${tag}a"
ip -n "$ns1" addr add 10.77.0.2/24 dev "emv${tag}b"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
ip -n "$ns0" link set "emv${tag}a" up
ip -n "$ns1" link set "emv${tag}b" up

# The rsh agent: `agent HOST COMMAND...` runs COMMAND on HOST, here in its namespace under its
# host name.
cat >"$work/agent" <<EOF
#!/bin/sh
host=\$1
shift
case "\$host" in
  10.77.0.1) ns=$ns0 ;;
  10.77.0.2) ns=$ns1 ;;
  *) echo "two_hosts_check agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$ns; \$*"
EOF
chmod +x "$work/agent"

on_two_hosts() {
  timeout 300 ip netns exec "$ns0" unshare --uts sh -c "hostname $ns0; exec \"\$@\"" sh \
    "$mpiexec" --allow-run-as-root --mca plm_rsh_agent "$work/agent" \
    --mca btl tcp,self --mca oob_tcp_if_include 10.77.0.0/24 \
    --mca btl_tcp_if_include 10.77.0.0/24 -H 10.77.0.1,10.77.0.2 -np 2 \
    -x OMP_NUM_THREADS=1 -x EMBER_DIST_TIMEOUT=120 "$@"
}

on_two_hosts sh -c 'echo "$(hostname) rank $OMPI_COMM_WORLD_RANK local $OMPI_COMM_WORLD_LOCAL_RANK"' |
  sort >"$work/hosts"
cat "$work/hosts"
printf '%s rank 0 local 0\n%s rank 1 local 0\n' "$ns0" "$ns1" | cmp -s - "$work/hosts" ||
  { echo "the ranks do not see two hosts with one rank each"; exit 1; }

for test in "$@"; do
  echo "== $(basename "$test") on two hosts"
  on_two_hosts "$test" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
  grep -c "All tests passed" "$work/out" | grep -qx 2 || { cat "$work/out"; exit 1; }
  grep "All tests passed" "$work/out" | head -1
done
echo "two hosts check passed"
