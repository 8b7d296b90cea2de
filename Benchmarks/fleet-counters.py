#!/usr/bin/env python3
"""The fleet's counters for Benchmarks/fleet.sh, read from each node's /v1/counters.

One process reads every node, and a wait polls in the same process until its condition holds: a poll
costs a few milliseconds of CPU. (A python3 and a curl per node and field, as fleet.sh started before,
took about 0.1 s of CPU each: 2.6 CPU-seconds a poll of a silent wave on 7 nodes, taken from the wave
it timed, on this 2-core machine.)

Usage:
  fleet-counters.py sum PORT...
      the sums over the nodes (admin ports) of: connected acknowledged wokenOnBudget held accepted
      deviceLimit routedOut routedThroughStore storeCommits storeChanges
  fleet-counters.py wait-acknowledged TARGET DEADLINE PORT...
      until the nodes' acknowledgements reach TARGET (an alert's every push acknowledged)
  fleet-counters.py wait-decided ANSWERED WOKEN0 HELD0 ACKNOWLEDGED0 DEADLINE PORT...
      until ANSWERED silent pushes are decided (woken on budget or held, counted from WOKEN0 and HELD0)
      and every woken one acknowledged (counted from ACKNOWLEDGED0)
  fleet-counters.py wait-connected TARGET DEADLINE PORT...
      until the nodes hold TARGET connected devices (a node that does not answer counts none)
DEADLINE is in epoch seconds. A wait prints the sums when its condition holds (exit 0), or at the
deadline (exit 1). A node that does not answer counts zero in every field.
"""

import json
import sys
import time
import urllib.request

FIELDS = 10


def node(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/counters", timeout=5) as response:
            c = json.load(response)
    except (OSError, ValueError):
        return [0] * FIELDS
    h, p = c["hub"], c["policy"]
    return [
        c["connectedDevices"],
        h.get("acknowledged", 0),
        p.get("wokenOnBudget", 0),
        p.get("held", 0),
        p.get("alertingAccepted", 0) + p.get("silentAccepted", 0) + p.get("otherAccepted", 0),
        c["connections"]["devices"]["limit"],
        h.get("routedOut", 0),
        h.get("routedThroughStore", 0),
        (c.get("store") or {}).get("commits", 0),
        (c.get("store") or {}).get("changes", 0),
    ]


def sums(ports):
    total = [0] * FIELDS
    for port in ports:
        total = [a + b for a, b in zip(total, node(port))]
    return total


def wait(condition, deadline, ports, interval=0.2):
    while True:
        s = sums(ports)
        if condition(s):
            print(*s)
            return 0
        if time.time() >= deadline:
            print(*s)
            return 1
        time.sleep(interval)


def main(args):
    command = args[0]
    if command == "sum":
        print(*sums(args[1:]))
        return 0
    if command == "wait-acknowledged":
        target, deadline = int(args[1]), float(args[2])
        return wait(lambda s: s[1] >= target, deadline, args[3:])
    if command == "wait-decided":
        answered, woken0, held0, acknowledged0 = (int(a) for a in args[1:5])
        deadline = float(args[5])

        def decided(s):
            woken, held = s[2] - woken0, s[3] - held0
            return woken + held >= answered and s[1] - acknowledged0 >= woken

        return wait(decided, deadline, args[6:])
    if command == "wait-connected":
        target, deadline = int(args[1]), float(args[2])
        return wait(lambda s: s[0] >= target, deadline, args[3:])
    print(f"fleet-counters.py: unknown command {command}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
